/* SPDX-License-Identifier: MIT */
/*
 * The progress thread (progress.h): the loop, timers, watched descriptors, wake-ups, start and
 * stop, the hand-over of the sockets to polling threads and the direct receive; waiting and
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
#include <sys/syscall.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/progress_int.h"
#include "transport/wire.h"

#define EPOLL_BATCH 16
#define NAME_LEN    32 /* a sockaddr_in6 (28) rounded up, so the control messages are aligned */
#define RX_BATCH    16 /* datagrams per recvmmsg of the direct receive */
/* Direct receive buffers hold UROCE_UDP_RECV_MAX bytes, 64-byte aligned. */
#define RX_STRIDE ((UROCE_UDP_RECV_MAX + 63) & ~(size_t)63)

/*
 * The hand-over (progress.h): consecutive empty polls of a thread before it asks for the
 * sockets (a thread that polls until empty and then sleeps in a completion channel never gets
 * there; a pause of POLL_GAP_NS starts the count again, and pace_handovers raises it for
 * programs that poll only briefly), and how long after
 * the last poll the progress thread takes them back: a window that starts short, so that a thread
 * which stops polling to wait some other way (ib_write_lat spins on the memory the peer writes) is
 * not left without receive, and doubles each time the thread finds the polls still going, so that a
 * steady poller is not interrupted often.
 */
#define POLLS_BEFORE_HANDOVER     32u
#define POLLS_BEFORE_HANDOVER_MAX (32u << 12)
/*
 * Longer between two polls: not consecutive. Longer than a scheduler's time slice, so that a
 * poller that shares its CPU still counts as one: with a gap shorter than a slice, a poller
 * descheduled beside a busy loop would never reach the count pacing raised (fabric_stress under
 * TSan does this).
 */
#define POLL_GAP_NS      2000000u
#define POLL_IDLE_MIN_NS 100000u
#define POLL_IDLE_MAX_NS 1000000u
/* The progress thread's time slice (short_slice): the shortest the kernel allows. */
#define PROGRESS_SLICE_NS 100000u

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

/* The progress object whose receive lock this thread holds, if any. */
static _Thread_local const struct uroce_progress *receiving;
/* This thread's consecutive empty polls (reset by uroce_progress_unpoll), and the last one's time.
 */
static _Thread_local unsigned int empty_polls;
static _Thread_local uint64_t last_empty_poll;

static void rx_lock(struct uroce_progress *p)
{
	pthread_mutex_lock(&p->rx_lock);
	receiving = p;
}

static void rx_unlock(struct uroce_progress *p)
{
	receiving = NULL;
	pthread_mutex_unlock(&p->rx_lock);
}

void progress_received(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
		       const uint8_t *data, size_t len, uint64_t now)
{
	struct uroce_rx rx = {.ip = *ip, .now = now};
	bool v4 = roce_ipudp_is_v4(ip);

	for (size_t off = 0, i = 0; off < len; off += rx.len, i++) {
		/*
		 * The kernel gives an IPv4 datagram with DF from an unconnected socket the ID 0,
		 * and the segments of a UDP GSO send 0, 1, 2, ... (ip_select_ident_segs,
		 * inet_gso_segment); a GRO receive on loopback or veth is one such send. Guessed
		 * so, the ICRC check (roce_icrc_verify) seldom has to recover the ID.
		 */
		if (v4)
			rx.ip.ip_id = (uint16_t)i;
		rx.roce = data + off;
		rx.len = uroce_udp_segment(len, seg, off);
		if (rx.len > UROCE_PROGRESS_PAYLOAD_MAX) {
			atomic_fetch_add(&p->rx_oversize, 1);
			continue;
		}
		p->ops->datagram(p->arg, &rx);
	}
	if (p->ops->datagram_end)
		p->ops->datagram_end(p->arg);
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
	int n = nc_epoll_wait(p->epfd, ev, EPOLL_BATCH, 0);

	for (int i = 0; i < n; i++)
		progress_on_watch(ev[i].data.ptr);
}

