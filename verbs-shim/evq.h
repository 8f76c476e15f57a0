/* SPDX-License-Identifier: MIT */
/*
 * An event queue behind a file descriptor: the completion channel and the async event queue
 * of a context. Events are kept in a list; an eventfd is readable while the list holds any, so
 * the fd is pollable, can be made O_NONBLOCK, and a reader blocks in read() (or first in the
 * WAIT it passes to uroce_evq_pop: ppoll for a completion channel), a cancellation point
 * (ABI.md §3.3: rping cancels a thread blocked in ibv_get_cq_event).
 *
 * The eventfd follows the list's emptiness, not its length: a push onto an empty list writes
 * it, the pop that empties the list reads it, and the pushes and pops between make no system
 * call (a ping-pong waiting on events pushes two a round and takes both). Invariant, under the
 * lock and while no reader is in its blocking read() (`blocked`): `signalled` (the eventfd's
 * count is not zero) exactly when the list is not empty. A reader that read() the count in
 * the blocking path clears `signalled` and restores the invariant when it takes the lock again;
 * meanwhile nobody else reads the eventfd (a read of an empty one would block under the lock).
 * An event whose object is destroyed before it is read is cancelled in place (its object set
 * to NULL) and skipped by pop.
 */
#ifndef UROCE_VERBS_SHIM_EVQ_H
#define UROCE_VERBS_SHIM_EVQ_H

#include <pthread.h>
#include <stdbool.h>

struct uroce_event {
	struct uroce_event *next;
	int type;  /* enum ibv_event_type for async events, 0 for completion events */
	void *obj; /* the CQ, QP, SRQ or context; NULL once cancelled */
};

struct uroce_evq {
	pthread_mutex_t lock;
	int fd;
	struct uroce_event *head;
	struct uroce_event **tailp;
	bool signalled;       /* the eventfd's count is not zero (above) */
	unsigned int blocked; /* readers in the blocking read() */
};

/* 0, or an errno value (eventfd's: EMFILE, ENFILE, ENOMEM). */
int uroce_evq_init(struct uroce_evq *q);
/* Frees the pending events and closes the fd. */
void uroce_evq_destroy(struct uroce_evq *q);
/* Queue an event: 0, or ENOMEM (the event is lost). */
int uroce_evq_push(struct uroce_evq *q, int type, void *obj);
/*
 * Take the oldest event, blocking in read() while there is none (unless the fd is O_NONBLOCK).
 * TAKEN (may be NULL) runs under the queue lock for the event handed out, so that counting it
 * as reported cannot race with uroce_evq_cancel() in a destroy. WAIT (may be NULL) runs before
 * each read(): it may block until an event is queued, and returns 0 to go on to read() or an
 * errno value to fail with.
 * Returns 0, or -1 with read()'s errno (EAGAIN when non-blocking and empty, EINTR) or WAIT's.
 */
int uroce_evq_pop(struct uroce_evq *q, struct uroce_event *out,
		  void (*taken)(const struct uroce_event *e), int (*wait)(struct uroce_evq *q));
/* Whether an event is queued (a read() would not block unless another thread takes it). */
bool uroce_evq_ready(struct uroce_evq *q);
/* Cancel the pending events of OBJ; returns how many were cancelled. */
unsigned int uroce_evq_cancel(struct uroce_evq *q, const void *obj);

#endif
