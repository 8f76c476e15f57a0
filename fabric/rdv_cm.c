// SPDX-License-Identifier: MIT
/*
 * The host's CM directory (rdv.h): rdma_cm bindings reserved across the host's processes, CM
 * MADs routed to the process they are for, and the host's answers for MADs nobody takes.
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

/* Where ports asked for as 0 come from: Linux's default ip_local_port_range. */
#define EPHEMERAL_FIRST 32768u
#define EPHEMERAL_LAST  60999u

/*
 * An application thread's request while it is in r->svc_wanted or svc_sent: on the stack of a
 * thread waiting for it, or (detached, uroce_rdv_service_async) on the heap, where its answer
 * goes to @fn and frees it.
 */
struct rdv_svc_req {
	enum uroce_service_op op;
	struct uroce_service svc;
	uint32_t seq;
	int err;
	bool done;
	bool detached;
	uroce_service_done_fn fn; /* detached: told the answer (may be NULL) */
	void *arg;
	struct rdv_svc_req *next;
};

/* A CONN note of an application thread, waiting for the progress thread to send it. */
struct rdv_note {
	struct rdv_conn_msg msg;
	struct rdv_note *next;
};

/* A set of established CM connections: a process's at the hub, or the process's own. */
struct rdv_cm_conns {
	uint32_t n, cap;
	struct uroce_cm_conn c[];
};

static const uint8_t any4[16] = {[10] = 0xff, 0xff}, any6[16];

static bool is_v4(const uint8_t gid[16])
{
	return !memcmp(gid, any4, 12);
}

/* Whether bindings at @a and @b share addresses (rdma_cm: a wildcard covers its family). */
static bool overlap(const uint8_t a[16], const uint8_t b[16])
{
	if (!memcmp(a, b, 16) || !memcmp(a, any6, 16) || !memcmp(b, any6, 16))
		return true;
	return (!memcmp(a, any4, 16) && is_v4(b)) || (!memcmp(b, any4, 16) && is_v4(a));
}

static bool same(const struct uroce_service *a, const struct uroce_service *b)
{
	return a->ps == b->ps && a->port == b->port && !memcmp(a->gid, b->gid, 16);
}

/* Append to a binding list. 0 or ENOMEM. */
static int add(struct rdv_svc **list, uint32_t *n, uint32_t *cap, const struct rdv_svc *e)
{
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 16;
		struct rdv_svc *grown = realloc(*list, ncap * sizeof(**list));

		if (!grown)
			return ENOMEM;
		*list = grown;
		*cap = ncap;
	}
	(*list)[(*n)++] = *e;
	return 0;
}

/* The binding of @owner at @s in a list, or NULL. */
static struct rdv_svc *find(struct rdv_svc *list, uint32_t n, const struct conn *owner,
			    const struct uroce_service *s)
{
	for (uint32_t i = 0; i < n; i++)
		if (list[i].owner == owner && same(&list[i].svc, s))
			return &list[i];
	return NULL;
}

static void remove_at(struct rdv_svc *list, uint32_t *n, struct rdv_svc *e)
{
	*e = list[--*n];
}

static bool is_any(const uint8_t gid[16])
{
	return !memcmp(gid, any4, 16) || !memcmp(gid, any6, 16);
}

/*
 * The error binding @s meets at binding @o (the kernel's cma_check_port), or 0. With @reuse
 * false, REUSEADDR is not honoured (a listen's check).
 */
static int clash(const struct rdv_svc *o, const struct uroce_service *s, bool reuse)
{
	const struct uroce_service *b = &o->svc;

	if (b->ps != s->ps || b->port != s->port)
		return 0;
	if (reuse && !o->listening && (s->flags & b->flags & UROCE_SERVICE_REUSEADDR))
		return 0;
	if ((s->flags & b->flags & UROCE_SERVICE_AFONLY) && is_v4(s->gid) != is_v4(b->gid))
		return 0;
	if (is_any(s->gid) || is_any(b->gid))
		return EADDRNOTAVAIL;
	return memcmp(s->gid, b->gid, 16) ? 0 : EADDRINUSE;
}

/* Hub: the error @s (its port given) meets on the host, not counting @self; or 0. */
static int taken(const struct uroce_rdv *r, const struct uroce_service *s,
		 const struct rdv_svc *self, bool reuse)
{
	for (uint32_t i = 0; i < r->ndir; i++) {
		int err = &r->dir[i] == self ? 0 : clash(&r->dir[i], s, reuse);

		if (err)
			return err;
	}
	return 0;
}

