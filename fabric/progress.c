/* SPDX-License-Identifier: MIT */
/*
 * The progress thread (progress.h): the loop, timers, watched descriptors, wake-ups, start and
 * stop; receiving is the backend's (progress_int.h).
 */
#include "fabric/progress.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

#define EPOLL_BATCH 16
#define NAME_LEN    32 /* a sockaddr_in6 (28) rounded up, so the control messages are aligned */

void progress_received(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
		       const uint8_t *data, size_t len, uint64_t now)
{
	struct uroce_rx rx = {.ip = *ip, .now = now};

	for (size_t off = 0; off < len; off += rx.len) {
		rx.roce = data + off;
		rx.len = uroce_udp_segment(len, seg, off);
		if (rx.len > UROCE_PROGRESS_PAYLOAD_MAX) {
			atomic_fetch_add(&p->rx_oversize, 1);
			continue;
		}
		p->ops->datagram(p->arg, &rx);
	}
}

void progress_on_watch(void *watch)
{
	struct uroce_watch *w = watch;

	if (w->fd >= 0)
		w->ready(w->arg);
}

void progress_on_epoll(struct uroce_progress *p)
{
	struct epoll_event ev[EPOLL_BATCH];
	int n = epoll_wait(p->epfd, ev, EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++)
		progress_on_watch(ev[i].data.ptr);
}

unsigned int progress_udp_count(struct uroce_progress *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	n = p->udp_count;
	pthread_mutex_unlock(&p->lock);
	return n;
}

static void reap_watches(struct uroce_progress *p)
{
	struct uroce_watch *w;

	pthread_mutex_lock(&p->lock);
	w = p->dead;
	p->dead = NULL;
	pthread_mutex_unlock(&p->lock);
	while (w) {
		struct uroce_watch *next = w->next;

		free(w);
		w = next;
	}
}

static void on_wake(void *arg)
{
	struct uroce_progress *p = arg;
	uint64_t v;

	while (read(p->evfd, &v, sizeof(v)) > 0)
		;
}

static void report_start(struct uroce_progress *p, int err)
{
	pthread_mutex_lock(&p->lock);
	p->started = true;
	p->start_err = err;
	pthread_cond_signal(&p->started_cond);
	pthread_mutex_unlock(&p->lock);
}

/* The backends in the order auto tries them. */
static const struct progress_backend *const backends[] = {
	[UROCE_BACKEND_IO_URING] = &progress_uring_backend,
	[UROCE_BACKEND_EPOLL] = &progress_epoll_backend,
};

static int setup_backend(struct uroce_progress *p, enum uroce_backend want)
{
	int err;

	if (want != UROCE_BACKEND_AUTO) {
		p->backend = backends[want];
		err = p->backend->setup(p);
		if (err)
			uroce_log(UROCE_LOG_ERROR, "the %s backend cannot start: %s",
				  p->backend->name, strerror(err));
		return err;
	}
	p->backend = backends[UROCE_BACKEND_IO_URING];
	err = p->backend->setup(p);
	/* Docker's default seccomp and io_uring_disabled refuse io_uring: ENOSYS, EPERM. */
	if (err == ENOSYS || err == EPERM || err == EACCES) {
		uroce_log(UROCE_LOG_INFO, "io_uring is not available here (%s): using epoll",
			  strerror(err));
		p->backend = backends[UROCE_BACKEND_EPOLL];
		err = p->backend->setup(p);
	}
	if (err)
		uroce_log(UROCE_LOG_ERROR, "the %s backend cannot start: %s", p->backend->name,
			  strerror(err));
	return err;
}

struct start_arg {
	struct uroce_progress *p;
	enum uroce_backend backend;
};

static void *progress_main(void *arg)
{
	struct start_arg *sa = arg;
	struct uroce_progress *p = sa->p;
	int err = setup_backend(p, sa->backend);

	if (err) {
		report_start(p, err);
		return NULL;
	}
	p->self = pthread_self();
	p->has_self = true;
	uroce_timers_set_runner(&p->timers);
	err = p->ops->init(p->arg, p);
	report_start(p, err);
	while (!err && !atomic_load(&p->stop)) {
		uint64_t now = uroce_now();

		uroce_timers_run(&p->timers, now);
		if (p->backend->wait(p, uroce_timers_next(&p->timers)) && p->ops->batch_end)
			p->ops->batch_end(p->arg);
		reap_watches(p);
	}
	p->backend->teardown(p);
	return NULL;
}

static void wake_thread(void *arg)
{
	struct uroce_progress *p = arg;
	uint64_t one = 1;

	/* Fails only when the counter is saturated, which wakes the thread as well. */
	(void)!write(p->evfd, &one, sizeof(one));
}

