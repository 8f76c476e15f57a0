/* SPDX-License-Identifier: MIT */
/*
 * The progress thread's two receive backends (progress.h), and what they share: the thread's
 * state, and handing a received buffer to the datagram callback. Internal to fabric/.
 *
 * progress.c runs the thread: timers, watched descriptors (an epoll set), wake-ups, the start
 * and stop handshakes, and its side of the hand-over of the sockets to application threads;
 * progress_app.c is their side (busy polling, waiting in ibv_get_cq_event); progress_rx.c the
 * direct receive (recvmmsg from the sockets) that they and the epoll backend use. A backend
 * waits for the next event and dispatches it:
 *   progress_uring.c   io_uring: multishot recvmsg over a provided-buffer ring, and a poll of
 *                      the epoll set, in one io_uring_submit_and_wait_timeout
 *   progress_epoll.c   the receive set nested in the epoll set, epoll_wait, direct receive
 *
 * The receive lock: whoever hands datagrams to the callbacks, runs timers or watches holds
 * p->rx_lock -- the progress thread for each turn (not while it sleeps), or an application
 * thread in uroce_progress_poll() while it hands out what it received. One at a time keeps
 * each QP's packets in order and makes every callback single-threaded, as progress.h promises.
 *
 * The receiving flag: while the sockets are the application's, the thread that receives from
 * them holds p->receiving (taken with an exchange, never waited for), and the progress thread
 * takes them back only by taking it; so the sockets have one receiver, and datagrams reach the
 * callbacks in the order they came. A polling thread makes its receive (most polls: one empty
 * recvmsg) with the flag alone, and takes the receive lock only to hand out what came: a
 * poller the scheduler sets aside in its system call then keeps the progress thread from
 * nothing. The order is flag, then lock; a holder of the lock only tries the flag.
 */
#ifndef UROCE_FABRIC_PROGRESS_INT_H
#define UROCE_FABRIC_PROGRESS_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fabric/progress.h"

#define PROGRESS_MAX_UDP 4

struct uroce_watch {
	int fd; /* -1 once unwatched: an event still in the batch is skipped */
	void (*ready)(void *arg);
	void *arg;
	struct uroce_watch *next;
};

struct udp_slot {
	struct uroce_udp sock;
	struct msghdr msg; /* io_uring: lengths of the name and control areas of each buffer */
	/* Progress thread: the backend receives on it (io_uring: a multishot receive is
	 * outstanding; epoll: it is in the watch set). */
	bool armed;
	bool cancelling; /* io_uring, progress thread: its cancel is submitted */
	bool drained;    /* its receiver's: its last receive found nothing (progress_rx.c) */
	/*
	 * Its receiver's: the next datagram is worth a steered receive (progress_steer_next), and
	 * how many more such guesses to skip after one the owner refused.
	 */
	bool steer_next;
	uint8_t steer_skip;
	unsigned int steered; /* its receiver's: datagrams received straight into place */
	bool steered_last;    /* its receiver's: the last datagram was */
};

struct direct_rx; /* progress_rx.c: recvmmsg buffers of the direct receive */
struct steer_rx;  /* progress_steer.c: the buffers of the steered receive */

struct progress_backend;

struct uroce_progress {
	const struct uroce_progress_ops *ops;
	void *arg;
	const struct progress_backend *backend;
	void *be; /* the backend's state, made and freed on the thread */
	pthread_t thread;
	int epfd; /* the watched descriptors (and, for epoll, the UDP sockets) */
	/* Direct receive (its receiver: the receiving flag, or rx_lock while the sockets are the
	 * thread's): the slot that last brought datagrams, the poll count, and the slot the next
	 * round-robin poll tries. */
	unsigned int rx_hint, rx_turn, rx_next;
	int evfd; /* wakes the thread: timers armed earlier, stop, a new socket, a hand-over */
	struct direct_rx *direct; /* its receiver's, as rx_hint */
	struct steer_rx *steer;   /* likewise */

