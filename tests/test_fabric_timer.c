/* SPDX-License-Identifier: MIT */
/*
 * fabric/timer: the heap alone (order, moves, cancels), then timers on a running endpoint's
 * progress thread: order, re-arming, wake-up from another thread, cancel while the callback
 * runs, cancel from a callback.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fabric/net.h"
#include "fabric/timer.h"

#define MS 1000000ull

/* The heap alone, fired by hand. */

static uint64_t fired[1000];
static size_t nfired;

static void record(struct uroce_timer *t, uint64_t now)
{
	(void)now;
	fired[nfired++] = t->deadline;
}

Test(timer_heap, fires_in_deadline_order_after_moves_and_cancels)
{
	static struct uroce_timer t[1000];
	struct uroce_timers ts;
	unsigned int seed = 7;
	size_t cancelled = 0;

	cr_assert_eq(uroce_timers_init(&ts, NULL, NULL), 0);
	for (size_t i = 0; i < 1000; i++) {
		t[i].fire = record;
		uroce_timers_arm(&ts, &t[i], 1 + (uint64_t)rand_r(&seed) % 100000);
	}
	/* Move a third, cancel a tenth. */
	for (size_t i = 0; i < 1000; i += 3)
		uroce_timers_arm(&ts, &t[i], 1 + (uint64_t)rand_r(&seed) % 100000);
	for (size_t i = 0; i < 1000; i += 10, cancelled++)
		uroce_timers_cancel(&ts, &t[i]);
	cr_assert_eq(t[0].heap_index, 0);
	uroce_timers_set_runner(&ts);
	nfired = 0;
	uroce_timers_run(&ts, 50000);
	for (size_t i = 0; i < nfired; i++)
		cr_assert_leq(fired[i], 50000);
	cr_assert_gt(uroce_timers_next(&ts), 50000);
	uroce_timers_run(&ts, UINT64_MAX - 1);
	cr_assert_eq(nfired, 1000 - cancelled);
	cr_assert_eq(uroce_timers_next(&ts), UINT64_MAX);
	for (size_t i = 1; i < nfired; i++)
		cr_assert_geq(fired[i], fired[i - 1], "fired out of order at %zu", i);
	uroce_timers_destroy(&ts);
}

/* Timers on a running endpoint. */

static struct uroce_net *net;

static void no_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	(void)rx;
}

static const struct uroce_net_ops ops = {.recv = no_recv};

static void open_net(const char *port)
{
	setenv("UROCE_UDP_PORT", port, 1);
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
}

static void close_net(void)
{
	uroce_net_close(net);
	net = NULL;
}

struct probe {
	struct uroce_timer t;
	int id;
	atomic_int count;
	_Atomic uint64_t when;
};

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int order[16];
static int norder;

static void probe_fire(struct uroce_timer *t, uint64_t now)
{
	struct probe *p = (struct probe *)t;

	atomic_store(&p->when, now);
	atomic_fetch_add(&p->count, 1);
	pthread_mutex_lock(&order_lock);
	if (norder < 16)
		order[norder++] = p->id;
	pthread_mutex_unlock(&order_lock);
}

static void wait_count(atomic_int *count, int n, uint64_t timeout)
{
	uint64_t end = uroce_now() + timeout;

	while (atomic_load(count) < n && uroce_now() < end)
		usleep(1000);
}

static void port_24820(void)
{
	open_net("24820");
}

Test(timer, fire_in_order_and_not_early, .init = port_24820, .fini = close_net)
{
	struct probe p[3] = {{.id = 0}, {.id = 1}, {.id = 2}};
	uint64_t start = uroce_now();
	uint64_t at[3] = {start + 60 * MS, start + 20 * MS, start + 40 * MS};

	for (int i = 0; i < 3; i++) {
		p[i].t.fire = probe_fire;
		uroce_timer_arm(net, &p[i].t, at[i]);
	}
	wait_count(&p[0].count, 1, 2000 * MS);
	usleep(20000);
	cr_assert_eq(norder, 3);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(atomic_load(&p[i].count), 1);
		cr_assert_geq(atomic_load(&p[i].when), at[i], "timer %d fired early", i);
	}
}

static void port_24821(void)
{
	open_net("24821");
}

/* Moving a far timer near wakes the sleeping thread; it fires once, at the new time. */
Test(timer, rearm_earlier_from_another_thread, .init = port_24821, .fini = close_net)
{
	struct probe p = {.t.fire = probe_fire};
	uint64_t start = uroce_now();

	uroce_timer_arm(net, &p.t, start + 10000 * MS);
	usleep(20000); /* the progress thread now sleeps until the far deadline */
	uroce_timer_arm(net, &p.t, uroce_now() + 5 * MS);
	wait_count(&p.count, 1, 2000 * MS);
	cr_assert_eq(atomic_load(&p.count), 1);
	cr_assert_lt(atomic_load(&p.when) - start, 1000 * MS, "the wake-up came late");
	usleep(20000);
	cr_assert_eq(atomic_load(&p.count), 1);
	/* Moving it later: it does not fire at the old time. */
	uroce_timer_arm(net, &p.t, uroce_now() + 10 * MS);
	uroce_timer_arm(net, &p.t, uroce_now() + 10000 * MS);
	usleep(50000);
	cr_assert_eq(atomic_load(&p.count), 1);
	uroce_timer_cancel(net, &p.t);
}

