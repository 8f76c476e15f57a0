// SPDX-License-Identifier: MIT
/* ibv_post_send and ibv_post_recv (context ops): validate, queue, kick the engine (sends). */
#include <errno.h>
#include <string.h>

#include "transport/wr_opcode.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/flush.h"
#include "verbs-shim/sq.h"

/* Copy WR into the WQE at the head of the send queue: 0 or EINVAL. */
static int build_send_wqe(struct uroce_qp *qp, const struct ibv_send_wr *wr)
{
	struct roce_send_wqe *wqe = roce_wq_slot(&qp->sq, qp->sq.head);
	uint64_t length = 0;

	if (wr->num_sge < 0)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		length += wr->sg_list[i].length;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	wqe->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	wqe->imm_data = wr->imm_data;
	wqe->length = length > UINT32_MAX ? UINT32_MAX : length;
	wqe->is_inline = wr->send_flags & IBV_SEND_INLINE;
	if (qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND)
		wqe->xrc_remote_srqn = wr->qp_type.xrc.remote_srqn;
	wqe->inv_rkey = wr->invalidate_rkey; /* LOCAL_INV, SEND_WITH_INV (imm_data's union) */
	if (wr->opcode == IBV_WR_BIND_MW) {
		if (!wr->bind_mw.mw)
			return EINVAL;
		roce_wqe_set_bind(wqe, wr->bind_mw.mw->rkey, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info);
	} else if (roce_wr_flags(wqe->opcode) & ROCE_WR_ATOMIC) {
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
	} else if (qp->qpx.qp_base.qp_type != IBV_QPT_UD) {
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
	} else if (wr->wr.ud.ah) {
		/* An AH of another context would name another device's GID table. */
		if (wr->wr.ud.ah->context != qp->qpx.qp_base.context)
			return EINVAL;
		wqe->ud.has_ah = true;
		wqe->ud.ah_attr = to_uah(wr->wr.ud.ah)->attr;
		wqe->ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->ud.remote_qkey = wr->wr.ud.remote_qkey;
	}
	if (wqe->is_inline) {
		/* Inline data is copied now: the buffers are the caller's again on return. */
		if (length > qp->attr.cap.max_inline_data)
			return EINVAL;
		/* An empty SGE may name no buffer at all (UCX posts address 0, length 0). */
		for (int i = 0, off = 0; i < wr->num_sge; off += wr->sg_list[i].length, i++)
			if (wr->sg_list[i].length)
				memcpy(wqe->data + off,
				       (const void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
	} else {
		if ((uint32_t)wr->num_sge > qp->attr.cap.max_send_sge)
			return EINVAL;
		wqe->num_sge = wr->num_sge;
		if (wr->num_sge) /* no SGE: sg_list may be NULL */
			memcpy(roce_send_wqe_sge(wqe), wr->sg_list,
			       wr->num_sge * sizeof(*wr->sg_list));
	}
	return uroce_sq_check_wqe(qp, wqe);
}

int uroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	uint32_t posted = 0;
	int err;

	pthread_mutex_lock(&qp->lock);
	err = ibqp->qp_type == IBV_QPT_XRC_RECV ? EINVAL : uroce_sq_state_check(qp);
	for (; wr && !err; wr = wr->next) {
		if (roce_wq_used(&qp->sq) == qp->sq.slots)
			err = ENOMEM;
		else
			err = build_send_wqe(qp, wr);
		if (err)
			break;
		qp->sq.head++;
		posted++;
	}
	if (posted) {
		uroce_sq_posted(qp);
		uroce_qp_posted(qp, posted);
	}
	pthread_mutex_unlock(&qp->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

int uroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	unsigned posted = 0;
	int err;

	pthread_mutex_lock(&qp->lock);
	/*
	 * A QP on an SRQ has no receive queue, nor has either half of XRC; none is usable before
	 * INIT (as rxe).
	 */
	if (qp->srq || ibqp->qp_type == IBV_QPT_XRC_SEND || ibqp->qp_type == IBV_QPT_XRC_RECV ||
	    qp->attr.qp_state == IBV_QPS_RESET) {
		err = EINVAL;
		*bad_wr = wr;
	} else {
		err = roce_wq_post_recv(&qp->rq, qp->attr.cap.max_recv_sge, wr, bad_wr, &posted);
	}
	/* In the Error state receive WQEs are completed with a flush error at once. */
	if (posted && qp->attr.qp_state == IBV_QPS_ERR)
		uroce_qp_flush_rq(qp);
	pthread_mutex_unlock(&qp->lock);
	/* Nothing to send: the responder takes receive WQEs as requests arrive. */
	return err;
}
