/* SPDX-License-Identifier: MIT */
/*
 * The steered receive (progress_int.h): a datagram that continues an RDMA WRITE is received
 * with each packet's payload straight where the responder places it, so that its bytes are
 * copied once, by the kernel, as an RNIC's DMA writes them once.
 *
 * The datagram's headers are read first (MSG_PEEK); the owner says where the payloads go
 * (progress.h: steer); the receive then scatters each whole segment into three pieces -- its
 * headers and its ICRC into a buffer, at the places they would have in a plain receive, and
 * its payload into the application's memory. Each packet is checked against the plan after
 * (transport/wire.h: roce_steer_fits) and handed on with a gap over its payload; one that does
 * not fit gets its payload copied back into the buffer and goes on whole, as any other packet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/progress_int.h"
#include "transport/wire.h"

/* The peek reads the first packet's BTH; a WRITE MIDDLE has no other header. */
#define PEEK_LEN ROCE_BTH_LEN

struct steer_rx {
	uint8_t *buf; /* UROCE_UDP_RECV_MAX bytes: the datagram, less the steered payloads */
	struct iovec iov[3 * ROCE_STEER_MAX + 1];
	struct roce_pkt_gap gaps[ROCE_STEER_MAX];
	struct sockaddr_storage name;
	union {
		struct cmsghdr align; /* a flexible array member: last */
		char buf[UROCE_UDP_CONTROL_LEN];
	} control;
};

struct steer_rx *progress_steer_new(void)
{
	struct steer_rx *st = calloc(1, sizeof(*st));

	if (!st || !(st->buf = malloc(UROCE_UDP_RECV_MAX))) {
		free(st);
		return NULL;
	}
	return st;
}

void progress_steer_free(struct steer_rx *st)
{
	if (st)
		free(st->buf);
	free(st);
}

/*
 * The datagram at the head of @s, not taken: its length (MSG_TRUNC), with @ip and *@seg as a
 * receive would give them and its first bytes in @head; 0 if there is none, -1 on an error.
 */
