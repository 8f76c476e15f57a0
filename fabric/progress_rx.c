/* SPDX-License-Identifier: MIT */
/*
 * The direct receive (progress_int.h): recvmmsg from the UDP sockets into the buffers of
 * struct direct_rx, for a thread polling a CQ, a waiting thread and the epoll backend, and the
 * hand-off of each datagram (a GRO receive split into its segments) to the datagram callback.
 * Under the receive lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/progress_int.h"
#include "transport/wire.h"

#define RX_BATCH  16 /* datagrams per recvmmsg of the direct receive */
#define RX_ROUNDS 8  /* receives of one turn at a socket (hand_out_stream) */
/* An empty poll this soon after a batch leaves it put off (progress_receive_direct). */
#define BATCH_HOLD_NS 5000u
/* Direct receive buffers hold UROCE_UDP_RECV_MAX bytes, 64-byte aligned. */
#define RX_STRIDE ((UROCE_UDP_RECV_MAX + 63) & ~(size_t)63)

struct direct_rx {
	uint8_t *bufs; /* RX_BATCH buffers of RX_STRIDE bytes */
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct sockaddr_storage names[RX_BATCH];
	union {
		struct cmsghdr align;
		char buf[UROCE_UDP_CONTROL_LEN];
	} control[RX_BATCH];
};

/*
 * Hand out the packet of @len bytes at @roce, the datagram's @i-th (rx: its headers), its
 * payload at @gap if that is set (progress_steer.c).
 */
static void hand_out_packet(struct uroce_progress *p, struct uroce_rx *rx, const uint8_t *roce,
			    size_t len, size_t i, const struct roce_pkt_gap *gap)
{
	/*
	 * The kernel gives an IPv4 datagram with DF from an unconnected socket the ID 0, and the
	 * segments of a UDP GSO send 0, 1, 2, ... (ip_select_ident_segs, inet_gso_segment); a GRO
	 * receive on loopback or veth is one such send. Guessed so, the ICRC check
	 * (roce_icrc_verify) seldom has to recover the ID.
	 */
	if (roce_ipudp_is_v4(&rx->ip))
		rx->ip.ip_id = (uint16_t)i;
	rx->roce = roce;
	rx->len = len;
	rx->gap = gap ? *gap : (struct roce_pkt_gap){0};
	if (len > UROCE_PROGRESS_PAYLOAD_MAX) {
		atomic_fetch_add(&p->rx_oversize, 1);
		return;
	}
	switch (roce_answer_of(roce, len)) {
	case ROCE_ANSWER_NONE:
		break;
	case ROCE_ANSWER_ACK:
		p->batch_acks = true;
		break;
	case ROCE_ANSWER_NOW:
		p->batch_now = true;
		break;
	}
	p->ops->datagram(p->arg, rx);
}

void progress_received_gaps(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
			    const uint8_t *data, size_t len, const struct roce_pkt_gap *gaps,
			    unsigned int ngaps, uint64_t now)
{
	struct uroce_rx rx = {.ip = *ip, .now = now};
	size_t end = len;

	/*
	 * An ACK sent behind the requests it went ahead of (transport/wire.h) is taken first. A
	 * steered packet is a request, and never the last (a shorter segment, or the remainder).
	 */
	if (roce_datagram_acks_first(data, len, seg)) {
		end = (len - 1) / seg * seg;
		hand_out_packet(p, &rx, data + end, len - end, end / seg, NULL);
	}
	for (size_t off = 0, i = 0; off < end; i++) {
		size_t n = uroce_udp_segment(len, seg, off);

		hand_out_packet(p, &rx, data + off, n, i,
				i < ngaps && gaps[i].len ? &gaps[i] : NULL);
		off += n;
	}
	if (p->ops->datagram_end)
		p->ops->datagram_end(p->arg);
}

void progress_received(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
		       const uint8_t *data, size_t len, uint64_t now)
{
	progress_received_gaps(p, ip, seg, data, len, NULL, 0, now);
}

/*
 * Make the first @n headers of the direct receive ready for recvmmsg again: it writes back
 * only the name and control lengths and the flags, and only of the datagrams it returns, so an
 * empty poll (most of them) leaves all RX_BATCH ready.
 */
static void rearm_msgs(struct direct_rx *d, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct msghdr *m = &d->msgs[i].msg_hdr;

		m->msg_name = &d->names[i];
		m->msg_namelen = sizeof(d->names[i]);
		m->msg_iov = &d->iov[i];
		m->msg_iovlen = 1;
		m->msg_control = d->control[i].buf;
		m->msg_controllen = sizeof(d->control[i].buf);
		m->msg_flags = 0;
	}
}

