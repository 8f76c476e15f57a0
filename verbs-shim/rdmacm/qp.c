// SPDX-License-Identifier: MIT
/*
 * The verbs objects of an id (rdma_create_qp(3), rdma_create_srq(3), rdma_create_ep(3)), as
 * librdmacm makes them (ABI.md): a NULL PD means the device's default PD; NULL CQs mean a
 * completion channel and a CQ each for sends and receives, with the id as CQ context; the new
 * QP is taken to INIT at once (UD all the way to RTS, with rdma_cm's Q_Key), the rest of the
 * way being the connection's.
 */
#include <errno.h>
#include <fcntl.h>
#include <rdma/rdma_verbs.h>
#include <stdlib.h>

#include "cm/wire.h"
#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

/* The default PD and XRC domain of each device, made on first use and kept (as librdmacm's). */
static struct {
	pthread_mutex_t lock;
	struct ibv_context *ctx[64];
	struct ibv_pd *pd[64];
	struct ibv_xrcd *xrcd[64];
	unsigned int n;
} devs = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* @ctx's slot in devs, added if new; -1 when full. Locked. */
static int dev_slot(struct ibv_context *ctx)
{
	for (unsigned int i = 0; i < devs.n; i++)
		if (devs.ctx[i] == ctx)
			return (int)i;
	if (devs.n == sizeof(devs.ctx) / sizeof(devs.ctx[0]))
		return -1;
	devs.ctx[devs.n] = ctx;
	return (int)devs.n++;
}

struct ibv_pd *cma_default_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = NULL;
	int i;

	pthread_mutex_lock(&devs.lock);
	i = dev_slot(ctx);
	if (i >= 0) {
		if (!devs.pd[i])
			devs.pd[i] = ibv_alloc_pd(ctx);
		pd = devs.pd[i];
	}
	pthread_mutex_unlock(&devs.lock);
	if (!pd && !errno)
		errno = ENOMEM;
	return pd;
}

/* The device's XRC domain for XRC target QPs and SRQs (librdmacm's ucma_get_xrcd). */
static struct ibv_xrcd *default_xrcd(struct ibv_context *ctx)
{
	struct ibv_xrcd_init_attr attr = {.comp_mask =
						  IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					  .fd = -1,
					  .oflags = O_CREAT};
	struct ibv_xrcd *xrcd = NULL;
	int i;

	pthread_mutex_lock(&devs.lock);
	i = dev_slot(ctx);
	if (i >= 0) {
		if (!devs.xrcd[i])
			devs.xrcd[i] = ibv_open_xrcd(ctx, &attr);
		xrcd = devs.xrcd[i];
	}
	pthread_mutex_unlock(&devs.lock);
	if (!xrcd && !errno)
		errno = ENOMEM;
	return xrcd;
}

/*
 * The attributes to move @id's QP to @qp_attr->qp_state: INIT (P_Key index 0, the id's port,
 * no remote access yet -- or rdma_cm's Q_Key for UD); RTR and RTS from the connection (the
 * peer's QPN and PSN, path, retry counts), or for UD the plain states. 0, or -1 with errno
 * EINVAL (NULL arguments, an id on no device, RTR/RTS without a connection).
 */
UROCE_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				   int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask || !id->verbs)
		return cma_fail(EINVAL);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		qp_attr->pkey_index = 0;
		qp_attr->port_num = id->port_num;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->qp_type == IBV_QPT_UD) {
			qp_attr->qkey = CM_UDP_QKEY;
			*qp_attr_mask |= IBV_QP_QKEY;
		} else {
			qp_attr->qp_access_flags = 0;
			*qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (id->qp_type != IBV_QPT_UD) {
			int err = cma_conn_qp_attr(to_cma_id(id), qp_attr, qp_attr_mask);

			return err ? cma_fail(err) : 0;
		}
		*qp_attr_mask = IBV_QP_STATE;
		return 0;
	case IBV_QPS_RTS:
		if (id->qp_type != IBV_QPT_UD) {
			int err = cma_conn_qp_attr(to_cma_id(id), qp_attr, qp_attr_mask);

			return err ? cma_fail(err) : 0;
		}
		qp_attr->sq_psn = 0;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	default:
		return cma_fail(EINVAL);
	}
}

