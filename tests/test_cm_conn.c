/* SPDX-License-Identifier: MIT */
/*
 * cm/ib_cm in virtual time: an active connection A and a passive one B joined by a wire that
 * carries each MAD through the codec (cm_encode, cm_decode) and can lose, repeat and delay
 * them. Consumers answer as rdma_cm does (REQ -> REP, REP -> RTU, DREQ -> DREP). Checked: the
 * handshake and disconnect, rejection with private data, retries and their timing, MRA, SIDR,
 * and under random loss and duplication every connection ends established or with a
 * documented error, never hung.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cm/ib_cm.h"

#define MS     1000000ull
#define SECOND (1000 * MS)

static const struct cm_timing timing = {.remote_response_timeout = 20,
					.packet_life_time = 16,
					.max_cm_retries = 15,
					.timewait = 19};

struct side {
	struct cm_conn c;
	bool present; /* false: nobody answers there */
	bool slow;    /* the consumer takes its time to accept */
	bool reject;  /* the consumer rejects the REQ */
	unsigned int sent[CM_ATTR_APR + 1];
	unsigned int events[CM_EV_SIDR_REP + 1];
	struct cm_event last[CM_EV_SIDR_REP + 1];
};

/* A MAD in flight. */
struct flight {
	uint8_t mad[CM_MAD_LEN];
	uint64_t at;
	int to; /* 0: A, 1: B */
};

struct world {
	struct side s[2];
	struct flight air[64];
	unsigned int nair;
	uint64_t now, rng;
	unsigned int loss_pct, dup_pct;
	uint64_t delay_ns;
	uint64_t accept_at; /* a slow consumer accepts then */
};

static uint64_t rnd(struct world *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545F4914F6CDD1Dull;
}

static void launch(struct world *w, int from, const struct cm_msg *m)
{
	unsigned int copies = 1;

	w->s[from].sent[m->hdr.attr_id]++;
	if (w->loss_pct && rnd(w) % 100 < w->loss_pct)
		return;
	if (w->dup_pct && rnd(w) % 100 < w->dup_pct)
		copies = 2;
	for (unsigned int i = 0; i < copies && w->nair < 64; i++) {
		struct flight *f = &w->air[w->nair++];

		cr_assert_eq(cm_encode(m, f->mad), CM_MAD_LEN);
		f->to = !from;
		f->at = w->now + w->delay_ns + (w->delay_ns ? rnd(w) % w->delay_ns : 0);
	}
}

static struct cm_rep rep_of(const struct side *b)
{
	struct cm_rep rep = {.local_qpn = 0x22,
			     .starting_psn = 0x654321,
			     .responder_resources = 1,
			     .initiator_depth = 1,
			     .target_ack_delay = 15,
			     .rnr_retry_count = 7};

	(void)b;
	memcpy(rep.private_data, "accepted", 8);
	return rep;
}

/* The consumers: what rdma_cm does with each event. */
static void consume(struct world *w, int i)
{
	struct side *s = &w->s[i];
	struct cm_event ev;

	while (cm_conn_event(&s->c, &ev)) {
		s->events[ev.type]++;
		s->last[ev.type] = ev;
		switch (ev.type) {
		case CM_EV_REQ:
			if (s->reject) {
				cr_assert_eq(cm_conn_reject(&s->c, CM_REJ_CONSUMER, "no thanks", 10,
							    w->now),
					     0);
			} else if (s->slow) {
				w->accept_at = w->now + 20 * SECOND;
			} else {
				struct cm_rep rep = rep_of(s);

				cr_assert_eq(cm_conn_rep(&s->c, &rep, w->now), 0);
			}
			break;
		case CM_EV_REP:
			cr_assert_eq(cm_conn_rtu(&s->c, w->now), 0);
			break;
		case CM_EV_DREQ:
			cr_assert_eq(cm_conn_disconnect(&s->c, NULL, 0, w->now), 0);
			break;
		default:
			break;
		}
	}
}