static void free_progress(struct uroce_progress *p)
{
	struct uroce_watch *w = p->watches;

	while (w) {
		struct uroce_watch *next = w->next;

		free(w);
		w = next;
	}
	reap_watches(p);
	if (p->evfd >= 0)
		close(p->evfd);
	if (p->epfd >= 0)
		close(p->epfd);
	uroce_timers_destroy(&p->timers);
	pthread_cond_destroy(&p->started_cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int uroce_progress_start(struct uroce_progress **out, const struct uroce_progress_ops *ops,
			 void *arg, unsigned int buffers, enum uroce_backend backend)
{
	struct start_arg sa = {.backend = backend};
	struct uroce_progress *p;
	sigset_t all, old;
	int err;

	if (!buffers || buffers > 32768 || (buffers & (buffers - 1)) ||
	    (unsigned int)backend > UROCE_BACKEND_EPOLL)
		return EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	p->nbufs = buffers;
	p->ops = ops;
	p->arg = arg;
	p->epfd = -1;
	p->evfd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->started_cond, NULL);
	for (unsigned int i = 0; i < PROGRESS_MAX_UDP; i++) {
		p->udp[i].msg.msg_namelen = NAME_LEN;
		p->udp[i].msg.msg_controllen = UROCE_UDP_CONTROL_LEN;
	}
	err = uroce_timers_init(&p->timers, wake_thread, p);
	if (err) {
		pthread_cond_destroy(&p->started_cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return err;
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->evfd < 0 || !uroce_progress_watch(p, p->evfd, on_wake, p)) {
		err = errno;
		goto fail;
	}
	/* The thread inherits the mask: no signal handler ever runs on it (issue 5, point 9). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sa.p = p;
	err = pthread_create(&p->thread, NULL, progress_main, &sa);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto fail;
	pthread_mutex_lock(&p->lock);
	while (!p->started)
		pthread_cond_wait(&p->started_cond, &p->lock);
	err = p->start_err;
	pthread_mutex_unlock(&p->lock);
	if (err) {
		pthread_join(p->thread, NULL);
		goto fail;
	}
	*out = p;
	return 0;

fail:
	uroce_log(UROCE_LOG_ERROR, "cannot start the progress thread: %s", strerror(err));
	free_progress(p);
	return err;
}

void uroce_progress_stop(struct uroce_progress *p)
{
	atomic_store(&p->stop, true);
	wake_thread(p);
	pthread_join(p->thread, NULL);
	free_progress(p);
}

bool uroce_progress_on_thread(const struct uroce_progress *p)
{
	return p->has_self && pthread_equal(pthread_self(), p->self);
}

int uroce_progress_add_udp(struct uroce_progress *p, const struct uroce_udp *s)
{
	int err = 0;

	pthread_mutex_lock(&p->lock);
	if (p->udp_count == PROGRESS_MAX_UDP)
		err = ENOSPC;
	else
		p->udp[p->udp_count++].sock = *s;
	pthread_mutex_unlock(&p->lock);
	if (!err && !uroce_progress_on_thread(p))
		wake_thread(p);
	return err;
}

struct uroce_watch *uroce_progress_watch(struct uroce_progress *p, int fd, void (*ready)(void *arg),
					 void *arg)
{
	struct uroce_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!w)
		return NULL;
	w->fd = fd;
	w->ready = ready;
	w->arg = arg;
	ev.data.ptr = w;
	pthread_mutex_lock(&p->lock);
	w->next = p->watches;
	p->watches = w;
	pthread_mutex_unlock(&p->lock);
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = errno;

		uroce_progress_unwatch(p, w);
		errno = err;
		return NULL;
	}
	return w;
}

void uroce_progress_unwatch(struct uroce_progress *p, struct uroce_watch *w)
{
	struct uroce_watch **pp;

	epoll_ctl(p->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	pthread_mutex_lock(&p->lock);
	for (pp = &p->watches; *pp != w; pp = &(*pp)->next)
		;
	*pp = w->next;
	w->fd = -1;
	w->next = p->dead;
	p->dead = w;
	pthread_mutex_unlock(&p->lock);
}

struct uroce_timers *uroce_progress_timers(struct uroce_progress *p)
{
	return &p->timers;
}

uint64_t uroce_progress_rx_lost(struct uroce_progress *p)
{
	uint64_t lost = 0;

	pthread_mutex_lock(&p->lock);
	for (unsigned int i = 0; i < p->udp_count; i++)
		lost += uroce_udp_drops(&p->udp[i].sock);
	pthread_mutex_unlock(&p->lock);
	return lost;
}

uint64_t uroce_progress_rx_oversize(const struct uroce_progress *p)
{
	return atomic_load(&p->rx_oversize);
}

uint64_t uroce_progress_rearms(const struct uroce_progress *p)
{
	return atomic_load(&p->rearms);
}

const char *uroce_progress_backend(const struct uroce_progress *p)
{
	return p->backend->name;
}
