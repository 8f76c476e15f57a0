/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 (ABI.md §2): the rdma_cm API over uroce's own libibverbs.so.1. Internal
 * objects: an event channel is a queue of events with an eventfd that applications poll; an id
 * wraps struct rdma_cm_id, whose layout is rdma-core's (rdma/rdma_cma.h).
 *
 * Event channels (blocking and non-blocking), ids of every port space, device lists, event
 * strings, binding, address and route resolution, rdma_getaddrinfo, the verbs objects of an id
 * (QP, SRQ, default PD and CQs, rdma_create_ep), RC connections over the IB CM (cm.c), UD
 * through SIDR, multicast joins and ECE. rsockets (rsocket_int.h) are built on this API.
 */
#ifndef UROCE_VERBS_SHIM_RDMACM_CMA_H
#define UROCE_VERBS_SHIM_RDMACM_CMA_H

#include <errno.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "verbs-shim/device.h"
#include "verbs-shim/mad.h"

struct cma_event {
	struct rdma_cm_event ev; /* first: the application holds &ev */
	struct cma_event *next;
	uint8_t private_data[256]; /* where ev.param.conn.private_data points */
	bool attach; /* MULTICAST_JOIN: attach the id's QP to the group when taken (librdmacm) */
};

struct cma_channel {
	struct rdma_event_channel ch; /* first: ch.fd is an eventfd, readable while events wait */
	pthread_mutex_t lock;
	struct cma_event *head, **tail; /* events not yet taken */
};

enum cma_state {
	CMA_IDLE,
	CMA_BOUND,          /* rdma_bind_addr (or resolution) gave it a source */
	CMA_ADDR_QUERY,     /* resolution waits for the hub to reserve its port (addr.c) */
	CMA_ADDR_RESOLVED,  /* and a destination */
	CMA_ROUTE_RESOLVED, /* and a path */
	CMA_LISTEN,         /* rdma_listen */
	CMA_CONNECTING,     /* a connection (cm_int.h) is being set up */
	CMA_CONNECTED,
	CMA_DISCONNECTED,
};

struct cma_conn; /* cm_int.h */
struct cma_mc;   /* mcast.c */

struct cma_id {
	struct rdma_cm_id id; /* first: the application holds &id */
	bool sync;            /* created without a channel: it owns id.channel */
	bool own_cqs;         /* qp.c made id.send_cq, .recv_cq and their channels */
	enum cma_state state;
	bool bound;                          /* addr.c: it holds a port (cma_service_of) */
	struct cma_resolving *resolving;     /* addr.c: its resolution waiting for the hub */
	struct cma_conn *conn;               /* cm_int.h: its connection, if any */
	struct cma_id *next_listener;        /* cm_passive.c: in CMA_LISTEN */
	struct ibv_qp_init_attr *ep_qp_attr; /* rdma_create_ep of a listener: for its requests */
	unsigned int events_out;             /* channel.c: its events taken and not yet acked */
	struct ibv_pd *ep_pd;
	/* rdma_set_option (option.c) */
	uint8_t tos, ack_timeout;
	bool tos_set, ack_timeout_set, reuseaddr, afonly, afonly_set;
	struct cma_mc *mcs; /* mcast.c: the groups joined */
	/* ECE (cm_active.c): what this side offers in its REQ or REP, what the peer's carried */
	struct ibv_ece local_ece, remote_ece;
	int backlog;                 /* a listener's (cm_passive.c) */
	atomic_int requests_waiting; /* its CONNECT_REQUESTs not yet taken (channel.c) */
	uint32_t res_tag;            /* its count on id.verbs' device (uroce_res_add) */
};

#define CMA_MAX_BACKLOG 1024 /* ucma's default net.rdma_ucm.max_backlog */

/* A librdmacm call fails: errno = @err, -1 (librdmacm's ERR()). */
static inline int cma_fail(int err)
{
	errno = err;
	return -1;
}

static inline struct cma_id *to_cma_id(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

static inline struct cma_channel *to_channel(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)ch;
}

/* Queue an event of @type and @status for @id on its channel. Returns 0 or ENOMEM. */
int cma_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status);

/*
 * Queue a connection event: as cma_event, with @listen (CONNECT_REQUEST: the listener; the
 * event goes to its channel), @param copied, and @len bytes of private data at @pd (at most
 * 256) carried by the event. Returns 0 or ENOMEM.
 */
int cma_conn_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		   struct rdma_cm_id *listen, const struct rdma_conn_param *param, const void *pd,
		   size_t len);