/* Deliver what is due, let both sides send, advance to the next thing. False when idle. */
static bool step(struct world *w)
{
	uint64_t next = UINT64_MAX;
	struct cm_msg m;

	for (int i = 0; i < 2; i++) {
		struct side *s = &w->s[i];

		if (s->present)
			cm_conn_handle_expiry(&s->c, w->now);
		consume(w, i);
		while (s->present && cm_conn_write(&s->c, &m, w->now))
			launch(w, i, &m);
	}
	if (w->accept_at && w->now >= w->accept_at) {
		struct cm_rep rep = rep_of(&w->s[1]);

		w->accept_at = 0;
		cr_assert_eq(cm_conn_rep(&w->s[1].c, &rep, w->now), 0);
		return true;
	}
	for (unsigned int k = 0; k < w->nair;) {
		struct flight f = w->air[k];

		if (f.at > w->now) {
			next = f.at < next ? f.at : next;
			k++;
			continue;
		}
		w->air[k] = w->air[--w->nair];
		if (!w->s[f.to].present)
			continue;
		cr_assert_eq(cm_decode(f.mad, CM_MAD_LEN, &m), CM_OK);
		if (f.to == 1 && m.hdr.attr_id == CM_ATTR_REQ && w->s[1].c.state == CM_IDLE)
			cr_assert_eq(cm_conn_accept_req(&w->s[1].c, &m, w->now), 0);
		else
			cm_conn_read(&w->s[f.to].c, &m, w->now);
		return true;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t e = w->s[i].present ? cm_conn_expiry(&w->s[i].c) : UINT64_MAX;

		if (e < next)
			next = e;
		if (w->s[i].c.send_now || w->s[i].c.ev_head != w->s[i].c.ev_tail)
			return true;
	}
	if (w->accept_at && w->accept_at < next)
		next = w->accept_at;
	if (next == UINT64_MAX)
		return false;
	if (next > w->now)
		w->now = next;
	return true;
}

static void run(struct world *w, uint64_t until)
{
	for (int steps = 0; steps < 100000 && w->now <= until; steps++)
		if (!step(w))
			return;
	cr_assert_leq(w->now, until, "still busy at the end of virtual time");
}

static void setup(struct world *w, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	w->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	w->now = 1000;
	cm_conn_init(&w->s[0].c, 0x1B2C3D4E, &timing);
	cm_conn_init(&w->s[1].c, 0x5A6B7C8D, &timing);
	w->s[0].present = w->s[1].present = true;
}

static struct cm_req req_of(void)
{
	struct cm_req req = {.service_id = 0x0000000001064853ull,
			     .local_qpn = 0x11,
			     .starting_psn = 0x123456,
			     .remote_cm_response_timeout = 20,
			     .local_cm_response_timeout = 20,
			     .max_cm_retries = 15,
			     .retry_count = 7,
			     .rnr_retry_count = 7,
			     .pkey = 0xFFFF};

	memcpy(req.private_data, "hello", 5);
	return req;
}

static void connect(struct world *w)
{
	struct cm_req req = req_of();

	cr_assert_eq(cm_conn_connect(&w->s[0].c, &req, 0x100000000ull | 0x1B2C3D4E, w->now), 0);
}

/* A world of @seed whose two ends have connected (REQ, REP, RTU) and are established. */
static void established(struct world *w, uint64_t seed)
{
	setup(w, seed);
	connect(w);
	run(w, 10 * SECOND);
	cr_assert_eq(w->s[0].c.state, CM_ESTABLISHED);
	cr_assert_eq(w->s[1].c.state, CM_ESTABLISHED);
}