	pthread_mutex_t rx_lock; /* the receive lock (above) */
	/* The hand-over (uroce_progress_poll): a polling thread wants the sockets, has them. */
	atomic_bool want_app;
	atomic_bool app_rx;         /* written under rx_lock and the receiving flag */
	atomic_bool receiving;      /* the receiving flag (above) */
	atomic_bool rx_wanted;      /* the progress thread waits for rx_lock: polls leave it */
	atomic_bool sockets_added;  /* since the last hand-over (progress_hand_over) */
	_Atomic uint64_t last_poll; /* uroce_now() of the latest uroce_progress_poll() */
	/* The longest pause between two polls while the sockets are handed over, since the
	 * progress thread last looked (progress_handover.c, poll_idle_at). */
	_Atomic uint64_t poll_gap_max;
	/*
	 * Threads in uroce_progress_wait() (they count as polling all the while); an
	 * eventfd readable while the sockets are the application's (written at the hand-over,
	 * drained at the take-back), which wakes a waiter that found them still the thread's;
	 * whether this process's threads sleep in uroce_progress_wait() after an unpoll, and an
	 * unpoll no waiter has followed yet (uroce_progress_unpoll).
	 */
	_Atomic unsigned int waiters;
	int handed_fd;
	int stop_fd; /* readable once the progress object stops: waiters leave */
	atomic_bool waiter_follows;
	atomic_bool unpolled;
	/* Progress thread: how long polls may pause before it takes the sockets back, and when it
	 * last planned to look (progress_handover.c, poll_idle_at). */
	uint64_t idle_ns, idle_check;
	uint64_t handed_at;                  /* progress thread: when it last gave the sockets */
	_Atomic unsigned int handover_polls; /* empty polls before a thread asks for the sockets */
	atomic_bool end_due;         /* a polling thread put off the batch_end callback (rx_lock) */
	_Atomic uint64_t end_due_at; /* when the batch it put off was received (rx_lock) */
	atomic_bool end_may_wait;    /* that batch owes only ACKs of SENDs (rx_lock) */
	bool batch_acks, batch_now;  /* the current batch has packets that call for an ACK, or for
					more (transport/wire.h: roce_answer_of; rx_lock) */
	atomic_bool stop;
	struct uroce_timers timers;
	unsigned int nbufs;

	pthread_mutex_t lock; /* udp_count, watches; start handshake */
	pthread_cond_t started_cond;
	bool started;
	int start_err;
	struct udp_slot udp[PROGRESS_MAX_UDP];
	_Atomic unsigned int udp_count; /* written under lock, once the slot is set */
	struct uroce_watch *watches;
	struct uroce_watch *dead; /* unwatched, freed after the batch */

	_Atomic uint64_t rx_oversize;
	_Atomic uint64_t rearms;
};

struct progress_backend {
	const char *name;
	/* On the thread, before anything else: 0 or an errno (the backend is not available). */
	int (*setup)(struct uroce_progress *p);
	void (*teardown)(struct uroce_progress *p);
	/*
	 * Without the receive lock: receive on the sockets not yet armed (unless they are to be
	 * left to polling threads: progress_sockets_wanted()), and wait at most until @deadline
	 * (uroce_now() clock, UINT64_MAX: no limit) for datagrams or watched descriptors.
	 * Returns whether anything is there for dispatch.
	 */
	bool (*wait)(struct uroce_progress *p, uint64_t deadline);
	/*
	 * Under the receive lock, after a wait that found something: hand it out, datagrams
	 * through progress_received(), ready descriptors through progress_on_epoll().
	 */
	void (*dispatch)(struct uroce_progress *p);
	/*
	 * Under the receive lock: stop receiving on the sockets, for polling threads. Returns
	 * whether they are free now; if not, the wait goes on until they are.
	 */
	bool (*release)(struct uroce_progress *p);
};

extern const struct progress_backend progress_uring_backend;
extern const struct progress_backend progress_epoll_backend;

/*
 * Hand what one receive returned to the datagram callback: @len bytes at @data from @ip (as
 * uroce_udp_rx_source() and the control messages describe it), several datagrams of @seg bytes
 * each but the last if UDP GRO coalesced them (@seg 0: one).
 */
void progress_received(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
		       const uint8_t *data, size_t len, uint64_t now);
/*
 * progress_received() of a datagram whose first @ngaps packets may have their payloads
 * elsewhere: packet i's at gaps[i] when gaps[i].len is not 0 (progress_steer.c).
 */
void progress_received_gaps(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
			    const uint8_t *data, size_t len, const struct roce_pkt_gap *gaps,
			    unsigned int ngaps, uint64_t now);
/*
 * After a datagram of @len bytes at @data (GRO segments of @seg) came from @s: note whether the
 * next one is worth a steered receive (transport/wire.h: roce_datagram_steerable).
 */
void progress_steer_next(struct udp_slot *s, const uint8_t *data, size_t len, uint16_t seg);
/*
 * Under the receive lock, as the sockets' receiver: while UDP socket @slot's datagrams are worth
 * it (progress_steer_next), receive each straight into place (progress.h: steer) and hand it out
 * as received at @now, adding it to *@total; at most PROGRESS_STEER_ROUNDS. Returns true if the
 * turn at the socket ends there (it is empty, the rounds are used up, or the progress thread
 * waits for the lock), false if a plain receive is to follow (the owner does not steer the
 * next datagram, or it is not worth a try).
 */
bool progress_steer_stream(struct uroce_progress *p, unsigned int slot, uint64_t now,
			   unsigned int *total);
/* Steered receives (one datagram each) of one turn at a socket: a MiB of WRITE payload. */
#define PROGRESS_STEER_ROUNDS 16u
/* The steered receive's buffers (progress_steer.c): NULL without memory. */
struct steer_rx *progress_steer_new(void);
void progress_steer_free(struct steer_rx *st);

