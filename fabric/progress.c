/* SPDX-License-Identifier: MIT */
/*
 * The progress thread (progress.h): the loop, timers, watched descriptors, wake-ups, start and
 * stop, and its side of the hand-over of the sockets to the application's threads (their side:
 * progress_app.c; the direct receive they and the epoll backend use: progress_rx.c); waiting and
 * receiving on the thread are the backend's (progress_int.h).
 */
#include "fabric/progress.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/progress_int.h"
#include "transport/wire.h"

#define EPOLL_BATCH 16
#define NAME_LEN    32 /* a sockaddr_in6 (28) rounded up, so the control messages are aligned */

/* The progress thread's time slice (short_slice): the shortest the kernel allows. */
#define PROGRESS_SLICE_NS 100000u
/* How many nice levels the progress thread takes above the thread that started it (raise_nice). */
#define PROGRESS_NICE_BOOST 10

_Thread_local const struct uroce_progress *progress_receiving;

void progress_on_watch(void *watch)
{
	struct uroce_watch *w = watch;

	if (w->fd >= 0)
		w->ready(w->arg);
}

void progress_on_epoll(struct uroce_progress *p)
{
	struct epoll_event ev[EPOLL_BATCH];
	int n = nc_epoll_wait(p->epfd, ev, EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++)
		progress_on_watch(ev[i].data.ptr);
}

bool progress_sockets_wanted(struct uroce_progress *p)
{
	return atomic_load(&p->want_app) || atomic_load(&p->app_rx);
}

unsigned int progress_udp_count(const struct uroce_progress *p)
{
	return atomic_load_explicit(&p->udp_count, memory_order_acquire);
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

void progress_drain_fd(int fd)
{
	uint64_t v;

	while (nc_read(fd, &v, sizeof(v)) > 0)
		;
}

static void on_wake(void *arg)
{
	progress_drain_fd(((struct uroce_progress *)arg)->evfd);
}

void progress_signal_fd(int fd)
{
	uint64_t one = 1;

	/* Fails only when the counter is saturated, which leaves it readable as well. */
	(void)!nc_write(fd, &one, sizeof(one));
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

/*
 * Under the receive lock: the batch_end callback, if datagrams came since it last ran. end_due
 * changes only under that lock (progress_still_quiet reads it as a hint), so plain loads and stores
 * do: an exchange, right after a receive's system call, waits for the kernel's stores to drain (on
 * every poll, and on every hop of a ping-pong for the store that follows).
 */
void progress_end_batch(struct uroce_progress *p)
{
	p->batch_acks = false;
	p->batch_now = false;
	if (!atomic_load_explicit(&p->end_due, memory_order_relaxed))
		return;
	atomic_store_explicit(&p->end_due, false, memory_order_relaxed);
	if (p->ops->batch_end)
		p->ops->batch_end(p->arg);
}

void progress_put_off_batch(struct uroce_progress *p, uint64_t now)
{
	atomic_store_explicit(&p->end_may_wait, p->batch_acks && !p->batch_now,
			      memory_order_relaxed);
	atomic_store_explicit(&p->end_due_at, now, memory_order_relaxed);
	atomic_store_explicit(&p->end_due, true, memory_order_relaxed);
}

/*
 * The progress thread's turn at the receive lock. A thread busy polling a CQ takes the lock
 * whenever its receive brings datagrams; a mutex is not fair, and with more busy threads than
 * CPUs the thread, woken at each unlock, could find it taken again for long: its timers and the
 * frames the hub forwards (read only here) would wait. Polls leave the lock to it while it
 * asks (uroce_progress_poll, and progress_rx.c ends a stream's turn); its turns are short.
 */
static void thread_rx_lock(struct uroce_progress *p)
{
	atomic_store(&p->rx_wanted, true);
	progress_rx_lock(p);
	atomic_store(&p->rx_wanted, false);
}

struct start_arg {
	struct uroce_progress *p;
	enum uroce_backend backend;
};

/*
 * Ask the scheduler for a short time slice: Linux 6.12's EEVDF takes sched_attr.sched_runtime
 * of a SCHED_OTHER thread as its slice (0.1 .. 100 ms, no privilege needed), and a waking
 * thread whose slice is shorter than the running one's may preempt it (PREEMPT_SHORT); with
 * the default slice it waits until the running thread reaches its deadline (RUN_TO_PARITY),
 * milliseconds when that thread is a program busy polling its CQ or memory and every CPU has
 * one. This thread runs microseconds per wake-up, so its slice hardly matters otherwise.
 * Older kernels ignore the field; a refusal is logged and changes nothing.
 */
static void short_slice(void)
{
	/* The kernel's struct sched_attr (linux/sched/types.h clashes with <sched.h>). */
	struct {
		uint32_t size, sched_policy;
		uint64_t sched_flags;
		int32_t sched_nice;
		uint32_t sched_priority;
		uint64_t sched_runtime, sched_deadline, sched_period;
		uint32_t sched_util_min, sched_util_max;
	} a = {.size = sizeof(a)};

	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) || a.sched_policy != SCHED_OTHER)
		return; /* a policy the program chose for its threads is kept */
	a.sched_runtime = PROGRESS_SLICE_NS;
	a.sched_flags = 0;
	if (syscall(SYS_sched_setattr, 0, &a, 0))
		uroce_log(UROCE_LOG_INFO, "the progress thread keeps the default time slice: %s",
			  strerror(errno));
}