/* Hub: a free ephemeral port for @s, cycling as Linux does. */
static bool pick_port(struct uroce_rdv *r, struct uroce_service *s)
{
	for (uint32_t n = 0; n <= EPHEMERAL_LAST - EPHEMERAL_FIRST; n++) {
		if (r->next_port < EPHEMERAL_FIRST || r->next_port > EPHEMERAL_LAST)
			r->next_port = EPHEMERAL_FIRST;
		s->port = r->next_port++;
		if (!taken(r, s, NULL, true))
			return true;
	}
	return false;
}

/* Hub: @op on @s for @owner (NULL: the hub itself). 0 or an errno; BIND fills a port 0. */
static int dir_apply(struct uroce_rdv *r, struct conn *owner, enum uroce_service_op op,
		     struct uroce_service *s)
{
	struct rdv_svc *e;
	int err;

	switch (op) {
	case UROCE_SERVICE_BIND:
		/* A picked port is free already; a given one is checked. */
		err = !s->port ? (pick_port(r, s) ? 0 : EADDRINUSE) : taken(r, s, NULL, true);
		return err ? err
			   : add(&r->dir, &r->ndir, &r->dir_cap,
				 &(struct rdv_svc){.owner = owner, .svc = *s});
	case UROCE_SERVICE_LISTEN:
		e = find(r->dir, r->ndir, owner, s);
		if (!e)
			return EINVAL;
		/* A listener has the port to itself (the kernel's cma_listen). */
		err = taken(r, &e->svc, e, false);
		if (err)
			return err;
		e->listening = true;
		r->listens_added = true;
		return 0;
	case UROCE_SERVICE_UNBIND:
		e = find(r->dir, r->ndir, owner, s);
		if (e)
			remove_at(r->dir, &r->ndir, e);
		return 0;
	}
	return EINVAL;
}

/* This process's own list after @op on @s succeeded. */
static void held_apply(struct uroce_rdv *r, enum uroce_service_op op, const struct uroce_service *s)
{
	struct rdv_svc *e = find(r->held, r->nheld, NULL, s);

	if (op == UROCE_SERVICE_BIND && !e &&
	    add(&r->held, &r->nheld, &r->held_cap, &(struct rdv_svc){.svc = *s}))
		uroce_log(UROCE_LOG_ERROR, "CM directory: out of memory keeping a binding");
	else if (op == UROCE_SERVICE_LISTEN && e)
		e->listening = true;
	else if (op == UROCE_SERVICE_UNBIND && e)
		remove_at(r->held, &r->nheld, e);
}

/*
 * Hub: the listener for service @sid at @dgid: an exact address before a wildcard. *@served
 * says whether anyone listens on the service at all, at any address.
 */
static struct rdv_svc *listener(struct uroce_rdv *r, uint64_t sid, const uint8_t dgid[16],
				bool *served)
{
	struct rdv_svc *wild = NULL;
	enum cm_port_space ps;
	uint16_t port;

	*served = false;
	if (!cm_service_split(sid, &ps, &port))
		return NULL;
	for (uint32_t i = 0; i < r->ndir; i++) {
		struct rdv_svc *e = &r->dir[i];

		if (!e->listening || e->svc.ps != ps || e->svc.port != port)
			continue;
		*served = true;
		if (!overlap(e->svc.gid, dgid))
			continue;
		if (!memcmp(e->svc.gid, dgid, 16))
			return e;
		wild = e;
	}
	return wild;
}

/* The MAD in @rx if it is one a GSI takes, else NULL. */
static const uint8_t *mad_of(const struct uroce_rx *rx)
{
	return rx->icrc == ROCE_ICRC_BAD ? NULL : cm_gsi_mad(rx->roce, rx->len);
}

/* Deliver to @owner: this process (NULL) or another. */
static enum uroce_rdv_route to(struct uroce_rdv *r, struct conn *owner, const struct uroce_rx *rx)
{
	if (!owner)
		return UROCE_RDV_DELIVER;
	rdv_forward(r, owner, rx);
	return UROCE_RDV_FORWARDED;
}

/* Hub: keep @rx for rdv_cm_retry_held (rdv_int.h); false if there is no room for it. */
static bool hold_request(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	struct rdv_held_req *h;

	if (rx->len > RDV_HELD_BYTES || r->nheld_reqs == RDV_HELD_REQS)
		return false;
	if (!r->held_reqs) {
		r->held_reqs = calloc(RDV_HELD_REQS, sizeof(*r->held_reqs));
		if (!r->held_reqs)
			return false;
	}
	h = &r->held_reqs[r->nheld_reqs++];
	h->rx = *rx;
	memcpy(h->bytes, rx->roce, rx->len);
	h->rx.roce = h->bytes;
	return true;
}

