// SPDX-License-Identifier: MIT
/*
 * Requester (qp.h): send WQEs become request packets. One WQE at a time, in order; each packet
 * takes the next PSN, a READ request as many as its responses will (IBA 9.7.1). RC keeps the
 * WQE until the completer retires it; UC and UD complete it when its last packet leaves.
 */
#include <string.h>

#include "transport/mw.h"
#include "transport/qp_int.h"

/* The wire opcode of a packet of @wqe: first/last say where it sits in the message. */
static uint8_t opcode_of(const struct roce_qp *qp, const struct roce_send_wqe *wqe, bool first,
			 bool last)
{
	const struct roce_wr_info *w = roce_wr_info(wqe->opcode); /* checked when posted */
	uint8_t op = first ? (last ? w->only : w->first) : (last ? w->last : w->middle);

	return roce_qp_tr(qp) | op;
}

void roce_req_complete(struct roce_qp *qp, struct roce_send_wqe *wqe, enum ibv_wc_status status)
{
	/* Errors always complete; successes only when signalled (IBA 10.8.3.1). */
	bool report = wqe->signaled || status != IBV_WC_SUCCESS;

	if (roce_wqe_is_rd_atomic(wqe) && qp->req.rd_atomic && qp->req.wqe != qp->sq->tail)
		qp->req.rd_atomic--;
	qp->sq->tail++;
	if (qp->req.wqe == qp->sq->tail - 1) {
		/*
		 * Completed before it was fully sent (an error, UC/UD), or acknowledged while the
		 * requester had gone back to resend it (a stale RNR NAK or timeout): move on, and
		 * never reuse its PSNs for the next WQE.
		 */
		qp->req.wqe = qp->sq->tail;
		qp->req.offset = 0;
		if (wqe->started && roce_qp_reliable(qp) &&
		    roce_psn_cmp(qp->req.psn, wqe->last_psn) <= 0)
			qp->req.psn = roce_psn_add(wqe->last_psn, 1);
	}
	if (report) {
		struct ibv_wc wc = {
			.wr_id = wqe->wr_id,
			.status = status,
			.opcode = roce_wc_opcode(wqe->opcode),
			.byte_len = wqe->length,
			.qp_num = qp->qpn,
		};
		qp->env->complete(qp->ctx, false, &wc, false);
	}
}

/*
 * A local error on the WQE being started: it completes with @status; a reliable QP fails, a UC
 * or UD QP's send queue stops in SQE (IBA 10.3.1).
 */
static size_t fail_wqe(struct roce_qp *qp, struct roce_send_wqe *wqe, enum ibv_wc_status status)
{
	roce_req_complete(qp, wqe, status);
	if (roce_qp_reliable(qp))
		roce_qp_fatal(qp);
	else
		roce_qp_sq_error(qp);
	return 0;
}

/* Check the WQE's gather (or, for READ/atomic, scatter) list before any packet of it leaves. */
static enum ibv_wc_status check_local(struct roce_qp *qp, const struct roce_send_wqe *wqe)
{
	const struct ibv_sge *sge = roce_send_wqe_sge((struct roce_send_wqe *)wqe);
	int access = roce_wqe_is_rd_atomic(wqe) ? IBV_ACCESS_LOCAL_WRITE : 0;

	if (!roce_qp_reliable(qp) && (roce_wqe_is_rd_atomic(wqe)))
		return IBV_WC_LOC_QP_OP_ERR;
	if (qp->type == IBV_QPT_UD && wqe->length > qp->mtu)
		return IBV_WC_LOC_LEN_ERR; /* UD messages are one packet (IBA 9.8.1) */
	if (wqe->is_inline)
		return IBV_WC_SUCCESS;
	for (uint32_t i = 0; i < wqe->num_sge; i++) {
		enum roce_mem_err err;

		if (sge[i].length && !qp->env->mem(qp->ctx, sge[i].lkey, false, sge[i].addr,
						   sge[i].length, access, &err))
			return IBV_WC_LOC_PROT_ERR;
	}
	return IBV_WC_SUCCESS;
}

/* May the WQE at req.wqe start now? Sets req.state to why not. */
static bool may_start(struct roce_qp *qp, const struct roce_send_wqe *wqe)
{
	if (qp->state == IBV_QPS_SQD) {
		qp->req.state = ROCE_REQ_DRAINED;
		return false;
	}
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READ and atomic responses. */
	if ((wqe->send_flags & IBV_SEND_FENCE) && qp->req.rd_atomic) {
		qp->req.state = ROCE_REQ_WAIT_FENCE;
		return false;
	}
	if (roce_wqe_is_rd_atomic(wqe) && qp->req.rd_atomic >= qp->attr.max_rd_atomic) {
		qp->req.state = ROCE_REQ_WAIT_RD_ATOMIC;
		return false;
	}
	return true;
}