/*
 * Make the first @n headers of the direct receive ready for recvmmsg again: it writes back
 * only the name and control lengths and the flags, and only of the datagrams it returns, so an
 * empty poll (most of them) leaves all sixteen ready.
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
 * A socket found empty by its last receive is asked for one datagram first. In a ping-pong the
 * next one comes only after the answer, and asking for RX_BATCH would cost each hop the
 * kernel's try at a second datagram (docs/PERFORMANCE.md). So that datagram ends the receive,
 * unless more of its message follows (roce_datagram_continues): then the rest is asked for at
 * once, since a receive that ends amid a message leaves its last packets (and the ACK riding
 * behind a train) for the next poll.
 * A socket that had datagrams at its last receive (a stream) is received in batches of
 * RX_BATCH until empty.
 */
unsigned int progress_receive_slot(struct uroce_progress *p, unsigned int slot, uint64_t now)
{
	struct udp_slot *s = &p->udp[slot];
	struct direct_rx *d = p->direct;
	unsigned int total = 0, want = s->drained ? 1 : RX_BATCH;

	for (;;) {
		int n = receive_some(s->sock.fd, d->msgs, want);
		bool more = false;

		s->drained = n <= 0;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				uroce_log(UROCE_LOG_ERROR, "receive on UDP port %u: %s",
					  s->sock.port, strerror(errno));
			return total;
		}
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
		}
		rearm_msgs(d, (unsigned int)n);
		total += (unsigned int)n;
		if ((unsigned int)n < want || (want == 1 && !more))
			return total;
		want = RX_BATCH;
	}
}

/*
 * The direct receive of a polling thread: one socket per poll. Seven polls in eight try the
 * socket that last brought datagrams (a ping-pong's next one comes there), the eighth the
 * sockets in turn, so that a busy socket starves none. No epoll set holds the sockets
 * meanwhile: each datagram queued on a socket that one watches costs the sender a wake-up call
 * into it (docs/PERFORMANCE.md).
 */