/*
 * @id is being destroyed: drop its events not yet taken (a listener's: also the connection
 * requests not taken, each refused and its id destroyed), ack id->event, and wait until every
 * event of it the application took is acked (rdma_destroy_id(3)).
 */
void cma_events_drain(struct rdma_cm_id *id);

/* What a UD connection event carries (struct rdma_ud_param but the private data). */
struct cma_event_ud {
	struct ibv_ah_attr ah_attr;
	uint32_t qp_num, qkey;
};

/*
 * Queue a UD event (SIDR): @ud in event.param.ud with @len bytes of private data at @pd, on
 * @id's channel (a listener's child shares the listener's); @listen as cma_conn_event's.
 * Returns 0 or ENOMEM.
 */
int cma_ud_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		 struct rdma_cm_id *listen, const struct cma_event_ud *ud, const void *pd,
		 size_t len);

/*
 * Queue MULTICAST_JOIN for @id: @ud in event.param.ud, @context as its private data; with
 * @attach, the id's QP joins the group ud->ah_attr.grh.dgid when the event is taken. Returns 0
 * or ENOMEM.
 */
int cma_join_event(struct rdma_cm_id *id, const struct cma_event_ud *ud, void *context,
		   bool attach);

/* mcast.c: the id is being destroyed; forget its groups. */
void cma_mc_release(struct cma_id *c);

/*
 * cm_disconnect.c: the id is being destroyed; it stops listening, and its connection, if any,
 * disconnects (as Linux's cm_destroy_id) and goes on without it.
 */
void cma_conn_forget(struct cma_id *id);

/*
 * cm_events.c: the attributes for a->qp_state RTR or RTS from @id's connection. 0, EINVAL (no
 * connection, another state) or ENODEV (its source GID is not on the id's device).
 */
int cma_conn_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask);

/* addr.c: the GID of an IP sockaddr (IPv4-mapped for IPv4). */
union ibv_gid cma_gid(const struct sockaddr *sa);

/* addr.c: whether a binding to @sa (IPv4 or IPv6) covers every address of its family: a
 * wildcard, or a loopback address (127.0.0.0/8, ::1), as the kernel's cma_any_addr says. */
bool cma_any_addr(const struct sockaddr *sa);

/* addr.c: the GID table index of @gid on @ctx port 1, or -1. */
int cma_gid_index(struct ibv_context *ctx, const uint8_t gid[16]);

/* devices.c: the shared context of the uroce device holding @gid (port 1), or NULL. */
struct ibv_context *cma_device_of(const uint8_t gid[16]);

/*
 * devices.c: the shared contexts of the devices listed now (rdma_get_devices), in a malloc'ed
 * NULL-terminated array, their count in *@n; NULL with errno (ENOMEM, or the device list's).
 */
struct ibv_context **cma_devices(int *n);

/*
 * cm.c: start the CM now if it is not running (not locked), ignoring a failure (the call that
 * needs the CM meets it again): for a caller about to wait anyway, so that the thread's start is
 * not on the path of the first connection (rdma_connect's REQ).
 */
void cma_cm_start_early(void);

/*
 * qp.c: the default PD of device @ctx, made on first use and kept; NULL with errno ENOMEM.
 * An id on a device has it in id->pd from the moment it has the device (bound, resolved, or
 * made by a connection request), as librdmacm's ucma_get_device sets id.pd with id.verbs.
 */
struct ibv_pd *cma_default_pd(struct ibv_context *ctx);

/*
 * After a call that queued an event on a synchronous id: take that event (acking the one
 * before), leave it in id->event, and return 0, or -1 if it reports an error, with errno
 * ECONNREFUSED for REJECTED, else the status's magnitude (librdmacm's synchronous mode). For
 * other ids: 0.
 */
int cma_complete(struct rdma_cm_id *id);

/*
 * A connection request of a synchronous listener was taken: its new id @child gets an event
 * channel of its own and is synchronous too, so that its calls (rdma_accept waits for
 * ESTABLISHED) wait on its own events alone, as librdmacm's ucma_process_conn_req migrates
 * it. Should the channel not be made (EMFILE, ENOMEM), the child stays on its listener's
 * channel, asynchronous.
 */
void cma_request_taken(struct rdma_cm_id *child);

/* addr.c: give up the port @id holds, and its path. */
void cma_release(struct cma_id *id);

/* Before @c is destroyed: its resolution, if one waits for the hub, ends without an event. */
void cma_resolve_cancel(struct cma_id *c);

/* The host CM directory's name of @c's bound address (mad.h uroce_cm_service). */
struct uroce_service cma_service_of(const struct cma_id *c);

#endif
