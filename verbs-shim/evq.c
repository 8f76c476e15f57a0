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
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (q->fd < 0)
		return errno;
	pthread_mutex_init(&q->lock, NULL);
	q->head = NULL;
	q->tailp = &q->head;
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
	/* The count stays below 2^64 - 1, so an eventfd write never blocks or fails. */
	if (nc_write(q->fd, &one, sizeof(one)) != sizeof(one)) {
		err = errno;
		free(e);
	} else {
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

int uroce_evq_pop(struct uroce_evq *q, struct uroce_event *out,
		  void (*taken)(const struct uroce_event *e), int (*wait)(struct uroce_evq *q))
{
	for (;;) {
		struct uroce_event *e;
		uint64_t count;
		int err = wait ? wait(q) : 0;

		if (err) {
			errno = err;
			return -1;
		}
		if (read(q->fd, &count, sizeof(count)) != sizeof(count))
			return -1;
		pthread_mutex_lock(&q->lock);
		e = q->head;
		q->head = e->next;
		if (!q->head)
			q->tailp = &q->head;
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
