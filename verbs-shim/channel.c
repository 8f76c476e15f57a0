// SPDX-License-Identifier: MIT
/* Completion channels: ibv_create_comp_channel, ibv_get_cq_event, ibv_ack_cq_events. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"

UROCE_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct uroce_channel *ch = calloc(1, sizeof(*ch));
	int err;

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	err = uroce_evq_init(&ch->events);
	if (err) {
		free(ch);
		errno = err;
		return NULL;
	}
	ch->channel.context = context;
	ch->channel.fd = ch->events.fd;
	ch->channel.refcnt = 0;
	return &ch->channel;
}

UROCE_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct ibv_context *context = channel->context;
	int ret = 0;

	/* As rdma-core: refused while a CQ still reports to it (refcnt under context->mutex). */
	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {
		ret = EBUSY;
	} else {
		uroce_evq_destroy(&to_uchannel(channel)->events);
		free(to_uchannel(channel));
	}
	pthread_mutex_unlock(&context->mutex);
	return ret;
}

/* Runs under the channel's queue lock (evq.h): destroy cannot slip in between. */
static void cq_event_taken(const struct uroce_event *e)
{
	struct ibv_cq *cq = e->obj;

	pthread_mutex_lock(&cq->mutex);
	to_ucq(cq)->comp_events_reported++;
	pthread_mutex_unlock(&cq->mutex);
}

static bool events_ready(void *arg)
{
	return uroce_evq_ready(arg);
}

/* Signals a fault raises in the faulting thread: they cannot interrupt a wait. */
static bool synchronous(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/*
 * Whether a wait that a signal handler interrupted goes on, as a read() of the kernel's
 * channel would: when every handler installed for a signal that can come during the wait has
 * SA_RESTART (signal() installs them so, perftest's SIGALRM for -D among them; a sanitizer's
 * SIGSEGV handler does not count). ppoll itself never restarts (signal(7)).
 */
static bool wait_restarts(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig == SIGKILL || sig == SIGSTOP || synchronous(sig) ||
		    sigaction(sig, NULL, &sa))
			continue;
		if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
		    !(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

/*
 * Before a read() of a blocking channel: wait receiving (uroce_engine_wait), so that the
 * datagram that completes a CQE wakes this thread itself, one wake-up instead of the progress
 * thread's and then this one's. A non-blocking channel reads at once (EAGAIN when empty);
 * if the wait fails otherwise, read() blocks and the progress thread receives.
 */
static int wait_receiving(struct uroce_evq *q)
{
	int flags, err;

	/* An event there already (a program that polled the fd first): no wait, and no hand-over
	 * that it would leave unreceived while it sleeps in its own poll(). */
	if (uroce_evq_ready(q))
		return 0;
	flags = fcntl(q->fd, F_GETFL);
	if (flags < 0 || (flags & O_NONBLOCK))
		return 0;
	do
		err = uroce_engine_wait(q->fd, events_ready, q);
	while (err == EINTR && wait_restarts());
	return err == EINTR ? EINTR : 0;
}

UROCE_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				  void **cq_context)
{
	struct uroce_event e;
	struct ibv_cq *c;

	/* Blocks in ppoll or read(): pthread_cancel works here (ABI.md §3.3). */
	if (uroce_evq_pop(&to_uchannel(channel)->events, &e, cq_event_taken, wait_receiving))
		return -1;
	c = e.obj;
	*cq = c;
	*cq_context = c->cq_context;
	return 0;
}

UROCE_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
