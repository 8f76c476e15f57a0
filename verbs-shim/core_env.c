// SPDX-License-Identifier: MIT
/* The transport core's view of a verbs QP's objects (core_env.h). */
#include "verbs-shim/core_env.h"

#include <pthread.h>
#include <string.h>

#include "fabric/log.h"
#include "verbs-shim/async.h"
#include "verbs-shim/cq.h"
#include "verbs-shim/flush.h"
#include "verbs-shim/mr.h"
#include "verbs-shim/mw.h"
#include "verbs-shim/ops.h"

static uint8_t *env_mem(void *ctx, uint32_t key, bool remote, uint64_t addr, uint64_t len,
			int access, enum roce_mem_err *err)
{
	struct uroce_qp *qp = ctx;
	struct uroce_mr *mr;
	/* XRC: the PD of the SRQ the request names guards the target's memory (IBA A14). */
	struct uroce_pd *pd = qp->xrc_cur ? qp->xrc_cur->pd : qp->pd;

	/* A window's R_Key: through the window, then its region with the range it gives. */
	if (roce_key_is_mw(key)) {
		*err = remote ? uroce_mw_resolve(qp, key, addr, len, access, &key, &addr)
			      : ROCE_MEM_KEY;
		if (*err != ROCE_MEM_OK)
			return NULL;
		access = 0; /* the window granted it */
	}
	/* one key serves as lkey and rkey of a region */
	mr = uroce_mr_lookup(key);
	if (!mr || !pd || mr->pd != pd) {
		*err = ROCE_MEM_KEY;
		return NULL;
	}
	if (addr < mr->iova || len > mr->mr.length || addr - mr->iova > mr->mr.length - len) {
		*err = ROCE_MEM_BOUNDS;
		return NULL;
	}
	if ((mr->access & access) != access) {
		*err = ROCE_MEM_ACCESS;
		return NULL;
	}
	return (uint8_t *)mr->mr.addr + (addr - mr->iova);
}

static void copy_recv(struct roce_recv *out, const struct roce_recv_wqe *wqe)
{
	out->wr_id = wqe->wr_id;
	out->num_sge = wqe->num_sge;
	out->length = wqe->length;
	memcpy(out->sge, wqe->sge, wqe->num_sge * sizeof(wqe->sge[0]));
}

static bool env_recv_take(void *ctx, struct roce_recv *out)
{
	struct uroce_qp *qp = ctx;
	struct uroce_srq *srq = qp->xrc_cur ? qp->xrc_cur : qp->srq;
	bool limit = false;

	if (!srq) {
		if (!roce_wq_used(&qp->rq))
			return false;
		copy_recv(out, roce_wq_slot(&qp->rq, qp->rq.tail++));
		return true;
	}
	pthread_mutex_lock(&srq->lock);
	if (!roce_wq_used(&srq->rq)) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	copy_recv(out, roce_wq_slot(&srq->rq, srq->rq.tail++));
	/* ibv_modify_srq(3): an armed SRQ fires once when fewer than srq_limit WQEs remain. */
	if (srq->limit && roce_wq_used(&srq->rq) < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit)
		uroce_async_event(qp->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->srq);
	return true;
}

static void env_complete(void *ctx, bool recv, const struct ibv_wc *wc, bool solicited)
{
	struct uroce_qp *qp = ctx;
	struct uroce_cq *cq = recv ? qp->recv_cq : qp->send_cq;

	/* An XRC target completes receives on the CQ of the SRQ; none if that SRQ is gone. */
	if (recv && qp->xrc)
		cq = qp->xrc_cur ? qp->xrc_cur->cq : NULL;
	if (cq)
		uroce_cq_push(cq, wc, solicited);
}

static enum ibv_wc_status env_bind_mw(void *ctx, const struct roce_send_wqe *wqe)
{
	return uroce_mw_bind(ctx, wqe);
}

static bool env_invalidate_mw(void *ctx, uint32_t rkey)
{
	return uroce_mw_invalidate(ctx, rkey);
}

static bool env_xrc_srq(void *ctx, uint32_t srqn)
{
	struct uroce_qp *qp = ctx;

	qp->xrc_cur = uroce_xrc_srq_find(srqn, qp->xrc);
	return qp->xrc_cur;
}

static void env_event(void *ctx, enum ibv_event_type type)
{
	struct uroce_qp *qp = ctx;

	uroce_async_event(qp->ctx, type, &qp->qpx.qp_base);
}

/* With UROCE_LOG=info, where QP @c stood when it went to the error state: for post-mortems. */
static void log_qp_error(const struct roce_qp *c)
{
	const struct roce_qp_counters *n = &c->counters;

	if (!uroce_log_enabled(UROCE_LOG_INFO))
		return;
	uroce_log(UROCE_LOG_INFO,
		  "QP %#x: error state; sending: PSN %#x next, %#x oldest unacknowledged, %u "
		  "retries left; receiving: PSN %#x expected; %llu retransmissions, %llu timeouts, "
		  "%llu duplicates, %llu out of sequence, %llu unmatched responses received, %llu "
		  "sequence NAKs sent",
		  c->qpn, c->req.psn, c->comp.psn, c->comp.retry_left, c->resp.psn,
		  (unsigned long long)n->retransmits, (unsigned long long)n->timeouts,
		  (unsigned long long)n->rx_duplicate, (unsigned long long)n->rx_out_of_seq,
		  (unsigned long long)n->rx_bad_resp, (unsigned long long)n->seq_naks_sent);
}

static void env_to_error(void *ctx)
{
	struct uroce_qp *qp = ctx;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	log_qp_error(&qp->core);
	roce_qp_modify(&qp->core, &attr, IBV_QP_STATE);
	uroce_qp_to_error(qp);
}

static void env_sq_error(void *ctx)
{
	struct uroce_qp *qp = ctx;

	uroce_qp_set_state(qp, IBV_QPS_SQE);
	uroce_qp_flush_sq(qp);
}

const struct roce_qp_env uroce_core_env = {
	.mem = env_mem,
	.recv_take = env_recv_take,
	.complete = env_complete,
	.bind_mw = env_bind_mw,
	.invalidate_mw = env_invalidate_mw,
	.event = env_event,
	.xrc_srq = env_xrc_srq,
	.to_error = env_to_error,
	.sq_error = env_sq_error,
};
