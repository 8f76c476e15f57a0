// SPDX-License-Identifier: MIT
/*
 * The passive side: listeners (rdma_listen), the REQs and SIDR_REQs that reach them, what a
 * host answers for a MAD nobody takes, and the application's answers: rdma_accept,
 * rdma_reject, rdma_get_request, and rdma_notify for data that came before the RTU.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
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

/* The listener for a REQ's service ID and destination. Locked. */
static struct cma_id *listener_of(uint64_t sid, const uint8_t dgid[16])
{
	for (struct cma_id *l = cma_cm.listeners; l; l = l->next_listener) {
		struct rdma_cm_id *id = &l->id;
		const struct sockaddr *at = &id->route.addr.src_addr;

		if (cm_service_id((enum cm_port_space)id->ps, cma_port_of(at)) != sid)
			continue;
		if (cma_any_addr(at) || !memcmp(cma_gid(at).raw, dgid, 16))
			return l;
	}
	return NULL;
}

/* Refuse the request @rx: REJ @reason, or SIDR_REP @sidr_status (cm/route.h). */
static void refuse(const struct uroce_mad_rx *rx, uint16_t reason, uint8_t sidr_status)
{
	uint8_t mad[CM_MAD_LEN];

	if (cm_refuse_request(rx->mad, CM_MAD_LEN, reason, sidr_status, mad))
		cma_send_mad(rx->dgid, rx->sgid, rx->tos, mad);
}

/* Answer a MAD no connection or listener takes, as a Linux CM does (cm/route.h). */
void cma_answer_unclaimed(const struct uroce_mad_rx *rx)
{
	uint8_t mad[CM_MAD_LEN];

	if (cm_answer_unclaimed(rx->mad, CM_MAD_LEN, mad))
		cma_send_mad(rx->dgid, rx->sgid, rx->tos, mad);
}

/*
 * A request @rx to listener @l (NULL: gone) for service @sid with private data @pd (the cma
 * header first): a connection with a new child id, as librdmacm makes it (ABI.md: context,
 * channel, port space, QP type of the listener), its addresses from the packet and the cma
 * header; or NULL when refused or unusable (answered as the kernel's rdma_cm would). Locked.
 */
static struct cma_conn *request_conn(struct cma_id *l, const struct uroce_mad_rx *rx, uint64_t sid,
				     const uint8_t *pd)
{
	struct rdma_cm_id *child;
	struct cma_conn *c;
	struct cma_hdr h;
	struct sockaddr_storage ss;

	if (!l) {
		/* Routed here, but the listener has gone since. */
		cma_answer_unclaimed(rx);
		return NULL;
	}
	if (cma_hdr_decode(pd, &h))
		return NULL;
	/* ucma's backlog: requests the application has not taken yet, beyond it refused. */
	if (atomic_load(&l->requests_waiting) >= l->backlog) {
		refuse(rx, CM_REJ_CONSUMER, CM_SIDR_REJECT);
		return NULL;
	}
	if (rdma_create_id(l->id.channel, &child, l->id.context, l->id.ps))
		return NULL;
	child->qp_type = l->id.qp_type;
	/* A wildcard listener has no device: the one the request came to. */
	child->verbs = l->id.verbs ? l->id.verbs : cma_device_of(rx->dgid);
	child->port_num = 1;
	/* librdmacm's ucma_get_device for the new id: the device's default PD in id.pd. */
	child->pd = child->verbs ? cma_default_pd(child->verbs) : NULL;
	c = child->pd ? cma_conn_new() : NULL;
	if (!c) {
		free(to_cma_id(child)); /* not rdma_destroy_id: it takes the lock held here */
		return NULL;
	}
	c->id = to_cma_id(child);
	c->id->conn = c;
	c->id->state = CMA_CONNECTING;
	memcpy(c->sgid, rx->dgid, 16);
	memcpy(c->dgid, rx->sgid, 16);
	cma_sa_of(&ss, rx->dgid, (uint16_t)sid);
	memcpy(&child->route.addr.src_addr, &ss, sizeof(struct sockaddr_in6));
	cma_sa_of(&ss, rx->sgid, h.src_port);
	memcpy(&child->route.addr.dst_addr, &ss, sizeof(struct sockaddr_in6));
	/* Counted on its device, as the kernel's cma_attach_to_dev() tracks it. */
	c->id->res_tag = uroce_res_add(child->verbs, UROCE_RES_CM_ID);
	atomic_fetch_add(&l->requests_waiting, 1);
	return c;
}

