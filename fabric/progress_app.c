/* SPDX-License-Identifier: MIT */
/*
 * The application's threads at the sockets (progress.h): a thread that busy polls a CQ
 * receives itself once it has polled empty long enough (uroce_progress_poll), and a thread
 * blocked in ibv_get_cq_event waits on the sockets and receives (uroce_progress_wait); the
 * progress thread hands the sockets over and takes them back (progress_handover.c).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "fabric/log.h"
#include "fabric/progress_int.h"

/*
 * Longer between two polls: not consecutive. Longer than a scheduler's time slice, so that a
 * poller that shares its CPU still counts as one: with a gap shorter than a slice, a poller
 * descheduled beside a busy loop would never reach the count pacing raised (fabric_stress under
 * TSan does this).
 */
#define POLL_GAP_NS 2000000u

/* This thread's consecutive empty polls (reset by uroce_progress_unpoll), and the last one's time.
 */
static _Thread_local unsigned int empty_polls;
static _Thread_local uint64_t last_empty_poll;

int uroce_progress_poll(struct uroce_progress *p)
{
	uint64_t now = uroce_now();
	uint64_t prev = atomic_load_explicit(&p->last_poll, memory_order_relaxed);
	unsigned int n;

	/*
	 * A pause longer than any so far tells the progress thread the polls are not steady. A
	 * load and a store, not an exchange (a locked instruction on every poll): two threads
	 * polling at once only blur a heuristic.
	 */
	atomic_store_explicit(&p->last_poll, now, memory_order_relaxed);
	if (prev && now > prev &&
	    now - prev > atomic_load_explicit(&p->poll_gap_max, memory_order_relaxed))
		atomic_store_explicit(&p->poll_gap_max, now - prev, memory_order_relaxed);
	if (!atomic_load(&p->app_rx)) {
		/* Consecutive: a pause (the thread waited some other way) starts the count again.
		 */
		if (now - last_empty_poll > POLL_GAP_NS)
			empty_polls = 0;
		last_empty_poll = now;
		if (++empty_polls >=
			    atomic_load_explicit(&p->handover_polls, memory_order_relaxed) &&
		    !atomic_exchange(&p->want_app, true))
			progress_wake_thread(p);
		return -1;
	}
	/* The progress thread waits for its turn (progress.c: thread_rx_lock): give it the CPU. */
	if (atomic_load_explicit(&p->rx_wanted, memory_order_relaxed))
		return -1;
	/* Another thread receives: what it takes reaches this one's CQ all the same. */
	if (progress_receiving == p || atomic_exchange(&p->receiving, true))
		return 0;
	if (!atomic_load(&p->app_rx)) { /* taken back meanwhile */
		atomic_store(&p->receiving, false);
		return -1;
	}
	n = progress_receive_direct(p, now);
	atomic_store(&p->receiving, false);
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
	progress_wake_thread(p);
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
	progress_rx_lock(p);
	/* A polling thread receiving meanwhile takes what is there (progress_int.h). */
	if (polled && atomic_load(&p->app_rx) && !atomic_exchange(&p->receiving, true)) {
		uint64_t now = uroce_now();

		if (atomic_load(&p->app_rx))
			for (unsigned int i = 0; i < n; i++)
				if (i < polled && pfd[WAIT_FIXED + i].revents)
					got += progress_receive_slot(p, i, now);
		atomic_store(&p->receiving, false);
	}
	if (got)
		progress_put_off_batch(p, uroce_now());
	is_ready = ready(arg);
	if (!is_ready)
		progress_end_batch(p);
	progress_rx_unlock(p);
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
		progress_wake_thread(p);
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
			polled = progress_socket_pollfds(p, pfd + k);
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