void rdv_cm_retry_held(struct uroce_rdv *r, bool final)
{
	struct rdv_held_req *again;
	uint32_t n = r->nheld_reqs;

	if (final)
		r->hold_until = 0;
	if (!n || (!final && !r->listens_added))
		return;
	r->listens_added = false;
	/* Routing may hold a request again: from a copy, into the emptied list. */
	again = malloc(n * sizeof(*again));
	if (!again)
		return;
	memcpy(again, r->held_reqs, n * sizeof(*again));
	r->nheld_reqs = 0;
	for (uint32_t i = 0; i < n; i++) {
		again[i].rx.roce = again[i].bytes;
		r->ops->forwarded(r->arg, &again[i].rx);
	}
	free(again);
}

enum uroce_rdv_route rdv_cm_route(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	const uint8_t *mad = mad_of(rx);
	struct cm_route route;
	struct rdv_svc *l;
	uint8_t answer[CM_MAD_LEN];
	uint32_t tag;
	bool served = false;

	/* Not a MAD a GSI takes: this process's GSI counts and drops it. */
	if (!mad)
		return UROCE_RDV_DELIVER;
	route = cm_route_of(mad, CM_MAD_LEN);
	switch (route.kind) {
	case CM_ROUTE_NONE:
		return UROCE_RDV_DELIVER;
	case CM_ROUTE_SERVICE:
		l = listener(r, route.service_id, rx->ip.dgid, &served);
		if (l)
			return to(r, l->owner, rx);
		if (rx->now < r->hold_until && hold_request(r, rx))
			return UROCE_RDV_HELD;
		/*
		 * Someone listens on the service, but not at this address (or family): the
		 * kernel's ib_cm finds its listener by service ID, rdma_cm's cma_ib_req_handler
		 * then finds no id for the address and fails, and ib_cm's cm_destroy_id answers
		 * REJ "consumer defined" (28), or a SIDR_REP "rejected" (2). Nobody at all: REJ
		 * "invalid service ID" (8) below (cm_match_req's cm_issue_rej).
		 */
		break;
	case CM_ROUTE_COMM_ID:
		tag = cm_comm_tag(route.comm_id);
		if (tag >= UROCE_QPN_BLOCKS)
			break;
		if (r->owner[tag] == r->token)
			return UROCE_RDV_DELIVER;
		if (r->route[tag])
			return to(r, r->route[tag], rx);
		if (r->owner[tag]) /* after a takeover, its owner has not said hello yet */
			return UROCE_RDV_UNKNOWN;
		break;
	}
	if (served ? !cm_refuse_request(mad, CM_MAD_LEN, CM_REJ_CONSUMER, CM_SIDR_REJECT, answer)
		   : !cm_answer_unclaimed(mad, CM_MAD_LEN, answer))
		return UROCE_RDV_UNKNOWN;
	/* From the address the MAD came to, as the kernel's GSI answers. */
	r->ops->send_mad(r->arg, rx->ip.dgid, rx->ip.sgid, rx->ip.tos, answer);
	return UROCE_RDV_ANSWERED;
}

static struct uroce_service svc_of(const struct rdv_service_msg *m)
{
	struct uroce_service s = {.ps = m->ps, .port = m->port, .flags = m->flags};

	memcpy(s.gid, m->gid, 16);
	return s;
}

static struct rdv_service_msg msg_of(uint32_t seq, enum uroce_service_op op,
				     const struct uroce_service *s)
{
	struct rdv_service_msg m = {.hdr = rdv_header(RDV_SERVICE),
				    .seq = seq,
				    .op = (uint16_t)op,
				    .ps = s->ps,
				    .port = s->port,
				    .flags = s->flags};

	memcpy(m.gid, s->gid, 16);
	return m;
}