/* A REQ for a listener: CONNECT_REQUEST; rdma_accept or rdma_reject answers it. */
void cma_on_req(const struct cm_msg *m, const struct uroce_mad_rx *rx)
{
	const struct cm_req *req = &m->u.req;
	struct cma_id *l = listener_of(req->service_id, rx->dgid);
	struct cma_conn *c;
	struct rdma_conn_param p;

	/* A repeated REQ belongs to the connection it made. */
	c = cma_conn_by_peer(false, req->local_comm_id, rx->sgid);
	if (c) {
		cm_conn_read(&c->cm, m, cma_now());
		cma_conn_settle(c);
		return;
	}
	c = request_conn(l, rx, req->service_id, req->private_data);
	if (!c)
		return;
	cma_conn_index_peer(c, req->local_comm_id);
	c->peer_qpn = req->local_qpn;
	c->responder_resources = req->initiator_depth; /* what the peer will read from us */
	c->initiator_depth = req->responder_resources;
	c->retry_count = req->retry_count;
	c->rnr_retry = req->rnr_retry_count;
	c->path_mtu = req->path_mtu;
	c->tos = req->primary.traffic_class; /* the passive path is the REQ's (§4.10) */
	c->id->remote_ece =
		(struct ibv_ece){.vendor_id = req->vendor_id, .options = m->hdr.attr_mod};
	cm_conn_accept_req(&c->cm, m, cma_now());
	cma_conn_param_of(&p, c);
	cma_conn_event(&c->id->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &l->id, &p,
		       req->private_data + CM_HDR_LEN, CM_REQ_PRIVATE - CM_HDR_LEN);
	cma_conn_settle(c);
}

/* A SIDR_REQ for a listener: a new UD id and CONNECT_REQUEST; rdma_accept answers it. */
void cma_on_sidr_req(const struct cm_msg *m, const struct uroce_mad_rx *rx)
{
	const struct cm_sidr_req *req = &m->u.sidr_req;
	struct cma_id *l = listener_of(req->service_id, rx->dgid);
	struct cma_conn *c;
	struct cma_event_ud ud = {0};

	/* A repeated SIDR_REQ while the application decides: it is answered once, then. */
	if (cma_conn_by_peer(true, req->request_id, rx->sgid))
		return;
	c = request_conn(l, rx, req->service_id, req->private_data);
	if (!c)
		return;
	c->sidr = true;
	cm_conn_accept_sidr_req(&c->cm, m);
	cma_conn_index_peer(c, req->request_id);
	c->tos = rx->tos; /* answered along the path it came */
	cma_ud_event(&c->id->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &l->id, &ud,
		     req->private_data + CM_HDR_LEN, CM_SIDR_REQ_PRIVATE - CM_HDR_LEN);
}

/* Passive SIDR: answer the requester with @status, @qpn and @len bytes at @pd. Locked. */
void cma_sidr_reply(struct cma_conn *c, uint8_t status, uint32_t qpn, const void *pd, size_t len)
{
	struct cm_sidr_rep rep = {.status = status, .qpn = qpn, .qkey = CM_UDP_QKEY};

	if (len)
		memcpy(rep.private_data, pd, len);
	cm_conn_sidr_rep(&c->cm, &rep);
	cma_conn_flush(c);
}

/*
 * 0, or -1 with errno: EINVAL (NULL, or @id not bound or already listening), ETIMEDOUT (the
 * host's hub did not answer), or the errno of starting the engine. Beyond @backlog connection
 * requests not yet taken by the application, more are refused (REJ 28), as ucma does.
 */