/* Call the ready callbacks of the watched descriptors that epoll reports now (no waiting). */
void progress_on_epoll(struct uroce_progress *p);

/* Call the ready callback of the watch an epoll event of the watch set names. */
void progress_on_watch(void *watch);

/* The sockets added so far (the slots below it are set for good). */
unsigned int progress_udp_count(const struct uroce_progress *p);

/* Whether the sockets are (to be) left to polling threads: the thread must not receive. */
bool progress_sockets_wanted(struct uroce_progress *p);

/*
 * Under the receive lock, as the sockets' receiver: receive what UDP socket @slot holds now,
 * with recvmmsg in batches until it would block (but from a socket found empty just before, a
 * first datagram that ends its message ends the receive; and a bounded number of batches, fewer
 * when the progress thread waits for the lock), and hand it out as received at @now
 * (uroce_now(), read just before: the timers' resolution is microseconds). Returns the
 * datagrams.
 */
unsigned int progress_receive_slot(struct uroce_progress *p, unsigned int slot, uint64_t now);

/* The progress object whose receive lock this thread holds, if any (progress.c). */
extern _Thread_local const struct uroce_progress *progress_receiving;

/* Take @p's receive lock (progress_int.h's top comment says who holds it). */
static inline void progress_rx_lock(struct uroce_progress *p)
{
	pthread_mutex_lock(&p->rx_lock);
	progress_receiving = p;
}

static inline void progress_rx_unlock(struct uroce_progress *p)
{
	progress_receiving = NULL;
	pthread_mutex_unlock(&p->rx_lock);
}

/*
 * Under the receive lock, a polling or waiting thread's batch of datagrams received at @now:
 * its end is put off to a later poll (progress_rx.c: progress_receive_direct says which).
 */
void progress_put_off_batch(struct uroce_progress *p, uint64_t now);

/* Under the receive lock: the batch_end callback, if datagrams came since it last ran. */
void progress_end_batch(struct uroce_progress *p);

/*
 * A polling thread's receive, holding the receiving flag and not the receive lock (which it
 * takes to hand out what came, and to end the previous poll's batch): one socket per call;
 * the datagrams.
 */
unsigned int progress_receive_direct(struct uroce_progress *p, uint64_t now);

/* Fill @pfd with the UDP sockets, for POLLIN: their count. */
unsigned int progress_socket_pollfds(struct uroce_progress *p, struct pollfd *pfd);

/* Empty the non-blocking eventfd @fd. */
void progress_drain_fd(int fd);

/* Make the eventfd @fd readable. */
void progress_signal_fd(int fd);

/* The empty polls a thread makes before it asks for the sockets, at first (progress_handover.c). */
#define POLLS_BEFORE_HANDOVER 32u

/*
 * How long polls may pause before the progress thread takes the sockets back: the window
 * doubles each time it looks and finds them going, up to POLL_IDLE_MAX_NS; while they go on
 * without a pause of POLL_STEADY_GAP_NS (a busy poller: ib_send_lat, a bandwidth test's
 * receiver), up to POLL_IDLE_STEADY_MAX_NS. Each look wakes the progress thread, which on a
 * host with as many busy threads as CPUs takes a poller off its CPU for microseconds (the 99th
 * percentile of a ping-pong), and a steady poller seldom stops without unpolling; one that
 * waits another way between polls (ib_write_lat spins on memory) keeps the shorter window.
 */
#define POLL_IDLE_MAX_NS        1000000u
#define POLL_IDLE_STEADY_MAX_NS 8000000u
#define POLL_STEADY_GAP_NS      50000u

/*
 * The next idle window after @idle_ns, the polls going on with @gap_max as their longest pause
 * since the last look (progress_handover.c).
 */
uint64_t progress_idle_window_next(uint64_t idle_ns, uint64_t gap_max);

/*
 * Under the receive lock: give the sockets to the polling threads that asked for them once the
 * backend has let them go, take them back when the polls pause for the idle window. Returns
 * when the thread must look again at the latest: the earliest timer, or the idle window's end.
 */
uint64_t progress_hand_over(struct uroce_progress *p, uint64_t now);

/*
 * A wait ended with nothing to dispatch: true (with the next @deadline) if the thread has
 * nothing to do either, with the sockets still polled, no timer due and no batch put off, so
 * that it sleeps again without taking the receive lock from the polling thread.
 */
bool progress_still_quiet(struct uroce_progress *p, uint64_t *deadline);

/* Wake the progress thread (@arg: the struct uroce_progress) from any thread. */
void progress_wake_thread(void *arg);

/* The direct receive's buffers (progress_rx.c): NULL without memory. */
struct direct_rx *progress_direct_new(void);

/* Free the direct receive's buffers (NULL: nothing). */
void progress_direct_free(struct direct_rx *d);

#endif
