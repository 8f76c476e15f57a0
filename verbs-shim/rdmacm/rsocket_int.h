/* SPDX-License-Identifier: MIT */
/*
 * rsockets (rsocket(7)) inside uroce's librdmacm.so.1: the socket API over RC queue pairs,
 * speaking rdma-core's rsocket protocol (librdmacm/rsocket.c of rdma-core 44) on the wire, so
 * that a uroce rsocket talks to an rdma-core one over the kernel's rxe or an RNIC.
 *
 * The protocol, as rdma-core defines it:
 * - A connection's REQ and REP carry struct rs_wire_conn (40 bytes) as the rdma_cm's private
 *   data: the version (1), flags (the sender's byte order, iomap support), the credits (the
 *   sender's receive queue size), where the peer writes its credit updates (the "target SGL",
 *   two rs_wire_sge entries followed by the iomap table) and the first half of the sender's
 *   receive buffer, which the peer may fill at once.
 * - Every message is an RDMA WRITE with immediate data whose 32-bit immediate (network order)
 *   says what it is: bits 31..29 the op (RS_OP_*), bits 28..0 its data (a length, credits, an
 *   iomap index or a control code). Data lands directly in the peer's receive buffer; a receive
 *   work request (no buffer) only takes the immediate.
 * - Credits: the receiver grants one message per posted receive (sequence numbers of 16 bits)
 *   and hands the halves of its receive buffer back in turn by writing an SGE into the
 *   sender's target SGL (RS_OP_SGL); zero-length RS_OP_SGL writes grant messages only.
 * - Control messages (RS_OP_CTRL): DISCONNECT, SHUTDOWN (write side closed), and KEEPALIVE (a
 *   zero-length RDMA WRITE without immediate, which the peer's RNIC only acknowledges). At
 *   most RS_QP_CTRL_SIZE of them are in flight, outside the data's send queue budget.
 *
 * The files of this module, one job each: rsocket.c (the socket table, create, bind, close,
 * names, rfcntl), rsocket_conn.c (the endpoint, the handshake, rconnect), rsocket_accept.c
 * (rlisten, accepting, raccept, a connection's CM events, rshutdown), rsocket_data.c
 * (completions, credits, posting), rsocket_io.c (the send and receive calls), rsocket_poll.c
 * (rpoll, rselect), rsocket_opt.c (rsetsockopt, rgetsockopt), rsocket_iomap.c (riomap,
 * riounmap, riowrite), rsocket_svc.c (the service thread: connection requests, CM events,
 * keepalives, datagram address resolution) and rsocket_dgram.c (datagram rsockets over UD).
 */
#ifndef UROCE_VERBS_SHIM_RDMACM_RSOCKET_INT_H
#define UROCE_VERBS_SHIM_RDMACM_RSOCKET_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* rdma-core's constants (librdmacm/rsocket.c); the wire depends on those marked so. */
#define RS_VERSION         1         /* wire: rs_wire_conn.version */
#define RS_CONN_FLAG_NET   (1u << 0) /* wire: the sender is big-endian */
#define RS_CONN_FLAG_IOMAP (1u << 1) /* wire: the target SGL is followed by an iomap table */
#define RS_SGL_SIZE        2         /* wire: entries of the target SGL */
#define RS_QP_CTRL_SIZE    4         /* control messages in flight (a power of two) */
#define RS_SNDLOWAT        2048      /* smallest send; a datagram's largest payload + header */
#define RS_MAX_TRANSFER    65536     /* the largest transfer (rdma-core's) */
#define RS_QP_MIN_SIZE     16
#define RS_QP_MAX_SIZE     0xFFFE
#define RS_CONN_RETRIES    6   /* address and route resolution retries (1 s << n) */
#define RS_DEF_SQSIZE      384 /* rdma-core's defaults (no /etc/rdma/rsocket files) */
#define RS_DEF_RQSIZE      384
#define RS_DEF_INLINE      64
#define RS_DEF_MEM         (1u << 17) /* receive buffer */
#define RS_DEF_WMEM        (1u << 17) /* send buffer */
#define RS_DEF_POLLING_US  10         /* rdma-core's polling_time: spin before sleeping */