void rdv_cm_hub_service(struct uroce_rdv *r, struct conn *c, size_t n)
{
	const struct rdv_service_msg *m = (const struct rdv_service_msg *)r->buf;
	struct rdv_service_msg done;
	struct uroce_service s;
	int err;

	if (n < sizeof(*m) || m->op < UROCE_SERVICE_BIND || m->op > UROCE_SERVICE_UNBIND) {
		rdv_protocol_error(c, "a bad SERVICE");
		return;
	}
	s = svc_of(m);
	if (!m->seq) {
		/* A claim after a takeover: its own already, or taken meanwhile (logged). */
		err = find(r->dir, r->ndir, c, &s) ? 0 : dir_apply(r, c, UROCE_SERVICE_BIND, &s);
		if (!err && m->listening)
			err = dir_apply(r, c, UROCE_SERVICE_LISTEN, &s);
		if (err)
			uroce_log(UROCE_LOG_ERROR,
				  "CM directory: process %d claims port %u of port space %#x: %s",
				  (int)c->pid, s.port, s.ps, strerror(err));
		return;
	}
	err = dir_apply(r, c, (enum uroce_service_op)m->op, &s);
	done = msg_of(m->seq, (enum uroce_service_op)m->op, &s);
	done.hdr = rdv_header(RDV_SERVICE_DONE);
	done.err = err;
	rdv_conn_send(c, &done, sizeof(done));
}

/* Add (@up) or remove @cc in *@set. 0 or ENOMEM. */
static int conns_apply(struct rdv_cm_conns **set, bool up, const struct uroce_cm_conn *cc)
{
	struct rdv_cm_conns *s = *set;

	for (uint32_t i = 0; s && i < s->n; i++) {
		if (s->c[i].local_id == cc->local_id) {
			if (up)
				s->c[i] = *cc;
			else
				s->c[i] = s->c[--s->n];
			return 0;
		}
	}
	if (!up)
		return 0;
	if (!s || s->n == s->cap) {
		uint32_t cap = s ? s->cap * 2 : 16;
		struct rdv_cm_conns *grown = realloc(s, sizeof(*s) + cap * sizeof(s->c[0]));

		if (!grown)
			return ENOMEM;
		if (!s)
			grown->n = 0;
		grown->cap = cap;
		*set = s = grown;
	}
	s->c[s->n++] = *cc;
	return 0;
}

static struct uroce_cm_conn conn_of(const struct rdv_conn_msg *m)
{
	struct uroce_cm_conn cc = {.local_id = m->local_id,
				   .remote_id = m->remote_id,
				   .remote_qpn = m->remote_qpn,
				   .tos = m->tos};

	memcpy(cc.sgid, m->sgid, 16);
	memcpy(cc.dgid, m->dgid, 16);
	return cc;
}

static struct rdv_conn_msg conn_msg(bool up, const struct uroce_cm_conn *cc)
{
	struct rdv_conn_msg m = {.hdr = rdv_header(RDV_CONN),
				 .up = up,
				 .local_id = cc->local_id,
				 .remote_id = cc->remote_id,
				 .remote_qpn = cc->remote_qpn,
				 .tos = cc->tos};

	memcpy(m.sgid, cc->sgid, 16);
	memcpy(m.dgid, cc->dgid, 16);
	return m;
}

/* Apply the RDV_CONN of @n bytes in r->buf to *@set: false if it is too short. */
static bool apply_conn_msg(struct uroce_rdv *r, size_t n, struct rdv_cm_conns **set)
{
	const struct rdv_conn_msg *m = (const struct rdv_conn_msg *)r->buf;
	struct uroce_cm_conn cc;

	if (n < sizeof(*m))
		return false;
	cc = conn_of(m);
	if (conns_apply(set, m->up, &cc))
		uroce_log(UROCE_LOG_ERROR, "CM directory: out of memory keeping a connection");
	return true;
}

void rdv_cm_hub_conn(struct uroce_rdv *r, struct conn *c, size_t n)
{
	if (!apply_conn_msg(r, n, &c->cm))
		rdv_protocol_error(c, "a short CONN");
}

/* The kernel disconnects a killed process's connections: so does the host for it. */
static void disconnect_all(struct uroce_rdv *r, const struct rdv_cm_conns *set)
{
	for (uint32_t i = 0; set && i < set->n; i++) {
		const struct uroce_cm_conn *cc = &set->c[i];
		uint8_t dreq[CM_MAD_LEN];

		cm_dreq_for_dead(cc->local_id, cc->remote_id, cc->remote_qpn, dreq);
		r->ops->send_mad(r->arg, cc->sgid, cc->dgid, cc->tos, dreq);
	}
}

void rdv_cm_hub_joined(struct uroce_rdv *r, struct conn *c)
{
	for (uint32_t i = 0; r->my_conns && i < r->my_conns->n; i++) {
		struct rdv_conn_msg m = conn_msg(true, &r->my_conns->c[i]);

		rdv_conn_send(c, &m, sizeof(m));
	}
}

void rdv_cm_process_conn(struct uroce_rdv *r, size_t n)
{
	if (!apply_conn_msg(r, n, &r->hub_conns))
		uroce_log(UROCE_LOG_ERROR, "rendezvous: ignoring a short CONN from the hub");
}

