/* SPDX-License-Identifier: MIT */
#include "fabric/timer.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "fabric/log.h"

#define INITIAL_CAP 64

uint64_t uroce_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int uroce_timers_init(struct uroce_timers *ts, void (*wake)(void *arg), void *wake_arg)
{
	*ts = (struct uroce_timers){.cap = INITIAL_CAP, .wake = wake, .wake_arg = wake_arg};
	/* heap[0] is unused: the children of i are 2i and 2i + 1. */
	ts->heap = calloc(INITIAL_CAP + 1, sizeof(ts->heap[0]));
	if (!ts->heap)
		return ENOMEM;
	pthread_mutex_init(&ts->lock, NULL);
	pthread_cond_init(&ts->idle, NULL);
	return 0;
}

void uroce_timers_destroy(struct uroce_timers *ts)
{
	pthread_cond_destroy(&ts->idle);
	pthread_mutex_destroy(&ts->lock);
	free(ts->heap);
	ts->heap = NULL;
}

void uroce_timers_set_runner(struct uroce_timers *ts)
{
	pthread_mutex_lock(&ts->lock);
	ts->runner = pthread_self();
	ts->has_runner = true;
	pthread_mutex_unlock(&ts->lock);
}

bool uroce_timers_on_runner(const struct uroce_timers *ts)
{
	return ts->has_runner && pthread_equal(ts->runner, pthread_self());
}

static void place(struct uroce_timers *ts, struct uroce_timer *t, uint32_t i)
{
	ts->heap[i] = t;
	t->heap_index = i;
}

static void sift_up(struct uroce_timers *ts, uint32_t i)
{
	struct uroce_timer *t = ts->heap[i];

	while (i > 1 && ts->heap[i / 2]->deadline > t->deadline) {
		place(ts, ts->heap[i / 2], i);
		i /= 2;
	}
	place(ts, t, i);
}

static void sift_down(struct uroce_timers *ts, uint32_t i)
{
	struct uroce_timer *t = ts->heap[i];

	for (;;) {
		uint32_t c = 2 * i;

		if (c > ts->len)
			break;
		if (c < ts->len && ts->heap[c + 1]->deadline < ts->heap[c]->deadline)
			c++;
		if (ts->heap[c]->deadline >= t->deadline)
			break;
		place(ts, ts->heap[c], i);
		i = c;
	}
	place(ts, t, i);
}

/* Take @t out of the heap. Lock held, @t armed. */
static void remove_timer(struct uroce_timers *ts, struct uroce_timer *t)
{
	uint32_t i = t->heap_index;
	struct uroce_timer *last = ts->heap[ts->len--];

	t->heap_index = 0;
	if (last == t)
		return;
	place(ts, last, i);
	if (i > 1 && ts->heap[i / 2]->deadline > last->deadline)
		sift_up(ts, i);
	else
		sift_down(ts, i);
}

static void grow(struct uroce_timers *ts)
{
	uint32_t cap = ts->cap * 2;
	struct uroce_timer **heap = realloc(ts->heap, (cap + 1) * sizeof(heap[0]));

	if (!heap) {
		uroce_log(UROCE_LOG_ERROR, "out of memory for %u timers", cap);
		abort();
	}
	ts->heap = heap;
	ts->cap = cap;
}

void uroce_timers_arm(struct uroce_timers *ts, struct uroce_timer *t, uint64_t deadline)
{
	bool wake;

	pthread_mutex_lock(&ts->lock);
	if (t->heap_index) {
		uint64_t old = t->deadline;

		t->deadline = deadline;
		if (deadline < old)
			sift_up(ts, t->heap_index);
		else
			sift_down(ts, t->heap_index);
	} else {
		if (ts->len == ts->cap)
			grow(ts);
		t->deadline = deadline;
		ts->heap[++ts->len] = t;
		sift_up(ts, ts->len);
	}
	/* The runner computes its sleep after running callbacks; only other threads must wake it.
	 */
	wake = t->heap_index == 1 && !uroce_timers_on_runner(ts);
	pthread_mutex_unlock(&ts->lock);
	if (wake && ts->wake)
		ts->wake(ts->wake_arg);
}

void uroce_timers_cancel(struct uroce_timers *ts, struct uroce_timer *t)
{
	pthread_mutex_lock(&ts->lock);
	for (;;) {
		if (t->heap_index)
			remove_timer(ts, t);
		/* On the runner a running @t is our caller (or below it): waiting would deadlock.
		 */
		if (ts->running != t || uroce_timers_on_runner(ts))
			break;
		/* The callback may re-arm @t: the runner disarms it again when it returns. */
		ts->cancelling++;
		pthread_cond_wait(&ts->idle, &ts->lock);
		ts->cancelling--;
	}
	pthread_mutex_unlock(&ts->lock);
}

uint64_t uroce_timers_next(struct uroce_timers *ts)
{
	uint64_t next;

	pthread_mutex_lock(&ts->lock);
	next = ts->len ? ts->heap[1]->deadline : UINT64_MAX;
	pthread_mutex_unlock(&ts->lock);
	return next;
}

void uroce_timers_run(struct uroce_timers *ts, uint64_t now)
{
	pthread_mutex_lock(&ts->lock);
	/* At most the timers armed now: one re-armed in the past waits for the next call. */
	for (uint32_t n = ts->len; n && ts->len && ts->heap[1]->deadline <= now; n--) {
		struct uroce_timer *t = ts->heap[1];

		remove_timer(ts, t);
		ts->running = t;
		pthread_mutex_unlock(&ts->lock);
		t->fire(t, now);
		pthread_mutex_lock(&ts->lock);
		/* Before the runner can fire @t again and starve the canceller. */
		if (ts->cancelling && t->heap_index)
			remove_timer(ts, t);
		ts->running = NULL;
		pthread_cond_broadcast(&ts->idle);
	}
	pthread_mutex_unlock(&ts->lock);
}
