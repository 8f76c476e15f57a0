/* SPDX-License-Identifier: MIT */
/*
 * The progress thread's deadlines (struct uroce_timer): a binary min-heap keyed by
 * deadline, in an array whose positions the timers record (heap_index, 1-based; 0: not armed).
 * Arm and cancel from any thread under one mutex; callbacks run on the runner thread without it.
 */
#ifndef UROCE_FABRIC_TIMER_H
#define UROCE_FABRIC_TIMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: the clock of every deadline (and of struct uroce_rx's now). */
uint64_t uroce_now(void);

/*
 * A deadline on the progress thread. Embed it; all fields are the timer module's. The endpoint
 * arms it (net.h: uroce_timer_arm), the modules below it through uroce_timers_arm.
 */
struct uroce_timer {
	void (*fire)(struct uroce_timer *t, uint64_t now); /* on the progress thread */
	uint64_t deadline;
	uint32_t heap_index; /* 0: not armed */
};

struct uroce_timers {
	pthread_mutex_t lock;
	pthread_cond_t idle;       /* signalled when a callback returns */
	struct uroce_timer **heap; /* heap[1..len] */
	uint32_t len, cap;
	struct uroce_timer *running; /* whose callback is running, or NULL */
	uint32_t cancelling;         /* threads in uroce_timers_cancel() waiting for running */
	pthread_t runner;            /* the thread that calls uroce_timers_run() */
	bool has_runner;
	/* Called (without the lock) when another thread made the earliest deadline earlier. */
	void (*wake)(void *arg);
	void *wake_arg;
};

/* Returns 0 or ENOMEM. */
int uroce_timers_init(struct uroce_timers *ts, void (*wake)(void *arg), void *wake_arg);

/* Forget all timers (they are left as they are). No other thread may use @ts. */
void uroce_timers_destroy(struct uroce_timers *ts);

/* Make the calling thread the one that runs callbacks. */
void uroce_timers_set_runner(struct uroce_timers *ts);

/* Whether the calling thread runs the callbacks (arming costs it no wake-up of another). */
bool uroce_timers_on_runner(const struct uroce_timers *ts);

/*
 * Arm or move @t (uroce_timer_arm, net.h). The array grows when a timer is armed that was not;
 * if that allocation fails, which the void interface cannot report, the process is aborted
 * with a message rather than losing a deadline silently.
 */
void uroce_timers_arm(struct uroce_timers *ts, struct uroce_timer *t, uint64_t deadline);

/* Disarm @t, waiting for its running callback unless called from the runner thread (net.h). */
void uroce_timers_cancel(struct uroce_timers *ts, struct uroce_timer *t);

/* The earliest deadline, or UINT64_MAX if no timer is armed. */
uint64_t uroce_timers_next(struct uroce_timers *ts);

/*
 * On the runner thread: fire the timers due at @now, earliest first. A timer its callback re-arms
 * into the past fires at the next call, so that re-arming cannot starve the caller.
 */
void uroce_timers_run(struct uroce_timers *ts, uint64_t now);

#endif
