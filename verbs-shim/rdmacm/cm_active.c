// SPDX-License-Identifier: MIT
/*
 * The active side: rdma_connect's REQ (RC, UC, XRC) or SIDR_REQ (UD) with the cma header ahead
 * of the application's private data (PROTOCOL.md §4.8), rdma_establish's RTU for an
 * application that readies its own QP, and ECE (rdma_set_local_ece, rdma_get_remote_ece).
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

/*
 * A new connection for the active @ci (route resolved): its addresses from the route. Locked.
 * NULL with *@err set (ENOMEM, or the errno of starting the engine).
 */
static struct cma_conn *active_conn(struct cma_id *ci, int *err)
{
	struct rdma_cm_id *id = &ci->id;
	struct cma_conn *c;

	*err = cma_cm_start();
	c = *err ? NULL : cma_conn_new();
	if (!c) {
		*err = *err ? *err : ENOMEM;
		return NULL;
	}
	c->id = ci;
	ci->conn = c;
	ci->state = CMA_CONNECTING;
	memcpy(c->sgid, cma_gid(&id->route.addr.src_addr).raw, 16);
	memcpy(c->dgid, cma_gid(&id->route.addr.dst_addr).raw, 16);
	c->tos = id->route.path_rec ? id->route.path_rec->traffic_class : 0;
	return c;
}

/* REQ and SIDR_REQ private data: the cma header (§4.8), then the application's. */
static void request_private_data(const struct rdma_cm_id *id, const struct cma_conn *c,
				 const struct rdma_conn_param *param, uint8_t *pd)
{
	struct cma_hdr h = {.ip_version = id->route.addr.src_addr.sa_family == AF_INET ? 4 : 6,
			    .src_port = cma_port_of(&id->route.addr.src_addr)};

	memcpy(h.src, c->sgid, 16);
	memcpy(h.dst, c->dgid, 16);
	cma_hdr_encode(&h, pd);
	if (param && param->private_data_len)
		memcpy(pd + CM_HDR_LEN, param->private_data, param->private_data_len);
}

/* UD: a SIDR_REQ for the peer's QP number and Q_Key (§4.4, §4.11). */
static int sidr_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci = to_cma_id(id);
	struct cm_sidr_req req = {.pkey = 0xFFFF};
	struct cma_conn *c;
	int err;

	if (ci->state != CMA_ROUTE_RESOLVED ||
	    (conn_param && conn_param->private_data_len > CM_SIDR_REQ_PRIVATE - CM_HDR_LEN))
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	c = active_conn(ci, &err);
	if (!c) {
		cma_cm_unlock();
		return cma_fail(err);
	}
	c->sidr = true;
	req.service_id =
		cm_service_id((enum cm_port_space)id->ps, cma_port_of(&id->route.addr.dst_addr));
	request_private_data(id, c, conn_param, req.private_data);
	cm_conn_sidr_req(&c->cm, &req, (uint64_t)1 << 32 | c->cm.local_id, cma_now());
	cma_conn_settle(c);
	cma_cm_unlock();
	return cma_complete(id);
}

/*
 * 0 (ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_RESPONSE follows; a synchronous id waits
 * for it), or -1 with errno: EINVAL (NULL, the route not resolved, no QP and no
 * conn_param->qp_num, more than 56 bytes of private data, RDMA READ or atomic resources beyond
 * the device's: cma_rd_atomic_check), ENOMEM, or the errno of starting the engine.
 */
