// SPDX-License-Identifier: MIT
/*
 * The epoll backend of the progress thread (progress_int.h), for where io_uring is refused: the
 * UDP sockets join the epoll set of watched descriptors, and a readable socket is drained with
 * recvmmsg in batches until it would block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

#define BATCH      16 /* datagrams per recvmmsg */
#define MAX_EVENTS 16
/* Receive buffers hold UROCE_UDP_RECV_MAX bytes, 64-byte aligned. */
#define BUF_STRIDE ((UROCE_UDP_RECV_MAX + 63) & ~(size_t)63)

/* A UDP socket's epoll tag: odd, so that it cannot be a watch's (aligned) pointer. */
#define UDP_TAG(i) (((uint64_t)(i) << 1) | 1)

struct epoll_be {
	uint8_t *bufs; /* BATCH receive buffers of UROCE_UDP_RECV_MAX bytes */
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage names[BATCH];
	union {
		struct cmsghdr align;
		char buf[UROCE_UDP_CONTROL_LEN];
	} control[BATCH];
};

static int setup(struct uroce_progress *p)
{
	struct epoll_be *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	e->bufs = malloc((size_t)BATCH * BUF_STRIDE);
	if (!e->bufs) {
		free(e);
		return ENOMEM;
	}
	for (unsigned int i = 0; i < BATCH; i++) {
		e->iov[i].iov_base = e->bufs + (size_t)i * BUF_STRIDE;
		e->iov[i].iov_len = UROCE_UDP_RECV_MAX;
	}
	p->be = e;
	return 0;
}

static void teardown(struct uroce_progress *p)
{
	struct epoll_be *e = p->be;

	free(e->bufs);
	free(e);
	p->be = NULL;
}

/* Put the sockets added since the last turn into the epoll set. */
static void arm(struct uroce_progress *p)
{
	unsigned int n = progress_udp_count(p);

	for (unsigned int i = 0; i < n; i++) {
		struct udp_slot *s = &p->udp[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UDP_TAG(i)};

		if (s->armed)
			continue;
		if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, s->sock.fd, &ev))
			uroce_log(UROCE_LOG_ERROR, "epoll on UDP port %u: %s", s->sock.port,
				  strerror(errno));
		else
			s->armed = true;
	}
}

/* Receive what @s holds, a batch at a time, until it would block. */
static void drain(struct uroce_progress *p, struct epoll_be *e, struct udp_slot *s)
{
	for (;;) {
		uint64_t now;
		int n;

		for (unsigned int i = 0; i < BATCH; i++) {
			struct msghdr *m = &e->msgs[i].msg_hdr;

			m->msg_name = &e->names[i];
			m->msg_namelen = sizeof(e->names[i]);
			m->msg_iov = &e->iov[i];
			m->msg_iovlen = 1;
			m->msg_control = e->control[i].buf;
			m->msg_controllen = sizeof(e->control[i].buf);
			m->msg_flags = 0;
		}
		n = recvmmsg(s->sock.fd, e->msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s",
					  s->sock.port, strerror(errno));
			return;
		}
		now = uroce_now();
		for (int i = 0; i < n; i++) {
			struct msghdr *m = &e->msgs[i].msg_hdr;
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
			progress_received(p, &ip, seg, e->iov[i].iov_base, e->msgs[i].msg_len, now);
		}
		if (n < BATCH)
			return;
	}
}

static bool wait(struct uroce_progress *p, uint64_t deadline)
{
	struct epoll_be *e = p->be;
	struct epoll_event ev[MAX_EVENTS];
	uint64_t now = uroce_now();
	struct timespec ts;
	int n;

	arm(p);
	if (deadline != UINT64_MAX) {
		uint64_t wait = deadline > now ? deadline - now : 0;

		ts.tv_sec = (time_t)(wait / 1000000000u);
		ts.tv_nsec = (long)(wait % 1000000000u);
	}
	/* epoll_pwait2 (Linux 5.11): a timeout in nanoseconds, as fine as the timers need. */
	n = epoll_pwait2(p->epfd, ev, MAX_EVENTS, deadline == UINT64_MAX ? NULL : &ts, NULL);
	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64;

		if (tag & 1)
			drain(p, e, &p->udp[tag >> 1]);
		else
			progress_on_watch(ev[i].data.ptr);
	}
	return n > 0;
}

const struct progress_backend progress_epoll_backend = {
	.name = "epoll",
	.setup = setup,
	.teardown = teardown,
	.wait = wait,
};