static unsigned int receive_direct(struct uroce_progress *p, uint64_t now)
{
	unsigned int n = progress_udp_count(p), slot = p->rx_hint, got;

	if (!n)
		return 0;
	if (!(p->rx_turn++ & 7) || slot >= n)
		slot = p->rx_next++ % n;
	got = progress_receive_slot(p, slot, now);
	if (got)
		p->rx_hint = slot;
	return got;
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

/* Empty the non-blocking eventfd @fd. */
static void on_drain(int fd)
{
	uint64_t v;

	while (nc_read(fd, &v, sizeof(v)) > 0)
		;
}

static void on_wake(void *arg)
{
	on_drain(((struct uroce_progress *)arg)->evfd);
}

/* Make the eventfd @fd readable. */
static void signal_fd(int fd)
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
 * changes only under that lock (still_quiet reads it as a hint), so plain loads and stores do:
 * an exchange, right after a receive's system call, waits for the kernel's stores to drain
 * (on every poll, and on every hop of a ping-pong for the store that follows).
 */
static void end_batch(struct uroce_progress *p)
{
	if (!atomic_load_explicit(&p->end_due, memory_order_relaxed))
		return;
	atomic_store_explicit(&p->end_due, false, memory_order_relaxed);
	if (p->ops->batch_end)
		p->ops->batch_end(p->arg);
}

/*
 * Progress thread, while a polling thread has the sockets: when the polls will have paused for
 * the idle window, at or before @now if they have. Looking again at the planned time and
 * finding the polls going doubles the window (POLL_IDLE_MIN_NS .. POLL_IDLE_MAX_NS).
 */
static uint64_t poll_idle_at(struct uroce_progress *p, uint64_t now)
{
	uint64_t at;

	if (atomic_load(&p->waiters)) /* a thread blocked in uroce_progress_wait() receives */
		atomic_store(&p->last_poll, now);
	at = atomic_load(&p->last_poll) + p->idle_ns;

	if (at > now && now >= p->idle_check && p->idle_ns < POLL_IDLE_MAX_NS) {
		p->idle_ns *= 2;
		at = atomic_load(&p->last_poll) + p->idle_ns;
	}
	p->idle_check = at;
	return at;
}

/* Fill @pfd with the UDP sockets, for POLLIN: their count. */
static unsigned int socket_pollfds(struct uroce_progress *p, struct pollfd *pfd)
{
	unsigned int n = progress_udp_count(p);

	for (unsigned int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){.fd = p->udp[i].sock.fd, .events = POLLIN};
	return n;
}

/* Whether a datagram waits on one of the sockets now (nobody receives them meanwhile). */
static bool datagrams_waiting(struct uroce_progress *p)
{
	struct pollfd pfd[PROGRESS_MAX_UDP];
	unsigned int n = socket_pollfds(p, pfd);

	return n && nc_poll(pfd, n, 0) > 0;
}

/*
 * Progress thread, taking the sockets back from threads that stopped polling: a hand-over that
 * ended with datagrams waiting on the sockets, or lasted less than the longest idle window,
 * doubles the empty polls the next one waits for (up to POLLS_BEFORE_HANDOVER_MAX); any other
 * resets them. A program that polls only between waits of another kind (ib_write_lat: for the
 * send completion, then on memory, while the peer's WRITE it spins for waits on a socket nobody
 * reads until the idle window ends) so stops asking, and its peer's packets do not wait out an
 * idle window each. Its hand-overs can last long (the window grows while polls go on), so
 * time alone does not tell it from a steady poller that was descheduled, which left nothing
 * waiting.
 */
static void pace_handovers(struct uroce_progress *p, uint64_t now)
{
	unsigned int polls = atomic_load(&p->handover_polls);

	if (now - p->handed_at >= POLL_IDLE_MAX_NS && !datagrams_waiting(p))
		polls = POLLS_BEFORE_HANDOVER;
	else if (polls < POLLS_BEFORE_HANDOVER_MAX)
		polls *= 2;
	atomic_store(&p->handover_polls, polls);
}

/*
 * Under the receive lock: give the sockets to the polling threads that asked for them once the
 * backend has let them go, take them back when the polls pause for the idle window. Returns
 * when the thread must look again at the latest: the earliest timer, or the idle window's end.
 */
static uint64_t hand_over(struct uroce_progress *p, uint64_t now)
{
	uint64_t next = uroce_timers_next(&p->timers);

	if (atomic_load(&p->app_rx)) {
		uint64_t idle_at = poll_idle_at(p, now);

		if (now < idle_at)
			return idle_at < next ? idle_at : next;
		/* Nobody polls: the backend receives again from its next wait on. A thread that
		 * said it goes to sleep (uroce_progress_unpoll) ended its turn as it should. */
		if (atomic_load(&p->last_poll))
			pace_handovers(p, now);
		/* An unpoll that no waiter followed: the next ones give the sockets back at once.
		 */
		if (atomic_exchange(&p->unpolled, false))
			atomic_store(&p->waiter_follows, false);
		atomic_store(&p->want_app, false);
		atomic_store(&p->app_rx, false);
		on_drain(p->handed_fd);
		if (p->ops->polling_ended)
			p->ops->polling_ended(p->arg);
	} else if (atomic_load(&p->want_app) && p->backend->release(p)) {
		atomic_store(&p->app_rx, true);
		signal_fd(p->handed_fd);
		p->idle_ns = POLL_IDLE_MIN_NS;
		p->handed_at = now;
		p->idle_check = now + p->idle_ns;
		return p->idle_check < next ? p->idle_check : next;
	}
	return next;
}

/*
 * A wait ended with nothing to dispatch: true (with the next @deadline) if the thread has
 * nothing to do either, with the sockets still polled, no timer due and no batch put off, so
 * that it sleeps again without taking the receive lock from the polling thread.
 */
static bool still_quiet(struct uroce_progress *p, uint64_t *deadline)
{
	uint64_t now = uroce_now();
	uint64_t next = uroce_timers_next(&p->timers);
	uint64_t idle_at;

	if (atomic_load(&p->stop) || !atomic_load(&p->app_rx) || atomic_load(&p->end_due) ||
	    next <= now)
		return false;
	idle_at = poll_idle_at(p, now);
	if (idle_at <= now)
		return false;
	*deadline = idle_at < next ? idle_at : next;
	return true;
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
	rx_lock(p);
	err = p->ops->init(p->arg, p);
	report_start(p, err);
	while (!err && !atomic_load(&p->stop)) {
		uint64_t deadline;
		bool ready;

		uroce_timers_run(&p->timers, uroce_now());
		deadline = hand_over(p, uroce_now());
		reap_watches(p);
		rx_unlock(p);
		do
			ready = p->backend->wait(p, deadline);
		while (!ready && still_quiet(p, &deadline));
		rx_lock(p);
		if (ready) {
			p->backend->dispatch(p);
			atomic_store_explicit(&p->end_due, true, memory_order_relaxed);
		}
		end_batch(p);
	}
	end_batch(p); /* what a polling thread put off goes out before the thread ends */
	rx_unlock(p);
	p->backend->teardown(p);
	return NULL;
}

static void wake_thread(void *arg)
{
	signal_fd(((struct uroce_progress *)arg)->evfd);
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
	if (p->direct)
		free(p->direct->bufs);
	free(p->direct);
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
	err = uroce_timers_init(&p->timers, wake_thread, p);
	if (err) {
		pthread_cond_destroy(&p->started_cond);
		pthread_mutex_destroy(&p->rx_lock);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return err;
	}
	p->direct = calloc(1, sizeof(*p->direct));
	if (!p->direct || !(p->direct->bufs = malloc((size_t)RX_BATCH * RX_STRIDE))) {
		err = ENOMEM;
		goto fail;
	}
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		p->direct->iov[i].iov_base = p->direct->bufs + (size_t)i * RX_STRIDE;
		p->direct->iov[i].iov_len = UROCE_UDP_RECV_MAX;
	}
	rearm_msgs(p->direct, RX_BATCH);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->handed_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->epfd < 0 || p->evfd < 0 || p->handed_fd < 0 || p->stop_fd < 0 ||
	    !uroce_progress_watch(p, p->evfd, on_wake, p)) {
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

/*
 * Stop: the thread ends, and threads waiting in uroce_progress_wait() (a program's CQ thread
 * when it exits, uroce_net_close from a destructor) leave it before the object goes: they
 * return to a plain read() of their channel. One still inside after a second (it cannot be:
 * a turn of theirs takes microseconds) keeps the object, which is then not freed.
 */
void uroce_progress_stop(struct uroce_progress *p)
{
	atomic_store(&p->stop, true);
	signal_fd(p->stop_fd);
	wake_thread(p);
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
	return receiving == p;
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
	}
	pthread_mutex_unlock(&p->lock);
	if (!err && !uroce_progress_on_thread(p))
		wake_thread(p);
	return err;
}