Test(cm_conn, handshake_and_disconnect)
{
	static struct world w;

	established(&w, 1);
	cr_assert_eq(w.s[0].sent[CM_ATTR_REQ], 1);
	cr_assert_eq(w.s[1].sent[CM_ATTR_REP], 1);
	cr_assert_eq(w.s[0].sent[CM_ATTR_RTU], 1);
	cr_assert_str_eq((char *)w.s[1].last[CM_EV_REQ].msg.u.req.private_data, "hello");
	cr_assert_eq(w.s[1].last[CM_EV_REQ].msg.u.req.local_comm_id, 0x1B2C3D4E);
	cr_assert_eq(w.s[0].last[CM_EV_REP].msg.u.rep.remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(w.s[0].last[CM_EV_REP].msg.hdr.tid, 0x100000000ull | 0x1B2C3D4E,
		     "REP reuses the REQ's TID");
	cr_assert_eq(w.s[1].events[CM_EV_RTU], 1);

	cr_assert_eq(cm_conn_disconnect(&w.s[0].c, NULL, 0, w.now), 0);
	cr_assert_eq(w.s[0].c.sent.u.dreq.remote_qpn, 0x22, "the DREQ names the peer's QP");
	run(&w, 60 * SECOND);
	cr_assert_eq(w.s[1].events[CM_EV_DREQ], 1);
	cr_assert_eq(w.s[0].events[CM_EV_DREP], 1);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEWAIT_EXIT], 1);
	cr_assert_eq(w.s[1].events[CM_EV_TIMEWAIT_EXIT], 1);
	cr_assert_eq(w.s[0].c.state, CM_CLOSED);
	cr_assert_eq(w.s[1].c.state, CM_CLOSED);
}

Test(cm_conn, consumer_reject_with_private_data)
{
	static struct world w;

	setup(&w, 2);
	w.s[1].reject = true;
	connect(&w);
	run(&w, 10 * SECOND);
	cr_assert_eq(w.s[0].events[CM_EV_REJ], 1);
	cr_assert_eq(w.s[0].last[CM_EV_REJ].msg.u.rej.reason, CM_REJ_CONSUMER);
	cr_assert_eq(w.s[0].last[CM_EV_REJ].msg.u.rej.message, CM_MSG_REQ);
	cr_assert_str_eq((char *)w.s[0].last[CM_EV_REJ].msg.u.rej.private_data, "no thanks");
	cr_assert_eq(w.s[0].c.state, CM_CLOSED);
	cr_assert_eq(w.s[0].sent[CM_ATTR_REQ], 1, "no retry after a REJ");
}

/* Nobody answers: 1 + 15 REQs, one interval apart (2 lifetimes + the response time). */
Test(cm_conn, req_retries_then_timeout)
{
	static struct world w;
	uint64_t start, interval = 2 * cm_timeout_ns(16) + cm_timeout_ns(20);

	setup(&w, 3);
	w.s[1].present = false;
	start = w.now;
	connect(&w);
	run(&w, 200 * SECOND);
	cr_assert_eq(w.s[0].sent[CM_ATTR_REQ], 16);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEOUT], 1);
	cr_assert_eq(w.s[0].c.state, CM_CLOSED);
	cr_assert_eq(w.now - start, 16 * interval, "gave up after %llu ns",
		     (unsigned long long)(w.now - start));
}

/* A slow consumer: the repeated REQ draws an MRA, which stops A's retries until it expires. */
Test(cm_conn, mra_holds_off_retries)
{
	static struct world w;

	setup(&w, 4);
	w.s[1].slow = true;
	connect(&w);
	run(&w, 120 * SECOND);
	cr_assert_eq(w.s[1].sent[CM_ATTR_MRA], 1);
	cr_assert_eq(w.s[0].events[CM_EV_MRA], 1);
	cr_assert_eq(w.s[0].sent[CM_ATTR_REQ], 2, "A kept repeating its REQ after the MRA");
	cr_assert_eq(w.s[0].c.state, CM_ESTABLISHED);
	cr_assert_eq(w.s[1].c.state, CM_ESTABLISHED);
}

Test(cm_conn, both_disconnect_at_once)
{
	static struct world w;

	established(&w, 5);
	w.delay_ns = MS;
	cr_assert_eq(cm_conn_disconnect(&w.s[0].c, NULL, 0, w.now), 0);
	cr_assert_eq(cm_conn_disconnect(&w.s[1].c, "bye", 4, w.now), 0);
	run(&w, 60 * SECOND);
	cr_assert_eq(w.s[0].c.state, CM_CLOSED);
	cr_assert_eq(w.s[1].c.state, CM_CLOSED);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEWAIT_EXIT] + w.s[1].events[CM_EV_TIMEWAIT_EXIT], 2);
}

