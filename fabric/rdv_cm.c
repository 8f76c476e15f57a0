// SPDX-License-Identifier: MIT
/*
 * The host's CM directory (rdv.h): rdma_cm bindings reserved across the host's processes, CM
 * MADs routed to the process they are for, and the host's answers for MADs nobody takes.
 *
 * This file holds the bindings (the hub's directory and each process's own list) and the
 * routing of CM MADs; rdv_cm_req.c a process's requests to the hub, rdv_cm_conn.c the
 * established connections the host answers for when their process dies.
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
int rdv_cm_add(struct rdv_svc **list, uint32_t *n, uint32_t *cap, const struct rdv_svc *e)
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

void rdv_cm_remove_at(struct rdv_svc *list, uint32_t *n, struct rdv_svc *e)
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
int rdv_cm_dir_apply(struct uroce_rdv *r, struct conn *owner, enum uroce_service_op op,
		     struct uroce_service *s)
{
	struct rdv_svc *e;
	int err;

	switch (op) {
	case UROCE_SERVICE_BIND:
		/* A picked port is free already; a given one is checked. */
		err = !s->port ? (pick_port(r, s) ? 0 : EADDRINUSE) : taken(r, s, NULL, true);
		return err ? err
			   : rdv_cm_add(&r->dir, &r->ndir, &r->dir_cap,
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
			rdv_cm_dir_remove(r, e);
		return 0;
	}
	return EINVAL;
}

void rdv_cm_dir_remove(struct uroce_rdv *r, struct rdv_svc *e)
{
	if (e->listening) {
		r->recent[r->recent_next] =
			(struct rdv_recent_listen){.svc = e->svc, .at = uroce_now()};
		r->recent_next = (r->recent_next + 1) % RDV_RECENT_LISTENS;
	}
	rdv_cm_remove_at(r->dir, &r->ndir, e);
}