/*
 * Run PROGRESS_NICE_BOOST nice levels above the program's threads (at most -20), where the
 * process may (root, CAP_SYS_NICE or RLIMIT_NICE; otherwise setpriority fails with EACCES and
 * nothing changes, as logged). This thread plays the NIC's part, which the kernel's rxe plays
 * in softirq context, above every thread: a program that waits for its peer by spinning on
 * memory (perftest's ib_write_lat, riostream) gives no other thread a CPU, and at equal weight
 * a waking progress thread can wait behind it until a scheduler tick, milliseconds, while the
 * datagram it is to place is what the program waits for. Ten levels are a weight ratio of
 * about 9 (the kernel's sched_prio_to_weight): enough to preempt a spinning program at once,
 * not enough to take nearly a whole CPU from a program while this thread is busy for long (a
 * bandwidth test's receives), as the ratio of 87 at -20 would.
 */
static void raise_nice(void)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int nice, want;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, tid);
	if (nice == -1 && errno)
		return;
	want = nice - PROGRESS_NICE_BOOST < -20 ? -20 : nice - PROGRESS_NICE_BOOST;
	if (want != nice && setpriority(PRIO_PROCESS, tid, want))
		uroce_log(UROCE_LOG_INFO,
			  "the progress thread keeps the program's nice level %d: %s", nice,
			  strerror(errno));
}

static void *progress_main(void *arg)
{
	struct start_arg *sa = arg;
	struct uroce_progress *p = sa->p;
	int err = setup_backend(p, sa->backend);

	if (err) {
		report_start(p, err);
		return NULL;
	}
	uroce_timers_set_runner(&p->timers);
	short_slice();
	raise_nice();
	progress_rx_lock(p);
	err = p->ops->init(p->arg, p);
	report_start(p, err);
	while (!err && !atomic_load(&p->stop)) {
		uint64_t deadline;
		bool ready;

		uroce_timers_run(&p->timers, uroce_now());
		deadline = progress_hand_over(p, uroce_now());
		reap_watches(p);
		progress_rx_unlock(p);
		do
			ready = p->backend->wait(p, deadline);
		while (!ready && progress_still_quiet(p, &deadline));
		thread_rx_lock(p);
		if (ready) {
			p->backend->dispatch(p);
			atomic_store_explicit(&p->end_due, true, memory_order_relaxed);
		}
		progress_end_batch(p);
	}
	progress_end_batch(p); /* what a polling thread put off goes out before the thread ends */
	progress_rx_unlock(p);
	p->backend->teardown(p);
	return NULL;
}

