// SPDX-License-Identifier: MIT
/* ibv_modify_qp: the state machine (qp_state.h), attribute checks, transition effects. */
#include <errno.h>
#include <string.h>

#include "transport/qp_state.h"
#include "verbs-shim/ah.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/cq.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/port.h"
#include "verbs-shim/flush.h"

#define PSN_MASK 0xffffff /* PSNs are 24 bits (the BTH PSN field) */

/* The access flags a QP can grant to remote requests (ibv_modify_qp(3)). */
#define QP_ACCESS                                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* 0 or EINVAL: each attribute in MASK within the range the IBA gives its field. */
static int check_values(struct uroce_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	struct uroce_device *dev = qp->ctx->dev;

	if ((mask & IBV_QP_PORT) && attr->port_num != UROCE_PORT_NUM)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index >= UROCE_PKEY_TBL_LEN)
		return EINVAL;
	if ((mask & IBV_QP_AV) && uroce_ah_attr_check(dev, &attr->ah_attr))
		return EINVAL;
	if ((mask & IBV_QP_ALT_PATH) &&
	    (attr->alt_port_num != UROCE_PORT_NUM || attr->alt_pkey_index >= UROCE_PKEY_TBL_LEN ||
	     attr->alt_timeout > 31 || uroce_ah_attr_check(dev, &attr->alt_ah_attr)))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
		return EINVAL;
	/* Timeouts are 5-bit fields, retry counters 3-bit ones (IBA QP attributes). */
	if (((mask & IBV_QP_TIMEOUT) && attr->timeout > 31) ||
	    ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31) ||
	    ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) ||
	    ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7))
		return EINVAL;
	if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > UROCE_MAX_QP_RD_ATOM) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > UROCE_MAX_QP_RD_ATOM))
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~QP_ACCESS))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && attr->path_mig_state != IBV_MIG_MIGRATED &&
	    attr->path_mig_state != IBV_MIG_REARM && attr->path_mig_state != IBV_MIG_ARMED)
		return EINVAL;
	return 0;
}

static void apply(struct uroce_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	struct ibv_qp_attr *a = &qp->attr;

	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IBV_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IBV_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IBV_QP_AV)
		a->ah_attr = attr->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & PSN_MASK;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		a->alt_ah_attr = attr->alt_ah_attr;
		a->alt_pkey_index = attr->alt_pkey_index;
		a->alt_port_num = attr->alt_port_num;
		a->alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & PSN_MASK;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		a->path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
}

/*
 * IBA 10.3.1: Reset empties the work queues and forgets the attributes. The QP's completions
 * still waiting in its CQs go too, as mlx5's provider removes them (mlx5_modify_qp cleans both
 * CQs with __mlx5_cq_clean on the way to RESET): a program that resets a failed QP and polls
 * its CQ again sees only what the QP does from then on, not the flushes of before (rdma-core's
 * test_mr_rereg_pd and test_mr_rereg_addr poll so). The kernel's rxe leaves them
 * (docs/INTEROP.md). Under the QP's lock, no completion of it is being made meanwhile.
 */
static void to_reset(struct uroce_qp *qp)
{
	struct ibv_qp_cap cap = qp->attr.cap;
	uint32_t qpn = qp->qpx.qp_base.qp_num;

	qp->sq.tail = qp->sq.head;
	qp->rq.tail = qp->rq.head;
	if (qp->send_cq)
		uroce_cq_drop_qp(qp->send_cq, qpn);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		uroce_cq_drop_qp(qp->recv_cq, qpn);
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->attr.cap = cap;
}

/*
 * Returns 0, or EINVAL for a transition the state machine does not have, missing required or
 * extra attributes, out-of-range values, or IBV_QP_CUR_STATE that is not the QP's state.
 */
UROCE_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	enum ibv_qp_state cur, next;
	int err = 0;

	attr_mask = roce_qp_mask_used(ibqp->qp_type, attr_mask);
	pthread_mutex_lock(&qp->lock);
	cur = qp->attr.qp_state;
	next = attr_mask & IBV_QP_STATE ? attr->qp_state : cur;
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		err = EINVAL;
	else if (!roce_qp_transition_ok(cur, next, ibqp->qp_type, attr_mask))
		err = EINVAL;
	else
		err = check_values(qp, attr, attr_mask);
	if (err) {
		pthread_mutex_unlock(&qp->lock);
		return err;
	}
	if (next == IBV_QPS_RESET)
		to_reset(qp);
	apply(qp, attr, attr_mask);
	uroce_qp_modified(qp, attr, attr_mask);
	if (next == IBV_QPS_ERR)
		uroce_qp_to_error(qp);
	else
		uroce_qp_set_state(qp, next);
	pthread_mutex_unlock(&qp->lock);
	uroce_qp_kick(qp);
	return 0;
}
