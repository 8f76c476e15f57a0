// SPDX-License-Identifier: MIT
/*
 * The IB CM state machine of one connection (ib_cm.h). Timings and duplicate handling follow
 * PROTOCOL.md §4.9 (the Linux ib_cm): a request is repeated each interval until answered or
 * out of retries; an answer is kept so that a repeated request gets it again.
 */
#include "cm/ib_cm.h"

#include <errno.h>
#include <string.h>

/* The service timeout rdma_cm puts in an MRA (§4.9: 24, about 68.7 s). */
#define MRA_SERVICE_TIMEOUT 24

uint64_t cm_timeout_ns(uint8_t t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

void cm_conn_init(struct cm_conn *c, uint32_t local_id, const struct cm_timing *timing)
{
	memset(c, 0, sizeof(*c));
	c->local_id = local_id;
	c->timing = *timing;
}

static void push_event(struct cm_conn *c, enum cm_event_type type, const struct cm_msg *m)
{
	struct cm_event *ev;

	if (c->ev_head - c->ev_tail == CM_EVENTS_MAX) {
		c->dropped_events++;
		return;
	}
	ev = &c->events[c->ev_head++ % CM_EVENTS_MAX];
	ev->type = type;
	if (m)
		ev->msg = *m;
	else
		memset(&ev->msg, 0, sizeof(ev->msg));
}

/* Make @attr the MAD to send now, with the connection's transaction ID. */
static struct cm_msg *prepare(struct cm_conn *c, enum cm_attr attr)
{
	memset(&c->sent, 0, sizeof(c->sent));
	c->sent.hdr = cm_hdr(attr, c->tid);
	/* ECE's options travel in the REQ's and REP's attribute modifier (Linux ib_cm). */
	if (attr == CM_ATTR_REQ || attr == CM_ATTR_REP)
		c->sent.hdr.attr_mod = c->ece_options;
	c->send_now = true;
	return &c->sent;
}

/* The MAD just prepared is a request: repeat it every @interval, max_cm_retries times. */
static void expect_answer(struct cm_conn *c, uint64_t interval, uint8_t retries, uint64_t now)
{
	c->timeout_ns = interval;
	c->retries_left = retries;
	c->deadline = now + interval;
}

/* The active side's interval for REQ and DREQ: 2 packet lifetimes and the peer's response. */
static uint64_t request_interval(const struct cm_conn *c)
{
	return 2 * cm_timeout_ns(c->timing.packet_life_time) +
	       cm_timeout_ns(c->timing.remote_response_timeout);
}

static void enter_timewait(struct cm_conn *c, uint64_t now)
{
	c->state = CM_TIMEWAIT;
	c->deadline = now + cm_timeout_ns(c->timing.timewait);
}

static void close_conn(struct cm_conn *c)
{
	c->state = CM_CLOSED;
	c->deadline = 0;
}

/* Our DREQ is answered: @m the DREP, or NULL when no CM is left there (cm_conn_unreachable). */
static void dreq_answered(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	c->send_now = false;
	enter_timewait(c, now);
	push_event(c, CM_EV_DREP, m);
}

int cm_conn_connect(struct cm_conn *c, const struct cm_req *req, uint64_t tid, uint64_t now)
{
	struct cm_msg *m;

	if (c->state != CM_IDLE)
		return EINVAL;
	c->tid = tid;
	m = prepare(c, CM_ATTR_REQ);
	m->u.req = *req;
	m->u.req.local_comm_id = c->local_id;
	c->local_qpn = req->local_qpn;
	c->rq_psn = req->starting_psn;
	c->timing.remote_response_timeout = req->remote_cm_response_timeout;
	c->timing.max_cm_retries = req->max_cm_retries;
	c->state = CM_REQ_SENT;
	expect_answer(c, request_interval(c), c->timing.max_cm_retries, now);
	return 0;
}

int cm_conn_accept_req(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	(void)now;
	if (c->state != CM_IDLE || m->hdr.attr_id != CM_ATTR_REQ)
		return EINVAL;
	c->tid = m->hdr.tid;
	c->remote_id = m->u.req.local_comm_id;
	c->remote_qpn = m->u.req.local_qpn;
	c->sq_psn = m->u.req.starting_psn;
	/* The REP is repeated at the REQ sender's own response time, its retry count (§4.9). */
	c->timing.remote_response_timeout = m->u.req.local_cm_response_timeout;
	c->timing.max_cm_retries = m->u.req.max_cm_retries;
	c->state = CM_REQ_RCVD;
	push_event(c, CM_EV_REQ, m);
	return 0;
}

int cm_conn_rep(struct cm_conn *c, const struct cm_rep *rep, uint64_t now)
{
	struct cm_msg *m;

	if (c->state != CM_REQ_RCVD)
		return EINVAL;
	m = prepare(c, CM_ATTR_REP);
	m->u.rep = *rep;
	m->u.rep.local_comm_id = c->local_id;
	m->u.rep.remote_comm_id = c->remote_id;
	c->local_qpn = rep->local_qpn;
	c->rq_psn = rep->starting_psn;
	c->state = CM_REP_SENT;
	expect_answer(c, cm_timeout_ns(c->timing.remote_response_timeout), c->timing.max_cm_retries,
		      now);
	return 0;
}

int cm_conn_rtu(struct cm_conn *c, uint64_t now)
{
	struct cm_msg *m;

	(void)now;
	if (c->state != CM_REP_RCVD)
		return EINVAL;
	m = prepare(c, CM_ATTR_RTU);
	m->u.rtu.local_comm_id = c->local_id;
	m->u.rtu.remote_comm_id = c->remote_id;
	c->state = CM_ESTABLISHED;
	c->deadline = 0;
	return 0;
}

int cm_conn_reject(struct cm_conn *c, uint16_t reason, const void *pd, size_t len, uint64_t now)
{
	struct cm_msg *m;

	(void)now;
	if ((c->state != CM_REQ_RCVD && c->state != CM_REP_RCVD) || len > CM_REJ_PRIVATE)
		return EINVAL;
	m = prepare(c, CM_ATTR_REJ);
	m->u.rej.local_comm_id = c->local_id;
	m->u.rej.remote_comm_id = c->remote_id;
	m->u.rej.message = c->state == CM_REQ_RCVD ? CM_MSG_REQ : CM_MSG_REP;
	m->u.rej.reason = reason;
	if (len)
		memcpy(m->u.rej.private_data, pd, len);
	close_conn(c);
	return 0;
}

static void send_drep(struct cm_conn *c, const void *pd, size_t len)
{
	struct cm_msg *m = prepare(c, CM_ATTR_DREP);

	m->u.drep.local_comm_id = c->local_id;
	m->u.drep.remote_comm_id = c->remote_id;
	if (len)
		memcpy(m->u.drep.private_data, pd, len);
}

int cm_conn_disconnect(struct cm_conn *c, const void *pd, size_t len, uint64_t now)
{
	struct cm_msg *m;

	if (len > CM_DREQ_PRIVATE)
		return EINVAL;
	if (c->state == CM_DREQ_RCVD) {
		send_drep(c, pd, len);
		enter_timewait(c, now);
		return 0;
	}
	if (c->state != CM_ESTABLISHED)
		return EINVAL;
	/* A DREQ is a new transaction: Linux gives it a TID of its own (§4.11). */
	c->tid = (c->tid & ~0xFFFFFFFFull) | (uint32_t)(c->tid + 1);
	m = prepare(c, CM_ATTR_DREQ);
	m->u.dreq.local_comm_id = c->local_id;
	m->u.dreq.remote_comm_id = c->remote_id;
	m->u.dreq.remote_qpn = c->remote_qpn;
	if (len)
		memcpy(m->u.dreq.private_data, pd, len);
	c->state = CM_DREQ_SENT;
	expect_answer(c, request_interval(c), c->timing.max_cm_retries, now);
	return 0;
}

void cm_conn_established(struct cm_conn *c)
{
	if (c->state != CM_REP_SENT)
		return;
	c->state = CM_ESTABLISHED;
	c->deadline = 0;
	c->send_now = false;
	push_event(c, CM_EV_RTU, NULL);
}

int cm_conn_sidr_req(struct cm_conn *c, const struct cm_sidr_req *req, uint64_t tid, uint64_t now)
{
	struct cm_msg *m;

	if (c->state != CM_IDLE)
		return EINVAL;
	c->tid = tid;
	m = prepare(c, CM_ATTR_SIDR_REQ);
	m->u.sidr_req = *req;
	m->u.sidr_req.request_id = c->local_id;
	c->state = CM_SIDR_REQ_SENT;
	expect_answer(c, cm_timeout_ns(c->timing.remote_response_timeout), c->timing.max_cm_retries,
		      now);
	return 0;
}

int cm_conn_accept_sidr_req(struct cm_conn *c, const struct cm_msg *m)
{
	if (c->state != CM_IDLE || m->hdr.attr_id != CM_ATTR_SIDR_REQ)
		return EINVAL;
	c->tid = m->hdr.tid;
	c->remote_id = m->u.sidr_req.request_id;
	c->service_id = m->u.sidr_req.service_id;
	c->state = CM_SIDR_REQ_RCVD;
	return 0;
}

int cm_conn_sidr_rep(struct cm_conn *c, const struct cm_sidr_rep *rep)
{
	struct cm_msg *m;

	if (c->state != CM_SIDR_REQ_RCVD)
		return EINVAL;
	m = prepare(c, CM_ATTR_SIDR_REP);
	m->u.sidr_rep = *rep;
	m->u.sidr_rep.request_id = c->remote_id;
	m->u.sidr_rep.service_id = c->service_id;
	close_conn(c);
	return 0;
}

void cm_conn_set_ece(struct cm_conn *c, uint32_t options)
{
	c->ece_options = options;
}

/* A repeated REQ (§4.9): the answer so far again, or an MRA while the consumer decides. */
static void duplicate_req(struct cm_conn *c)
{
	struct cm_msg *m;

	if (c->state == CM_REP_SENT) {
		c->send_now = true;
	} else if (c->state == CM_REQ_RCVD) {
		m = prepare(c, CM_ATTR_MRA);
		m->u.mra.local_comm_id = c->local_id;
		m->u.mra.remote_comm_id = c->remote_id;
		m->u.mra.message = CM_MSG_REQ;
		m->u.mra.service_timeout = MRA_SERVICE_TIMEOUT;
	}
}

static bool read_rep(struct cm_conn *c, const struct cm_msg *m)
{
	if (c->state == CM_ESTABLISHED && m->u.rep.local_comm_id == c->remote_id) {
		c->send_now = c->sent.hdr.attr_id == CM_ATTR_RTU; /* our RTU was lost */
		return true;
	}
	if (c->state != CM_REQ_SENT)
		return false;
	c->remote_id = m->u.rep.local_comm_id;
	c->remote_qpn = m->u.rep.local_qpn;
	c->sq_psn = m->u.rep.starting_psn;
	c->state = CM_REP_RCVD;
	c->deadline = 0;
	push_event(c, CM_EV_REP, m);
	return true;
}

static bool read_mra(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	bool for_req = c->state == CM_REQ_SENT && m->u.mra.message == CM_MSG_REQ;
	bool for_rep = c->state == CM_REP_SENT && m->u.mra.message == CM_MSG_REP;

	if (!for_req && !for_rep)
		return false;
	/* The peer needs longer: wait its service timeout plus a round trip (§4.9). */
	c->timeout_ns = cm_timeout_ns(m->u.mra.service_timeout) +
			cm_timeout_ns((uint8_t)(c->timing.packet_life_time + 1));
	c->deadline = now + c->timeout_ns;
	push_event(c, CM_EV_MRA, m);
	return true;
}

static bool read_dreq(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	switch (c->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT: /* the RTU was lost; the DREQ says the peer was established */
		/* Linux ignores a DREQ that names another QP than its own (§4.4, DREQ). */
		if (m->u.dreq.remote_qpn != c->local_qpn)
			return false;
		c->tid = m->hdr.tid;
		c->state = CM_DREQ_RCVD;
		c->deadline = 0;
		c->send_now = false;
		push_event(c, CM_EV_DREQ, m);
		return true;
	case CM_DREQ_SENT: /* both disconnect at once: each answers the other */
		c->tid = m->hdr.tid;
		send_drep(c, NULL, 0);
		enter_timewait(c, now);
		push_event(c, CM_EV_DREP, NULL);
		return true;
	case CM_TIMEWAIT:
	case CM_CLOSED:
		/* Our DREP was lost, or the connection is gone: a DREP all the same (§4.9). */
		c->tid = m->hdr.tid;
		send_drep(c, NULL, 0);
		return true;
	default:
		return false;
	}
}

bool cm_conn_read(struct cm_conn *c, const struct cm_msg *m, uint64_t now)
{
	switch (m->hdr.attr_id) {
	case CM_ATTR_REQ:
		if (c->state != CM_REQ_RCVD && c->state != CM_REP_SENT)
			return false;
		duplicate_req(c);
		return true;
	case CM_ATTR_REP:
		return read_rep(c, m);
	case CM_ATTR_RTU:
		if (c->state != CM_REP_SENT)
			return false;
		c->state = CM_ESTABLISHED;
		c->deadline = 0;
		c->send_now = false;
		push_event(c, CM_EV_RTU, m);
		return true;
	case CM_ATTR_MRA:
		return read_mra(c, m, now);
	case CM_ATTR_REJ:
		if ((c->state != CM_REQ_SENT || m->u.rej.message != CM_MSG_REQ) &&
		    (c->state != CM_REP_SENT || m->u.rej.message != CM_MSG_REP))
			return false;
		close_conn(c);
		c->send_now = false;
		push_event(c, CM_EV_REJ, m);
		return true;
	case CM_ATTR_DREQ:
		return read_dreq(c, m, now);
	case CM_ATTR_DREP:
		if (c->state != CM_DREQ_SENT)
			return false;
		dreq_answered(c, m, now);
		return true;
	case CM_ATTR_SIDR_REP:
		if (c->state != CM_SIDR_REQ_SENT)
			return false;
		close_conn(c);
		c->send_now = false;
		push_event(c, CM_EV_SIDR_REP, m);
		return true;
	default:
		return false;
	}
}

bool cm_conn_write(struct cm_conn *c, struct cm_msg *out, uint64_t now)
{
	(void)now;
	if (!c->send_now)
		return false;
	c->send_now = false;
	*out = c->sent;
	return true;
}

uint64_t cm_conn_expiry(const struct cm_conn *c)
{
	return c->deadline ? c->deadline : UINT64_MAX;
}

void cm_conn_hurry(struct cm_conn *c, uint64_t interval, uint64_t now)
{
	if (c->state != CM_REQ_SENT && c->state != CM_REP_SENT && c->state != CM_DREQ_SENT &&
	    c->state != CM_SIDR_REQ_SENT)
		return;
	c->timeout_ns = interval;
	if (c->deadline > now + interval)
		c->deadline = now + interval;
}

void cm_conn_handle_expiry(struct cm_conn *c, uint64_t now)
{
	if (!c->deadline || now < c->deadline)
		return;
	if (c->state == CM_TIMEWAIT) {
		close_conn(c);
		push_event(c, CM_EV_TIMEWAIT_EXIT, NULL);
		return;
	}
	if (c->retries_left) {
		c->retries_left--;
		c->send_now = true;
		c->deadline = now + c->timeout_ns;
		return;
	}
	/* Out of retries (§4.9): REQ/REP/SIDR_REQ fail; an unanswered DREQ ends in time-wait. */
	c->send_now = false;
	push_event(c, CM_EV_TIMEOUT, NULL);
	if (c->state == CM_DREQ_SENT)
		enter_timewait(c, now);
	else
		close_conn(c);
}

bool cm_conn_unreachable(struct cm_conn *c, uint64_t now)
{
	switch (c->state) {
	case CM_REQ_SENT:
	case CM_SIDR_REQ_SENT:
		c->send_now = false;
		push_event(c, CM_EV_TIMEOUT, NULL);
		close_conn(c);
		return true;
	case CM_DREQ_SENT:
		/*
		 * No CM on the peer's host at all, so nothing there holds the connection: what a
		 * Linux host's CM answers to a DREQ for a connection it does not have, a DREP
		 * (§4.9), ends it now instead of after the DREQ's retries (a minute).
		 */
		dreq_answered(c, NULL, now);
		return true;
	default:
		return false;
	}
}

bool cm_conn_event(struct cm_conn *c, struct cm_event *ev)
{
	if (c->ev_tail == c->ev_head)
		return false;
	*ev = c->events[c->ev_tail++ % CM_EVENTS_MAX];
	return true;
}