/*
 * Up to @want datagrams from @fd without waiting: their count, or -1 with errno set. One
 * through recvmsg, which spares recvmmsg's own work around it (an empty poll's most of it).
 */
static int receive_some(int fd, struct mmsghdr *msgs, unsigned int want)
{
	ssize_t len;

	if (want > 1)
		return nc_recvmmsg(fd, msgs, want, MSG_DONTWAIT);
	len = nc_recvmsg(fd, &msgs[0].msg_hdr, MSG_DONTWAIT);
	if (len < 0)
		return -1;
	msgs[0].msg_len = (unsigned int)len;
	return 1;
}

/*
 * Up to @want datagrams from @s into the direct receive's buffers: their count, 0 when the
 * socket is empty (recorded in s->drained, which the caller holds as the socket's receiver).
 */
static int receive(struct udp_slot *s, struct direct_rx *d, unsigned int want)
{
	int n = receive_some(s->sock.fd, d->msgs, want);

	s->drained = n <= 0;
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s", s->sock.port,
			  strerror(errno));
	return n > 0 ? n : 0;
}

/*
 * Under the receive lock: hand the @n datagrams of the direct receive's buffers (from @slot) to
 * the callbacks. Returns whether more of the last one's message follows.
 */
static bool hand_out(struct uroce_progress *p, unsigned int slot, int n, uint64_t now)
{
	struct udp_slot *s = &p->udp[slot];
	struct direct_rx *d = p->direct;
	bool more = false;

	for (int i = 0; i < n; i++) {
		struct msghdr *m = &d->msgs[i].msg_hdr;
		struct roce_ipudp ip;
		uint16_t seg = 0;

		if (m->msg_flags & MSG_TRUNC) {
			atomic_fetch_add(&p->rx_oversize, 1);
			continue;
		}
		if (uroce_udp_rx_source(&ip, &s->sock, m->msg_name, m->msg_namelen))
			continue;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
			uroce_udp_rx_cmsg(&ip, c, &seg);
		more = roce_datagram_continues(d->iov[i].iov_base, d->msgs[i].msg_len, seg);
		progress_received(p, &ip, seg, d->iov[i].iov_base, d->msgs[i].msg_len, now);
		progress_steer_next(s, d->iov[i].iov_base, d->msgs[i].msg_len, seg);
		s->steered_last = false;
	}
	rearm_msgs(d, (unsigned int)n);
	return more;
}

/*
 * Under the receive lock: hand out the @n datagrams a receive of @want from @slot brought, then
 * go on receiving while the socket has more: a receive of one datagram ends there unless more of
 * its message follows (roce_datagram_continues), since a receive that ends amid a message
 * leaves its last packets (and the ACK riding behind a train) for the next poll; a full batch
 * asks for RX_BATCH more. At most RX_ROUNDS receives, and none once the progress thread waits
 * for the lock: a receiver that holds it through a stream would keep the thread from its timers
 * and the frames the hub forwards (progress.c, thread_rx_lock). A datagram that continues an RDMA
 * WRITE is followed by steered receives (progress_steer_stream) while they take the stream's
 * datagrams. Returns the datagrams.
 */
static unsigned int hand_out_stream(struct uroce_progress *p, unsigned int slot, int n,
				    unsigned int want, uint64_t now)
{
	struct udp_slot *s = &p->udp[slot];
	unsigned int total = 0;

	for (unsigned int round = 1;; round++) {
		bool more = hand_out(p, slot, n, now);

		total += (unsigned int)n;
		if ((unsigned int)n < want || (want == 1 && !more && !s->steer_next) ||
		    round == RX_ROUNDS || atomic_load_explicit(&p->rx_wanted, memory_order_relaxed))
			return total;
		if (progress_steer_stream(p, slot, now, &total))
			return total;
		want = s->steer_next ? 1 : RX_BATCH;
		n = receive(s, p->direct, want);
		if (!n)
			return total;
	}
}

/*
 * A socket found empty by its last receive is asked for one datagram first. In a ping-pong the
 * next one comes only after the answer, and asking for RX_BATCH would cost each hop the
 * kernel's try at a second datagram (docs/PERFORMANCE.md). So is a socket amid a stream to
 * steer (progress_steer.c), whose datagrams behind the one at hand are to be steered: the
 * first datagram of a WRITE's next message (with its RETH), or an ACK between a stream's
 * datagrams. A socket that had datagrams at its last receive (a stream) is asked for RX_BATCH.
 */