/*
 * The peer's host no longer runs any CM (its process exited after our DREQ's DREP was lost):
 * the ICMP error for the repeated DREQ ends the disconnection as a DREP would, not the retries.
 */
Test(cm_conn, dreq_to_a_host_without_cm_ends_at_the_icmp_error)
{
	static struct world w;

	established(&w, 9);
	w.s[1].present = false;
	cr_assert_eq(cm_conn_disconnect(&w.s[0].c, NULL, 0, w.now), 0);
	while (w.s[0].sent[CM_ATTR_DREQ] < 2) /* the DREQ and a repeat go unanswered */
		cr_assert(step(&w));
	cr_assert_eq(w.s[0].c.state, CM_DREQ_SENT);
	cr_assert(cm_conn_unreachable(&w.s[0].c, w.now));
	run(&w, 60 * SECOND);
	cr_assert_eq(w.s[0].events[CM_EV_DREP], 1);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEOUT], 0);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEWAIT_EXIT], 1);
	cr_assert_eq(w.s[0].c.state, CM_CLOSED);
	cr_assert_lt(w.s[0].sent[CM_ATTR_DREQ], 16, "the DREQ was repeated to the end");
	cr_assert_not(cm_conn_unreachable(&w.s[0].c, w.now), "a closed connection is left alone");
}

Test(cm_conn, sidr_answer_and_timeout)
{
	static struct world w;
	struct cm_sidr_req sreq = {.pkey = 0xFFFF, .service_id = 0x0000000001114853ull};
	struct cm_msg rep = {.hdr = cm_hdr(CM_ATTR_SIDR_REP, 9)};

	setup(&w, 6);
	cr_assert_eq(cm_conn_sidr_req(&w.s[0].c, &sreq, 9, w.now), 0);
	rep.u.sidr_rep.request_id = 0x1B2C3D4E;
	rep.u.sidr_rep.qpn = 0x33;
	rep.u.sidr_rep.qkey = CM_UDP_QKEY;
	cr_assert(cm_conn_read(&w.s[0].c, &rep, w.now));
	consume(&w, 0);
	cr_assert_eq(w.s[0].events[CM_EV_SIDR_REP], 1);
	cr_assert_eq(w.s[0].last[CM_EV_SIDR_REP].msg.u.sidr_rep.qpn, 0x33);

	setup(&w, 7);
	w.s[1].present = false;
	cr_assert_eq(cm_conn_sidr_req(&w.s[0].c, &sreq, 9, w.now), 0);
	run(&w, 200 * SECOND);
	cr_assert_eq(w.s[0].sent[CM_ATTR_SIDR_REQ], 16);
	cr_assert_eq(w.s[0].events[CM_EV_TIMEOUT], 1);
}

/* Passive SIDR: the answer carries the request's IDs and transaction, leaves once, closes. */
Test(cm_conn, sidr_passive_answers_once)
{
	struct cm_conn c;
	struct cm_msg req = {.hdr = cm_hdr(CM_ATTR_SIDR_REQ, 0x4455)}, out;
	struct cm_sidr_rep rep = {.status = CM_SIDR_OK, .qpn = 0x33, .qkey = CM_UDP_QKEY};

	req.u.sidr_req.request_id = 0x1B2C3D4E;
	req.u.sidr_req.service_id = 0x0000000001114853ull;
	cm_conn_init(&c, 7, &timing);
	cr_assert_eq(cm_conn_sidr_rep(&c, &rep), EINVAL, "no request to answer");
	cr_assert_eq(cm_conn_accept_sidr_req(&c, &(struct cm_msg){.hdr = cm_hdr(CM_ATTR_REQ, 1)}),
		     EINVAL);
	cr_assert_eq(cm_conn_accept_sidr_req(&c, &req), 0);
	cr_assert_eq(c.state, CM_SIDR_REQ_RCVD);
	cr_assert_eq(cm_conn_accept_sidr_req(&c, &req), EINVAL, "not idle any more");
	cr_assert_not(cm_conn_write(&c, &out, 0), "nothing to send before the consumer answers");
	cr_assert_eq(cm_conn_sidr_rep(&c, &rep), 0);
	cr_assert_eq(c.state, CM_CLOSED);
	cr_assert(cm_conn_write(&c, &out, 0));
	cr_assert_eq(out.hdr.attr_id, CM_ATTR_SIDR_REP);
	cr_assert_eq(out.hdr.tid, 0x4455);
	cr_assert_eq(out.u.sidr_rep.request_id, 0x1B2C3D4E);
	cr_assert_eq(out.u.sidr_rep.service_id, 0x0000000001114853ull);
	cr_assert_eq(out.u.sidr_rep.qpn, 0x33);
	cr_assert_eq(cm_conn_expiry(&c), UINT64_MAX, "never repeated");
	cr_assert_not(cm_conn_write(&c, &out, 0));
	cr_assert_eq(cm_conn_sidr_rep(&c, &rep), EINVAL, "answered already");
}

