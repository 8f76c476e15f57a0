// SPDX-License-Identifier: MIT
/* Shared receive queues: create, modify (resize, limit), query, destroy, post receives. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/async.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/table.h"
#include "verbs-shim/xrcd.h"

/* SRQ numbers (ibv_get_srq_num, the XRCETH of XRC) are indexes of this table. */
static struct uroce_table srq_table = UROCE_TABLE_INIT(UROCE_MAX_SRQ);

static struct ibv_srq *srq_create(struct ibv_pd *pd, void *srq_context, struct ibv_srq_attr *attr)
{
	struct uroce_srq *srq;
	int err;

	if (attr->max_wr < 1 || attr->max_wr > UROCE_MAX_SRQ_WR || attr->max_sge < 1 ||
	    attr->max_sge > UROCE_MAX_SRQ_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq || roce_wq_init(&srq->rq, attr->max_wr, roce_recv_wqe_size(attr->max_sge))) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	err = uroce_table_insert(&srq_table, srq, &srq->srqn);
	if (err) {
		roce_wq_free(&srq->rq);
		free(srq);
		errno = err;
		return NULL;
	}
	srq->max_sge = attr->max_sge;
	/* ibv_create_srq(3): srq_limit is ignored at creation; the SRQ starts unarmed. */
	srq->limit = 0;
	pthread_mutex_init(&srq->lock, NULL);
	srq->pd = to_upd(pd);
	atomic_fetch_add(&srq->pd->usecnt, 1);
	srq->srq.context = pd->context;
	srq->srq.srq_context = srq_context;
	srq->srq.pd = pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	srq->res_tag = uroce_res_add(pd->context, UROCE_RES_SRQ);
	return &srq->srq;
}

UROCE_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	return srq_create(pd, attr->srq_context, &attr->attr);
}

struct ibv_srq *uroce_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;

	if ((attr->comp_mask & ~known) || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	enum ibv_srq_type type =
		attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE ? attr->srq_type : IBV_SRQT_BASIC;
	struct ibv_srq *ibsrq;
	struct uroce_srq *srq;

	/* Tag-matching SRQs are not implemented. */
	if (type == IBV_SRQT_TM || (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* An XRC SRQ names its domain and the CQ its receives complete on (ibv_create_srq_ex(3)).
	 */
	if (type == IBV_SRQT_XRC &&
	    ((attr->comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) !=
		     (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ) ||
	     !attr->xrcd || !attr->cq || attr->xrcd->context != context ||
	     attr->cq->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) {
		errno = EINVAL;
		return NULL;
	}
	ibsrq = srq_create(attr->pd, attr->srq_context, &attr->attr);
	if (!ibsrq || type != IBV_SRQT_XRC)
		return ibsrq;
	srq = to_usrq(ibsrq);
	srq->xrc = to_uxrcd(attr->xrcd)->dom;
	srq->cq = to_ucq(attr->cq);
	atomic_fetch_add(&srq->cq->usecnt, 1);
	uroce_xrc_domain_get(srq->xrc);
	return ibsrq;
}

int uroce_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_usrq(ibsrq)->srqn;
	return 0;
}

static bool in_domain(const void *obj, const void *dom)
{
	return ((const struct uroce_srq *)obj)->xrc == dom;
}

struct uroce_srq *uroce_xrc_srq_find(uint32_t srqn, const struct uroce_xrc_domain *dom)
{
	return uroce_table_get_if(&srq_table, srqn, in_domain, dom);
}

/* Resize the ring, keeping the posted WQEs in order. Called with srq->lock held. */
static int srq_resize(struct uroce_srq *srq, uint32_t max_wr)
{
	struct roce_wq rq;
	uint32_t used = roce_wq_used(&srq->rq);

	if (max_wr < used || max_wr < 1 || max_wr > UROCE_MAX_SRQ_WR)
		return EINVAL;
	if (roce_wq_init(&rq, max_wr, srq->rq.stride))
		return ENOMEM;
	for (uint32_t i = 0; i < used; i++)
		memcpy(roce_wq_slot(&rq, i), roce_wq_slot(&srq->rq, srq->rq.tail + i),
		       srq->rq.stride);
	rq.head = used;
	roce_wq_free(&srq->rq);
	srq->rq = rq;
	return 0;
}

UROCE_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct uroce_srq *srq = to_usrq(ibsrq);
	int err = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	if (mask & IBV_SRQ_MAX_WR)
		err = srq_resize(srq, attr->max_wr);
	/* Arming: the limit event fires once fewer WQEs than srq_limit remain (ibv_modify_srq(3)).
	 */
	if (!err && (mask & IBV_SRQ_LIMIT)) {
		if (attr->srq_limit > srq->rq.slots)
			err = EINVAL;
		else
			srq->limit = attr->srq_limit;
	}
	pthread_mutex_unlock(&srq->lock);
	return err;
}

UROCE_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct uroce_srq *srq = to_usrq(ibsrq);

	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->rq.slots;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

UROCE_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct uroce_srq *srq = to_usrq(ibsrq);

	if (atomic_load(&srq->usecnt))
		return EBUSY; /* QPs still receive through it */
	uroce_table_remove(&srq_table, srq->srqn);
	if (srq->xrc) {
		uroce_xrc_domain_forget_srq(srq->xrc, srq);
		uroce_xrc_domain_put(srq->xrc);
		atomic_fetch_sub(&srq->cq->usecnt, 1);
	}
	uroce_async_drain(to_uctx(ibsrq->context), ibsrq, &ibsrq->mutex, &ibsrq->cond,
			  &ibsrq->events_completed, &srq->async_events_reported);
	atomic_fetch_sub(&srq->pd->usecnt, 1);
	uroce_res_del(ibsrq->context, UROCE_RES_SRQ, srq->res_tag);
	roce_wq_free(&srq->rq);
	pthread_mutex_destroy(&srq->lock);
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(srq);
	return 0;
}

int uroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct uroce_srq *srq = to_usrq(ibsrq);
	unsigned posted = 0;
	int err;

	pthread_mutex_lock(&srq->lock);
	err = roce_wq_post_recv(&srq->rq, srq->max_sge, wr, bad_wr, &posted);
	pthread_mutex_unlock(&srq->lock);
	return err;
}
