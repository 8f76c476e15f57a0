/* SPDX-License-Identifier: MIT */
/*
 * One connection's IB CM state machine (IBA 12.9, as the Linux ib_cm runs it: PROTOCOL.md
 * §4.9), sans I/O like transport/qp.h: received MADs and "now" go in (cm_conn_read), MADs to
 * send are pulled out (cm_conn_write, retransmissions included), one call tells the next
 * deadline (cm_conn_expiry) and another acts on it (cm_conn_handle_expiry). What the consumer
 * (rdma_cm) must learn comes out as events (cm_conn_event). Nothing here reads a clock, so
 * tests drive it in virtual time.
 *
 * Active side:  cm_conn_connect -> REQ ...  REP in: CM_EV_REP -> the consumer readies its QP,
 *               cm_conn_rtu -> RTU; established.
 * Passive side: cm_conn_accept_req (a REQ for a listener) -> CM_EV_REQ; the consumer answers
 *               with cm_conn_rep (REP ... RTU in: CM_EV_RTU, established) or cm_conn_reject.
 * Either side:  cm_conn_disconnect -> DREQ ... DREP in: time-wait; a DREQ in: CM_EV_DREQ, the
 *               consumer's cm_conn_disconnect answers DREP. Time-wait ends with
 *               CM_EV_TIMEWAIT_EXIT.
 * UD (SIDR):    cm_conn_sidr_req -> SIDR_REQ ... SIDR_REP in: CM_EV_SIDR_REP. Passive:
 *               cm_conn_accept_sidr_req (a SIDR_REQ for a listener); the consumer answers
 *               with cm_conn_sidr_rep, sent once: closed.
 * Retries: a request (REQ, REP, DREQ, SIDR_REQ) is sent again each timeout, max_cm_retries
 * times; then CM_EV_TIMEOUT (Linux sends no REJ then; an unanswered DREQ still ends in
 * time-wait).
 */
#ifndef UROCE_CM_IB_CM_H
#define UROCE_CM_IB_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/wire.h"

enum cm_state {
	CM_IDLE,
	CM_REQ_SENT, /* active: waiting for REP (or REJ, MRA) */
	CM_REQ_RCVD, /* passive: the consumer decides */
	CM_REP_SENT, /* passive: waiting for RTU */
	CM_REP_RCVD, /* active: the consumer readies its QP, then RTU */
	CM_ESTABLISHED,
	CM_DREQ_SENT, /* waiting for DREP */
	CM_DREQ_RCVD, /* the consumer answers with cm_conn_disconnect */
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT, /* UD: waiting for SIDR_REP */
	CM_SIDR_REQ_RCVD, /* UD, passive: the consumer decides */
	CM_CLOSED,        /* rejected, timed out or time-wait over: nothing more */
};

enum cm_event_type {
	CM_EV_REQ,           /* passive: a REQ (msg) */
	CM_EV_REP,           /* active: the REP (msg) */
	CM_EV_RTU,           /* passive: established (RTU, or data first: cm_conn_established) */
	CM_EV_REJ,           /* the peer rejected (msg: its REJ) */
	CM_EV_MRA,           /* the peer needs more time: the timeout grew */
	CM_EV_TIMEOUT,       /* REQ, REP, DREQ or SIDR_REQ went unanswered max_cm_retries times */
	CM_EV_DREQ,          /* the peer disconnects (msg) */
	CM_EV_DREP,          /* our DREQ was answered */
	CM_EV_TIMEWAIT_EXIT, /* time-wait is over: the connection's IDs may be reused */
	CM_EV_SIDR_REP,      /* UD: the answer (msg) */
};

struct cm_event {
	enum cm_event_type type;
	struct cm_msg msg; /* the MAD that caused it, when there is one */
};

/* Timing of a connection (PROTOCOL.md §4.9); exponents t mean 4.096 us * 2^t. */
struct cm_timing {
	uint8_t remote_response_timeout; /* the peer's CM response time (REQ's, 20) */
	uint8_t packet_life_time;        /* 16 or 18 on Linux */
	uint8_t max_cm_retries;          /* 15 */
	uint8_t timewait;                /* the ACK timeout exponent that sizes time-wait */
};

#define CM_EVENTS_MAX 4

struct cm_conn {
	enum cm_state state;
	uint32_t local_id, remote_id;
	uint64_t tid;
	uint32_t local_qpn, remote_qpn; /* a DREQ names the receiver's QPN */
	/*
	 * The QP's PSNs, as ib_cm keeps them (cm_id_priv->rq_psn/sq_psn): a REQ's or REP's
	 * Starting PSN is its sender's receive PSN, so the side that sends it receives at it and
	 * its peer sends from it (ib_send_cm_req and ib_send_cm_rep set rq_psn from their own
	 * message; cm_req_handler and cm_rep_handler set sq_psn from the peer's). PROTOCOL.md
	 * §3.1; the kernel-rxe capture rping.pcap shows it.
	 */
	uint32_t rq_psn, sq_psn;
	uint32_t ece_options; /* ECE: the attribute modifier of the REQ or REP this side sends */
	uint64_t service_id;  /* passive SIDR: the request's, which its SIDR_REP repeats */
	struct cm_timing timing;

	struct cm_msg sent;  /* the last request, for retries (or the answer to repeat) */
	bool send_now;       /* sent is due (first time or a retry) */
	uint64_t deadline;   /* the retry or time-wait deadline; 0: none */
	uint64_t timeout_ns; /* the current retry interval */
	uint8_t retries_left;

