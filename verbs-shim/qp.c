// SPDX-License-Identifier: MIT
/* Queue pairs: create, destroy, query (ops.h; flushing is flush.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/wr_opcode.h"
#include "verbs-shim/async.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/core_env.h"
#include "verbs-shim/cq.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/qp_ex.h"
#include "verbs-shim/table.h"
#include "verbs-shim/xrcd.h"

/* QP handles are indexes of this table; numbers come from the engine (qpn_map.h). */
static struct uroce_table qp_table = UROCE_TABLE_INIT(UROCE_MAX_QP);

/* The send operations (IBV_QP_EX_WITH_*) service @type allows (transport/wr_opcode.h). */
static uint64_t type_send_ops(enum ibv_qp_type type)
{
	return roce_wr_ex_flags(roce_wr_service_of(type));
}

/* 0, EINVAL or EOPNOTSUPP for the creation attributes. */
static int check_init_attr(struct ibv_context *context, const struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			       IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	const uint32_t supported = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	const struct ibv_qp_cap *cap = &attr->cap;
	bool has_recv = attr->qp_type != IBV_QPT_XRC_SEND && attr->qp_type != IBV_QPT_XRC_RECV;

	if (attr->comp_mask & ~known)
		return EINVAL;
	if (attr->comp_mask & ~supported)
		return EOPNOTSUPP;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	case IBV_QPT_XRC_RECV:
		/* A target QP belongs to an XRC domain; no PD, CQs or queues (ibv_create_qp_ex(3)).
		 */
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != context)
			return EINVAL;
		return 0;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_DRIVER:
		return EOPNOTSUPP;
	default:
		return EINVAL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context)
		return EINVAL;
	if (!attr->send_cq || attr->send_cq->context != context)
		return EINVAL;
	if (has_recv && (!attr->recv_cq || attr->recv_cq->context != context ||
			 (attr->srq && attr->srq->context != context)))
		return EINVAL;
	if (cap->max_send_wr > UROCE_MAX_QP_WR || cap->max_send_sge > UROCE_MAX_SGE ||
	    cap->max_inline_data > UROCE_MAX_INLINE_DATA ||
	    (has_recv && !attr->srq &&
	     (cap->max_recv_wr > UROCE_MAX_QP_WR || cap->max_recv_sge > UROCE_MAX_SGE)))
		return EINVAL;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~type_send_ops(attr->qp_type)))
		return EOPNOTSUPP;
	return 0;
}

static void use(atomic_uint *count, bool add)
{
	if (add)
		atomic_fetch_add(count, 1);
	else
		atomic_fetch_sub(count, 1);
}

/* Count the QP as a user (@add) or no longer of its PD, CQs and SRQ. */
static void uses(struct uroce_qp *qp, bool add)
{
	if (qp->pd)
		use(&qp->pd->usecnt, add);
	if (qp->send_cq)
		use(&qp->send_cq->usecnt, add);
	if (qp->recv_cq)
		use(&qp->recv_cq->usecnt, add);
	if (qp->srq)
		use(&qp->srq->usecnt, add);
}

static void qp_free(struct uroce_qp *qp)
{
	roce_wq_free(&qp->sq);
	roce_wq_free(&qp->rq);
	free(qp);
}

