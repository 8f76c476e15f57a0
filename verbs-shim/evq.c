// SPDX-License-Identifier: MIT
/* Event queues behind an eventfd (evq.h). */
#include "verbs-shim/evq.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/nocancel.h"

int uroce_evq_init(struct uroce_evq *q)
{
	q->fd = eventfd(0, EFD_CLOEXEC);
	if (q->fd < 0)
		return errno;
	pthread_mutex_init(&q->lock, NULL);
	q->head = NULL;
	q->tailp = &q->head;
	q->signalled = false;
	q->blocked = 0;
	return 0;
}

void uroce_evq_destroy(struct uroce_evq *q)
{
	while (q->head) {
		struct uroce_event *e = q->head;

		q->head = e->next;
		free(e);
	}
	close(q->fd);
	pthread_mutex_destroy(&q->lock);
}

/*
 * Under the lock, after a pop or a blocking read: make the eventfd readable exactly when the
 * list holds events (evq.h). Never blocks: it reads only a count it wrote itself, and none
 * while a reader may have taken it. A failed write (it cannot: the count is 0 or 1) leaves the
 * fd as it was.
 */
static void sync_fd(struct uroce_evq *q)
{
	uint64_t v = 1;

	if (q->head && !q->signalled) {
		if (nc_write(q->fd, &v, sizeof(v)) == sizeof(v))
			q->signalled = true;
	} else if (!q->head && q->signalled && !q->blocked) {
		if (nc_read(q->fd, &v, sizeof(v)) == sizeof(v))
			q->signalled = false;
	}
}

int uroce_evq_push(struct uroce_evq *q, int type, void *obj)
{
	struct uroce_event *e = malloc(sizeof(*e));
	uint64_t one = 1;
	int err = 0;

	if (!e)
		return ENOMEM;
	e->next = NULL;
	e->type = type;
	e->obj = obj;
	pthread_mutex_lock(&q->lock);
	/* The first event makes the fd readable (the count stays 1: a write never blocks). */
	if (!q->signalled && nc_write(q->fd, &one, sizeof(one)) != sizeof(one)) {
		err = errno;
		free(e);
	} else {
		q->signalled = true;
		*q->tailp = e;
		q->tailp = &e->next;
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}

bool uroce_evq_ready(struct uroce_evq *q)
{
	bool ready;

	pthread_mutex_lock(&q->lock);
	ready = q->head != NULL;
	pthread_mutex_unlock(&q->lock);
	return ready;
}

/* A reader cancelled in its blocking read(), or back from it: it no longer holds the count. */
static void unblock(void *arg)
{
	struct uroce_evq *q = arg;

	pthread_mutex_lock(&q->lock);
	q->blocked--;
	pthread_mutex_unlock(&q->lock);
}

int uroce_evq_pop(struct uroce_evq *q, struct uroce_event *out,
		  void (*taken)(const struct uroce_event *e), int (*wait)(struct uroce_evq *q))
{
	for (;;) {
		struct uroce_event *e;
		uint64_t count;
		ssize_t n;
		int err = wait ? wait(q) : 0;

		if (err) {
			errno = err;
			return -1;
		}
		pthread_mutex_lock(&q->lock);
		e = q->head;
		if (e) {
			q->head = e->next;
			if (!q->head)
				q->tailp = &q->head;
			sync_fd(q);
			if (e->obj && taken)
				taken(e);
			pthread_mutex_unlock(&q->lock);
			if (e->obj) {
				*out = *e;
				out->next = NULL;
				free(e);
				return 0;
			}
			free(e); /* cancelled: its object was destroyed */
			continue;
		}
		/* Empty: block in read() until a push (EAGAIN at once when non-blocking). */
		q->blocked++;
		pthread_mutex_unlock(&q->lock);
		pthread_cleanup_push(unblock, q);
		n = read(q->fd, &count, sizeof(count));
		err = errno;
		pthread_cleanup_pop(0);
		pthread_mutex_lock(&q->lock);
		q->blocked--;
		if (n == sizeof(count)) { /* this reader took the count */
			q->signalled = false;
			sync_fd(q);
		}
		pthread_mutex_unlock(&q->lock);
		if (n != sizeof(count)) {
			errno = err;
			return -1;
		}
	}
}

unsigned int uroce_evq_cancel(struct uroce_evq *q, const void *obj)
{
	unsigned int n = 0;

	pthread_mutex_lock(&q->lock);
	for (struct uroce_event *e = q->head; e; e = e->next) {
		if (e->obj == obj) {
			e->obj = NULL;
			n++;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}