static unsigned int first_want(const struct udp_slot *s)
{
	return s->drained || s->steered_last || s->steer_next ? 1 : RX_BATCH;
}

unsigned int progress_receive_slot(struct uroce_progress *p, unsigned int slot, uint64_t now)
{
	unsigned int want, total = 0;
	int n;

	if (progress_steer_stream(p, slot, now, &total))
		return total;
	want = first_want(&p->udp[slot]);
	n = receive(&p->udp[slot], p->direct, want);
	return total + (n ? hand_out_stream(p, slot, n, want, now) : 0);
}

/* progress_receive_direct() of a socket whose next datagram is likely one to steer. */
static unsigned int receive_steered_direct(struct uroce_progress *p, unsigned int slot,
					   uint64_t now)
{
	unsigned int got;

	progress_rx_lock(p);
	progress_end_batch(p);
	got = progress_receive_slot(p, slot, now);
	if (got) {
		p->rx_hint = slot;
		progress_put_off_batch(p, now);
	}
	progress_rx_unlock(p);
	return got;
}

/*
 * The direct receive of a polling thread: one socket per poll. Seven polls in eight try the
 * socket that last brought datagrams (a ping-pong's next one comes there), the eighth the
 * sockets in turn, so that a busy socket starves none. No epoll set holds the sockets
 * meanwhile: each datagram queued on a socket that one watches costs the sender a wake-up call
 * into it (docs/PERFORMANCE.md). The receive itself, most polls' whole work, is made without
 * the receive lock (the caller is the sockets' one receiver, progress_int.h: receiving), which
 * is taken only to hand out what came and to end the previous poll's batch.
 */
unsigned int progress_receive_direct(struct uroce_progress *p, uint64_t now)
{
	unsigned int n = progress_udp_count(p), slot = p->rx_hint, want, got = 0;
	int first;

	if (!n)
		return 0;
	if (!(p->rx_turn++ & 7) || slot >= n)
		slot = p->rx_next++ % n;
	/* A stream to steer is received under the lock: the owner plans each receive. */
	if (p->udp[slot].steer_next)
		return receive_steered_direct(p, slot, now);
	want = first_want(&p->udp[slot]);
	first = receive(&p->udp[slot], p->direct, want);
	/*
	 * The previous poll's batch ends at a later poll, not as that poll returned: its
	 * completions reach the caller before the answers (ACKs) go out, so that no send stands
	 * on the way to each completion of a ping-pong. A batch that owes only the ACKs of SENDs
	 * (progress_put_off_batch) does not end at a poll that brings nothing within BATCH_HOLD_NS
	 * of it either: a program often polls again (another CQ, its other transports) before it
	 * posts its answer, and the post sends the ACK of its QP too, in one datagram with the
	 * answer (transport/wire.h: roce_train_ack_last). Bounded by the next poll after that
	 * time or one that brings datagrams (any thread's), a post on the QP, a hand-back to the
	 * progress thread (after the idle window, as for a program that stops polling) or a QP's
	 * modify or destroy (verbs-shim/engine_tx.c: uroce_qp_modified, uroce_qp_kick).
	 */
	if (!first &&
	    (!atomic_load_explicit(&p->end_due, memory_order_relaxed) ||
	     (atomic_load_explicit(&p->end_may_wait, memory_order_relaxed) &&
	      now - atomic_load_explicit(&p->end_due_at, memory_order_relaxed) < BATCH_HOLD_NS)))
		return 0;
	progress_rx_lock(p);
	progress_end_batch(p);
	if (first) {
		got = hand_out_stream(p, slot, first, want, now);
		p->rx_hint = slot;
		progress_put_off_batch(p, now);
	}
	progress_rx_unlock(p);
	return got;
}

struct direct_rx *progress_direct_new(void)
{
	struct direct_rx *d = calloc(1, sizeof(*d));

	if (!d || !(d->bufs = malloc((size_t)RX_BATCH * RX_STRIDE))) {
		free(d);
		return NULL;
	}
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		d->iov[i].iov_base = d->bufs + (size_t)i * RX_STRIDE;
		d->iov[i].iov_len = UROCE_UDP_RECV_MAX;
	}
	rearm_msgs(d, RX_BATCH);
	return d;
}

void progress_direct_free(struct direct_rx *d)
{
	if (d)
		free(d->bufs);
	free(d);
}