int uroce_progress_poll(struct uroce_progress *p)
{
	uint64_t now = uroce_now();
	unsigned int n;

	atomic_store_explicit(&p->last_poll, now, memory_order_relaxed);
	if (!atomic_load(&p->app_rx)) {
		/* Consecutive: a pause (the thread waited some other way) starts the count again.
		 */
		if (now - last_empty_poll > POLL_GAP_NS)
			empty_polls = 0;
		last_empty_poll = now;
		if (++empty_polls >=
			    atomic_load_explicit(&p->handover_polls, memory_order_relaxed) &&
		    !atomic_exchange(&p->want_app, true))
			wake_thread(p);
		return -1;
	}
	/* Another thread receives: what it takes reaches this one's CQ all the same. */
	if (receiving == p || pthread_mutex_trylock(&p->rx_lock))
		return 0;
	receiving = p;
	if (!atomic_load(&p->app_rx)) { /* taken back meanwhile */
		rx_unlock(p);
		return -1;
	}
	/*
	 * The previous poll's batch ends now, not as that poll returned: its completions reached
	 * the caller before the answers (ACKs) went out, which would have cost a send on the way
	 * to every completion of a ping-pong. Bounded by the next poll, a hand-back to the
	 * progress thread (after the idle window) or a QP's modify or destroy
	 * (verbs-shim/engine_tx.c).
	 */
	end_batch(p);
	n = receive_direct(p, now);
	if (n) /* end_batch cleared it */
		atomic_store_explicit(&p->end_due, true, memory_order_relaxed);
	rx_unlock(p);
	return (int)n;
}

bool uroce_progress_polled(const struct uroce_progress *p)
{
	/* A thread blocked in uroce_progress_wait() does not poll again soon. */
	return atomic_load(&p->app_rx) && !atomic_load(&p->waiters);
}

