// SPDX-License-Identifier: MIT
/*
 * Completer (qp.h): RC responses retire send WQEs in order. An ACK is cumulative; a READ
 * response or atomic ACK also acknowledges everything before it; a NAK acknowledges what
 * precedes its PSN (IBA 9.7.5.1). Lost responses are recovered by the ACK timer and go-back-N,
 * bounded by retry_cnt; RNR NAKs by the RNR timer, bounded by rnr_retry (7 = forever).
 */
#include <string.h>

#include "transport/qp_int.h"

void roce_comp_arm(struct roce_qp *qp, uint64_t now)
{
	if (qp->comp.state == ROCE_COMP_WAIT_ACK)
		return;
	qp->comp.state = ROCE_COMP_WAIT_ACK;
	qp->comp.deadline = qp->attr.timeout ? now + roce_ack_timeout_ns(qp->attr.timeout) : 0;
}

static bool tail_started(const struct roce_qp *qp)
{
	return qp->sq->tail != qp->sq->head && roce_sq_wqe(qp, qp->sq->tail)->started;
}

/* Forward progress: counters back to their attributes, timer restarted (IBA 9.7.6.1.3). */
static void progress(struct roce_qp *qp, uint64_t now)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.restarted = false;
	qp->comp.state = ROCE_COMP_IDLE;
	if (tail_started(qp))
		roce_comp_arm(qp, now);
}

static void fail(struct roce_qp *qp, struct roce_send_wqe *wqe, enum ibv_wc_status status)
{
	roce_req_complete(qp, wqe, status);
	roce_qp_fatal(qp);
}

/*
 * Retransmit from comp.psn after a lost packet: one transport retry (IBA 9.7.5.1.3). A sequence
 * NAK or an out-of-sequence response while a restart from comp.psn is under way belongs to the
 * stream that restart replaces: only the ACK timer (@timeout) may restart again.
 */