struct repeater {
	struct uroce_timer t;
	atomic_int count;
};

static void repeat_fire(struct uroce_timer *t, uint64_t now)
{
	struct repeater *r = (struct repeater *)t;

	if (atomic_fetch_add(&r->count, 1) + 1 < 5)
		uroce_timer_arm(net, t, now + 2 * MS);
}

static void port_24822(void)
{
	open_net("24822");
}

Test(timer, rearm_from_its_callback, .init = port_24822, .fini = close_net)
{
	struct repeater r = {.t.fire = repeat_fire};

	uroce_timer_arm(net, &r.t, uroce_now());
	wait_count(&r.count, 5, 2000 * MS);
	usleep(20000);
	cr_assert_eq(atomic_load(&r.count), 5);
	cr_assert_eq(r.t.heap_index, 0);
}

/* A callback that takes a while, and records when it ends. */
struct slow {
	struct uroce_timer t;
	atomic_int started;
	atomic_int finished;
	atomic_int rearm;
};

static void slow_fire(struct uroce_timer *t, uint64_t now)
{
	struct slow *s = (struct slow *)t;

	atomic_fetch_add(&s->started, 1);
	usleep(100000);
	if (atomic_load(&s->rearm))
		uroce_timer_arm(net, t, now); /* re-armed while being cancelled */
	atomic_fetch_add(&s->finished, 1);
}

static void port_24823(void)
{
	open_net("24823");
}

Test(timer, cancel_waits_for_a_running_callback, .init = port_24823, .fini = close_net)
{
	struct slow s = {.t.fire = slow_fire};

	atomic_store(&s.rearm, 1);
	uroce_timer_arm(net, &s.t, uroce_now());
	wait_count(&s.started, 1, 2000 * MS);
	cr_assert_eq(atomic_load(&s.started), 1);
	uroce_timer_cancel(net, &s.t);
	/* Returned only after the callback; its re-arm was undone. */
	cr_assert_eq(atomic_load(&s.finished), 1);
	cr_assert_eq(s.t.heap_index, 0);
	usleep(50000);
	cr_assert_eq(atomic_load(&s.started), 1);
}

struct pair {
	struct uroce_timer a, b;
	atomic_int a_count, b_count;
};

static struct pair pair;

static void a_fire(struct uroce_timer *t, uint64_t now)
{
	(void)now;
	atomic_fetch_add(&pair.a_count, 1);
	/* Re-arm and cancel itself, and cancel b: none of them may fire, and nothing waits. */
	uroce_timer_arm(net, t, uroce_now());
	uroce_timer_cancel(net, t);
	uroce_timer_cancel(net, &pair.b);
}

static void b_fire(struct uroce_timer *t, uint64_t now)
{
	(void)t;
	(void)now;
	atomic_fetch_add(&pair.b_count, 1);
}

static void port_24824(void)
{
	open_net("24824");
}

Test(timer, cancel_from_a_callback, .init = port_24824, .fini = close_net)
{
	uint64_t now = uroce_now();

	pair.a.fire = a_fire;
	pair.b.fire = b_fire;
	uroce_timer_arm(net, &pair.a, now + 5 * MS);
	uroce_timer_arm(net, &pair.b, now + 30 * MS);
	usleep(100000);
	cr_assert_eq(atomic_load(&pair.a_count), 1);
	cr_assert_eq(atomic_load(&pair.b_count), 0);
	cr_assert_eq(pair.a.heap_index, 0);
	cr_assert_eq(pair.b.heap_index, 0);
}

static atomic_int on_timer_thread_seen;

static void note_thread(struct uroce_timer *t, uint64_t now)
{
	(void)now;
	atomic_store(&on_timer_thread_seen, uroce_net_on_timer_thread(net) ? 1 : -1);
	atomic_fetch_add(&((struct probe *)t)->count, 1);
}

static void port_24825(void)
{
	open_net("24825");
}

/* The progress thread, which runs the callbacks, is the timer thread; no other thread is. */
Test(timer, only_the_progress_thread_is_the_timer_thread, .init = port_24825, .fini = close_net)
{
	struct probe p = {.t.fire = note_thread};

	cr_assert_not(uroce_net_on_timer_thread(net));
	uroce_timer_arm(net, &p.t, uroce_now());
	wait_count(&p.count, 1, 2000 * MS);
	cr_assert_eq(atomic_load(&on_timer_thread_seen), 1);
}
