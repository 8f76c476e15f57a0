// SPDX-License-Identifier: MIT
/* Flushing a QP's work queues and the move to the Error state (flush.h). */
#include "verbs-shim/flush.h"

#include "verbs-shim/async.h"
#include "verbs-shim/cq.h"

void uroce_qp_flush_sq(struct uroce_qp *qp)
{
	struct ibv_wc wc = {.status = IBV_WC_WR_FLUSH_ERR, .qp_num = qp->qpx.qp_base.qp_num};

	for (; qp->sq.tail != qp->sq.head; qp->sq.tail++) {
		const struct roce_send_wqe *wqe = roce_wq_slot(&qp->sq, qp->sq.tail);

		wc.wr_id = wqe->wr_id;
		wc.opcode = roce_wc_opcode(wqe->opcode);
		uroce_cq_push(qp->send_cq, &wc, false);
	}
}

void uroce_qp_flush_rq(struct uroce_qp *qp)
{
	struct ibv_wc wc = {.status = IBV_WC_WR_FLUSH_ERR,
			    .opcode = IBV_WC_RECV,
			    .qp_num = qp->qpx.qp_base.qp_num};

	if (qp->srq)
		return; /* WQEs of a shared receive queue belong to no QP: nothing to flush */
	for (; qp->rq.tail != qp->rq.head; qp->rq.tail++) {
		const struct roce_recv_wqe *wqe = roce_wq_slot(&qp->rq, qp->rq.tail);

		wc.wr_id = wqe->wr_id;
		uroce_cq_push(qp->recv_cq, &wc, false);
	}
}

void uroce_qp_flush(struct uroce_qp *qp)
{
	uroce_qp_flush_sq(qp);
	uroce_qp_flush_rq(qp);
}

void uroce_qp_to_error(struct uroce_qp *qp)
{
	bool was_error = qp->attr.qp_state == IBV_QPS_ERR;

	uroce_qp_set_state(qp, IBV_QPS_ERR);
	uroce_qp_flush(qp);
	if (qp->srq && !was_error)
		uroce_async_event(qp->ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->qpx.qp_base);
}
