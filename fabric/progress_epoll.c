// SPDX-License-Identifier: MIT
/*
 * The epoll backend of the progress thread (progress_int.h), for where io_uring is refused: the
 * receive set (the UDP sockets) is nested in the epoll set of watched descriptors, and a ready
 * receive set is drained by the direct receive. Leaving the sockets to polling threads is
 * taking the receive set out of the epoll set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

#define MAX_EVENTS 16
/* The receive set's epoll tag: odd, so that it cannot be a watch's (aligned) pointer. */
#define RX_TAG 1

struct epoll_be {
	bool rx_in_set; /* the receive set is in the epoll set */
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

static void set_rx(struct uroce_progress *p, struct epoll_be *e, bool in)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = RX_TAG};

	if (e->rx_in_set == in)
		return;
	if (epoll_ctl(p->epfd, in ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, p->rx_epfd, &ev))
		uroce_log(UROCE_LOG_ERROR, "epoll of the UDP sockets: %s", strerror(errno));
	else
		e->rx_in_set = in;
}

static bool wait(struct uroce_progress *p, uint64_t deadline)
{
	struct epoll_be *e = p->be;
	uint64_t now = uroce_now();
	struct timespec ts;

	if (!progress_sockets_wanted(p))
		set_rx(p, e, true);
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
		if (e->ev[i].data.u64 == RX_TAG)
			progress_receive_direct(p);
		else
			progress_on_watch(e->ev[i].data.ptr);
	}
}

static bool release(struct uroce_progress *p)
{
	set_rx(p, p->be, false);
	return !((struct epoll_be *)p->be)->rx_in_set;
}

const struct progress_backend progress_epoll_backend = {
	.name = "epoll",
	.setup = setup,
	.teardown = teardown,
	.wait = wait,
	.dispatch = dispatch,
	.release = release,
};