UROCE_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci;
	struct cma_conn *c;
	struct cm_req req = {0};
	uint8_t max_resp, max_init;
	uint32_t qpn;
	int err;

	if (!id)
		return cma_fail(EINVAL);
	if (id->qp_type == IBV_QPT_UD)
		return sidr_connect(id, conn_param);
	ci = to_cma_id(id);
	qpn = id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0;
	if (ci->state != CMA_ROUTE_RESOLVED || !qpn ||
	    (conn_param && conn_param->private_data_len > CM_REQ_PRIVATE - CM_HDR_LEN) ||
	    cma_rd_atomic_check(id, conn_param, &max_resp, &max_init))
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	c = active_conn(ci, &err);
	if (!c) {
		cma_cm_unlock();
		return cma_fail(err);
	}
	/* librdmacm's rdma_connect: 0xFF, or no parameters, ask for the device's maximum. */
	c->responder_resources = conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES
					 ? conn_param->responder_resources
					 : max_resp;
	c->initiator_depth = conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH
				     ? conn_param->initiator_depth
				     : max_init;
	c->retry_count = conn_param && conn_param->retry_count < 7 ? conn_param->retry_count : 7;
	c->rnr_retry =
		conn_param && conn_param->rnr_retry_count < 7 ? conn_param->rnr_retry_count : 7;
	c->path_mtu = id->route.path_rec ? id->route.path_rec->mtu : IBV_MTU_1024;
	req.service_id =
		cm_service_id((enum cm_port_space)id->ps, cma_port_of(&id->route.addr.dst_addr));
	req.local_ca_guid = id->verbs ? be64toh(ibv_get_device_guid(id->verbs->device)) : 0;
	req.local_qpn = qpn;
	req.vendor_id = ci->local_ece.vendor_id;
	cm_conn_set_ece(&c->cm, ci->local_ece.options);
	req.responder_resources = c->responder_resources;
	req.initiator_depth = c->initiator_depth;
	req.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	/* RC 0, UC 1; XRC: 3 (extended), extended type 1 (ib_cm's cm_req_set_qp_type). */
	req.transport_type = id->qp_type == IBV_QPT_UC         ? 1
			     : id->qp_type == IBV_QPT_XRC_SEND ? 3
							       : 0;
	req.ext_transport_type = id->qp_type == IBV_QPT_XRC_SEND ? 1 : 0;
	req.e2e_flow_control = conn_param ? conn_param->flow_control : 1;
	req.starting_psn = c->my_psn;
	req.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.retry_count = c->retry_count;
	req.pkey = 0xFFFF;
	req.path_mtu = c->path_mtu;
	req.rnr_retry_count = c->rnr_retry;
	req.max_cm_retries = CM_MAX_RETRIES;
	req.srq = id->srq || (conn_param && conn_param->srq);
	req.primary.local_lid = req.primary.remote_lid = 0xFFFF; /* permissive (§4.7) */
	memcpy(req.primary.local_gid, c->sgid, 16);
	memcpy(req.primary.remote_gid, c->dgid, 16);
	req.primary.flow_label = ((uint32_t)cma_port_of(&id->route.addr.src_addr) * 31 +
				  cma_port_of(&id->route.addr.dst_addr)) &
				 0xFFFFF;
	req.primary.hop_limit = 64;
	req.primary.traffic_class = c->tos;
	req.primary.local_ack_timeout = LOCAL_ACK_TIMEOUT;
	request_private_data(id, c, conn_param, req.private_data);
	cm_conn_connect(&c->cm, &req, (uint64_t)1 << 32 | c->cm.local_id, cma_now());
	cma_conn_settle(c);
	cma_cm_unlock();
	return cma_complete(id);
}

/*
 * What this side offers in its REQ or REP (ECE: vendor ID and options). 0, or -1 with errno
 * EINVAL: NULL, an id with a QP of its own (librdmacm's rule: ECE is for applications that
 * move their QP themselves), vendor ID 0, comp_mask set.
 */
UROCE_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return cma_fail(EINVAL);
	to_cma_id(id)->local_ece =
		(struct ibv_ece){.vendor_id = ece->vendor_id & 0xFFFFFF, .options = ece->options};
	return 0;
}

/* What the peer's REQ or REP carried (zero if none). 0, or -1 with errno EINVAL as above. */
UROCE_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece)
		return cma_fail(EINVAL);
	*ece = to_cma_id(id)->remote_ece;
	return 0;
}

/* Active side without id->qp (CONNECT_RESPONSE): the RTU. 0, or -1 with errno EINVAL. */
UROCE_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	c = to_cma_id(id)->conn;
	err = c ? cm_conn_rtu(&c->cm, cma_now()) : EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_CONNECTED;
		cma_conn_settle(c);
	}
	cma_cm_unlock();
	return err ? cma_fail(err) : 0;
}
