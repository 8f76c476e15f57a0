// SPDX-License-Identifier: MIT
/*
 * The io_uring backend of the progress thread (progress_int.h): a multishot recvmsg per UDP
 * socket over one provided-buffer ring, a poll on the epoll set of watched descriptors, and
 * the wait for both with the timers' deadline as timeout. Leaving the sockets to polling
 * threads is cancelling the multishot receives and taking the completions they made before.
 *
 * A socket whose datagrams continue an RDMA WRITE goes into stream mode: its multishot receive
 * is cancelled, a poll tells when the socket has more, and this thread receives with recvmsg
 * (progress_receive_slot), each datagram of a WRITE straight into place (progress_steer.c).
 * Stream mode lasts while each turn at the socket steers a datagram or ends amid a stream:
 * across the messages of a stream (whose first datagram, with the RETH, is not steered) and
 * the ACKs between them. Only with DEFER_TASKRUN, under
 * which the ring receives only when this thread waits on it: the two ways never take datagrams
 * out of order.
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

#define SQ_ENTRIES 64
#define CQ_ENTRIES 1024 /* room for a burst of multishot completions */
#define BUF_GROUP  0
#define NAME_LEN   32 /* a sockaddr_in6 (28) rounded up, so the control messages are aligned */
/* Each buffer: the recvmsg header, name, control messages and payload; 64-byte aligned. */
#define BUF_SIZE                                                                                   \
	((sizeof(struct io_uring_recvmsg_out) + NAME_LEN + UROCE_UDP_CONTROL_LEN +                 \
	  UROCE_UDP_RECV_MAX + 63) &                                                               \
	 ~(size_t)63)

/*
 * io_uring user_data: 1 + index of a UDP socket (its multishot receive), the epoll poll, a
 * cancel, or UD_POLL + index of a UDP socket (its poll in stream mode).
 */
#define UD_EPOLL  (PROGRESS_MAX_UDP + 1)
#define UD_CANCEL (PROGRESS_MAX_UDP + 2)
#define UD_POLL   (PROGRESS_MAX_UDP + 3)

struct uring {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	unsigned int nbufs;
	bool epoll_armed;
	unsigned int recycled;
	/*
	 * Stream mode, per socket: in it; its poll is outstanding, or reported the socket
	 * readable; its multishot receive is being cancelled.
	 */
	bool stream[PROGRESS_MAX_UDP];
	bool polled[PROGRESS_MAX_UDP];
	bool readable[PROGRESS_MAX_UDP];
	bool to_stream[PROGRESS_MAX_UDP];
};

static size_t br_bytes(const struct uring *u)
{
	return u->nbufs * sizeof(struct io_uring_buf);
}

/*
 * liburing 2.3 has no io_uring_setup_buf_ring() (2.4): map the ring ourselves and register it.
 */
static int setup_buffers(struct uring *u)
{
	struct io_uring_buf_reg reg = {.ring_entries = u->nbufs, .bgid = BUF_GROUP};
	void *ring_mem;
	int ret;

	ring_mem =
		mmap(NULL, br_bytes(u), PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (ring_mem == MAP_FAILED)
		return errno;
	u->br = ring_mem;
	u->bufs = malloc((size_t)u->nbufs * BUF_SIZE);
	if (!u->bufs)
		return ENOMEM;
	reg.ring_addr = (uintptr_t)ring_mem;
	ret = io_uring_register_buf_ring(&u->ring, &reg, 0);
	if (ret < 0)
		return -ret;
	io_uring_buf_ring_init(u->br);
	for (unsigned int i = 0; i < u->nbufs; i++)
		io_uring_buf_ring_add(u->br, u->bufs + (size_t)i * BUF_SIZE, BUF_SIZE,
				      (unsigned short)i, io_uring_buf_ring_mask(u->nbufs), (int)i);
	io_uring_buf_ring_advance(u->br, (int)u->nbufs);
	return 0;
}

static void free_buffers(struct uring *u)
{
	if (u->br)
		munmap(u->br, br_bytes(u));
	free(u->bufs);
}

static int setup(struct uroce_progress *p)
{
	struct io_uring_params params = {
		.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_DEFER_TASKRUN,
		.cq_entries = CQ_ENTRIES,
	};
	struct uring *u = calloc(1, sizeof(*u));
	int ret;

	if (!u)
		return ENOMEM;
	u->nbufs = p->nbufs;
	ret = io_uring_queue_init_params(SQ_ENTRIES, &u->ring, &params);
	if (ret == -EINVAL) {
		/* Before Linux 6.1: no DEFER_TASKRUN (SINGLE_ISSUER came in 6.0). */
		params = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE,
						  .cq_entries = CQ_ENTRIES};
		ret = io_uring_queue_init_params(SQ_ENTRIES, &u->ring, &params);
	}
	if (ret < 0) {
		free(u);
		return -ret; /* the caller says what happens next (progress.c) */
	}
	ret = setup_buffers(u);
	if (ret) {
		uroce_log(UROCE_LOG_ERROR, "io_uring buffer ring: %s", strerror(ret));
		free_buffers(u);
		io_uring_queue_exit(&u->ring);
		free(u);
		return ret;
	}
	p->be = u;
	return 0;
}