/* wire: the op in bits 31..29 of the immediate data. */
enum rs_op {
	RS_OP_DATA = 0,
	RS_OP_WRITE = 2, /* riowrite: never sent as an immediate, only in our wr_id */
	RS_OP_SGL = 4,
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};

/* wire: the data of RS_OP_CTRL. */
enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0,
	RS_CTRL_KEEPALIVE = 1,
	RS_CTRL_SHUTDOWN = 2,
};

static inline uint32_t rs_msg(uint32_t op, uint32_t data)
{
	return op << 29 | (data & 0x1FFFFFFF);
}

static inline uint32_t rs_msg_op(uint32_t msg)
{
	return msg >> 29;
}

static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & 0x1FFFFFFF;
}

/*
 * wire: an SGE as the peer writes it into a target SGL or iomap table: in the byte order of the
 * side that reads it (the writer swaps when the flags of the connection say the orders
 * differ). In rs_wire_conn, every field is big-endian.
 */
struct rs_wire_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* wire: an iomap table entry (riomap): the offset the peer names and where it lands. */
struct rs_wire_iomap {
	uint64_t offset;
	struct rs_wire_sge sge;
};

/* wire: the private data of the REQ and of the REP (rdma-core's struct rs_conn_data). */
struct rs_wire_conn {
	uint8_t version;
	uint8_t flags;
	uint16_t credits; /* big-endian */
	uint8_t reserved[3];
	uint8_t target_iomap_size;     /* rs_value_to_scale(entries, 8) */
	struct rs_wire_sge target_sgl; /* length: RS_SGL_SIZE entries */
	struct rs_wire_sge data_buf;
};

_Static_assert(sizeof(struct rs_wire_sge) == 16, "rs_sge is 16 bytes on the wire");
_Static_assert(sizeof(struct rs_wire_iomap) == 24, "rs_iomap is 24 bytes on the wire");
_Static_assert(sizeof(struct rs_wire_conn) == 40, "rs_conn_data is 40 bytes on the wire");

/* A socket's state; RS_CONNECTED has its read and write sides in rs.readable, rs.writable. */
enum rs_state {
	RS_IDLE,
	RS_BOUND,
	RS_LISTENING,
	RS_RESOLVING_ADDR, /* RS_RESOLVING_ADDR .. RS_ACCEPTING: opening (rs_opening) */
	RS_RESOLVING_ROUTE,
	RS_CONNECTING,
	RS_ACCEPTING,
	RS_CONNECTED,
	RS_CONNECT_ERROR, /* the connection failed; rs.err says why */
	RS_DISCONNECTED,  /* the peer or we closed it */
	RS_ERROR,         /* a send or receive failed */
};

struct rs_dgram; /* rsocket_dgram.c */
struct rs_iomr;  /* rsocket_iomap.c */

/* One received message not yet read: its op and bytes left (stream) */
struct rs_rmsg {
	uint32_t op, len;
};

struct rs {
	int type;   /* SOCK_STREAM or SOCK_DGRAM */
	int index;  /* the socket's number: its id's channel fd, or a datagram's UDP socket */
	int domain; /* AF_INET or AF_INET6 */
	/*
	 * lock guards everything below but what the comments say; a thread that waits for the
	 * completion channel drops it and holds wait_lock instead (rs_wait_cq), so that a sender
	 * waiting for credits never keeps a receiver from taking data, as rdma-core's cq_lock and
	 * cq_wait_lock.
	 */
	pthread_mutex_t lock, wait_lock;
	pthread_mutex_t cm_lock; /* the id's CM events: the application's connect, the service */
	enum rs_state state;
	bool readable, writable; /* in RS_CONNECTED */
	int err;                 /* SO_ERROR */
	int fd_flags;            /* rfcntl F_SETFL (O_NONBLOCK) */
	int retries;             /* resolution attempts (rs_do_connect) */
	bool in_svc;             /* registered with the service thread (rsocket_svc.c) */