/*
 * The local operation at req.wqe (rxe_do_local_ops). It waits until every earlier WQE has
 * completed, then runs and completes at once: so it never sits among the outstanding WQEs the
 * completer retires by PSN, and its effect and completion come after those of every earlier
 * WQE, as with rxe (which runs it at once and whose completer reports it in order). Only a
 * window can be invalidated: rxe_invalidate_mr refuses every region but a fast-registered
 * one, and verbs applications register none. True when it completed successfully and the
 * requester goes on to the next WQE.
 */
static bool run_local(struct roce_qp *qp, struct roce_send_wqe *wqe)
{
	enum ibv_wc_status st = IBV_WC_SUCCESS;

	if (!may_start(qp, wqe))
		return false;
	if (qp->req.wqe != qp->sq->tail) {
		qp->req.state = ROCE_REQ_WAIT_LOCAL;
		return false;
	}
	if (wqe->opcode == IBV_WR_BIND_MW)
		st = qp->env->bind_mw(qp->ctx, wqe);
	else if (!roce_key_is_mw(wqe->inv_rkey) || !qp->env->invalidate_mw(qp->ctx, wqe->inv_rkey))
		st = IBV_WC_LOC_QP_OP_ERR; /* rxe's status for a failed local invalidate */
	if (st != IBV_WC_SUCCESS) {
		fail_wqe(qp, wqe, st);
		return false;
	}
	roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
	return true;
}

/*
 * Headers of a request packet at byte @off of @wqe, payload gathered after them, or left where
 * it is (@gap: roce_qp_write_pkt_gap) for a reliable QP when it lies in one entry.
 */
