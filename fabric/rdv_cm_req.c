// SPDX-License-Identifier: MIT
/*
 * A process's requests to the host's CM directory (rdv.h: uroce_rdv_service, _async): queued
 * by application threads, sent by the progress thread to the hub (or served by it when it is
 * the hub), answered by number; re-sent to a new hub after a takeover, failed when there is
 * none. The progress thread's sending also takes the CONN notes of rdv_cm_conn.c along
 * (rdv_cm_serve), and a new hub is told this process's bindings and connections
 * (rdv_cm_claim_held).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cm/route.h"
#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/rdv_int.h"
#include "transport/wire.h"

/*
 * Answer @q with @err (and its port). Locked. A detached request goes to r->svc_finished, whose
 * callbacks run_finished() calls once the lock is released (a callback may make requests).
 */
static void complete(struct uroce_rdv *r, struct rdv_svc_req *q, int err, uint16_t port)
{
	if (!err) {
		q->svc.port = port;
		rdv_cm_held_apply(r, q->op, &q->svc);
	}
	q->err = err;
	q->done = true;
	if (q->detached) {
		q->next = r->svc_finished;
		r->svc_finished = q;
		return;
	}
	pthread_cond_broadcast(&r->cond);
}

/* The callbacks of the detached requests answered so far, then their memory. Unlocked. */
static void run_finished(struct uroce_rdv *r)
{
	struct rdv_svc_req *q;

	pthread_mutex_lock(&r->lock);
	q = r->svc_finished;
	r->svc_finished = NULL;
	pthread_mutex_unlock(&r->lock);
	while (q) {
		struct rdv_svc_req *next = q->next;

		if (q->fn)
			q->fn(q->arg, q->err, &q->svc);
		free(q);
		q = next;
	}
}

void rdv_cm_done(struct uroce_rdv *r, size_t n)
{
	const struct rdv_service_msg *m = (const struct rdv_service_msg *)r->buf;

	if (n < sizeof(*m)) {
		uroce_log(UROCE_LOG_ERROR, "rendezvous: ignoring a short SERVICE_DONE");
		return;
	}
	pthread_mutex_lock(&r->lock);
	for (struct rdv_svc_req **pp = &r->svc_sent; *pp; pp = &(*pp)->next) {
		struct rdv_svc_req *q = *pp;

		if (q->seq == m->seq) {
			*pp = q->next;
			complete(r, q, m->err, m->port);
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	run_finished(r);
}

void rdv_cm_serve(struct uroce_rdv *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->notes) {
		struct rdv_note *note = r->notes;
		struct uroce_cm_conn cc = rdv_cm_conn_of(&note->msg);

		r->notes = note->next;
		/* Kept for a new hub; the hub's own are told to the others (rdv_cm_hub_joined). */
		if (rdv_cm_conns_apply(&r->my_conns, note->msg.up, &cc))
			uroce_log(UROCE_LOG_ERROR, "CM directory: out of memory");
		if (r->hub)
			rdv_broadcast(r, NULL, &note->msg, sizeof(note->msg));
		else
			rdv_up_send(r, &note->msg, sizeof(note->msg));
		free(note);
	}
	r->notes_tail = &r->notes;
	while (r->svc_wanted) {
		struct rdv_svc_req *q = r->svc_wanted;
		struct rdv_service_msg m;

		r->svc_wanted = q->next;
		if (r->hub) {
			struct uroce_service s = q->svc;
			int err = rdv_cm_dir_apply(r, NULL, q->op, &s);

			complete(r, q, err, s.port);
			continue;
		}
		q->next = r->svc_sent;
		r->svc_sent = q;
		m = rdv_cm_msg_of(q->seq, q->op, &q->svc);
		rdv_up_send(r, &m, sizeof(m));
	}
	pthread_mutex_unlock(&r->lock);
	run_finished(r);
}

void rdv_cm_fail(struct uroce_rdv *r, int err)
{
	pthread_mutex_lock(&r->lock);
	while (r->svc_wanted || r->svc_sent) {
		struct rdv_svc_req **head = r->svc_wanted ? &r->svc_wanted : &r->svc_sent;
		struct rdv_svc_req *q = *head;

		*head = q->next;
		complete(r, q, err, 0);
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	run_finished(r);
}

void rdv_cm_requeue(struct uroce_rdv *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->svc_sent) {
		struct rdv_svc_req *q = r->svc_sent;

		r->svc_sent = q->next;
		q->next = r->svc_wanted;
		r->svc_wanted = q;
	}
	pthread_mutex_unlock(&r->lock);
}

int rdv_cm_became_hub(struct uroce_rdv *r)
{
	r->ndir = 0;
	for (uint32_t i = 0; i < r->nheld; i++)
		if (rdv_cm_add(&r->dir, &r->ndir, &r->dir_cap, &r->held[i]))
			return ENOMEM;
	return 0;
}

void rdv_cm_claim_held(struct uroce_rdv *r)
{
	for (uint32_t i = 0; r->my_conns && i < r->my_conns->n; i++) {
		struct rdv_conn_msg m = rdv_cm_conn_msg(true, &r->my_conns->c[i]);

		rdv_up_send(r, &m, sizeof(m));
	}
	for (uint32_t i = 0; i < r->nheld; i++) {
		struct rdv_service_msg m = rdv_cm_msg_of(0, UROCE_SERVICE_BIND, &r->held[i].svc);

		m.listening = r->held[i].listening;
		rdv_up_send(r, &m, sizeof(m));
	}
}

void rdv_cm_free_detached(struct rdv_svc_req *q)
{
	while (q) {
		struct rdv_svc_req *next = q->next;

		if (q->detached)
			free(q);
		q = next;
	}
}

static void unlink_req(struct rdv_svc_req **head, struct rdv_svc_req *q)
{
	for (struct rdv_svc_req **pp = head; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			return;
		}
	}
}