	/* options (rsocket_opt.c) */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint16_t target_iomap_size;            /* entries offered to the peer */
	uint64_t so_opts, tcp_opts, ipv6_opts; /* 1 << optname for the on/off options */
	unsigned int keepalive_time;           /* seconds (TCP_KEEPIDLE) */
	bool keepalive;
	uint64_t keepalive_due; /* the service's next keepalive, in ms of CLOCK_MONOTONIC */
	void *route;            /* RDMA_ROUTE: struct ibv_path_data[] for rdma_set_option */
	socklen_t route_len;

	/* stream */
	struct rdma_cm_id *cm_id;
	struct ibv_comp_channel *cq_channel; /* its fd is non-blocking */
	struct ibv_cq *cq;
	atomic_bool cq_armed;
	unsigned int cq_events; /* taken, not yet acked */
	bool peer_swap;         /* the peer's byte order differs: swap what we write to it */

	/* listening: connections established and not yet taken by raccept */
	int accept_fd; /* eventfd (semaphore), readable while the queue holds one */
	struct rs *accept_head, **accept_tail, *accept_next;
	struct rs *listener; /* an accepted socket until raccept takes it */

	/* send side */
	uint8_t *sbuf; /* sbuf_size of data, then RS_QP_CTRL_SIZE control SGEs */
	struct ibv_mr *smr;
	uint32_t sbuf_head; /* where the next send's bytes are staged */
	uint32_t sbuf_bytes_avail;
	int sqe_avail; /* send WRs for data and iomaps */
	unsigned int ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp;     /* messages sent; the peer's credit limit */
	struct rs_wire_sge remote_sgl;   /* the peer's target SGL (host order) */
	struct rs_wire_sge remote_iomap; /* the peer's iomap table (host order) */
	int remote_sge;                  /* the entry of the peer's SGL we write next */

	/* where the peer lets us write: our target SGL and iomap table, written by the peer */
	void *target_list;
	struct ibv_mr *target_mr;
	volatile struct rs_wire_sge *target_sgl;
	volatile struct rs_wire_iomap *target_iomap;
	int target_sge; /* the entry we write into now */

	/* receive side */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t rbuf_offset;        /* the next byte to read */
	uint32_t rbuf_free_offset;   /* the half to hand the peer next */
	uint32_t rbuf_bytes_avail;   /* consumed and not yet handed back */
	uint16_t rseq_no, rseq_comp; /* messages consumed; when to grant more */
	struct rs_rmsg *rmsg;        /* a ring of rq_size + 1 */
	int rmsg_head, rmsg_tail;
	size_t peek_want; /* rrecv MSG_PEEK | MSG_WAITALL: the bytes it waits for (lock) */

	/* iomap (rsocket_iomap.c), under map_lock (taken after lock when both are) */
	pthread_mutex_t map_lock;
	struct rs_iomr *iomaps, *iomap_queue; /* sent to the peer / waiting to be */
	struct rs_iomr *remote_iomaps;        /* our slots in the peer's table */
	bool iomap_pending;

	struct rs_dgram *dg; /* SOCK_DGRAM */
};

/* rsocket.c: the socket table. */
struct rs *rs_lookup(int index);
int rs_insert(struct rs *rs, int index);
void rs_remove(struct rs *rs);
struct rs *rs_alloc(const struct rs *inherit, int type);
void rs_free(struct rs *rs);
bool rs_nonblocking(const struct rs *rs, int flags);
uint64_t rs_now_ms(void);
/* errno = @err, -1. */
static inline int rs_fail(int err)
{
	errno = err;
	return -1;
}
/* rdma-core's scale of the iomap size in a byte (rs_value_to_scale, rs_scale_to_value). */
int rs_value_to_scale(int value, int bits);
int rs_scale_to_value(int value, int bits);

/* rsocket_conf.c: the defaults of /etc/rdma/rsocket/ (rdma-core's rs_configure) */
struct rs_conf {
	uint32_t polling_us;       /* polling_time */
	uint16_t inline_size;      /* inline_default */
	uint16_t sq_size, rq_size; /* sqsize_default, rqsize_default */
	uint32_t mem, wmem;        /* mem_default, wmem_default */
	uint16_t iomap_size;       /* iomap_size, in entries */
};
/* The defaults, read from the files at the first call (thread-safe); never NULL. */
const struct rs_conf *rs_conf(void);

