/* SPDX-License-Identifier: MIT */
#include "fabric/progress.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fabric/log.h"

#define MAX_UDP    4
#define SQ_ENTRIES 64
#define CQ_ENTRIES 1024 /* room for a burst of multishot completions */
#define BUF_GROUP  0
#define NAME_LEN   32 /* a sockaddr_in6 (28) rounded up, so the control messages are aligned */
#define BUF_SIZE                                                                                   \
	(sizeof(struct io_uring_recvmsg_out) + NAME_LEN + UROCE_UDP_CONTROL_LEN +                  \
	 UROCE_PROGRESS_PAYLOAD_MAX)
#define EPOLL_BATCH 16

/* io_uring user_data: 1 + index of a UDP socket, or the epoll poll. */
#define UD_EPOLL (MAX_UDP + 1)

struct uroce_watch {
	int fd; /* -1 once unwatched: an event still in the batch is skipped */
	void (*ready)(void *arg);
	void *arg;
	struct uroce_watch *next;
};

struct udp_slot {
	struct uroce_udp sock;
	struct msghdr msg; /* lengths of the name and control areas of each buffer */
	bool armed;        /* progress thread only */
};

struct uroce_progress {
	const struct uroce_progress_ops *ops;
	void *arg;
	pthread_t thread;
	pthread_t self; /* written by the thread itself before ops->init */
	bool has_self;
	int epfd;
	int evfd; /* wakes the thread: timers armed earlier, stop */
	atomic_bool stop;
	struct uroce_timers timers;

	pthread_mutex_t lock; /* udp_count, watches; start handshake */
	pthread_cond_t started_cond;
	bool started;
	int start_err;
	struct udp_slot udp[MAX_UDP];
	unsigned int udp_count;
	struct uroce_watch *watches;
	struct uroce_watch *dead; /* unwatched, freed after the batch */

	/* Progress thread only. */
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	uint8_t *bufs;
	unsigned int nbufs;
	bool epoll_armed;
	unsigned int recycled;

	_Atomic uint64_t rx_oversize;
	_Atomic uint64_t rearms;
};

static size_t br_bytes(const struct uroce_progress *p)
{
	return p->nbufs * sizeof(struct io_uring_buf);
}

/*
 * liburing 2.3 has no io_uring_setup_buf_ring() (2.4): map the ring ourselves and register it.
 */
static int setup_buffers(struct uroce_progress *p)
{
	struct io_uring_buf_reg reg = {.ring_entries = p->nbufs, .bgid = BUF_GROUP};
	void *ring_mem;
	int ret;

	ring_mem =
		mmap(NULL, br_bytes(p), PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (ring_mem == MAP_FAILED)
		return errno;
	p->br = ring_mem;
	p->bufs = malloc((size_t)p->nbufs * BUF_SIZE);
	if (!p->bufs)
		return ENOMEM;
	reg.ring_addr = (uintptr_t)ring_mem;
	ret = io_uring_register_buf_ring(&p->ring, &reg, 0);
	if (ret < 0)
		return -ret;
	io_uring_buf_ring_init(p->br);
	for (unsigned int i = 0; i < p->nbufs; i++)
		io_uring_buf_ring_add(p->br, p->bufs + (size_t)i * BUF_SIZE, BUF_SIZE,
				      (unsigned short)i, io_uring_buf_ring_mask(p->nbufs), (int)i);
	io_uring_buf_ring_advance(p->br, (int)p->nbufs);
	return 0;
}

static void free_buffers(struct uroce_progress *p)
{
	if (p->br)
		munmap(p->br, br_bytes(p));
	free(p->bufs);
	p->br = NULL;
	p->bufs = NULL;
}

static int setup_ring(struct uroce_progress *p)
{
	struct io_uring_params params = {
		.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_DEFER_TASKRUN,
		.cq_entries = CQ_ENTRIES,
	};
	int ret = io_uring_queue_init_params(SQ_ENTRIES, &p->ring, &params);

	if (ret == -EINVAL) {
		/* Before Linux 6.1: no DEFER_TASKRUN (SINGLE_ISSUER came in 6.0). */
		params = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE,
						  .cq_entries = CQ_ENTRIES};
		ret = io_uring_queue_init_params(SQ_ENTRIES, &p->ring, &params);
	}
	if (ret < 0) {
		uroce_log(UROCE_LOG_ERROR, "io_uring setup failed: %s", strerror(-ret));
		return -ret;
	}
	ret = setup_buffers(p);
	if (ret) {
		uroce_log(UROCE_LOG_ERROR, "io_uring buffer ring: %s", strerror(ret));
		free_buffers(p);
		io_uring_queue_exit(&p->ring);
	}
	return ret;
}

static struct io_uring_sqe *get_sqe(struct uroce_progress *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);

	if (!sqe) {
		io_uring_submit(&p->ring);
		sqe = io_uring_get_sqe(&p->ring);
	}
	return sqe;
}