void rdv_cm_old_hub_gone(struct uroce_rdv *r, bool took_over)
{
	if (took_over && r->hub_conns && r->hub_conns->n) {
		disconnect_all(r, r->hub_conns);
		uroce_log(UROCE_LOG_INFO,
			  "CM directory: disconnected %u connections of the hub that has gone",
			  r->hub_conns->n);
	}
	free(r->hub_conns);
	r->hub_conns = NULL;
}

void rdv_cm_conn_gone(struct uroce_rdv *r, struct conn *c)
{
	disconnect_all(r, c->cm);
	if (c->cm && c->cm->n)
		uroce_log(UROCE_LOG_INFO, "CM directory: disconnected %u connections of process %d",
			  c->cm->n, (int)c->pid);
	free(c->cm);
	c->cm = NULL;
	for (uint32_t i = 0; i < r->ndir;)
		if (r->dir[i].owner == c)
			remove_at(r->dir, &r->ndir, &r->dir[i]);
		else
			i++;
}

/*
 * Answer @q with @err (and its port). Locked. A detached request goes to r->svc_finished, whose
 * callbacks run_finished() calls once the lock is released (a callback may make requests).
 */
static void complete(struct uroce_rdv *r, struct rdv_svc_req *q, int err, uint16_t port)
{
	if (!err) {
		q->svc.port = port;
		held_apply(r, q->op, &q->svc);
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
		struct uroce_cm_conn cc = conn_of(&note->msg);

		r->notes = note->next;
		/* Kept for a new hub; the hub's own are told to the others (rdv_cm_hub_joined). */
		if (conns_apply(&r->my_conns, note->msg.up, &cc))
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
			int err = dir_apply(r, NULL, q->op, &s);

			complete(r, q, err, s.port);
			continue;
		}
		q->next = r->svc_sent;
		r->svc_sent = q;
		m = msg_of(q->seq, q->op, &q->svc);
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
		if (add(&r->dir, &r->ndir, &r->dir_cap, &r->held[i]))
			return ENOMEM;
	return 0;
}

void rdv_cm_claim_held(struct uroce_rdv *r)
{
	for (uint32_t i = 0; r->my_conns && i < r->my_conns->n; i++) {
		struct rdv_conn_msg m = conn_msg(true, &r->my_conns->c[i]);

		rdv_up_send(r, &m, sizeof(m));
	}
	for (uint32_t i = 0; i < r->nheld; i++) {
		struct rdv_service_msg m = msg_of(0, UROCE_SERVICE_BIND, &r->held[i].svc);

		m.listening = r->held[i].listening;
		rdv_up_send(r, &m, sizeof(m));
	}
}

void rdv_cm_own_block(struct uroce_rdv *r, uint32_t block)
{
	if (!atomic_load(&r->tagged)) {
		atomic_store(&r->tag, block);
		atomic_store(&r->tagged, true);
	}
}

static void free_detached(struct rdv_svc_req *q)
{
	while (q) {
		struct rdv_svc_req *next = q->next;

		if (q->detached)
			free(q);
		q = next;
	}
}

void rdv_cm_free(struct uroce_rdv *r)
{
	free(r->dir);
	free(r->held);
	free(r->held_reqs);
	free(r->my_conns);
	free(r->hub_conns);
	while (r->notes) {
		struct rdv_note *note = r->notes;

		r->notes = note->next;
		free(note);
	}
	/* Detached requests never answered: the process is ending or its engine stopping. */
	free_detached(r->svc_wanted);
	free_detached(r->svc_sent);
}

void uroce_rdv_cm_conn(struct uroce_rdv *r, bool up, const struct uroce_cm_conn *c)
{
	struct rdv_note *note = malloc(sizeof(*note));
	uint64_t one = 1;
	bool first;

	if (!note)
		return; /* the DREQ on its behalf is lost, as net.h says */
	note->msg = conn_msg(up, c);
	note->next = NULL;
	pthread_mutex_lock(&r->lock);
	first = !r->notes;
	*r->notes_tail = note;
	r->notes_tail = &note->next;
	pthread_mutex_unlock(&r->lock);
	/* The progress thread takes every note queued by then: one wake-up per burst. */
	if (first)
		(void)!nc_write(r->evfd, &one, sizeof(one));
}

uint32_t uroce_rdv_comm_tag(const struct uroce_rdv *r)
{
	return atomic_load(&r->tag);
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
		err = dir_apply(r, NULL, op, s);
		if (!err)
			held_apply(r, op, s);
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
