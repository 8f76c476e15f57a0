// SPDX-License-Identifier: MIT
/*
 * The epoll backend of the progress thread (progress_int.h), for where io_uring is refused: the
 * UDP sockets join the epoll set of watched descriptors, and a ready one is drained by
 * recvmmsg (progress_receive_slot). Leaving the sockets to polling threads is taking them out
 * of the set: a socket in an epoll set costs every datagram sent to it a wake-up call
 * (progress_rx.c: progress_receive_direct).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

#define MAX_EVENTS 16
/* A UDP socket's epoll tag: 2 * slot + 1, odd, so that it cannot be a watch's (aligned)
 * pointer. */
#define SLOT_TAG(i)   (2 * (uint64_t)(i) + 1)
#define IS_SLOT(tag)  ((tag)&1)
#define TAG_SLOT(tag) ((unsigned int)((tag) >> 1))

struct epoll_be {
	struct epoll_event ev[MAX_EVENTS];
	int n; /* events the last wait returned */
};

static int setup(struct uroce_progress *p)
{
	struct epoll_be *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	p->be = e;
	return 0;
}

static void teardown(struct uroce_progress *p)
{
	free(p->be);
	p->be = NULL;
}

/* Put the UDP sockets in the watch set (@in) or take them out. Returns whether all are. */
static bool set_sockets(struct uroce_progress *p, bool in)
{
	unsigned int n = progress_udp_count(p);
	bool done = true;

	for (unsigned int i = 0; i < n; i++) {
		struct udp_slot *s = &p->udp[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SLOT_TAG(i)};

		if (s->armed == in)
			continue;
		if (epoll_ctl(p->epfd, in ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->sock.fd, &ev)) {
			uroce_log(UROCE_LOG_ERROR, "epoll of UDP port %u: %s", s->sock.port,
				  strerror(errno));
			done = false;
		} else {
			s->armed = in;
		}
	}
	return done;
}

static bool wait(struct uroce_progress *p, uint64_t deadline)
{
	struct epoll_be *e = p->be;
	uint64_t now = uroce_now();
	struct timespec ts;

	if (!progress_sockets_wanted(p))
		set_sockets(p, true);
	if (deadline != UINT64_MAX) {
		uint64_t wait = deadline > now ? deadline - now : 0;

		ts.tv_sec = (time_t)(wait / 1000000000u);
		ts.tv_nsec = (long)(wait % 1000000000u);
	}
	/* epoll_pwait2 (Linux 5.11): a timeout in nanoseconds, as fine as the timers need. */
	e->n = epoll_pwait2(p->epfd, e->ev, MAX_EVENTS, deadline == UINT64_MAX ? NULL : &ts, NULL);
	return e->n > 0;
}

static void dispatch(struct uroce_progress *p)
{
	struct epoll_be *e = p->be;

	for (int i = 0; i < e->n; i++) {
		uint64_t tag = e->ev[i].data.u64;

		if (IS_SLOT(tag))
			progress_receive_slot(p, TAG_SLOT(tag), uroce_now());
		else
			progress_on_watch(e->ev[i].data.ptr);
	}
}

static bool release(struct uroce_progress *p)
{
	return set_sockets(p, false);
}

const struct progress_backend progress_epoll_backend = {
	.name = "epoll",
	.setup = setup,
	.teardown = teardown,
	.wait = wait,
	.dispatch = dispatch,
	.release = release,
};
