// SPDX-License-Identifier: MIT
/* Send queue rules (sq.h). */
#include "verbs-shim/sq.h"

#include <errno.h>

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

/* The IBV_QP_EX_WITH_* bit of a send opcode, 0 for opcodes uroce does not implement. */
static uint64_t opcode_bit(enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
		return IBV_QP_EX_WITH_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	case IBV_WR_SEND:
		return IBV_QP_EX_WITH_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return IBV_QP_EX_WITH_SEND_WITH_IMM;
	case IBV_WR_RDMA_READ:
		return IBV_QP_EX_WITH_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	default:
		return 0; /* memory windows, invalidation, TSO, atomic write */
	}
}

int uroce_sq_check_wqe(struct uroce_qp *qp, const struct roce_send_wqe *wqe)
{
	uint64_t bit = opcode_bit(wqe->opcode);
	bool atomic = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		      wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;

	if (!bit || !(qp->send_ops_flags & bit))
		return EINVAL;
	if (wqe->length > 1u << 31) /* the port's max_msg_sz */
		return EINVAL;
	if (wqe->is_inline && (atomic || wqe->opcode == IBV_WR_RDMA_READ ||
			       wqe->length > qp->attr.cap.max_inline_data))
		return EINVAL;
	/* IBA atomics operate on one naturally aligned 64-bit word. */
	if (atomic && (wqe->length != 8 || wqe->wr.atomic.remote_addr % 8))
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
