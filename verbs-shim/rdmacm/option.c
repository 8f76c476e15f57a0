// SPDX-License-Identifier: MIT
/*
 * rdma_set_option(3) with the kernel's rules (drivers/infiniband/core/ucma.c, cma.c): the id
 * options TOS, REUSEADDR, AFONLY and ACK_TIMEOUT, and the IB option PATH. Where each takes
 * effect: TOS in the path rdma_resolve_route makes (the GRH traffic class of the CM MADs and of
 * the QP's packets, the IP TOS on the wire); REUSEADDR and AFONLY in the host's CM directory at
 * bind and listen (fabric/net.h uroce_net_service); ACK_TIMEOUT in the RTS attributes.
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/sa.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

/* An option of level RDMA_OPTION_ID: 0 or an errno. */
static int set_id_option(struct cma_id *c, int optname, const void *optval, size_t optlen)
{
	int v;

	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		c->tos = *(const uint8_t *)optval;
		c->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			return EINVAL;
		memcpy(&v, optval, sizeof(v));
		/* Turned on at any time but while listening, off only before binding. */
		if ((v && c->state != CMA_LISTEN) || c->state == CMA_IDLE) {
			c->reuseaddr = v != 0;
			return 0;
		}
		return EINVAL;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return EINVAL;
		if (c->state != CMA_IDLE && c->state != CMA_BOUND)
			return EINVAL;
		memcpy(&v, optval, sizeof(v));
		c->afonly = v != 0;
		c->afonly_set = true;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		if (c->id.qp_type != IBV_QPT_RC && c->id.qp_type != IBV_QPT_XRC_SEND)
			return EINVAL;
		c->ack_timeout = *(const uint8_t *)optval;
		c->ack_timeout_set = true;
		return 0;
	default:
		return ENOSYS;
	}
}

/*
 * RDMA_OPTION_IB_PATH: the path whose flags are exactly GMP | PRIMARY | BIDIRECTIONAL becomes
 * the route of an id whose address is resolved; the caller reports ROUTE_RESOLVED, as the
 * kernel's ucma_set_ib_path does. 0 or an errno.
 */
static int set_path(struct cma_id *c, const struct ibv_path_data *d, size_t optlen)
{
	const uint32_t want =
		IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	const struct ibv_path_record *r;
	struct ibv_sa_path_rec *p;
	uint32_t fh;

	if (!optlen || optlen % sizeof(*d))
		return EINVAL;
	for (; optlen && d->flags != want; optlen -= sizeof(*d))
		d++;
	if (!optlen || c->state != CMA_ADDR_RESOLVED)
		return EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	r = &d->path;
	fh = be32toh(r->flowlabel_hoplimit);
	p->dgid = r->dgid;
	p->sgid = r->sgid;
	p->dlid = r->dlid;
	p->slid = r->slid;
	p->flow_label = htobe32((fh >> 8) & 0xFFFFF);
	p->hop_limit = (uint8_t)fh;
	p->traffic_class = r->tclass;
	p->reversible = r->reversible_numpath >> 7;
	p->numb_path = r->reversible_numpath & 0x7F;
	p->pkey = r->pkey;
	p->sl = be16toh(r->qosclass_sl) & 0xF;
	p->mtu_selector = r->mtu >> 6;
	p->mtu = r->mtu & 0x3F;
	p->rate_selector = r->rate >> 6;
	p->rate = r->rate & 0x3F;
	p->packet_life_time_selector = r->packetlifetime >> 6;
	p->packet_life_time = r->packetlifetime & 0x3F;
	p->preference = r->preference;
	free(c->id.route.path_rec);
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
	c->state = CMA_ROUTE_RESOLVED;
	return 0;
}

/*
 * 0 (for RDMA_OPTION_IB_PATH, ROUTE_RESOLVED follows on the id's channel), or -1 with errno:
 * EINVAL (NULL @id or @optval, a length that is not the option's, the
 * option in a state that does not take it: REUSEADDR off after binding or on while
 * listening, AFONLY after resolution, ACK_TIMEOUT on an id that is not RC, PATH without a
 * resolved address or a bidirectional primary path), ENOSYS (an unknown level or option, as
 * the kernel), ENOMEM.
 */
UROCE_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
				 size_t optlen)
{
	int err;

	if (!id || !optval)
		return cma_fail(EINVAL);
	if (level == RDMA_OPTION_ID)
		err = set_id_option(to_cma_id(id), optname, optval, optlen);
	else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/*
		 * The route is resolved: ROUTE_RESOLVED on the id's channel, as after
		 * rdma_resolve_route (librdmacm's rdma_resolve_route waits for this event when it
		 * sets an ACM path so). A synchronous id takes it at once.
		 */
		err = set_path(to_cma_id(id), optval, optlen);
		if (!err)
			err = cma_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
		return err ? cma_fail(err) : cma_complete(id);
	} else {
		err = ENOSYS;
	}
	return err ? cma_fail(err) : 0;
}