Test(cm_conn, wrong_state_calls_are_refused)
{
	struct cm_conn c;
	struct cm_req req = req_of();
	struct cm_rep rep = {0};

	cm_conn_init(&c, 1, &timing);
	cr_assert_eq(cm_conn_rep(&c, &rep, 0), EINVAL);
	cr_assert_eq(cm_conn_rtu(&c, 0), EINVAL);
	cr_assert_eq(cm_conn_disconnect(&c, NULL, 0, 0), EINVAL);
	cr_assert_eq(cm_conn_reject(&c, CM_REJ_CONSUMER, NULL, 0, 0), EINVAL);
	cr_assert_eq(cm_conn_connect(&c, &req, 1, 0), 0);
	cr_assert_eq(cm_conn_connect(&c, &req, 1, 0), EINVAL);
	cr_assert_eq(cm_conn_reject(&c, CM_REJ_CONSUMER, NULL, CM_REJ_PRIVATE + 1, 0), EINVAL);
}

/*
 * Random loss and duplication of MADs both ways, 400 seeds: each run ends with both sides in a
 * final state that agrees -- both established (then disconnected cleanly), or the active side
 * timed out -- and never runs out of virtual time.
 */
Test(cm_conn, lossy_wire_always_ends)
{
	static struct world w;
	unsigned int established = 0, timed_out = 0;

	for (uint64_t seed = 100; seed < 500; seed++) {
		setup(&w, seed);
		w.loss_pct = 30;
		w.dup_pct = 10;
		w.delay_ns = 10 * MS;
		connect(&w);
		run(&w, 400 * SECOND);
		if (w.s[0].c.state == CM_ESTABLISHED) {
			established++;
			/*
			 * B too: a lost RTU is sent again for each repeated REP, so B gives up
			 * only if all 16 REP rounds fail (about 0.51^16 at 30% loss).
			 */
			cr_assert_eq(w.s[1].c.state, CM_ESTABLISHED, "seed %llu: B in state %d",
				     (unsigned long long)seed, w.s[1].c.state);
			cr_assert_eq(cm_conn_disconnect(&w.s[0].c, NULL, 0, w.now), 0);
			run(&w, w.now + 400 * SECOND);
			cr_assert_eq(w.s[0].c.state, CM_CLOSED, "seed %llu",
				     (unsigned long long)seed);
			cr_assert(w.s[1].c.state == CM_CLOSED || w.s[1].c.state == CM_DREQ_RCVD ||
					  w.s[1].c.state == CM_ESTABLISHED,
				  "seed %llu: B in state %d", (unsigned long long)seed,
				  w.s[1].c.state);
		} else {
			cr_assert_eq(w.s[0].c.state, CM_CLOSED, "seed %llu: A in state %d",
				     (unsigned long long)seed, w.s[0].c.state);
			cr_assert_eq(w.s[0].events[CM_EV_TIMEOUT], 1, "seed %llu",
				     (unsigned long long)seed);
			timed_out++;
		}
	}
	cr_assert_gt(established, 300, "only %u of 400 connected through 30%% loss", established);
	cr_assert_eq(established + timed_out, 400);
}