static ssize_t peek(struct steer_rx *st, const struct uroce_udp *s, struct roce_ipudp *ip,
		    uint16_t *seg, uint8_t head[PEEK_LEN])
{
	struct iovec iov = {.iov_base = head, .iov_len = PEEK_LEN};
	struct msghdr m = {
		.msg_name = &st->name,
		.msg_namelen = sizeof(st->name),
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = st->control.buf,
		.msg_controllen = sizeof(st->control.buf),
	};
	ssize_t n = nc_recvmsg(s->fd, &m, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (uroce_udp_rx_source(ip, s, m.msg_name, m.msg_namelen))
		return -1;
	*seg = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		uroce_udp_rx_cmsg(ip, c, seg);
	return n;
}

/* The iovecs that receive a datagram of @total bytes as @plan steers it: their count. */
static size_t scatter(struct steer_rx *st, const struct roce_steer *plan, uint16_t seg,
		      size_t total)
{
	size_t n = 0, steered = (size_t)plan->count * seg;

	for (unsigned int k = 0; k < plan->count; k++) {
		uint8_t *pkt = st->buf + (size_t)k * seg;

		st->iov[n++] = (struct iovec){pkt, plan->hdr_len};
		st->iov[n++] = (struct iovec){plan->at + (size_t)k * plan->pmtu, plan->pmtu};
		st->iov[n++] = (struct iovec){pkt + plan->hdr_len + plan->pmtu, ROCE_ICRC_LEN};
	}
	if (total > steered)
		st->iov[n++] = (struct iovec){st->buf + steered, total - steered};
	return n;
}

/*
 * Check each steered packet of the @len bytes received against @plan: one that fits keeps its
 * gap, one that does not gets its payload back. Returns the gaps. A receive cut short (it
 * cannot be: this thread alone receives, and the peek gave the length) leaves its last packet
 * without its payload, which the ICRC check then refuses.
 */
static unsigned int check(struct steer_rx *st, const struct roce_steer *plan, uint16_t seg,
			  size_t len)
{
	unsigned int k;

	for (k = 0; k < plan->count && (size_t)(k + 1) * seg <= len; k++) {
		uint8_t *pkt = st->buf + (size_t)k * seg;

		st->gaps[k] = (struct roce_pkt_gap){
			.src = plan->at + (size_t)k * plan->pmtu,
			.off = plan->hdr_len,
			.len = (uint16_t)plan->pmtu,
		};
		if (!roce_steer_fits(plan, pkt, seg, k)) {
			roce_pkt_gap_fill(pkt, &st->gaps[k]);
			st->gaps[k].len = 0;
		}
	}
	return k;
}

/* A datagram the owner would not steer: the guesses skipped after it (progress_steer_next). */
#define STEER_SKIP 16

void progress_steer_next(struct udp_slot *s, const uint8_t *data, size_t len, uint16_t seg)
{
	/*
	 * One packet without payload (an ACK) leaves the guess as it was: in streams both ways
	 * the peer's ACKs come between the datagrams of its WRITEs.
	 */
	if ((!seg || len <= seg) && len && !(roce_opcode(data[0])->flags & ROCE_OPF_PAYLOAD))
		return;
	if (!roce_datagram_steerable(data, len, seg))
		s->steer_next = false;
	else if (s->steer_skip)
		s->steer_next = (s->steer_skip--, false);
	else
		s->steer_next = true;
}

/*
 * Receive the datagram at the head of socket @slot straight into place and hand it out. Returns
 * 1 (handed out, or lost to a failed receive, which is logged), 0 (the socket is empty), or -1
 * (the owner does not steer it, or the peek failed: the datagram is still there).
 */
static int receive_steered(struct uroce_progress *p, unsigned int slot, uint64_t now)
{
	struct udp_slot *s = &p->udp[slot];
	struct steer_rx *st = p->steer;
	uint8_t head[PEEK_LEN];
	struct roce_steer plan;
	struct roce_ipudp ip;
	struct msghdr m = {0};
	uint16_t seg;
	ssize_t total = peek(st, &s->sock, &ip, &seg, head), got;
	unsigned int gaps;

	if (total <= 0) {
		s->drained = total == 0;
		return total == 0 ? 0 : -1;
	}
	/* One packet (an ACK between the datagrams of a stream): received as usual. */
	if ((size_t)total < PEEK_LEN || (size_t)total > UROCE_UDP_RECV_MAX || !seg ||
	    (size_t)total <= seg)
		return -1;
	if (!p->ops->steer || !p->ops->steer(p->arg, head, seg, (size_t)total, &plan)) {
		s->steer_next = false;
		s->steer_skip = STEER_SKIP;
		return -1;
	}
	m.msg_iov = st->iov;
	m.msg_iovlen = scatter(st, &plan, seg, (size_t)total);
	got = nc_recvmsg(s->sock.fd, &m, MSG_DONTWAIT);
	if (got < 0) {
		/* EFAULT: memory the application unmapped under its registration (lost, as on a
		 * wire: the requester sends it again). */
		uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s", s->sock.port,
			  strerror(errno));
		if (p->ops->datagram_end)
			p->ops->datagram_end(p->arg);
		return 1;
	}
	gaps = check(st, &plan, seg, (size_t)got);
	progress_received_gaps(p, &ip, seg, st->buf, (size_t)got, st->gaps, gaps, now);
	progress_steer_next(s, st->buf, (size_t)got, seg);
	s->steered++;
	s->steered_last = true;
	return 1;
}

bool progress_steer_stream(struct uroce_progress *p, unsigned int slot, uint64_t now,
			   unsigned int *total)
{
	for (unsigned int steered = 0; p->udp[slot].steer_next;) {
		int r = receive_steered(p, slot, now);

		if (r < 0)
			return false;
		if (!r)
			return true;
		++*total;
		if (++steered == PROGRESS_STEER_ROUNDS ||
		    atomic_load_explicit(&p->rx_wanted, memory_order_relaxed))
			return true;
	}
	return false;
}