static size_t build(struct roce_qp *qp, struct roce_send_wqe *wqe, uint8_t *buf, uint32_t *sent,
		    uint32_t *psns, struct roce_pkt_gap *gap)
{
	uint32_t off = qp->req.offset;
	uint32_t left = wqe->length - off;
	bool first = off == 0;
	struct roce_pkt pkt = {0};
	const struct roce_opcode_info *info;
	bool last;

	*psns = 1;
	if (roce_wr_flags(wqe->opcode) & ROCE_WR_READ) {
		/* A retried READ asks for what is still missing (IBA 9.7.5.1.3). */
		pkt.reth.va = wqe->wr.rdma.remote_addr + off;
		pkt.reth.rkey = wqe->wr.rdma.rkey;
		pkt.reth.len = left;
		*psns = roce_npkts(left, qp->mtu);
		*sent = left;
		last = true;
	} else if (roce_wr_flags(wqe->opcode) & ROCE_WR_ATOMIC) {
		pkt.atomic.va = wqe->wr.atomic.remote_addr;
		pkt.atomic.rkey = wqe->wr.atomic.rkey;
		if (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			pkt.atomic.compare = wqe->wr.atomic.compare_add;
			pkt.atomic.swap_add = wqe->wr.atomic.swap;
		} else {
			pkt.atomic.swap_add = wqe->wr.atomic.compare_add;
		}
		*sent = wqe->length;
		last = true;
	} else { /* SEND or WRITE: MTU-sized packets; the RETH goes only in a WRITE's first */
		pkt.payload_len = left > qp->mtu ? qp->mtu : left;
		*sent = pkt.payload_len;
		last = pkt.payload_len == left;
		pkt.reth.va = wqe->wr.rdma.remote_addr;
		pkt.reth.rkey = wqe->wr.rdma.rkey;
		pkt.reth.len = wqe->length;
	}
	pkt.bth.opcode = opcode_of(qp, wqe, first, last);
	info = roce_opcode(pkt.bth.opcode);
	pkt.bth.pkey = ROCE_DEFAULT_PKEY;
	pkt.bth.psn = qp->req.psn;
	pkt.bth.se = last && (wqe->send_flags & IBV_SEND_SOLICITED) &&
		     (info->flags & (ROCE_OPF_SEND | ROCE_OPF_IMM));
	pkt.imm_be = wqe->imm_data;
	pkt.ieth_rkey = wqe->inv_rkey; /* goes out in the IETH of a SEND with invalidate's last */
	if (qp->type == IBV_QPT_UD) {
		/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's own". */
		pkt.deth.qkey =
			(wqe->ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : wqe->ud.remote_qkey;
		pkt.deth.src_qpn = qp->qpn;
		pkt.bth.dqpn = wqe->ud.remote_qpn;
	} else {
		pkt.bth.dqpn = qp->attr.dest_qp_num;
	}
	/* XRC: the XRCETH names the SRQ at the target that receives this message (IBA 9.2.7). */
	pkt.xrc_srqn = wqe->xrc_remote_srqn;
	/* Ask for an ACK at the end of each message and every half window (IBA 9.7.2). */
	if (roce_qp_reliable(qp) &&
	    (last ||
	     roce_psn_cmp(qp->req.psn, roce_psn_add(qp->req.ackreq_psn, qp->window / 2)) >= 0)) {
		pkt.bth.ack_req = true;
		qp->req.ackreq_psn = qp->req.psn;
	}
	if (pkt.payload_len) {
		uint8_t *dst = buf + info->hdr_len;
		const uint8_t *src = NULL;

		/* Not UD or UC: their completion lets the application reuse the bytes before the
		 * owner sends them (qp.h). */
		if (gap && !wqe->is_inline && roce_qp_reliable(qp) &&
		    pkt.payload_len >= ROCE_GAP_MIN)
			src = roce_sgl_ref(qp, roce_send_wqe_sge(wqe), wqe->num_sge, off,
					   pkt.payload_len);
		if (src)
			*gap = (struct roce_pkt_gap){.src = src,
						     .off = (uint16_t)info->hdr_len,
						     .len = (uint16_t)pkt.payload_len};
		else if (wqe->is_inline)
			memcpy(dst, wqe->data + off, pkt.payload_len);
		else if (roce_sgl_copy(qp, roce_send_wqe_sge(wqe), wqe->num_sge, off, dst,
				       pkt.payload_len, false) != ROCE_MEM_OK)
			return 0; /* the region went away since the WQE started */
	}
	return roce_pkt_finish(buf, &pkt, info->hdr_len);
}

size_t roce_req_write(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now,
		      struct roce_pkt_gap *gap)
{
	struct roce_send_wqe *wqe;
	uint32_t sent, psns;
	enum ibv_wc_status st;
	size_t len;

	if (qp->req.state == ROCE_REQ_ERROR || qp->req.state == ROCE_REQ_WAIT_RNR)
		return 0;
	/* IBA 11.6.3: SQD is drained once no started WQE is outstanding (later ones wait). */
	if (qp->state == IBV_QPS_SQD && !qp->req.drained_event &&
	    (qp->sq->tail == qp->sq->head || !roce_sq_wqe(qp, qp->sq->tail)->started)) {
		qp->req.drained_event = true;
		qp->env->event(qp->ctx, IBV_EVENT_SQ_DRAINED);
	}
	for (;;) {
		if (qp->req.wqe == qp->sq->head) {
			qp->req.state = ROCE_REQ_IDLE;
			return 0;
		}
		wqe = roce_sq_wqe(qp, qp->req.wqe);
		if (!(roce_wr_flags(wqe->opcode) & ROCE_WR_LOCAL))
			break;
		if (!run_local(qp, wqe))
			return 0;
	}
	if (!wqe->started) {
		if (!may_start(qp, wqe))
			return 0;
		st = check_local(qp, wqe);
		if (st != IBV_WC_SUCCESS)
			return fail_wqe(qp, wqe, st);
		wqe->started = true;
		wqe->first_psn = qp->req.psn;
		wqe->last_psn =
			roce_qp_reliable(qp) && roce_wqe_is_atomic(wqe)
				? qp->req.psn
				: roce_psn_add(qp->req.psn, roce_npkts(wqe->length, qp->mtu) - 1);
	}
	if (roce_qp_reliable(qp) &&
	    roce_psn_cmp(qp->req.psn, roce_psn_add(qp->comp.psn, qp->window)) >= 0) {
		qp->req.state = ROCE_REQ_WAIT_WINDOW;
		return 0;
	}
	qp->req.state = ROCE_REQ_SEND;
	len = build(qp, wqe, buf, &sent, &psns, gap);
	if (!len)
		return fail_wqe(qp, wqe, IBV_WC_LOC_PROT_ERR);
	dest->ah = qp->type == IBV_QPT_UD ? &wqe->ud.ah_attr : &qp->attr.ah_attr;
	qp->req.psn = roce_psn_add(qp->req.psn, psns);
	if (roce_psn_cmp(qp->req.psn, qp->req.psn_end) > 0)
		qp->req.psn_end = qp->req.psn;
	qp->req.offset += sent;
	if (roce_qp_reliable(qp))
		roce_comp_arm(qp, now);
	if (qp->req.offset < wqe->length)
		return len;
	/* The whole WQE is out. */
	if (roce_qp_reliable(qp)) {
		if (roce_wqe_is_rd_atomic(wqe))
			qp->req.rd_atomic++;
		qp->req.wqe++;
		qp->req.offset = 0;
	} else {
		roce_req_complete(qp, wqe, IBV_WC_SUCCESS);
	}
	return len;
}

void roce_req_rewind(struct roce_qp *qp, uint32_t psn)
{
	uint32_t rd_atomic = 0;

	for (uint32_t i = qp->sq->tail; i != qp->sq->head; i++) {
		struct roce_send_wqe *wqe = roce_sq_wqe(qp, i);

		if (!wqe->started)
			break;
		if (roce_psn_cmp(psn, wqe->last_psn) <= 0) {
			uint32_t k = (psn - wqe->first_psn) & ROCE_PSN_MASK;

			qp->req.wqe = i;
			qp->req.psn = roce_psn_cmp(psn, wqe->first_psn) < 0 ? wqe->first_psn : psn;
			qp->req.offset =
				roce_wqe_is_atomic(wqe) || roce_psn_cmp(psn, wqe->first_psn) < 0
					? 0
					: k * qp->mtu;
			qp->req.rd_atomic = rd_atomic;
			qp->req.ackreq_psn = qp->req.psn;
			qp->counters.retransmits++;
			return;
		}
		if (roce_wqe_is_rd_atomic(wqe))
			rd_atomic++;
	}
}