/* Arm what is not armed: new sockets, ended multishots, the epoll poll. */
static void arm(struct uroce_progress *p)
{
	unsigned int n;

	pthread_mutex_lock(&p->lock);
	n = p->udp_count;
	pthread_mutex_unlock(&p->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct udp_slot *s = &p->udp[i];
		struct io_uring_sqe *sqe;

		if (s->armed || !(sqe = get_sqe(p)))
			continue;
		io_uring_prep_recvmsg_multishot(sqe, s->sock.fd, &s->msg, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = BUF_GROUP;
		io_uring_sqe_set_data64(sqe, i + 1);
		s->armed = true;
	}
	if (!p->epoll_armed) {
		struct io_uring_sqe *sqe = get_sqe(p);

		if (sqe) {
			io_uring_prep_poll_add(sqe, p->epfd, POLLIN);
			io_uring_sqe_set_data64(sqe, UD_EPOLL);
			p->epoll_armed = true;
		}
	}
}

static void recycle(struct uroce_progress *p, unsigned int bid)
{
	io_uring_buf_ring_add(p->br, p->bufs + (size_t)bid * BUF_SIZE, BUF_SIZE,
			      (unsigned short)bid, io_uring_buf_ring_mask(p->nbufs),
			      (int)p->recycled++);
}

static void on_datagram(struct uroce_progress *p, struct udp_slot *s, uint8_t *buf, int len,
			uint64_t now)
{
	struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, len, &s->msg);
	struct uroce_rx rx = {.now = now};
	struct cmsghdr *c;

	if (!o)
		return;
	if (o->flags & MSG_TRUNC) {
		atomic_fetch_add(&p->rx_oversize, 1);
		return;
	}
	if (uroce_udp_rx_source(&rx.ip, &s->sock, io_uring_recvmsg_name(o), o->namelen))
		return;
	for (c = io_uring_recvmsg_cmsg_firsthdr(o, &s->msg); c;
	     c = io_uring_recvmsg_cmsg_nexthdr(o, &s->msg, c))
		uroce_udp_rx_cmsg(&rx.ip, c);
	rx.roce = io_uring_recvmsg_payload(o, &s->msg);
	rx.len = io_uring_recvmsg_payload_length(o, len, &s->msg);
	p->ops->datagram(p->arg, &rx);
}

static void on_epoll(struct uroce_progress *p)
{
	struct epoll_event ev[EPOLL_BATCH];
	int n = epoll_wait(p->epfd, ev, EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++) {
		struct uroce_watch *w = ev[i].data.ptr;

		if (w->fd >= 0)
			w->ready(w->arg);
	}
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

static void complete(struct uroce_progress *p)
{
	struct io_uring_cqe *cqe;
	unsigned int head, count = 0;
	uint64_t now = uroce_now();
	bool epoll_ready = false;

	p->recycled = 0;
	io_uring_for_each_cqe(&p->ring, head, cqe)
	{
		uint64_t ud = io_uring_cqe_get_data64(cqe);

		count++;
		if (ud == UD_EPOLL) {
			p->epoll_armed = false;
			epoll_ready = true;
			continue;
		}
		if (ud < 1 || ud > MAX_UDP)
			continue;
		if (cqe->flags & IORING_CQE_F_BUFFER) {
			unsigned int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

			if (cqe->res > 0)
				on_datagram(p, &p->udp[ud - 1], p->bufs + (size_t)bid * BUF_SIZE,
					    cqe->res, now);
			recycle(p, bid);
		}
		if (!(cqe->flags & IORING_CQE_F_MORE)) {
			/* ENOBUFS: every buffer was in use; they are back after this batch. */
			p->udp[ud - 1].armed = false;
			atomic_fetch_add(&p->rearms, 1);
			if (cqe->res < 0 && cqe->res != -ENOBUFS)
				uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s",
					  p->udp[ud - 1].sock.port, strerror(-cqe->res));
		}
	}
	io_uring_cq_advance(&p->ring, count);
	if (p->recycled)
		io_uring_buf_ring_advance(p->br, (int)p->recycled);
	if (epoll_ready)
		on_epoll(p);
	reap_watches(p);
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

static void *progress_main(void *arg)
{
	struct uroce_progress *p = arg;
	int err = setup_ring(p);

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
		struct __kernel_timespec ts;
		struct io_uring_cqe *cqe;
		uint64_t now, next;

		arm(p);
		now = uroce_now();
		uroce_timers_run(&p->timers, now);
		next = uroce_timers_next(&p->timers);
		if (next != UINT64_MAX) {
			uint64_t wait = next > now ? next - now : 0;

			ts.tv_sec = (long long)(wait / 1000000000u);
			ts.tv_nsec = (long long)(wait % 1000000000u);
		}
		io_uring_submit_and_wait_timeout(&p->ring, &cqe, 1, next == UINT64_MAX ? NULL : &ts,
						 NULL);
		complete(p);
	}
	io_uring_queue_exit(&p->ring);
	free_buffers(p);
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
			 void *arg, unsigned int buffers)
{
	struct uroce_progress *p;
	sigset_t all, old;
	int err;

	if (!buffers || buffers > 32768 || (buffers & (buffers - 1)))
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
	for (unsigned int i = 0; i < MAX_UDP; i++) {
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
	err = pthread_create(&p->thread, NULL, progress_main, p);
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
	if (p->udp_count == MAX_UDP)
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
