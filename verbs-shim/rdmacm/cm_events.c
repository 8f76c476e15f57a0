// SPDX-License-Identifier: MIT
/*
 * The connection's CM events become rdma_cm events (cma_conn_deliver), and the QP attributes
 * they imply: RTR and RTS from the REQ and REP (PROTOCOL.md §4.9), the ESTABLISHED of a UD id
 * from its SIDR_REP, rdma_init_qp_attr's view of a connection (cma_conn_qp_attr).
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cm/ib_cm.h"
#include "cm/route.h"
#include "verbs-shim/export.h"
#include "verbs-shim/mad.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/htab.h"
#include "verbs-shim/rdmacm/cm_int.h"

/* The QP attributes for RTR and RTS from the connection (PROTOCOL.md §4.9). */
static int qp_attr(struct cma_conn *c, struct ibv_qp_attr *a, int *mask)
{
	struct rdma_cm_id *id = &c->id->id;
	int idx;

	switch (a->qp_state) {
	case IBV_QPS_RTR:
		idx = cma_gid_index(id->verbs, c->sgid);
		if (idx < 0)
			return ENODEV;
		a->path_mtu = (enum ibv_mtu)c->path_mtu;
		a->dest_qp_num = c->peer_qpn;
		/* rdma_init_qp_attr's RTR rq_psn is the id's own seq_num, even before the REP. */
		a->rq_psn = c->my_psn;
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = id->port_num;
		memcpy(a->ah_attr.grh.dgid.raw, c->dgid, 16);
		a->ah_attr.grh.sgid_index = (uint8_t)idx;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.traffic_class = c->tos;
		/* The access the connection grants (ib_cm's RTR attributes). */
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (c->responder_resources)
			a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_ACCESS_FLAGS;
		/* A responder's (ib_cm's cm_init_qp_rtr_attr): not an XRC initiator's. */
		if (id->qp_type != IBV_QPT_XRC_SEND) {
			a->max_dest_rd_atomic = c->responder_resources ? c->responder_resources : 1;
			/* 0 (655.36 ms, IBA table 45), as ib_cm's cm_init_qp_rtr_attr sets
			 * it: the RNR NAKs of an rdma_cm QP on Linux carry timer 0. */
			a->min_rnr_timer = 0;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = c->cm.sq_psn;
		a->timeout = c->id->ack_timeout_set ? c->id->ack_timeout : LOCAL_ACK_TIMEOUT;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
		/* A requester's (cm_init_qp_rts_attr): not an XRC target's, which only answers. */
		if (id->qp_type != IBV_QPT_XRC_RECV) {
			a->retry_cnt = c->retry_count;
			a->rnr_retry = c->rnr_retry;
			a->max_rd_atomic = c->initiator_depth ? c->initiator_depth : 1;
			*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return EINVAL;
	}
}

/* Take the QP of @c's id to RTR and RTS. 0, ENODEV or ibv_modify_qp's errno. Locked. */
int cma_conn_ready_qp(struct cma_conn *c)
{
	static const enum ibv_qp_state states[] = {IBV_QPS_RTR, IBV_QPS_RTS};

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {.qp_state = states[i]};
		int mask, err = qp_attr(c, &a, &mask);

		if (!err)
			err = ibv_modify_qp(c->id->id.qp, &a, mask);
		if (err)
			return err;
	}
	return 0;
}

void cma_qp_to_error(struct rdma_cm_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (id->qp)
		ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
}

int cma_rd_atomic_check(struct rdma_cm_id *id, const struct rdma_conn_param *param,
			uint8_t *max_resp, uint8_t *max_init)
{
	struct ibv_device_attr attr;

	*max_resp = *max_init = 1;
	if (id->verbs && !ibv_query_device(id->verbs, &attr)) {
		*max_resp = (uint8_t)attr.max_qp_rd_atom;
		*max_init = (uint8_t)attr.max_qp_init_rd_atom;
	}
	if (id->ps != RDMA_PS_TCP || !param)
		return 0;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > *max_resp)
		return EINVAL;
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH && param->initiator_depth > *max_init)
		return EINVAL;
	return 0;
}

void cma_conn_param_of(struct rdma_conn_param *p, const struct cma_conn *c)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = c->initiator_depth; /* the peer's, seen from here */
	p->initiator_depth = c->responder_resources;
	p->rnr_retry_count = c->rnr_retry;
	p->retry_count = c->retry_count;
	p->qp_num = c->peer_qpn;
}

/*
 * UD: the SIDR_REP came (§4.4 SIDR_REP). Success: ESTABLISHED with what an address handle to
 * the peer's QP needs; another status: UNREACHABLE with it. Locked.
 */