/* This process's own list after @op on @s succeeded. */
void rdv_cm_held_apply(struct uroce_rdv *r, enum uroce_service_op op, const struct uroce_service *s)
{
	struct rdv_svc *e = find(r->held, r->nheld, NULL, s);

	if (op == UROCE_SERVICE_BIND && !e &&
	    rdv_cm_add(&r->held, &r->nheld, &r->held_cap, &(struct rdv_svc){.svc = *s}))
		uroce_log(UROCE_LOG_ERROR, "CM directory: out of memory keeping a binding");
	else if (op == UROCE_SERVICE_LISTEN && e)
		e->listening = true;
	else if (op == UROCE_SERVICE_UNBIND && e)
		rdv_cm_remove_at(r->held, &r->nheld, e);
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

/*
 * Hub: whether a listener for @sid at @dgid is probably on its way at @at (rdv_int.h,
 * RDV_LISTEN_WAIT_NS): the service is bound there and not listening, or its port (in any port
 * space) listened there lately.
 */
static bool listen_expected(const struct uroce_rdv *r, uint64_t sid, const uint8_t dgid[16],
			    uint64_t at)
{
	enum cm_port_space ps;
	uint16_t port;

	if (!cm_service_split(sid, &ps, &port))
		return false;
	for (uint32_t i = 0; i < r->ndir; i++) {
		const struct uroce_service *b = &r->dir[i].svc;

		if (!r->dir[i].listening && b->ps == ps && b->port == port && overlap(b->gid, dgid))
			return true;
	}
	for (uint32_t i = 0; i < RDV_RECENT_LISTENS; i++) {
		const struct rdv_recent_listen *l = &r->recent[i];

		/* Any port space: perftest -R's UD test listens for SIDR (RDMA_PS_UDP) on the
		 * port of its exchange connection (RDMA_PS_TCP). */
		if (l->at && at < l->at + RDV_RELISTEN_NS && l->svc.port == port &&
		    overlap(l->svc.gid, dgid))
			return true;
	}
	return false;
}

/*
 * Hub: until when the request in @rx for @sid, which nobody listens for, is held (rdv_int.h),
 * or 0. From the time it first arrived, so that routing it again keeps its deadline.
 */
static uint64_t hold_deadline(const struct uroce_rdv *r, uint64_t sid, const struct uroce_rx *rx)
{
	if (rx->now < r->hold_until)
		return r->hold_until;
	return listen_expected(r, sid, rx->ip.dgid, rx->now) ? rx->now + RDV_LISTEN_WAIT_NS : 0;
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

/* Hub: the timer for the earliest held request's deadline (rdv.c: on_hold_end). */
static void arm_hold_end(struct uroce_rdv *r)
{
	uint64_t first = UINT64_MAX;

	for (uint32_t i = 0; i < r->nheld_reqs; i++)
		if (r->held_reqs[i].until < first)
			first = r->held_reqs[i].until;
	if (first != UINT64_MAX)
		uroce_timers_arm(uroce_progress_timers(r->progress), &r->hold_end, first);
}

/*
 * Hub: keep @rx until @until for rdv_cm_retry_held (rdv_int.h); false if it is past or there
 * is no room for it.
 */
static bool hold_request(struct uroce_rdv *r, const struct uroce_rx *rx, uint64_t until)
{
	struct rdv_held_req *h;

	if (until <= uroce_now() || rx->len > RDV_HELD_BYTES || r->nheld_reqs == RDV_HELD_REQS)
		return false;
	if (!r->held_reqs) {
		r->held_reqs = calloc(RDV_HELD_REQS, sizeof(*r->held_reqs));
		if (!r->held_reqs)
			return false;
	}
	h = &r->held_reqs[r->nheld_reqs++];
	h->rx = *rx;
	h->until = until;
	memcpy(h->bytes, rx->roce, rx->len);
	h->rx.roce = h->bytes;
	arm_hold_end(r);
	return true;
}

void rdv_cm_retry_held(struct uroce_rdv *r, bool final)
{
	struct rdv_held_req *again;
	uint32_t n = r->nheld_reqs;

	if (!n || (!final && !r->listens_added))
		return;
	r->listens_added = false;
	/* Routing may hold a request again: from a copy, into the emptied list. */
	again = malloc(n * sizeof(*again));
	if (!again) {
		arm_hold_end(r); /* tried again at the next deadline */
		return;
	}
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
		if (hold_request(r, rx, hold_deadline(r, route.service_id, rx)))
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

struct rdv_service_msg rdv_cm_msg_of(uint32_t seq, enum uroce_service_op op,
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
		err = find(r->dir, r->ndir, c, &s) ? 0
						   : rdv_cm_dir_apply(r, c, UROCE_SERVICE_BIND, &s);
		if (!err && m->listening)
			err = rdv_cm_dir_apply(r, c, UROCE_SERVICE_LISTEN, &s);
		if (err)
			uroce_log(UROCE_LOG_ERROR,
				  "CM directory: process %d claims port %u of port space %#x: %s",
				  (int)c->pid, s.port, s.ps, strerror(err));
		return;
	}
	err = rdv_cm_dir_apply(r, c, (enum uroce_service_op)m->op, &s);
	done = rdv_cm_msg_of(m->seq, (enum uroce_service_op)m->op, &s);
	done.hdr = rdv_header(RDV_SERVICE_DONE);
	done.err = err;
	rdv_conn_send(c, &done, sizeof(done));
}

void rdv_cm_own_block(struct uroce_rdv *r, uint32_t block)
{
	if (!atomic_load(&r->tagged)) {
		atomic_store(&r->tag, block);
		atomic_store(&r->tagged, true);
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
	rdv_cm_free_detached(r->svc_wanted);
	rdv_cm_free_detached(r->svc_sent);
}

uint32_t uroce_rdv_comm_tag(const struct uroce_rdv *r)
{
	return atomic_load(&r->tag);
}