	struct cm_event events[CM_EVENTS_MAX];
	unsigned int ev_head, ev_tail;
	uint32_t dropped_events; /* the consumer did not take them: a bug of the consumer */
};

/* The CM timeout of exponent @t in nanoseconds: 4096 ns * 2^t (t <= 31). */
uint64_t cm_timeout_ns(uint8_t t);

/* A connection in CM_IDLE with comm ID @local_id. */
void cm_conn_init(struct cm_conn *c, uint32_t local_id, const struct cm_timing *timing);

/*
 * Active: send @req (its local_comm_id is set to c's, remote_qpn unused) with transaction ID
 * @tid. Returns 0, or EINVAL if @c is not idle.
 */
int cm_conn_connect(struct cm_conn *c, const struct cm_req *req, uint64_t tid, uint64_t now);

/*
 * Passive: the REQ @m, routed to a listener, starts connection @c (idle): CM_EV_REQ. The
 * retry timing of the REP comes from the REQ. Returns 0, or EINVAL if @c is not idle or @m is
 * no REQ.
 */
int cm_conn_accept_req(struct cm_conn *c, const struct cm_msg *m, uint64_t now);

/* Passive, in CM_REQ_RCVD: answer with @rep (comm IDs filled in here). 0 or EINVAL. */
int cm_conn_rep(struct cm_conn *c, const struct cm_rep *rep, uint64_t now);

/* Active, in CM_REP_RCVD: send the RTU; established. 0 or EINVAL. */
int cm_conn_rtu(struct cm_conn *c, uint64_t now);

/*
 * Reject: passive in CM_REQ_RCVD (REJ of the REQ), or active in CM_REP_RCVD (of the REP), with
 * @reason and @len bytes of private data (at most CM_REJ_PRIVATE). The connection is closed.
 * 0, or EINVAL (wrong state, too much data).
 */
int cm_conn_reject(struct cm_conn *c, uint16_t reason, const void *pd, size_t len, uint64_t now);

/*
 * Disconnect: established -> DREQ (retried; unanswered, time-wait all the same); after a DREQ
 * came -> DREP and time-wait. @len bytes of private data (at most CM_DREQ_PRIVATE). 0, or
 * EINVAL in any other state.
 */
int cm_conn_disconnect(struct cm_conn *c, const void *pd, size_t len, uint64_t now);

/*
 * The network says no CM can be reached at the peer's address (an ICMP error for a MAD sent
 * there): a REQ or SIDR_REQ waiting for its answer fails now, as when out of retries
 * (CM_EV_TIMEOUT); a DREQ waiting for its DREP ends as if the DREP came (CM_EV_DREP, then
 * time-wait), since nothing there holds the connection. Returns true for those; otherwise
 * nothing happens: false.
 */
bool cm_conn_unreachable(struct cm_conn *c, uint64_t now);

/* Passive: data arrived on the QP before the RTU (COMM_EST): established, CM_EV_RTU. */
void cm_conn_established(struct cm_conn *c);

/* UD: send @req (request_id set here) as SIDR_REQ. 0 or EINVAL. */
int cm_conn_sidr_req(struct cm_conn *c, const struct cm_sidr_req *req, uint64_t tid, uint64_t now);

/*
 * Passive UD: the SIDR_REQ @m, routed to a listener, starts connection @c (idle); its request
 * ID becomes remote_id. No event: the caller tells the consumer. Returns 0, or EINVAL if @c
 * is not idle or @m is no SIDR_REQ.
 */
int cm_conn_accept_sidr_req(struct cm_conn *c, const struct cm_msg *m);

/*
 * Passive UD, in CM_SIDR_REQ_RCVD: answer with @rep (request ID and service ID filled in
 * here), sent once with the request's transaction ID (Linux's cm_send_sidr_rep_locked keeps
 * no state to repeat it); the connection is closed. 0, or EINVAL in any other state.
 */
int cm_conn_sidr_rep(struct cm_conn *c, const struct cm_sidr_rep *rep);

/* ECE: the options that the REQ or REP sent next carries in its attribute modifier (Linux). */
void cm_conn_set_ece(struct cm_conn *c, uint32_t options);

/*
 * A MAD for this connection (the router matched its comm IDs). Duplicates and stale messages
 * are handled as Linux does: a repeated REQ or REP gets the answer sent before again, a DREQ
 * for a closed connection gets a DREP. Returns whether the MAD meant anything here.
 */
bool cm_conn_read(struct cm_conn *c, const struct cm_msg *m, uint64_t now);

/* The next MAD to send (header and message) into @out: true, or false when none is due. */
bool cm_conn_write(struct cm_conn *c, struct cm_msg *out, uint64_t now);

/* The next deadline, or UINT64_MAX. */
uint64_t cm_conn_expiry(const struct cm_conn *c);

/*
 * The owner is going away (a process exiting): repeat an outstanding request every @interval
 * from now on instead of the IBTA interval, so that the retries fit in the time left.
 */
void cm_conn_hurry(struct cm_conn *c, uint64_t interval, uint64_t now);

/* Act on the deadline if it has come: a retry, a timeout, the end of time-wait. */
void cm_conn_handle_expiry(struct cm_conn *c, uint64_t now);

/* The next event for the consumer: true with *@ev, or false. */
bool cm_conn_event(struct cm_conn *c, struct cm_event *ev);

#endif