void progress_wake_thread(void *arg)
{
	progress_signal_fd(((struct uroce_progress *)arg)->evfd);
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
	if (p->handed_fd >= 0)
		close(p->handed_fd);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	if (p->epfd >= 0)
		close(p->epfd);
	progress_direct_free(p->direct);
	progress_steer_free(p->steer);
	pthread_mutex_destroy(&p->rx_lock);
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
	atomic_init(&p->handover_polls, POLLS_BEFORE_HANDOVER);
	p->ops = ops;
	p->arg = arg;
	p->epfd = -1;
	p->evfd = -1;
	p->handed_fd = -1;
	p->stop_fd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->rx_lock, NULL);
	pthread_cond_init(&p->started_cond, NULL);
	for (unsigned int i = 0; i < PROGRESS_MAX_UDP; i++) {
		p->udp[i].msg.msg_namelen = NAME_LEN;
		p->udp[i].msg.msg_controllen = UROCE_UDP_CONTROL_LEN;
	}
	err = uroce_timers_init(&p->timers, progress_wake_thread, p);
	if (err) {
		pthread_cond_destroy(&p->started_cond);
		pthread_mutex_destroy(&p->rx_lock);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return err;
	}
	p->direct = progress_direct_new();
	p->steer = progress_steer_new();
	if (!p->direct || !p->steer) {
		err = ENOMEM;
		goto fail;
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->handed_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->evfd < 0 || p->handed_fd < 0 || p->stop_fd < 0 ||
	    !uroce_progress_watch(p, p->evfd, on_wake, p)) {
		err = errno;
		goto fail;
	}
	/*
	 * The thread inherits the mask: every signal is blocked on it, so that a program's handler
	 * runs on one of the program's own threads (ARCHITECTURE.md, "Threads").
	 */
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

/*
 * Stop: the thread ends, and threads waiting in uroce_progress_wait() (a program's CQ thread
 * when it exits, uroce_net_close from a destructor) leave it before the object goes: they
 * return to a plain read() of their channel. One still inside after a second (it cannot be:
 * a turn of theirs takes microseconds) keeps the object, which is then not freed.
 */
void uroce_progress_stop(struct uroce_progress *p)
{
	atomic_store(&p->stop, true);
	progress_signal_fd(p->stop_fd);
	progress_wake_thread(p);
	pthread_join(p->thread, NULL);
	for (int i = 0; i < 1000 && atomic_load(&p->waiters); i++)
		usleep(1000);
	if (atomic_load(&p->waiters)) {
		uroce_log(UROCE_LOG_ERROR, "a thread still waits in the engine: its state is kept");
		return;
	}
	free_progress(p);
}

bool uroce_progress_on_thread(const struct uroce_progress *p)
{
	return progress_receiving == p;
}

int uroce_progress_add_udp(struct uroce_progress *p, const struct uroce_udp *s)
{
	unsigned int n;
	int err = 0;

	pthread_mutex_lock(&p->lock);
	n = atomic_load_explicit(&p->udp_count, memory_order_relaxed);
	if (n == PROGRESS_MAX_UDP) {
		err = ENOSPC;
	} else {
		p->udp[n].sock = *s;
		atomic_store_explicit(&p->udp_count, n + 1, memory_order_release);
		atomic_store(&p->sockets_added, true); /* progress_hand_over */
	}
	pthread_mutex_unlock(&p->lock);
	if (!err && !uroce_progress_on_thread(p))
		progress_wake_thread(p);
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
	unsigned int n = progress_udp_count(p); /* the slots below it are set for good */
	uint64_t lost = 0;

	for (unsigned int i = 0; i < n; i++)
		lost += uroce_udp_drops(&p->udp[i].sock);
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
