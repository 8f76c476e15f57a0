// SPDX-License-Identifier: MIT
/*
 * The established CM connections of the host's processes (rdv.h: uroce_rdv_cm_conn): each
 * process tells the hub of its own, so that when a process dies the hub sends each peer the
 * DREQ the kernel would send for a killed process (disconnect_all), and a new hub learns them
 * again after a takeover.
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

/* Add (@up) or remove @cc in *@set. 0 or ENOMEM. */
int rdv_cm_conns_apply(struct rdv_cm_conns **set, bool up, const struct uroce_cm_conn *cc)
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

struct uroce_cm_conn rdv_cm_conn_of(const struct rdv_conn_msg *m)
{
	struct uroce_cm_conn cc = {.local_id = m->local_id,
				   .remote_id = m->remote_id,
				   .remote_qpn = m->remote_qpn,
				   .tos = m->tos};

	memcpy(cc.sgid, m->sgid, 16);
	memcpy(cc.dgid, m->dgid, 16);
	return cc;
}

struct rdv_conn_msg rdv_cm_conn_msg(bool up, const struct uroce_cm_conn *cc)
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
	cc = rdv_cm_conn_of(m);
	if (rdv_cm_conns_apply(set, m->up, &cc))
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
		struct rdv_conn_msg m = rdv_cm_conn_msg(true, &r->my_conns->c[i]);

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
			rdv_cm_dir_remove(r, &r->dir[i]);
		else
			i++;
}

void uroce_rdv_cm_conn(struct uroce_rdv *r, bool up, const struct uroce_cm_conn *c)
{
	struct rdv_note *note = malloc(sizeof(*note));
	uint64_t one = 1;
	bool first;

	if (!note)
		return; /* the DREQ on its behalf is lost, as net.h says */
	note->msg = rdv_cm_conn_msg(up, c);
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