UROCE_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c;
	int err;

	if (!id)
		return cma_fail(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_BOUND)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	err = cma_cm_start();
	if (!err) {
		/* ucma's: at most net.rdma_ucm.max_backlog (1024), that too for 0 or less. */
		c->backlog = backlog > 0 && backlog < CMA_MAX_BACKLOG ? backlog : CMA_MAX_BACKLOG;
		c->state = CMA_LISTEN;
		c->next_listener = cma_cm.listeners;
		cma_cm.listeners = c;
	}
	cma_cm_unlock();
	if (!err) {
		/* Unlocked: the hub's answer may come through the thread that delivers MADs. */
		struct uroce_service s = cma_service_of(c);

		err = uroce_cm_service(UROCE_SERVICE_LISTEN, &s);
		if (err) {
			cma_conn_forget(c);
			c->state = CMA_BOUND;
		} else if (!id->verbs) {
			/*
			 * A listener without a device takes each request's device (request_conn);
			 * the devices are opened now, not on the first request's path (a scan of
			 * the interfaces and each context's set-up): the kernel's exist already.
			 */
			int n;

			free(cma_devices(&n));
		}
	}
	return err ? cma_fail(err) : 0;
}

/*
 * 0 (ESTABLISHED follows when the RTU comes), or -1 with errno: EINVAL (NULL, not a
 * connection request, more than 196 bytes of private data, RDMA READ or atomic resources
 * beyond the device's: cma_rd_atomic_check), or what readying id->qp returns.
 */
UROCE_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci;
	struct cma_conn *c;
	struct cm_rep rep = {0};
	uint8_t max_resp, max_init;
	int err = 0;

	if (!id)
		return cma_fail(EINVAL);
	ci = to_cma_id(id);
	pthread_mutex_lock(&cma_cm.lock);
	c = ci->conn;
	if (c && c->cm.state == CM_SIDR_REQ_RCVD) {
		if (conn_param && conn_param->private_data_len > CM_SIDR_REP_PRIVATE) {
			cma_cm_unlock();
			return cma_fail(EINVAL);
		}
		cma_sidr_reply(c, CM_SIDR_OK, id->qp ? id->qp->qp_num : 0,
			       conn_param ? conn_param->private_data : NULL,
			       conn_param ? conn_param->private_data_len : 0);
		ci->state = CMA_CONNECTED;
		cma_cm_unlock();
		return 0;
	}
	if (!c || c->cm.state != CM_REQ_RCVD ||
	    (conn_param && conn_param->private_data_len > CM_REP_PRIVATE) ||
	    cma_rd_atomic_check(id, conn_param, &max_resp, &max_init)) {
		cma_cm_unlock();
		return cma_fail(EINVAL);
	}
	/*
	 * librdmacm's rdma_accept: a value given is taken; 0xFF, or no parameters, take what the
	 * REQ offers, within the device's maximum.
	 */
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES)
		c->responder_resources = MIN(c->responder_resources, max_resp);
	else
		c->responder_resources = conn_param->responder_resources;
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH)
		c->initiator_depth = MIN(c->initiator_depth, max_init);
	else
		c->initiator_depth = conn_param->initiator_depth;
	if (conn_param)
		c->rnr_retry = conn_param->rnr_retry_count < 7 ? conn_param->rnr_retry_count : 7;
	if (id->qp)
		err = cma_conn_ready_qp(c);
	if (err) {
		cma_cm_unlock();
		return cma_fail(err);
	}
	rep.local_qpn = id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0;
	rep.vendor_id[0] = (uint8_t)(ci->local_ece.vendor_id >> 16);
	rep.vendor_id[1] = (uint8_t)(ci->local_ece.vendor_id >> 8);
	rep.vendor_id[2] = (uint8_t)ci->local_ece.vendor_id;
	cm_conn_set_ece(&c->cm, ci->local_ece.options);
	rep.starting_psn = c->my_psn;
	rep.responder_resources = c->responder_resources;
	rep.initiator_depth = c->initiator_depth;
	rep.target_ack_delay = TARGET_ACK_DELAY;
	rep.e2e_flow_control = conn_param ? conn_param->flow_control : 1;
	rep.rnr_retry_count = c->rnr_retry;
	rep.srq = id->srq != NULL;
	rep.local_ca_guid = id->verbs ? be64toh(ibv_get_device_guid(id->verbs->device)) : 0;
	if (conn_param && conn_param->private_data_len)
		memcpy(rep.private_data, conn_param->private_data, conn_param->private_data_len);
	cm_conn_rep(&c->cm, &rep, cma_now());
	cma_conn_settle(c);
	cma_cm_unlock();
	return cma_complete(id);
}