static struct ibv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_cap *cap = &attr->cap;
	struct uroce_res_qp res;
	struct uroce_qp *qp;
	struct ibv_qp *base;
	uint32_t index, qpn;
	int err;

	err = check_init_attr(context, attr);
	if (err) {
		errno = err;
		return NULL;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		memset(cap, 0, sizeof(*cap));
		attr->pd = NULL;
		attr->send_cq = NULL;
		attr->recv_cq = NULL;
		attr->srq = NULL;
	} else if (attr->qp_type == IBV_QPT_XRC_SEND) {
		attr->recv_cq = NULL; /* an initiator only sends */
		attr->srq = NULL;
	}
	if (attr->srq || attr->qp_type == IBV_QPT_XRC_SEND) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	/* The inline capacity actually honoured, which rc_pingpong reads back (ABI.md §3.1). */
	if (attr->qp_type != IBV_QPT_XRC_RECV)
		cap->max_inline_data = UROCE_MAX_INLINE_DATA;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	if (roce_wq_init(&qp->sq, cap->max_send_wr,
			 roce_send_wqe_size(cap->max_send_sge, cap->max_inline_data)) ||
	    roce_wq_init(&qp->rq, cap->max_recv_wr, roce_recv_wqe_size(cap->max_recv_sge))) {
		qp_free(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->sq_sig_all = attr->sq_sig_all;
	qp->ctx = to_uctx(context);
	err = uroce_qp_engine_init(qp, attr->qp_type, &uroce_core_env, &qpn);
	if (err) {
		qp_free(qp);
		errno = err;
		return NULL;
	}
	err = uroce_table_insert(&qp_table, qp, &index);
	if (err) {
		uroce_qp_destroying(qp);
		qp_free(qp);
		errno = err;
		return NULL;
	}
	qp->pd = attr->pd ? to_upd(attr->pd) : NULL;
	qp->send_cq = attr->send_cq ? to_ucq(attr->send_cq) : NULL;
	qp->recv_cq = attr->recv_cq ? to_ucq(attr->recv_cq) : NULL;
	qp->srq = attr->srq ? to_usrq(attr->srq) : NULL;
	pthread_mutex_init(&qp->lock, NULL);
	qp->attr.cap = *cap;
	qp->send_ops_flags = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
				     ? attr->send_ops_flags
				     : type_send_ops(attr->qp_type);
	uses(qp, true);
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		qp->xrc = to_uxrcd(attr->xrcd)->dom;
		uroce_xrc_domain_add_tgt(qp->xrc, qp);
	}

	base = &qp->qpx.qp_base;
	base->context = context;
	base->qp_context = attr->qp_context;
	base->pd = attr->pd;
	base->send_cq = attr->send_cq;
	base->recv_cq = attr->recv_cq;
	base->srq = attr->srq;
	base->handle = index;
	base->qp_num = qpn;
	uroce_qp_set_state(qp, IBV_QPS_RESET);
	base->qp_type = attr->qp_type;
	pthread_mutex_init(&base->mutex, NULL);
	pthread_cond_init(&base->cond, NULL);
	uroce_qp_ex_init(qp);
	uroce_qp_res_info(qp, &res);
	uroce_resreg_qp_add(&qp->reg, to_uctx(context)->dev->ibdev.name, &res);
	return base;
}

UROCE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_context = init_attr->qp_context,
		.send_cq = init_attr->send_cq,
		.recv_cq = init_attr->recv_cq,
		.srq = init_attr->srq,
		.cap = init_attr->cap,
		.qp_type = init_attr->qp_type,
		.sq_sig_all = init_attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = qp_create(pd->context, &attr);

	if (qp)
		init_attr->cap = attr.cap; /* the capabilities granted, as providers report them */
	return qp;
}

struct ibv_qp *uroce_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	return qp_create(context, attr);
}

/*
 * Every QP supports the extended post interface, so the ibv_qp_ex is always there (the
 * wr_* ops check the QP's send operations).
 */
UROCE_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &to_uqp(qp)->qpx;
}

UROCE_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct uroce_qp *qp = to_uqp(ibqp);

	uroce_table_remove(&qp_table, ibqp->handle);
	uroce_qp_destroying(qp); /* no completion of the QP comes after this */
	if (qp->send_cq)
		uroce_cq_drop_qp(qp->send_cq, ibqp->qp_num);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		uroce_cq_drop_qp(qp->recv_cq, ibqp->qp_num);
	uroce_async_drain(qp->ctx, ibqp, &ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
			  &qp->async_events_reported);
	if (qp->xrc)
		uroce_xrc_domain_del_tgt(qp->xrc, qp);
	uses(qp, false);
	uroce_resreg_qp_del(&qp->reg, qp->ctx->dev->ibdev.name);
	pthread_mutex_destroy(&qp->lock);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	qp_free(qp);
	return 0;
}

UROCE_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			      struct ibv_qp_init_attr *init_attr)
{
	struct uroce_qp *qp = to_uqp(ibqp);

	(void)attr_mask; /* like the kernel, every attribute is returned */
	pthread_mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->cur_qp_state = qp->attr.qp_state;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->attr.cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

/*
 * uroce's engine places a message's payload in PSN order but gives no ordering guarantee to a
 * concurrent reader of the buffer, so the answer is "not in order" (0), a valid result of
 * ibv_query_qp_data_in_order(3).
 */
UROCE_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					    uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}
