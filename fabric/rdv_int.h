/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous's insides, shared by its files: rdv.c (meeting, taking over, QPN blocks on a
 * process's side), rdv_hub.c (the hub's side), rdv_forward.c (forwarding), rdv_link.c (the
 * records on the sockets) and the host's CM directory: rdv_cm.c (bindings, routing of CM
 * MADs), rdv_cm_req.c (a process's requests), rdv_cm_conn.c (established connections).
 * Progress thread unless a field or function says otherwise.
 */
#ifndef UROCE_FABRIC_RDV_INT_H
#define UROCE_FABRIC_RDV_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

#include "fabric/rdv.h"
#include "fabric/rdv_proto.h"
#include "transport/container.h"

#define REQUEST_TIMEOUT_S 10
#define MSG_MAX           (sizeof(struct rdv_frame) + UROCE_PROGRESS_PAYLOAD_MAX)

/* A binding of the CM directory (rdv_cm.c); owner NULL: the hub's own. */
struct rdv_svc {
	struct conn *owner;
	struct uroce_service svc;
	bool listening;
};

/*
 * An application thread's request while it is in r->svc_wanted or svc_sent: on the stack of a
 * thread waiting for it, or (detached, uroce_rdv_service_async) on the heap, where its answer
 * goes to @fn and frees it.
 */
struct rdv_svc_req {
	enum uroce_service_op op;
	struct uroce_service svc;
	uint32_t seq;
	int err;
	bool done;
	bool detached;
	uroce_service_done_fn fn; /* detached: told the answer (may be NULL) */
	void *arg;
	struct rdv_svc_req *next;
};

/* A CONN note of an application thread, waiting for the progress thread to send it. */
struct rdv_note {
	struct rdv_conn_msg msg;
	struct rdv_note *next;
};

/* A set of established CM connections: a process's at the hub, or the process's own. */
struct rdv_cm_conns {
	uint32_t n, cap;
	struct uroce_cm_conn c[];
};

/* A connection: on the hub, to another process; elsewhere, to the hub. */
struct conn {
	struct uroce_rdv *r;
	int fd;
	struct uroce_watch *watch;
	uint64_t token;          /* hub: 0 until HELLO */
	uint16_t ports[2];       /* hub: the process's own UDP ports (HELLO) */
	pid_t pid;               /* SO_PEERCRED, as seen from here */
	bool dead;               /* hub: to be dropped by reap() */
	struct rdv_cm_conns *cm; /* hub: its established CM connections (rdv_cm_conn.c), or NULL */
	struct conn *next;
};

#define RDV_RECENT_LISTENS 16 /* rdv_held_req: the listens a hub remembers lately */

struct uroce_rdv {
	uint16_t port;
	struct uroce_progress *progress;
	struct uroce_qpn *qpn;
	const struct uroce_rdv_ops *ops;
	void *arg;
	uint64_t token;       /* this process */
	uint16_t my_ports[2]; /* its own UDP sockets' ports, IPv4 and IPv6 */
	struct sockaddr_un name;
	socklen_t name_len;

	/* Each block owner's own UDP ports (IPv4 | IPv6 << 16): written on the progress thread. */
	_Atomic uint32_t ports[UROCE_QPN_BLOCKS];

	/* Progress thread only (hub, conns and up also read elsewhere under fwd_lock, below). */
	uint64_t owner[UROCE_QPN_BLOCKS];     /* token of each block's owner; 0: free */
	struct conn *route[UROCE_QPN_BLOCKS]; /* hub: where each block's datagrams go */
	bool hub;
	int listen_fd;
	struct uroce_watch *listen_watch;
	struct conn *conns; /* hub: the other processes */
	bool have_dead;
	struct conn *up;    /* not hub: the connection to the hub */
	bool table_pending; /* not hub: the hub's first TABLE record replaces our copy */
	uint32_t next_block;
	uint32_t outstanding; /* requests sent to the hub and not answered */
	struct uroce_timer grace;
	struct uroce_timer bind_retry;
	int evfd; /* application threads: requests are waiting */
	struct uroce_watch *ev_watch;
	_Alignas(8) uint8_t buf[MSG_MAX];

	/*
	 * The ways to the host's other processes, for application threads sending a multicast
	 * copy (uroce_rdv_mcast_sent): hub, up (and its fd), the list conns and each one's fd
	 * and token. The progress thread, their only writer, changes them under it and reads
	 * them without. A leaf: nothing else is taken while it is held.
	 */
	pthread_mutex_t fwd_lock;

	/* Shared with application threads. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t wanted; /* requests not yet sent */
	uint64_t grants, fulls;
	int fatal; /* the rendezvous is unusable */
	atomic_bool is_hub;
	_Atomic uint64_t forwarded, forward_lost;

	/* The host's CM directory (rdv_cm.c, rdv_cm_req.c, rdv_cm_conn.c). */
	_Atomic uint32_t tag; /* this process's first block: its comm ID tag */
	atomic_bool tagged;   /* tag is set */
	struct rdv_svc *dir;  /* hub: every binding of the host's processes */
	uint32_t ndir, dir_cap;
	struct rdv_svc *held; /* this process's bindings, for a new hub */
	uint32_t nheld, held_cap;
	uint16_t next_port;                        /* hub: the next ephemeral port to try */
	struct rdv_svc_req *svc_wanted, *svc_sent; /* lock: requests to send, sent */
	struct rdv_svc_req *svc_finished;          /* lock: detached ones answered (rdv_cm_req.c) */
	uint32_t svc_seq;                          /* lock: the last request's number */
	struct rdv_note *notes, **notes_tail;      /* lock: CONN notes to send */
	struct rdv_cm_conns *my_conns;  /* this process's established connections, for a new hub */
	struct rdv_cm_conns *hub_conns; /* not hub: the hub's, for the process that takes over */
	pid_t hub_conns_pid;            /* the hub they are of */
	/* Hub after a takeover, until hold_until: requests held for want of a listener. */
	uint64_t hold_until;
	struct uroce_timer hold_end;    /* the earliest held request's deadline */
	struct rdv_held_req *held_reqs; /* RDV_HELD_REQS, allocated when first needed */
	uint32_t nheld_reqs;
	bool listens_added; /* a listen registered since the held requests were last tried */
	/* Hub: listens the directory lost lately (RDV_RELISTEN_NS), oldest overwritten first. */
	struct rdv_recent_listen {
		struct uroce_service svc;
		uint64_t at; /* 0: empty */
	} recent[RDV_RECENT_LISTENS];
	uint32_t recent_next;
};

/*
 * A connection request (REQ, SIDR_REQ) for a service nobody listens on is held instead of
 * rejected, and tried again as listens register, when its listener is probably on its way:
 * - after a takeover, for RDV_HOLD_NS: the other processes register their bindings and
 *   listens again with the new hub, and a REQ that reached it a moment before its listener's
 *   registration would be refused with REJ "invalid service ID";
 * - for RDV_LISTEN_WAIT_NS, when the service is bound at the request's address but not yet
 *   listening, or its port (in any port space) had a listener there less than RDV_RELISTEN_NS
 *   before: programs that tell their peer the port before they listen (Debian's qperf 0.4.11:
 *   cm_open_server sends it after rdma_bind_addr) or listen anew for each connection (qperf,
 *   perftest -R) race with their peer's connect, a race the kernel's slower address
 *   resolution mostly hides.
 * At most RDV_HELD_REQS; what is still held at its deadline is rejected as the kernel rejects
 * at once. A request for a service nobody bound or listened on lately is rejected at once.
 */
#define RDV_HELD_REQS      16
#define RDV_HOLD_NS        (500 * 1000000ull) /* the others reconnect within milliseconds */
#define RDV_LISTEN_WAIT_NS (500 * 1000000ull)
#define RDV_RELISTEN_NS    (1000 * 1000000ull)
#define RDV_HELD_BYTES     512 /* a CM datagram: BTH, DETH, a 256-byte MAD, ICRC */
struct rdv_held_req {
	struct uroce_rx rx; /* rx.roce points at bytes; rx.now: when it first arrived */
	uint64_t until;     /* rejected from then on */
	uint8_t bytes[RDV_HELD_BYTES];
};

static inline struct rdv_hdr rdv_header(enum rdv_type type)
{
	return (struct rdv_hdr){.magic = RDV_MAGIC, .version = RDV_VERSION, .type = (uint16_t)type};
}

/* Hub: a control message to @c; a process that cannot take it is dropped (it will rejoin). */
void rdv_conn_send(struct conn *c, const void *msg, size_t len);

/* Hub: the same to every process that has said HELLO but @skip (NULL: none). */
void rdv_broadcast(struct uroce_rdv *r, const struct conn *skip, const void *msg, size_t len);

/* Not hub: a message to the hub. If it has gone, its EOF starts the takeover. */
void rdv_up_send(struct uroce_rdv *r, const void *msg, size_t len);

/* Hub: @c broke the protocol (@what): it is dropped. */
void rdv_protocol_error(struct conn *c, const char *what);

/* Hub: the datagram @rx to process @c, without waiting. */
void rdv_forward(struct uroce_rdv *r, struct conn *c, const struct uroce_rx *rx);

/* The host's CM directory: rdv_cm.c, rdv_cm_req.c, rdv_cm_conn.c. */

/* Hub: where the MAD @rx to QP 1 goes (cm/route.h); forwarded, held or answered here. */
enum uroce_rdv_route rdv_cm_route(struct uroce_rdv *r, const struct uroce_rx *rx);

/* Hub: RDV_SERVICE from @c, @n bytes in r->buf. */
void rdv_cm_hub_service(struct uroce_rdv *r, struct conn *c, size_t n);

/*
 * Hub: route the held requests again (RDV_HELD_REQS) if a listen registered since they were
 * last tried, or all of them with @final (a deadline passed: those past theirs are rejected,
 * the others held again). Not under r->lock: routing may deliver to this process.
 */
void rdv_cm_retry_held(struct uroce_rdv *r, bool final);

/* Hub: RDV_CONN from @c, @n bytes in r->buf. */
void rdv_cm_hub_conn(struct uroce_rdv *r, struct conn *c, size_t n);

/* Hub: process @c has said HELLO: it is told the hub's own connections. */
void rdv_cm_hub_joined(struct uroce_rdv *r, struct conn *c);

/* Not hub: RDV_CONN from the hub (one of its own connections), @n bytes in r->buf. */
void rdv_cm_process_conn(struct uroce_rdv *r, size_t n);

/*
 * The hub has gone: with @took_over (this process is the new hub) its connections are
 * disconnected on its behalf; either way this process forgets them.
 */
void rdv_cm_old_hub_gone(struct uroce_rdv *r, bool took_over);

/* Hub: process @c has gone; its bindings go with it, its connections are disconnected. */
void rdv_cm_conn_gone(struct uroce_rdv *r, struct conn *c);

/* Not hub: RDV_SERVICE_DONE, @n bytes in r->buf. */
void rdv_cm_done(struct uroce_rdv *r, size_t n);

/*
 * Send the CONN notes uroce_rdv_cm_conn queued, keeping them for a new hub (my_conns), and
 * send (or, as hub, serve) the requests application threads are waiting on.
 */
void rdv_cm_serve(struct uroce_rdv *r);

/* The hub has gone: what it did not answer is asked again of the next. */
void rdv_cm_requeue(struct uroce_rdv *r);

/* The rendezvous cannot go on (@err): every request waiting for an answer gets @err. */
void rdv_cm_fail(struct uroce_rdv *r, int err);

/* This process has become the hub: the directory starts with its own bindings. 0 or ENOMEM. */
int rdv_cm_became_hub(struct uroce_rdv *r);

/* Connected to a new hub: tell it this process's established connections and claim its bindings. */
void rdv_cm_claim_held(struct uroce_rdv *r);

/* The first block of this process (granted or claimed): its comm ID tag. */
void rdv_cm_own_block(struct uroce_rdv *r, uint32_t block);

/*
 * Free what the CM directory holds: the binding lists, the held requests, the connection sets,
 * the CONN notes not sent, and the detached requests never answered.
 */
void rdv_cm_free(struct uroce_rdv *r);

/* The rest of the rendezvous: rdv.c, rdv_link.c, rdv_hub.c, rdv_forward.c. */

/* Wake the threads waiting in uroce_rdv_request_block(): a grant, or no block left. */
void rdv_answered(struct uroce_rdv *r, bool granted);

/*
 * Send one record. With @wait, wait up to SEND_TIMEOUT_MS for room once. Returns 0 or errno.
 */
int rdv_send_record(int fd, const struct iovec *iov, size_t iovcnt, bool wait);

/*
 * Read one record into r->buf. Returns its length; 0 at EOF; -1 with errno EAGAIN (none
 * waiting), EMSGSIZE (a record too long: discarded) or another recvmsg error.
 */
ssize_t rdv_recv_record(struct uroce_rdv *r, int fd);

/* Give @fd the rendezvous's socket buffers (SOCK_BUF each way); a refusal is harmless. */
void rdv_set_buffers(int fd);

/* O_NONBLOCK on @fd: 0 or fcntl's errno. */
int rdv_set_nonblock(int fd);

/* Who is at the other end of the connected Unix socket @fd (SO_PEERCRED). */
struct ucred rdv_peer_cred(int fd);

/*
 * Whether a process of @uid may share this process's rendezvous: one user's processes, and
 * root, which may see any traffic anyway. The hub sees every datagram of the processes joined
 * to it, and forwards them: another user's hub could read or alter them, which the kernel's
 * rxe does not allow between users. Checked both ways, by the hub of each process that joins
 * and by each process of the hub it meets (SO_PEERCRED).
 */
bool rdv_same_user(uid_t uid);

/* @block is this process's now: its QPNs and its CM comm IDs (errors are logged). */
void rdv_add_own_block(struct uroce_rdv *r, uint32_t block);

/* An owner's UDP ports as struct uroce_rdv.ports keeps them: IPv4 | IPv6 << 16. */
uint32_t rdv_pack_ports(const uint16_t ports[2]);

/*
 * Record @block's new owner, whose own UDP ports are @ports (NULL: none, a freed block), and tell
 * every other process (not @skip, which is told apart).
 */
void rdv_set_owner(struct uroce_rdv *r, uint32_t block, uint64_t token, const uint16_t *ports,
		   struct conn *route, struct conn *skip);

/* Hub: grant itself a free QPN block. 0, ENOSPC when none is left, or uroce_qpn_add_block's. */
int rdv_hub_self_grant(struct uroce_rdv *r);

/* Drop the connections found dead (dropping one may find another dead). */
void rdv_reap(struct uroce_rdv *r);

/* The datagram in r->buf (@n bytes, struct rdv_frame first) as a struct uroce_rx. */
struct uroce_rx rdv_rx_of_frame(struct uroce_rdv *r, size_t n);

/* A process: the frame in r->buf (@n bytes) the hub forwarded, to the endpoint. */
void rdv_process_frame(struct uroce_rdv *r, size_t n);

/* Hub, the listening socket readable: accept the processes that connect (of this user only). */
void rdv_on_accept(void *arg);

/* The CM directory's parts that its files share (rdv_cm.c, rdv_cm_conn.c, rdv_cm_req.c). */

/* Append to a binding list. 0 or ENOMEM. */
int rdv_cm_add(struct rdv_svc **list, uint32_t *n, uint32_t *cap, const struct rdv_svc *e);

/* Remove @e from a binding list of *@n (the last moves into its place). */
void rdv_cm_remove_at(struct rdv_svc *list, uint32_t *n, struct rdv_svc *e);

/* Hub: @op on @s for @owner (NULL: the hub itself). 0 or an errno; BIND fills a port 0. */
int rdv_cm_dir_apply(struct uroce_rdv *r, struct conn *owner, enum uroce_service_op op,
		     struct uroce_service *s);

/* Hub: take @e out of the directory, remembering a listen it had (rdv_held_req). */
void rdv_cm_dir_remove(struct uroce_rdv *r, struct rdv_svc *e);

/* This process's own list after @op on @s succeeded. */
void rdv_cm_held_apply(struct uroce_rdv *r, enum uroce_service_op op,
		       const struct uroce_service *s);

/* The RDV_SERVICE message of request @seq: @op on @s. */
struct rdv_service_msg rdv_cm_msg_of(uint32_t seq, enum uroce_service_op op,
				     const struct uroce_service *s);

/* Add (@up) or remove @cc in *@set. 0 or ENOMEM. */
int rdv_cm_conns_apply(struct rdv_cm_conns **set, bool up, const struct uroce_cm_conn *cc);

/* The connection an RDV_CONN message names. */
struct uroce_cm_conn rdv_cm_conn_of(const struct rdv_conn_msg *m);

/* The RDV_CONN message for @cc established (@up) or gone. */
struct rdv_conn_msg rdv_cm_conn_msg(bool up, const struct uroce_cm_conn *cc);

/*
 * Free the detached requests (uroce_rdv_service_async) of the list @q; the others are on the
 * stacks of their threads.
 */
void rdv_cm_free_detached(struct rdv_svc_req *q);

#endif