/* Reject the request of @id with @reason (a UD id's SIDR_REP says only "rejected"). */
static int reject(struct rdma_cm_id *id, uint16_t reason, const void *private_data,
		  uint8_t private_data_len)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	c = to_cma_id(id)->conn;
	if (c && c->cm.state == CM_SIDR_REQ_RCVD) {
		cma_sidr_reply(c, CM_SIDR_REJECT, 0, private_data,
			       private_data_len < CM_SIDR_REP_PRIVATE ? private_data_len
								      : CM_SIDR_REP_PRIVATE);
		to_cma_id(id)->state = CMA_DISCONNECTED;
		cma_cm_unlock();
		return 0;
	}
	err = c ? cm_conn_reject(&c->cm, reason, private_data, private_data_len, cma_now())
		: EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_DISCONNECTED;
		cma_conn_settle(c);
	}
	cma_cm_unlock();
	return err ? cma_fail(err) : 0;
}

/*
 * 0, or -1 with errno EINVAL: NULL, no connection request (or response) to reject, more than
 * 148 bytes of private data. A REJ "consumer defined" (28); SIDR_REP "rejected" for UD.
 */
UROCE_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			     uint8_t private_data_len)
{
	return reject(id, CM_REJ_CONSUMER, private_data, private_data_len);
}

/* As rdma_reject, with REJ reason 35, "vendor option not supported" (the peer's ECE). */
UROCE_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
				 uint8_t private_data_len)
{
	return reject(id, CM_REJ_VENDOR_OPTION, private_data, private_data_len);
}

/*
 * Passive side: data came on the QP before the RTU (the application saw IBV_EVENT_COMM_EST):
 * established now, ESTABLISHED follows (the kernel's ib_cm_notify). 0, or -1 with errno:
 * EINVAL (NULL, another event, no connection waiting for its RTU), EISCONN (established).
 */
UROCE_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_conn *c;
	int err = EINVAL;

	if (!id || event != IBV_EVENT_COMM_EST)
		return cma_fail(EINVAL);
	pthread_mutex_lock(&cma_cm.lock);
	c = to_cma_id(id)->conn;
	if (c && c->cm.state == CM_ESTABLISHED) {
		err = EISCONN;
	} else if (c && c->cm.state == CM_REP_SENT) {
		cm_conn_established(&c->cm);
		cma_conn_settle(c);
		err = 0;
	}
	cma_cm_unlock();
	return err ? cma_fail(err) : 0;
}

void cma_request_taken(struct rdma_cm_id *child)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		return;
	/* The CM thread reads id->channel when it queues the child's next event. */
	pthread_mutex_lock(&cma_cm.lock);
	child->channel = ch;
	to_cma_id(child)->sync = true;
	cma_cm_unlock();
}

/* A synchronous listener: wait for a connection request. 0 and *@id, or -1 with errno. */
UROCE_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	if (!listen || !id || to_cma_id(listen)->state != CMA_LISTEN)
		return cma_fail(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct cma_id *l = to_cma_id(listen);

			*id = ev->id;
			ev->id->event = ev; /* the request stays readable in id->event */
			if (l->ep_qp_attr) {
				struct ibv_qp_init_attr a = *l->ep_qp_attr;

				if (rdma_create_qp(ev->id, l->ep_pd, &a)) {
					int err = errno;

					rdma_reject(ev->id, NULL, 0);
					rdma_destroy_id(ev->id);
					return cma_fail(err);
				}
			}
			return 0;
		}
		rdma_ack_cm_event(ev);
	}
}