/* rsocket_conn.c: the endpoint (CQ, QP, buffers) and the handshake's private data */
int rs_create_ep(struct rs *rs);
void rs_format_conn(const struct rs *rs, struct rs_wire_conn *c);
void rs_save_conn(struct rs *rs, const struct rs_wire_conn *c);
void rs_set_connected(struct rs *rs);
int rs_do_connect(struct rs *rs);
/* rsocket_accept.c */
int rs_do_accept(struct rs *listener);
void rs_cm_event(struct rs *rs);
void rs_free_endpoint(struct rs *rs);
int rs_set_nonblock_fd(int fd, bool on);
void rs_qp_error(struct rs *rs);

/* rsocket_data.c (lock held unless said) */
int rs_process_cq(struct rs *rs, bool nonblock, bool (*test)(struct rs *rs));
int rs_poll_cq(struct rs *rs);
void rs_update_credits(struct rs *rs);
bool rs_can_send(struct rs *rs);
bool rs_have_rdata(struct rs *rs);
bool rs_conn_have_rdata(struct rs *rs);
bool rs_conn_have_peek(struct rs *rs);
size_t rs_rdata_bytes(const struct rs *rs);
bool rs_conn_can_send(struct rs *rs);
bool rs_conn_can_send_ctrl(struct rs *rs);
bool rs_conn_all_sends_done(struct rs *rs);
bool rs_ctrl_avail(const struct rs *rs);
int rs_post_msg(struct rs *rs, uint32_t msg);
int rs_post_write(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t wr_data, int flags,
		  uint64_t addr, uint32_t rkey);
int rs_post_write_msg(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, int flags,
		      uint64_t addr, uint32_t rkey);
int rs_take_cq_event(struct rs *rs); /* wait_lock held, lock not */
int rs_arm_cq(struct rs *rs);
int rs_stage(struct rs *rs, const void *src, uint32_t len, struct ibv_sge sge[2]);
/* Where the bytes of a send come from: an iovec array and the offset in its first. */
struct rs_src {
	const struct iovec *iov;
	size_t off;
};
int rs_send_chunk(struct rs *rs, struct rs_src *src, uint32_t len);
int rs_wait_send(struct rs *rs, int flags);
uint32_t rs_next_xfer(const struct rs *rs, size_t left);
void rs_consume_cq_event(struct rs *rs);
int rs_send_error(const struct rs *rs);
int rs_get_comp(struct rs *rs, bool nonblock, bool (*test)(struct rs *rs));

/* rsocket_iomap.c */
int rs_send_iomaps(struct rs *rs, int flags); /* lock held */
void rs_free_iomaps(struct rs *rs);

/* rsocket_svc.c: the service thread */
int rs_svc_add(struct rs *rs);
int rs_svc_add_locked(struct rs *rs); /* from the service thread itself */
void rs_svc_remove(struct rs *rs);
void rs_svc_kick(void);    /* re-read the keepalive deadlines */
void rs_poll_signal(void); /* a socket's state changed: rpoll sleepers look again */
int rs_poll_waiter_fd(void);
void rs_poll_waiting(bool on);

/* rsocket_dgram.c */
int ds_init(struct rs *rs, int domain);
void ds_free(struct rs *rs);
int ds_bind(struct rs *rs, const struct sockaddr *addr, socklen_t len);
int ds_connect(struct rs *rs, const struct sockaddr *addr, socklen_t len);
ssize_t ds_sendto(struct rs *rs, const void *buf, size_t len, int flags, const struct sockaddr *to,
		  socklen_t tolen);
ssize_t ds_recvfrom(struct rs *rs, void *buf, size_t len, int flags, struct sockaddr *from,
		    socklen_t *fromlen);
int ds_poll_events(struct rs *rs, short events, bool nonblock);
int ds_wait_fd(struct rs *rs);
void ds_consume_event(struct rs *rs);
void ds_svc_input(struct rs *rs); /* the service thread: the UDP socket is readable */
int ds_shutdown(struct rs *rs);

#endif
