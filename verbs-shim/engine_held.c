// SPDX-License-Identifier: MIT
/*
 * Held posts (uroce_qp_posted, engine.h), and the polling and waiting threads, which send what
 * is held before they receive (uroce_engine_poll, uroce_engine_unpoll, uroce_engine_wait).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "fabric/net.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/engine_int.h"
#include "verbs-shim/qpn_map.h"

/*
 * Held posts (uroce_qp_posted): while threads busy-poll, the packets of a post that is part of
 * a burst wait for the next poll (or unpoll, or the progress thread taking the sockets back,
 * within a millisecond), so that the burst leaves as one train -- one system call for many
 * small messages. The QPs holding some, by number (a QP may be destroyed first; it sends its
 * own then).
 */
enum { POSTS_HELD_MAX = 32 }; /* a QP with this many held posts sends at once */
/*
 * A post is alone, not part of a burst, when its QP has nothing else on the send queue and
 * posted nothing for this long: a ping-pong's next message (its posts a round trip apart, longer
 * than this even on loopback) then leaves from ibv_post_send itself, rather than from the poll
 * after it, which would lengthen every hop; the posts of a burst come closer together
 * (docs/PERFORMANCE.md).
 */
#define POST_GAP_NS 1000u

static struct {
	pthread_mutex_t lock;
	uint32_t qpn[64];
	unsigned int n;
	atomic_uint count; /* n, read without the lock */
} held = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Add @qpn to the held QPs: false if the list is full (the caller sends now). */
static bool hold(uint32_t qpn)
{
	bool ok;

	pthread_mutex_lock(&held.lock);
	ok = held.n < sizeof(held.qpn) / sizeof(held.qpn[0]);
	if (ok) {
		held.qpn[held.n++] = qpn;
		atomic_store(&held.count, held.n);
	}
	pthread_mutex_unlock(&held.lock);
	return ok;
}

/* Send what every QP holds. */
void uroce_engine_flush_held(void *arg)
{
	uint32_t qpn[sizeof(held.qpn) / sizeof(held.qpn[0])];
	unsigned int n;

	(void)arg;
	if (!atomic_load(&held.count))
		return;
	pthread_mutex_lock(&held.lock);
	n = held.n;
	memcpy(qpn, held.qpn, n * sizeof(qpn[0]));
	held.n = 0;
	atomic_store(&held.count, 0);
	pthread_mutex_unlock(&held.lock);
	uroce_qpn_map_read_lock();
	for (unsigned int i = 0; i < n; i++) {
		struct uroce_qp *qp = uroce_qpn_map_find(qpn[i]);

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (qp->posts_held) {
			qp->posts_held = 0;
			uroce_engine_drain(qp, uroce_now());
		}
		pthread_mutex_unlock(&qp->lock);
	}
	uroce_qpn_map_read_unlock();
}

void uroce_qp_posted(struct uroce_qp *qp, uint32_t posted)
{
	bool polled = atomic_load_explicit(&uroce_engine_ready, memory_order_acquire) &&
		      uroce_net_polled(uroce_engine_ep);
	uint64_t now = uroce_now();
	bool alone = roce_wq_used(&qp->sq) == posted && now - qp->last_post >= POST_GAP_NS;

	qp->last_post = now;
	if (polled && !alone && qp->posts_held < POSTS_HELD_MAX &&
	    (qp->posts_held || hold(qp->qpx.qp_base.qp_num))) {
		qp->posts_held++;
	} else {
		qp->posts_held = 0;
		uroce_engine_drain(qp, now);
	}
}

int uroce_engine_poll(void)
{
	/* No engine before the first QP; a child of fork() must not touch its parent's. */
	if (!atomic_load_explicit(&uroce_engine_ready, memory_order_acquire))
		return -1;
	uroce_engine_flush_held(NULL);
	return uroce_net_poll(uroce_engine_ep);
}

void uroce_engine_unpoll(void)
{
	if (atomic_load_explicit(&uroce_engine_ready, memory_order_acquire)) {
		uroce_engine_flush_held(NULL);
		uroce_net_unpoll(uroce_engine_ep);
	}
}

int uroce_engine_wait(int fd, bool (*ready)(void *arg), void *arg)
{
	if (!atomic_load_explicit(&uroce_engine_ready, memory_order_acquire))
		return 0;
	uroce_engine_flush_held(NULL);
	return uroce_net_wait(uroce_engine_ep, fd, ready, arg);
}
