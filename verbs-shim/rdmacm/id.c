// SPDX-License-Identifier: MIT
/*
 * rdma_cm ids (rdma_create_id(3), rdma_destroy_id(3), rdma_migrate_id(3)). An id created without
 * a channel is synchronous: it gets a channel of its own, and its calls wait for their events
 * (rdma_cm's "synchronous operation"), which rdma_get_cm_event then exposes in id->event.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

/* The QP type an id of port space @ps connects (librdmacm: UDP and IPoIB are datagram). */
static enum ibv_qp_type qp_type_of(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

/*
 * 0 and *@id, or -1 with errno: EINVAL (@id NULL, or @ps not RDMA_PS_TCP, _UDP, _IB or _IPOIB,
 * as the kernel refuses), ENOMEM, or what creating a channel returns for a synchronous id.
 */
UROCE_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
				void *context, enum rdma_port_space ps)
{
	struct cma_id *c;

	if (!id ||
	    (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)) {
		errno = EINVAL;
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return -1;
	}
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel) {
			free(c);
			return -1;
		}
		c->sync = true;
	}
	c->id.channel = channel;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qp_type_of(ps);
	*id = &c->id;
	return 0;
}

/*
 * Waits until the events of @id the application took are acked (and drops those it did not
 * take), as librdmacm's does. 0, or -1 with errno EINVAL for NULL.
 */
UROCE_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	c = to_cma_id(id);
	if (id->verbs)
		uroce_res_del(id->verbs, UROCE_RES_CM_ID, c->res_tag);
	cma_resolve_cancel(c);
	cma_conn_forget(c);
	cma_events_drain(id);
	cma_release(c);
	cma_mc_release(c);
	free(c->ep_qp_attr);
	if (c->sync)
		rdma_destroy_event_channel(id->channel);
	free(c);
	return 0;
}

/*
 * Report @id's events on @channel from now on (NULL: a channel of its own, synchronous). 0, or
 * -1 with errno EINVAL (@id NULL) or what creating the channel returns.
 */
UROCE_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c;
	bool sync = !channel;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	c = to_cma_id(id);
	if (!channel && !(channel = rdma_create_event_channel()))
		return -1;
	if (c->sync)
		rdma_destroy_event_channel(id->channel);
	id->channel = channel;
	c->sync = sync;
	return 0;
}
