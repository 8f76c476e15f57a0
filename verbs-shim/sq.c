// SPDX-License-Identifier: MIT
/* Send queue rules (sq.h). */
#include "verbs-shim/sq.h"

#include <errno.h>

#include "transport/wr_opcode.h"
#include "verbs-shim/flush.h"

int uroce_sq_state_check(struct uroce_qp *qp)
{
	switch (qp->attr.qp_state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return EINVAL;
	default:
		return 0;
	}
}

int uroce_sq_check_wqe(struct uroce_qp *qp, const struct roce_send_wqe *wqe)
{
	/* The table says what the opcode is; send_ops_flags holds what the QP's service allows
	 * (and, for ibv_create_qp_ex, what the application asked for). */
	const struct roce_wr_info *w = roce_wr_info(wqe->opcode);

	if (!w || !(qp->send_ops_flags & w->ex_flag))
		return EINVAL;
	if (wqe->length > 1u << 31) /* the port's max_msg_sz */
		return EINVAL;
	if (wqe->is_inline && ((w->flags & (ROCE_WR_ATOMIC | ROCE_WR_READ)) ||
			       wqe->length > qp->attr.cap.max_inline_data))
		return EINVAL;
	/* A local operation (bind, invalidate) moves no data (rxe's validate_send_wr). */
	if ((w->flags & ROCE_WR_LOCAL) && (wqe->length || wqe->num_sge))
		return EINVAL;
	/* IBA atomics operate on one naturally aligned 64-bit word. */
	if ((w->flags & ROCE_WR_ATOMIC) && (wqe->length != 8 || wqe->wr.atomic.remote_addr % 8))
		return EINVAL;
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD && !wqe->ud.has_ah)
		return EINVAL;
	return 0;
}

void uroce_sq_posted(struct uroce_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_SQE || qp->attr.qp_state == IBV_QPS_ERR)
		uroce_qp_flush_sq(qp);
}