static void sidr_answered(struct cma_conn *c, const struct cm_sidr_rep *rep)
{
	struct rdma_cm_id *id = &c->id->id;
	struct cma_event_ud ud = {.qp_num = rep->qpn, .qkey = rep->qkey};
	int idx = cma_gid_index(id->verbs, c->sgid);

	if (rep->status != CM_SIDR_OK || idx < 0) {
		c->id->state = CMA_DISCONNECTED;
		cma_ud_event(id, RDMA_CM_EVENT_UNREACHABLE, rep->status ? rep->status : -ENODEV,
			     NULL, &ud, NULL, 0);
		return;
	}
	ud.ah_attr.is_global = 1;
	ud.ah_attr.port_num = id->port_num;
	memcpy(ud.ah_attr.grh.dgid.raw, c->dgid, 16);
	ud.ah_attr.grh.sgid_index = (uint8_t)idx;
	ud.ah_attr.grh.hop_limit = 64;
	ud.ah_attr.grh.traffic_class = c->tos;
	c->id->state = CMA_CONNECTED;
	cma_ud_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &ud, rep->private_data,
		     CM_SIDR_REP_PRIVATE);
}

/* Turn the connection's CM events into rdma_cm events. Locked. */
void cma_conn_deliver(struct cma_conn *c)
{
	struct cm_event ev;

	while (cm_conn_event(&c->cm, &ev)) {
		struct rdma_cm_id *id = c->id ? &c->id->id : NULL;
		struct rdma_conn_param p;
		int err;

		if (!id)
			continue; /* destroyed: the connection only finishes its protocol */
		cma_conn_param_of(&p, c);
		switch (ev.type) {
		case CM_EV_REP:
			c->id->remote_ece = (struct ibv_ece){
				.vendor_id = (uint32_t)ev.msg.u.rep.vendor_id[0] << 16 |
					     (uint32_t)ev.msg.u.rep.vendor_id[1] << 8 |
					     ev.msg.u.rep.vendor_id[2],
				.options = ev.msg.hdr.attr_mod};
			c->peer_qpn = ev.msg.u.rep.local_qpn;
			c->rnr_retry = ev.msg.u.rep.rnr_retry_count;
			p.qp_num = c->peer_qpn;
			if (!id->qp) {
				cma_conn_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, &p,
					       ev.msg.u.rep.private_data, CM_REP_PRIVATE);
				break;
			}
			err = cma_conn_ready_qp(c);
			if (err) {
				cm_conn_reject(&c->cm, CM_REJ_CONSUMER, NULL, 0, cma_now());
				c->id->state = CMA_DISCONNECTED;
				cma_conn_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -err, NULL, &p,
					       NULL, 0);
				break;
			}
			cm_conn_rtu(&c->cm, cma_now());
			c->id->state = CMA_CONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &p,
				       ev.msg.u.rep.private_data, CM_REP_PRIVATE);
			break;
		case CM_EV_RTU:
			c->id->state = CMA_CONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &p, NULL, 0);
			break;
		case CM_EV_REJ:
			c->id->state = CMA_DISCONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_REJECTED, ev.msg.u.rej.reason, NULL, &p,
				       ev.msg.u.rej.private_data, CM_REJ_PRIVATE);
			break;
		case CM_EV_TIMEOUT:
			if (c->id->state == CMA_CONNECTING || c->sidr) {
				c->id->state = CMA_DISCONNECTED;
				cma_conn_event(id, RDMA_CM_EVENT_UNREACHABLE,
					       c->unreachable ? -c->unreachable : -ETIMEDOUT, NULL,
					       &p, NULL, 0);
			} else {
				cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			}
			break;
		case CM_EV_DREQ:
			/*
			 * The QP stays as it is, as with rdma-core: the kernel's rdma_cm moves
			 * only QPs it created itself to Error on a DREQ (cma_modify_qp_err); the
			 * application's rdma_disconnect does it for its own. Done here, on the
			 * engine's thread, it would race with an application destroying the QP.
			 */
			c->id->state = CMA_DISCONNECTED;
			cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			break;
		case CM_EV_DREP:
			cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			break;
		case CM_EV_TIMEWAIT_EXIT:
			cma_event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
			break;
		case CM_EV_SIDR_REP:
			sidr_answered(c, &ev.msg.u.sidr_rep);
			break;
		case CM_EV_REQ: /* reported by cma_on_req (cm_passive.c) */
		case CM_EV_MRA:
			break;
		}
	}
}

int cma_conn_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask)
{
	int err;

	pthread_mutex_lock(&cma_cm.lock);
	err = id->conn ? qp_attr(id->conn, a, mask) : EINVAL;
	cma_cm_unlock();
	return err;
}