void uroce_progress_unpoll(struct uroce_progress *p)
{
	empty_polls = 0;
	if (!atomic_load(&p->want_app) && !atomic_load(&p->app_rx))
		return;
	if (atomic_load(&p->waiter_follows)) {
		/* It will sleep in uroce_progress_wait(), which receives: the sockets stay, until
		 * the idle window if it does not come (which ends the guess). */
		atomic_store(&p->unpolled, true);
		atomic_store(&p->last_poll, uroce_now());
		return;
	}
	atomic_store(&p->last_poll, 0);
	atomic_store(&p->want_app, false);
	wake_thread(p);
}

/* A waiter's ppoll set: its fd, the stop eventfd, then the sockets or the hand-over eventfd. */
#define WAIT_FIXED 2

/* A waiter cancelled in ppoll (or leaving): it no longer receives. */
static void waiter_leave(void *arg)
{
	struct uroce_progress *p = arg;

	atomic_store(&p->last_poll, uroce_now());
	atomic_fetch_sub(&p->waiters, 1);
}

/*
 * A waiter's turn at the sockets, if they are the application's: receive on those of the first
 * @polled that the last ppoll (@pfd, after its WAIT_FIXED) found readable, then look at
 * @ready. The first turn receives on none: the ppoll after it finds what is queued, and a
 * receive on each socket would cost a system call per wait. Not ready: the thread will
 * sleep, so what the datagrams called for (ACKs) leaves now; ready: it is put off as after a
 * busy poll (uroce_progress_poll), since the caller's next post or poll sends it first.
 * Cancellation is off meanwhile: a callback may make a system call that is a cancellation
 * point, and must not end holding the receive lock or a QP's.
 */
static bool wait_turn(struct uroce_progress *p, const struct pollfd *pfd, unsigned int polled,
		      bool (*ready)(void *arg), void *arg)
{
	unsigned int n = progress_udp_count(p), got = 0;
	bool is_ready;
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	rx_lock(p);
	if (atomic_load(&p->app_rx)) {
		uint64_t now = uroce_now();

		for (unsigned int i = 0; i < n; i++)
			if (i < polled && pfd[WAIT_FIXED + i].revents)
				got += progress_receive_slot(p, i, now);
	}
	if (got)
		atomic_store_explicit(&p->end_due, true, memory_order_relaxed);
	is_ready = ready(arg);
	if (!is_ready)
		end_batch(p);
	rx_unlock(p);
	pthread_setcancelstate(old, NULL);
	return is_ready;
}

int uroce_progress_wait(struct uroce_progress *p, int fd, bool (*ready)(void *arg), void *arg)
{
	struct pollfd pfd[WAIT_FIXED + PROGRESS_MAX_UDP];
	unsigned int polled = 0; /* sockets in the last ppoll (none before the first) */
	int err = 0;

	atomic_fetch_add(&p->waiters, 1);
	if (atomic_load(&p->stop)) { /* stopping: the caller reads its fd itself */
		atomic_fetch_sub(&p->waiters, 1);
		return 0;
	}
	atomic_store(&p->waiter_follows, true);
	atomic_store(&p->unpolled, false);
	empty_polls = 0;
	pthread_cleanup_push(waiter_leave, p);
	if (!atomic_load(&p->app_rx) && !atomic_exchange(&p->want_app, true))
		wake_thread(p);
	for (;;) {
		unsigned int k = 1;
		int r;

		if (wait_turn(p, pfd, polled, ready, arg) || atomic_load(&p->stop))
			break;
		pfd[0] = (struct pollfd){.fd = fd, .events = POLLIN};
		pfd[k++] = (struct pollfd){.fd = p->stop_fd, .events = POLLIN};
		/*
		 * The sockets while they are the application's; the hand-over's eventfd while
		 * they are still the thread's (a receive the thread makes wakes this one
		 * through @fd). Either way every datagram has a receiver.
		 */
		if (atomic_load(&p->app_rx)) {
			polled = socket_pollfds(p, pfd + k);
			k += polled;
		} else {
			pfd[k++] = (struct pollfd){.fd = p->handed_fd, .events = POLLIN};
			polled = 0;
		}
		r = ppoll(pfd, k, NULL, NULL); /* the cancellation point */
		if (r < 0 && errno != EINTR) {
			err = errno;
			uroce_log(UROCE_LOG_ERROR, "waiting for a completion event: %s",
				  strerror(err));
			break;
		}
		if (r < 0) {
			err = EINTR;
			break;
		}
		if (pfd[0].revents)
			break;
	}
	pthread_cleanup_pop(1);
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