/* Queue @q (its number given here) to be sent, or served by the hub. Locked. */
static void enqueue(struct uroce_rdv *r, struct rdv_svc_req *q)
{
	struct rdv_svc_req **pp;
	uint64_t one = 1;

	q->seq = ++r->svc_seq ? r->svc_seq : ++r->svc_seq;
	/* At the tail: requests are served in the order they were made. */
	for (pp = &r->svc_wanted; *pp; pp = &(*pp)->next)
		;
	*pp = q;
	(void)!nc_write(r->evfd, &one, sizeof(one));
}

int uroce_rdv_service_async(struct uroce_rdv *r, enum uroce_service_op op,
			    const struct uroce_service *s, uroce_service_done_fn fn, void *arg)
{
	struct rdv_svc_req *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return ENOMEM;
	*q = (struct rdv_svc_req){.op = op, .svc = *s, .detached = true, .fn = fn, .arg = arg};
	pthread_mutex_lock(&r->lock);
	err = r->fatal;
	if (!err)
		enqueue(r, q);
	pthread_mutex_unlock(&r->lock);
	if (err)
		free(q);
	return err;
}

int uroce_rdv_service(struct uroce_rdv *r, enum uroce_service_op op, struct uroce_service *s)
{
	struct rdv_svc_req q = {.op = op, .svc = *s};
	struct timespec deadline;
	int err = 0;

	if (uroce_progress_on_thread(r->progress)) {
		if (!r->hub)
			return EAGAIN;
		err = rdv_cm_dir_apply(r, NULL, op, s);
		if (!err)
			rdv_cm_held_apply(r, op, s);
		rdv_cm_retry_held(r, false);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += REQUEST_TIMEOUT_S;
	pthread_mutex_lock(&r->lock);
	if (r->fatal) {
		err = r->fatal;
		goto out;
	}
	enqueue(r, &q);
	while (!q.done && !r->fatal && !err)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &deadline);
	if (q.done) {
		err = q.err;
		*s = q.svc;
		goto out;
	}
	/* Not answered: out of whichever list holds it, before this frame goes. */
	unlink_req(&r->svc_wanted, &q);
	unlink_req(&r->svc_sent, &q);
	err = r->fatal ? r->fatal : ETIMEDOUT;
out:
	pthread_mutex_unlock(&r->lock);
	return err;
}
