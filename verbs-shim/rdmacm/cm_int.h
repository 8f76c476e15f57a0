/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm's connections over the IB CM, inside the cm module (cm.c and cm_*.c, see cm.c):
 * the connection record, the one lock and its state, and what the files share. Everything
 * here is called with cma_cm.lock held unless it says otherwise ("Any lock state", "Unlocked").
 */
#ifndef UROCE_VERBS_SHIM_RDMACM_CM_INT_H
#define UROCE_VERBS_SHIM_RDMACM_CM_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cm/ib_cm.h"
#include "verbs-shim/mad.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/htab.h"

/* What Linux puts in a REQ over RoCE (PROTOCOL.md §4.4, §4.9). */
#define CM_RESPONSE_TIMEOUT 20
#define CM_MAX_RETRIES      15
#define PACKET_LIFE_TIME    16
#define LOCAL_ACK_TIMEOUT   17 /* cm_ack_timeout(15, 16) */
#define TARGET_ACK_DELAY    15

struct cma_conn {
	struct cm_conn cm;
	struct cma_id *id; /* NULL once the id is destroyed */
	uint8_t sgid[16], dgid[16];
	/*
	 * rdma_cm's seq_num: the Starting PSN of the REQ or REP this side sends, which is the PSN
	 * it receives at (its QP's rq_psn); the PSN it sends from is the peer's, kept by the pure
	 * CM (cm.sq_psn).
	 */
	uint32_t my_psn, peer_qpn;
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry, path_mtu;
	uint8_t tos;     /* the path's traffic class: the IP TOS of its MADs and its QP's packets */
	bool announced;  /* the host knows it established (mad.h uroce_cm_conn_state) */
	int unreachable; /* the ICMP error that ended its request (on_unreachable), or 0 */
	bool sidr;       /* UD: a SIDR exchange rather than a connection */
	struct cma_conn *next, **pprev; /* cma_cm.conns */
	struct cma_hlink by_local;      /* cma_cm.by_local: our comm ID */
	struct cma_hlink by_peer;       /* cma_cm.by_peer (passive only): the peer's ID and GID */
};

/* A MAD made under the lock, to be sent once it is released (cma_cm_unlock). */
struct cma_mad {
	struct cma_mad *next;
	uint8_t sgid[16], dgid[16], tos;
	uint8_t mad[CM_MAD_LEN];
};

/* Every connection and listener of the process, under one lock. */
struct cma_cm {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct cma_mad *outbox, **outbox_tail; /* lock: MADs to send, oldest first */
	pthread_mutex_t send_lock;             /* taken before lock is released: order of sends */
	struct cma_conn *conns;
	struct cma_htab by_local, by_peer; /* the conns by key, for the MADs (htab.h) */
	struct cma_id *listeners;
	uint32_t tag, next_comm_seq; /* comm IDs: cm_comm_id(tag, seq), route.h */
	uint64_t sleep_until;        /* the CM thread's wake-up (UINT64_MAX: none; 0: awake) */
	bool started;
	pid_t pid; /* the process that started the CM thread (a child of fork() has none) */
	pthread_t thread;
};

extern struct cma_cm cma_cm;

/* CLOCK_MONOTONIC in nanoseconds: the pure CM's "now". Any lock state. */
uint64_t cma_now(void);

/* Send @mad from @sgid to @dgid once the lock is released (at once without memory). Locked. */
void cma_send_mad(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
		  const uint8_t mad[CM_MAD_LEN]);

/*
 * Release the lock, then send the MADs made under it. The send lock, taken before the lock is
 * released, keeps the MADs of every thread in the order they were made: a connection's
 * messages leave as its state machine wrote them.
 */
void cma_cm_unlock(void);

/* The socket address of @gid (IPv4-mapped or IPv6) and @port. Any lock state. */
void cma_sa_of(struct sockaddr_storage *ss, const uint8_t gid[16], uint16_t port);

/* The port of @sa (IPv4 or IPv6), in host order. Any lock state. */
uint16_t cma_port_of(const struct sockaddr *sa);

/* Send what the connection has to send. Locked. */
void cma_conn_flush(struct cma_conn *c);

/*
 * The passive connection a REQ (@sidr false: @id its comm ID) or SIDR_REQ (@sidr: its request
 * ID) from @gid made, or NULL. Locked.
 */
struct cma_conn *cma_conn_by_peer(bool sidr, uint32_t id, const uint8_t gid[16]);

/* Index the passive @c by the request that made it: @id from @c->dgid. Locked. */
void cma_conn_index_peer(struct cma_conn *c, uint32_t id);

/* After a connection's MAD or deadline: send, report, and free it once it is done. Locked. */
void cma_conn_settle(struct cma_conn *c);

/*
 * A new idle connection with a comm ID of this process, indexed and listed; NULL without memory.
 * Locked.
 */
struct cma_conn *cma_conn_new(void);

/*
 * Start receiving MADs and keeping deadlines (once; later calls return 0). Locked. 0, or the
 * errno of starting the engine (mad.h) or of creating the CM thread.
 */
int cma_cm_start(void);

/*
 * Take the QP of @c's id to RTR and RTS (cm_events.c). Locked. 0, ENODEV (the connection's
 * source GID is not on the id's device), or ibv_modify_qp's errno.
 */
int cma_conn_ready_qp(struct cma_conn *c);

/*
 * Move @id's QP, if it has one, to the Error state (its work requests flush). Unlocked:
 * rdma_disconnect calls it before taking the lock.
 */
void cma_qp_to_error(struct rdma_cm_id *id);

/* The rdma_conn_param an event of @c reports (the negotiated resources and retries). */
void cma_conn_param_of(struct rdma_conn_param *p, const struct cma_conn *c);

/*
 * librdmacm's checks of @param for rdma_connect and rdma_accept (ucma_valid_param): for an id
 * of RDMA_PS_TCP, a responder_resources or initiator_depth above what @id's device allows
 * (max_qp_rd_atom, max_qp_init_rd_atom) is EINVAL, except RDMA_MAX_RESP_RES and
 * RDMA_MAX_INIT_DEPTH (0xFF), which ask for that maximum. 0 or EINVAL; *@max_resp and
 * *@max_init get the device's maxima (1 without a device). Any lock state.
 */
int cma_rd_atomic_check(struct rdma_cm_id *id, const struct rdma_conn_param *param,
			uint8_t *max_resp, uint8_t *max_init);

/* Turn the connection's CM events into rdma_cm events. Locked. */
void cma_conn_deliver(struct cma_conn *c);

/* Answer a MAD no connection or listener takes, as a Linux CM does (cm/route.h). */
void cma_answer_unclaimed(const struct uroce_mad_rx *rx);

/* A REQ for a listener: CONNECT_REQUEST; rdma_accept or rdma_reject answers it. */
void cma_on_req(const struct cm_msg *m, const struct uroce_mad_rx *rx);

/* A SIDR_REQ for a listener: a new UD id and CONNECT_REQUEST; rdma_accept answers it. */
void cma_on_sidr_req(const struct cm_msg *m, const struct uroce_mad_rx *rx);

/*
 * Passive SIDR: answer the requester with @status, @qpn (0 in a rejection) and @len bytes of
 * private data at @pd. Locked.
 */
void cma_sidr_reply(struct cma_conn *c, uint8_t status, uint32_t qpn, const void *pd, size_t len);

#endif