static void retry(struct roce_qp *qp, uint64_t now, bool timeout)
{
	struct roce_send_wqe *wqe = roce_sq_wqe(qp, qp->sq->tail);

	if (qp->comp.restarted && !timeout)
		return;
	if (!qp->comp.retry_left) {
		fail(qp, wqe, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qp->comp.retry_left--;
	qp->comp.restarted = true;
	roce_req_rewind(qp, qp->comp.psn);
	if (qp->req.state != ROCE_REQ_WAIT_RNR)
		qp->req.state = ROCE_REQ_SEND;
	qp->comp.state = ROCE_COMP_IDLE;
	roce_comp_arm(qp, now);
}

void roce_comp_timeout(struct roce_qp *qp, uint64_t now)
{
	qp->counters.timeouts++;
	qp->comp.state = ROCE_COMP_IDLE;
	if (tail_started(qp))
		retry(qp, now, true);
}

/* Everything before @psn is acknowledged. True if that is news: forward progress. */
static bool acked_to(struct roce_qp *qp, uint32_t psn)
{
	if (roce_psn_cmp(psn, qp->comp.psn) <= 0)
		return false;
	qp->comp.psn = psn;
	return true;
}

/* The RNR NAK for @psn: wait the timer it names, then resend from @psn (IBA 9.7.5.2.8). */
static void rnr(struct roce_qp *qp, struct roce_send_wqe *wqe, uint32_t psn, uint8_t code,
		uint64_t now)
{
	/* Already waiting: this NAK answers a copy sent before the first one came back. */
	if (qp->req.state == ROCE_REQ_WAIT_RNR) {
		qp->counters.rx_duplicate++;
		return;
	}
	if (!qp->comp.rnr_left) {
		fail(qp, wqe, IBV_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (qp->comp.rnr_left != 7)
		qp->comp.rnr_left--;
	roce_req_rewind(qp, psn);
	qp->comp.restarted = true;
	qp->req.state = ROCE_REQ_WAIT_RNR;
	qp->req.rnr_deadline = now + roce_rnr_timer_ns(code);
	qp->comp.state = ROCE_COMP_IDLE; /* the ACK timer restarts with the resend */
}

static void nak(struct roce_qp *qp, struct roce_send_wqe *wqe, const struct roce_pkt *pkt,
		uint64_t now)
{
	uint32_t psn = pkt->bth.psn;

	switch (roce_aeth_class(pkt->aeth.syndrome)) {
	case ROCE_AETH_RNR_NAK:
		acked_to(qp, psn);
		rnr(qp, wqe, psn, roce_aeth_value(pkt->aeth.syndrome), now);
		return;
	case ROCE_AETH_NAK:
		break;
	default:
		qp->counters.rx_bad_resp++;
		return;
	}
	switch (roce_aeth_value(pkt->aeth.syndrome)) {
	case ROCE_NAK_PSN_SEQ:
		/* The responder expects @psn: everything before it arrived. */
		if (acked_to(qp, psn) && !roce_wqe_is_rd_atomic(wqe))
			progress(qp, now);
		retry(qp, now, false);
		return;
	case ROCE_NAK_INVALID_REQ:
		fail(qp, wqe, IBV_WC_REM_INV_REQ_ERR);
		return;
	case ROCE_NAK_REMOTE_ACCESS:
		fail(qp, wqe, IBV_WC_REM_ACCESS_ERR);
		return;
	case ROCE_NAK_REMOTE_OP:
		fail(qp, wqe, IBV_WC_REM_OP_ERR);
		return;
	case ROCE_NAK_INVALID_RD_REQ:
		fail(qp, wqe, IBV_WC_REM_INV_RD_REQ_ERR);
		return;
	default:
		qp->counters.rx_bad_resp++;
		return;
	}
}

/*
 * Any response to a PSN this requester sent -- progress or not: the rest of a stream a restart
 * replaces, a replay that has not reached comp.psn yet, a later READ's responses or a later
 * request's ACK while the READ at comp.psn is asked again, a repeated ACK -- shows the
 * responder alive and working through this QP's requests. The ACK timer stands for "nothing
 * came back" (IBA 9.7.6.1.3), so it starts again without a retry spent, as rxe's completer
 * restarts its retransmit timer after every response it takes while requests are outstanding
 * (rxe_completer, COMPST_EXIT). A slow responder working through long responses must not
 * exhaust retry_cnt while it sends. Responses answer requests, and without progress a
 * requester resends at most once before its timer fires (retry()), so they end, and a lost
 * request is still found then.
 */
static void responder_alive(struct roce_qp *qp, uint64_t now)
{
	if (qp->comp.state == ROCE_COMP_WAIT_ACK && qp->attr.timeout)
		qp->comp.deadline = now + roce_ack_timeout_ns(qp->attr.timeout);
}

/* A READ response at comp.psn: place its payload (IBA 9.7.5.1.2). */
static void read_resp(struct roce_qp *qp, struct roce_send_wqe *wqe, const struct roce_pkt *pkt,
		      uint64_t now)
{
	uint32_t psn = pkt->bth.psn;
	uint32_t off = ((psn - wqe->first_psn) & ROCE_PSN_MASK) * qp->mtu;
	uint32_t want = wqe->length - off > qp->mtu ? qp->mtu : wqe->length - off;

	if (!(roce_wr_flags(wqe->opcode) & ROCE_WR_READ)) {
		qp->counters.rx_bad_resp++;
		return;
	}
	if (psn != qp->comp.psn) {
		/* A response before it went missing: fetch the rest again. */
		if (roce_psn_cmp(psn, qp->comp.psn) > 0)
			retry(qp, now, false);
		else
			qp->counters.rx_duplicate++;
		return;
	}
	if (pkt->payload_len != want) {
		fail(qp, wqe, IBV_WC_BAD_RESP_ERR);
		return;
	}
	if (want && roce_sgl_copy(qp, roce_send_wqe_sge(wqe), wqe->num_sge, off,
				  (uint8_t *)pkt->payload, want, true) != ROCE_MEM_OK) {
		fail(qp, wqe, IBV_WC_LOC_PROT_ERR);
		return;
	}
	qp->comp.psn = roce_psn_add(psn, 1);
	if (psn == wqe->last_psn)
		roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
	progress(qp, now);
}

bool roce_comp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		     struct roce_steer *plan)
{
	uint8_t opcode = (uint8_t)(roce_qp_tr(qp) | ROCE_OP_READ_RESP_MIDDLE);
	enum roce_mem_err err = ROCE_MEM_OK;
	uint32_t psn = roce_get24(bth + 9), off, count;
	const struct ibv_sge *sge;
	struct roce_send_wqe *wqe;

	/* The MIDDLE responses read_resp() takes next for the READ at the SQ's tail. */
	if (qp->comp.state == ROCE_COMP_ERROR || bth[0] != opcode || psn != qp->comp.psn ||
	    !tail_started(qp))
		return false;
	wqe = roce_sq_wqe(qp, qp->sq->tail);
	if (!(roce_wr_flags(wqe->opcode) & ROCE_WR_READ) || wqe->num_sge != 1 ||
	    roce_psn_cmp(psn, wqe->first_psn) < 0 || roce_psn_cmp(psn, wqe->last_psn) >= 0)
		return false;
	off = ((psn - wqe->first_psn) & ROCE_PSN_MASK) * qp->mtu;
	count = roce_steer_begin(qp, opcode, psn, seg, total, wqe->length - off, plan);
	sge = roce_send_wqe_sge(wqe);
	if (!count || (uint64_t)off + (uint64_t)count * qp->mtu > sge->length)
		return false;
	/* The check roce_sgl_copy makes of each of these responses, for all of them at once. */
	plan->at = qp->env->mem(qp->ctx, sge->lkey, false, sge->addr + off,
				(uint64_t)count * qp->mtu, IBV_ACCESS_LOCAL_WRITE, &err);
	return plan->at;
}

static void atomic_ack(struct roce_qp *qp, struct roce_send_wqe *wqe, const struct roce_pkt *pkt,
		       uint64_t now)
{
	uint8_t orig[8];

	if (!roce_wqe_is_atomic(wqe) || pkt->bth.psn != wqe->first_psn) {
		qp->counters.rx_bad_resp++;
		return;
	}
	/* The original value lands in the local buffer in host order, as a HCA's DMA does. */
	memcpy(orig, &pkt->atomic_orig, sizeof(orig));
	if (roce_sgl_copy(qp, roce_send_wqe_sge(wqe), wqe->num_sge, 0, orig, 8, true) !=
	    ROCE_MEM_OK) {
		fail(qp, wqe, IBV_WC_LOC_PROT_ERR);
		return;
	}
	qp->comp.psn = roce_psn_add(pkt->bth.psn, 1);
	roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
	progress(qp, now);
}

void roce_comp_recv(struct roce_qp *qp, const struct roce_pkt *pkt, uint64_t now)
{
	uint32_t psn = pkt->bth.psn;
	uint8_t op = pkt->bth.opcode & 0x1F;
	bool is_ack = op == ROCE_OP_ACK;

	if (qp->comp.state == ROCE_COMP_ERROR)
		return;
	/*
	 * IBA 9.7.5.1: a response names a PSN this requester sent. One beyond (a ghost: a peer
	 * reset with other PSNs ACKing its duplicates) must not retire anything.
	 */
	if (roce_psn_cmp(psn, qp->req.psn_end) >= 0) {
		qp->counters.rx_bad_resp++;
		return;
	}
	responder_alive(qp, now);
	for (;;) {
		struct roce_send_wqe *wqe;

		if (!tail_started(qp)) {
			qp->counters.rx_bad_resp++;
			return;
		}
		wqe = roce_sq_wqe(qp, qp->sq->tail);
		if (roce_psn_cmp(psn, wqe->last_psn) > 0) {
			/*
			 * The packet acknowledges past this WQE. A READ or atomic there whose
			 * response never came must be asked again (IBA 9.7.5.1.3).
			 */
			if (roce_wqe_is_rd_atomic(wqe)) {
				retry(qp, now, false);
				return;
			}
			acked_to(qp, roce_psn_add(wqe->last_psn, 1));
			roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
			progress(qp, now);
			continue;
		}
		if (roce_psn_cmp(psn, wqe->first_psn) < 0) {
			qp->counters.rx_duplicate++; /* a late answer to something retired */
			return;
		}
		if (is_ack && roce_aeth_class(pkt->aeth.syndrome) != ROCE_AETH_ACK) {
			nak(qp, wqe, pkt, now);
			return;
		}
		if (is_ack) {
			/* Part of a multi-packet SEND or WRITE, or all of it. */
			if (roce_wqe_is_rd_atomic(wqe)) {
				qp->counters.rx_bad_resp++;
				return;
			}
			if (!acked_to(qp, roce_psn_add(psn, 1))) {
				qp->counters
					.rx_duplicate++; /* nothing new: a late or repeated ACK */
				return;
			}
			if (psn == wqe->last_psn)
				roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
			progress(qp, now);
			return;
		}
		if (op == ROCE_OP_ATOMIC_ACK)
			atomic_ack(qp, wqe, pkt, now);
		else
			read_resp(qp, wqe, pkt, now);
		return;
	}
}