static void teardown(struct uroce_progress *p)
{
	struct uring *u = p->be;

	io_uring_queue_exit(&u->ring);
	free_buffers(u);
	free(u);
	p->be = NULL;
}

static struct io_uring_sqe *get_sqe(struct uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (!sqe) {
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

/*
 * A socket in stream mode: its multishot receive is cancelled (its last completion, no F_MORE,
 * comes after those it made before), then a poll is armed, once at a time.
 */
static void arm_stream(struct uring *u, struct udp_slot *s, unsigned int i)
{
	struct io_uring_sqe *sqe;

	if (s->armed) {
		if (u->to_stream[i] || s->cancelling || !(sqe = get_sqe(u)))
			return;
		io_uring_prep_cancel64(sqe, i + 1, 0);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		u->to_stream[i] = true;
	} else if (!u->polled[i] && (sqe = get_sqe(u))) {
		io_uring_prep_poll_add(sqe, s->sock.fd, POLLIN);
		io_uring_sqe_set_data64(sqe, UD_POLL + i);
		u->polled[i] = true;
	}
}

/* Arm what is not armed: new sockets, ended multishots, the epoll poll, stream mode's polls. */
static void arm(struct uroce_progress *p, struct uring *u)
{
	unsigned int n = progress_udp_count(p);

	for (unsigned int i = 0; i < n && !progress_sockets_wanted(p); i++) {
		struct udp_slot *s = &p->udp[i];
		struct io_uring_sqe *sqe;

		if (u->stream[i]) {
			arm_stream(u, s, i);
			continue;
		}
		if (s->armed || !(sqe = get_sqe(u)))
			continue;
		io_uring_prep_recvmsg_multishot(sqe, s->sock.fd, &s->msg, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = BUF_GROUP;
		io_uring_sqe_set_data64(sqe, i + 1);
		s->armed = true;
	}
	if (!u->epoll_armed) {
		struct io_uring_sqe *sqe = get_sqe(u);

		if (sqe) {
			io_uring_prep_poll_add(sqe, p->epfd, POLLIN);
			io_uring_sqe_set_data64(sqe, UD_EPOLL);
			u->epoll_armed = true;
		}
	}
}

static void recycle(struct uring *u, unsigned int bid)
{
	io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * BUF_SIZE, BUF_SIZE,
			      (unsigned short)bid, io_uring_buf_ring_mask(u->nbufs),
			      (int)u->recycled++);
}

static void on_buffer(struct uroce_progress *p, struct udp_slot *s, uint8_t *buf, int len,
		      uint64_t now)
{
	struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, len, &s->msg);
	struct roce_ipudp ip;
	uint16_t seg = 0;

	if (!o)
		return;
	if (o->flags & MSG_TRUNC) {
		atomic_fetch_add(&p->rx_oversize, 1);
		return;
	}
	if (uroce_udp_rx_source(&ip, &s->sock, io_uring_recvmsg_name(o), o->namelen))
		return;
	for (struct cmsghdr *c = io_uring_recvmsg_cmsg_firsthdr(o, &s->msg); c;
	     c = io_uring_recvmsg_cmsg_nexthdr(o, &s->msg, c))
		uroce_udp_rx_cmsg(&ip, c, &seg);
	progress_received(p, &ip, seg, io_uring_recvmsg_payload(o, &s->msg),
			  io_uring_recvmsg_payload_length(o, len, &s->msg), now);
	progress_steer_next(s, io_uring_recvmsg_payload(o, &s->msg),
			    io_uring_recvmsg_payload_length(o, len, &s->msg), seg);
}

/*
 * After the completions: a socket whose last datagram continues a WRITE enters stream mode, and
 * has the next ones received straight into place at once (its multishot receive, until its
 * cancel, receives only when this thread next waits on the ring); a socket in stream mode
 * that its poll found readable has its turn, and leaves stream mode if that steers nothing and
 * its last datagram does not continue a stream to steer.
 */
static void receive_streams(struct uroce_progress *p, struct uring *u, uint64_t now)
{
	unsigned int n = progress_udp_count(p), total = 0;

	if (!(u->ring.flags & IORING_SETUP_DEFER_TASKRUN))
		return;
	for (unsigned int i = 0; i < n; i++) {
		struct udp_slot *s = &p->udp[i];
		unsigned int steered = s->steered;

		if (!u->stream[i]) {
			if (s->steer_next) {
				u->stream[i] = true;
				progress_steer_stream(p, i, now, &total);
			}
			continue;
		}
		if (!u->readable[i])
			continue;
		u->readable[i] = false;
		progress_receive_slot(p, i, now);
		if (s->steered == steered && !s->steer_next)
			u->stream[i] = false;
	}
}

/* Take the completions as one batch, then give the buffers back. */
static void dispatch(struct uroce_progress *p)
{
	struct uring *u = p->be;
	struct io_uring_cqe *cqe;
	unsigned int head, count = 0;
	uint64_t now = uroce_now();
	bool epoll_ready = false;

	u->recycled = 0;
	io_uring_for_each_cqe(&u->ring, head, cqe)
	{
		uint64_t ud = io_uring_cqe_get_data64(cqe);

		count++;
		if (ud == UD_EPOLL) {
			u->epoll_armed = false;
			epoll_ready = true;
			continue;
		}
		if (ud >= UD_POLL && ud < UD_POLL + PROGRESS_MAX_UDP) {
			/* Readable (received in receive_streams), or removed by release(). */
			u->polled[ud - UD_POLL] = false;
			u->readable[ud - UD_POLL] = cqe->res > 0;
			p->udp[ud - UD_POLL].cancelling = false;
			continue;
		}
		if (ud < 1 || ud > PROGRESS_MAX_UDP)
			continue;
		if (cqe->flags & IORING_CQE_F_BUFFER) {
			unsigned int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

			if (cqe->res > 0)
				on_buffer(p, &p->udp[ud - 1], u->bufs + (size_t)bid * BUF_SIZE,
					  cqe->res, now);
			recycle(u, bid);
		}
		if (!(cqe->flags & IORING_CQE_F_MORE)) {
			struct udp_slot *s = &p->udp[ud - 1];

			s->armed = false;
			if (s->cancelling || u->to_stream[ud - 1]) {
				/* release() or stream mode ended it: no re-arm */
				s->cancelling = false;
				u->to_stream[ud - 1] = false;
				continue;
			}
			/* ENOBUFS: every buffer was in use; they are back after this batch. */
			atomic_fetch_add(&p->rearms, 1);
			if (cqe->res < 0 && cqe->res != -ENOBUFS)
				uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s",
					  s->sock.port, strerror(-cqe->res));
		}
	}
	io_uring_cq_advance(&u->ring, count);
	if (u->recycled)
		io_uring_buf_ring_advance(u->br, (int)u->recycled);
	receive_streams(p, u, now);
	if (epoll_ready)
		progress_on_epoll(p);
}

