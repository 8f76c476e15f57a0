// SPDX-License-Identifier: MIT
/*
 * The progress thread's side of the hand-over of the sockets (progress.h, "Busy polling"):
 * giving them to the application's threads that asked, taking them back when their polls pause
 * for the idle window (or a socket is added), and pacing how soon a thread may ask again. The
 * application's side is progress_app.c; the thread's loop, progress.c.
 */
#include <poll.h>
#include <stdatomic.h>

#include "fabric/nocancel.h"
#include "fabric/progress_int.h"

/*
 * The hand-over (progress.h): consecutive empty polls of a thread before it asks for the
 * sockets (a thread that polls until empty and then sleeps in a completion channel never gets
 * there; a pause of POLL_GAP_NS, progress_app.c, starts the count again, and pace_handovers
 * raises it for programs that poll only briefly), and how long after the last poll the
 * progress thread takes them back: a window that starts short, so that a thread which stops
 * polling to wait some other way (ib_write_lat spins on the memory the peer writes) is not left
 * without receive, and doubles each time the thread finds the polls still going, so that a
 * steady poller is not interrupted often.
 */
#define POLLS_BEFORE_HANDOVER_MAX (32u << 12) /* and POLLS_BEFORE_HANDOVER (progress_int.h) */
#define POLL_IDLE_MIN_NS          100000u
/*
 * A take-back that found a thread receiving tries again this much later: a receive is short,
 * unless the scheduler set its thread aside, and then looking often would only take CPU from it.
 */
#define TAKE_BACK_RETRY_NS 100000u

uint64_t progress_idle_window_next(uint64_t idle_ns, uint64_t gap_max)
{
	uint64_t cap = gap_max < POLL_STEADY_GAP_NS ? POLL_IDLE_STEADY_MAX_NS : POLL_IDLE_MAX_NS;

	return idle_ns * 2 < cap ? idle_ns * 2 : cap;
}

/*
 * Progress thread, while a polling thread has the sockets: when the polls will have paused for
 * the idle window, at or before @now if they have. Looking again at the planned time and
 * finding the polls going grows the window (progress_idle_window_next).
 */
static uint64_t poll_idle_at(struct uroce_progress *p, uint64_t now)
{
	uint64_t at;

	if (atomic_load(&p->waiters)) /* a thread blocked in uroce_progress_wait() receives */
		atomic_store(&p->last_poll, now);
	at = atomic_load(&p->last_poll) + p->idle_ns;
	if (at > now && now >= p->idle_check) {
		p->idle_ns =
			progress_idle_window_next(p->idle_ns, atomic_exchange(&p->poll_gap_max, 0));
		at = atomic_load(&p->last_poll) + p->idle_ns;
	}
	p->idle_check = at;
	return at;
}

unsigned int progress_socket_pollfds(struct uroce_progress *p, struct pollfd *pfd)
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
	unsigned int n = progress_socket_pollfds(p, pfd);

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
 * Under the receive lock: the backend receives again from its next wait on. Not while an
 * application thread is receiving (it holds the receiving flag, progress_int.h): false then,
 * and the thread tries again soon.
 */
static bool take_back(struct uroce_progress *p)
{
	if (atomic_exchange(&p->receiving, true))
		return false;
	atomic_store(&p->want_app, false);
	atomic_store(&p->app_rx, false);
	atomic_store(&p->receiving, false);
	progress_drain_fd(p->handed_fd);
	if (p->ops->polling_ended)
		p->ops->polling_ended(p->arg);
	return true;
}

/* When to look again after a take-back that a receiving thread put off: soon, or at @next. */
static uint64_t retry_at(uint64_t now, uint64_t next)
{
	uint64_t at = now + TAKE_BACK_RETRY_NS;

	return at < next ? at : next;
}

uint64_t progress_hand_over(struct uroce_progress *p, uint64_t now)
{
	uint64_t next = uroce_timers_next(&p->timers);

	if (atomic_load(&p->app_rx)) {
		uint64_t idle_at;

		/*
		 * A socket came while the application's threads have them: a thread asleep in
		 * uroce_progress_wait() polls the ones it had, so the backend takes all of them
		 * back until the next hand-over, which includes the new one.
		 */
		if (atomic_load(&p->sockets_added)) {
			if (!take_back(p))
				return retry_at(now, next);
			atomic_store(&p->sockets_added, false);
			return next;
		}
		idle_at = poll_idle_at(p, now);
		if (now < idle_at)
			return idle_at < next ? idle_at : next;
		/* Nobody polls: the backend receives again from its next wait on. A thread that
		 * said it goes to sleep (uroce_progress_unpoll) ended its turn as it should. */
		if (!take_back(p))
			return retry_at(now, next);
		if (atomic_load(&p->last_poll))
			pace_handovers(p, now);
		/* An unpoll that no waiter followed: the next ones give the sockets back at once.
		 */
		if (atomic_exchange(&p->unpolled, false))
			atomic_store(&p->waiter_follows, false);
	} else if (atomic_load(&p->want_app) && p->backend->release(p)) {
		/* Threads that poll from now on find every socket added so far. */
		atomic_store(&p->sockets_added, false);
		atomic_store(&p->app_rx, true);
		progress_signal_fd(p->handed_fd);
		p->idle_ns = POLL_IDLE_MIN_NS;
		atomic_store(&p->poll_gap_max, 0);
		p->handed_at = now;
		p->idle_check = now + p->idle_ns;
		return p->idle_check < next ? p->idle_check : next;
	}
	return next;
}

bool progress_still_quiet(struct uroce_progress *p, uint64_t *deadline)
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