/* Move @qp to INIT, and a UD one on to RTS. 0 or an errno. */
static int ready(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	static const enum ibv_qp_state ud_states[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	unsigned int n = id->qp_type == IBV_QPT_UD ? 3 : 1;

	for (unsigned int i = 0; i < n; i++) {
		struct ibv_qp_attr attr = {.qp_state = ud_states[i]};
		int mask, err;

		if (rdma_init_qp_attr(id, &attr, &mask))
			return errno;
		err = ibv_modify_qp(qp, &attr, mask);
		if (err)
			return err;
	}
	return 0;
}

/* The CQs librdmacm makes when the caller gives none. */
static void destroy_cqs(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cma_id(id);

	/* An XRC SRQ completes on the receive CQ: it goes with the SRQ (librdmacm). */
	if (!c->own_cqs || (id->qp_type == IBV_QPT_XRC_RECV && id->srq))
		return;
	if (id->send_cq && id->send_cq != id->recv_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
	c->own_cqs = false;
}

static int create_cqs(struct rdma_cm_id *id, int send_size, int recv_size)
{
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	id->send_cq_channel = ibv_create_comp_channel(id->verbs);
	to_cma_id(id)->own_cqs = true;
	if (id->recv_cq_channel && id->send_cq_channel) {
		id->recv_cq = ibv_create_cq(id->verbs, recv_size ? recv_size : 1, id,
					    id->recv_cq_channel, 0);
		id->send_cq = ibv_create_cq(id->verbs, send_size ? send_size : 1, id,
					    id->send_cq_channel, 0);
	}
	if (!id->recv_cq || !id->send_cq) {
		int err = errno ? errno : ENOMEM;

		destroy_cqs(id);
		return err;
	}
	return 0;
}

/*
 * 0 (id->qp, ->pd, and the CQs if made here, are set), or -1 with errno: EINVAL (NULL, an id
 * bound to no device, a PD of another device, or a QP already made), ENOMEM, or what creating
 * the CQs, the QP or its first transitions returns.
 */
UROCE_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int err;

	if (!id || !attr || !id->verbs || id->qp)
		return cma_fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cma_default_pd(id->verbs);
		if (!attr->pd)
			return cma_fail(ENOMEM);
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->pd->context != id->verbs)
		return cma_fail(EINVAL);
	if (id->qp_type == IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		attr->xrcd = default_xrcd(id->verbs);
		if (!attr->xrcd)
			return -1;
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		err = create_cqs(id, attr->send_cq ? 0 : (int)attr->cap.max_send_wr,
				 attr->recv_cq ? 0 : (int)attr->cap.max_recv_wr);
		if (err)
			return cma_fail(err);
		if (!attr->send_cq)
			attr->send_cq = id->send_cq;
		if (!attr->recv_cq)
			attr->recv_cq = id->recv_cq;
	}
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		err = errno;
		destroy_cqs(id);
		return cma_fail(err);
	}
	err = ready(id, qp);
	if (err) {
		ibv_destroy_qp(qp);
		destroy_cqs(id);
		return cma_fail(err);
	}
	id->qp = qp;
	id->pd = attr->pd;
	id->srq = attr->srq ? attr->srq : id->srq;
	return 0;
}

/* As rdma_create_qp_ex with @pd and @qp_init_attr; id->qp's numbers go back in @qp_init_attr. */
UROCE_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex = {0};
	int ret;

	if (!qp_init_attr)
		return cma_fail(EINVAL);
	ex.qp_context = qp_init_attr->qp_context;
	ex.send_cq = qp_init_attr->send_cq;
	ex.recv_cq = qp_init_attr->recv_cq;
	ex.srq = qp_init_attr->srq;
	ex.cap = qp_init_attr->cap;
	ex.qp_type = qp_init_attr->qp_type ? qp_init_attr->qp_type : id->qp_type;
	ex.sq_sig_all = qp_init_attr->sq_sig_all;
	ex.pd = pd;
	ex.comp_mask = pd ? IBV_QP_INIT_ATTR_PD : 0;
	ret = rdma_create_qp_ex(id, &ex);
	if (!ret) {
		qp_init_attr->send_cq = ex.send_cq;
		qp_init_attr->recv_cq = ex.recv_cq;
		qp_init_attr->cap = ex.cap;
	}
	return ret;
}

UROCE_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

/*
 * An SRQ for @id (NULL @attr->pd: the default PD; an XRC one without domain or CQ: the
 * device's XRC domain and the id's receive CQ, made if needed). 0, or -1 with errno: EINVAL
 * (NULL, an id on no device), ENOMEM, or ibv_create_srq_ex's.
 */
UROCE_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;
	int err;

	if (!id || !attr || !id->verbs)
		return cma_fail(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cma_default_pd(id->verbs);
		if (!attr->pd)
			return cma_fail(ENOMEM);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC) {
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
			attr->xrcd = default_xrcd(id->verbs);
			if (!attr->xrcd)
				return -1;
		}
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
			if (!id->recv_cq && (err = create_cqs(id, 0, (int)attr->attr.max_wr)))
				return cma_fail(err);
			attr->cq = id->recv_cq;
		}
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	id->srq = srq;
	id->pd = attr->pd;
	return 0;
}

UROCE_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {0};

	if (!attr)
		return cma_fail(EINVAL);
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.pd = pd;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | (pd ? IBV_SRQ_INIT_ATTR_PD : 0);
	/* librdmacm: an XRC target id's SRQ is an XRC SRQ. */
	ex.srq_type = id && id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	return rdma_create_srq_ex(id, &ex);
}

UROCE_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	if (!id->qp)
		destroy_cqs(id);
}

/*
 * A synchronous id for @res (its port space and QP type), bound to its source (passive) or
 * resolved to its destination and route (active), with a QP if @qp_init_attr is given (for a
 * passive id, each id rdma_get_request returns gets one).
 * 0 and *@id, or -1 with errno from the step that failed (the id is destroyed then).
 */
UROCE_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
				struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	int err;

	if (!id || !res)
		return cma_fail(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	cm->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (qp_init_attr)
		qp_init_attr->qp_type = cm->qp_type; /* as librdmacm: the result's QP type */
	if (res->ai_flags & RAI_PASSIVE) {
		err = rdma_bind_addr(cm, res->ai_src_addr);
		/* A listener's QP attributes serve each connection it takes (rdma_get_request). */
		if (!err && qp_init_attr) {
			struct cma_id *c = to_cma_id(cm);

			c->ep_qp_attr = malloc(sizeof(*qp_init_attr));
			if (c->ep_qp_attr) {
				*c->ep_qp_attr = *qp_init_attr;
				c->ep_pd = pd;
			} else {
				errno = ENOMEM;
				err = -1;
			}
		}
	} else {
		err = rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) ||
		      rdma_resolve_route(cm, 2000);
		if (!err && qp_init_attr)
			err = rdma_create_qp(cm, pd, qp_init_attr);
	}
	if (err) {
		err = errno;
		rdma_destroy_id(cm);
		return cma_fail(err);
	}
	*id = cm;
	return 0;
}

UROCE_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