static bool wait(struct uroce_progress *p, uint64_t deadline)
{
	struct uring *u = p->be;
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;
	uint64_t now = uroce_now();

	arm(p, u);
	if (deadline != UINT64_MAX) {
		uint64_t wait = deadline > now ? deadline - now : 0;

		ts.tv_sec = (long long)(wait / 1000000000u);
		ts.tv_nsec = (long long)(wait % 1000000000u);
	}
	io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, deadline == UINT64_MAX ? NULL : &ts,
					 NULL);
	return io_uring_cq_ready(&u->ring) > 0;
}

static bool release(struct uroce_progress *p)
{
	struct uring *u = p->be;
	unsigned int n = progress_udp_count(p);
	bool free = true;

	for (unsigned int i = 0; i < n; i++) {
		struct udp_slot *s = &p->udp[i];
		struct io_uring_sqe *sqe;

		if (u->polled[i]) {
			free = false;
			if (!s->cancelling && (sqe = get_sqe(u))) {
				io_uring_prep_poll_remove(sqe, UD_POLL + i);
				io_uring_sqe_set_data64(sqe, UD_CANCEL);
				s->cancelling = true;
			}
			continue;
		}
		if (!s->armed)
			continue;
		free = false;
		if (s->cancelling || !(sqe = get_sqe(u)))
			continue;
		/* Its last completion (-ECANCELED, no F_MORE) comes after those it made before. */
		io_uring_prep_cancel64(sqe, i + 1, 0);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		s->cancelling = true;
	}
	return free;
}

const struct progress_backend progress_uring_backend = {
	.name = "io_uring",
	.setup = setup,
	.teardown = teardown,
	.wait = wait,
	.dispatch = dispatch,
	.release = release,
};
