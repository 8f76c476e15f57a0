// SPDX-License-Identifier: MIT
/*
 * Multicast joins (rdma_join_multicast(3), rdma_join_multicast_ex(3), rdma_leave_multicast(3))
 * as the kernel's rdma_cm makes them on a RoCEv2 port (cma_iboe_join_multicast): no SA, the
 * MGID is the IP group (IPv4-mapped for IPv4), the join answers at once with MULTICAST_JOIN
 * carrying the address handle of the group (QP 0xFFFFFF, rdma_cm's UDP Q_Key, hop limit 64,
 * the id's TOS) and the caller's context as private data. As librdmacm, the id's QP is attached
 * to the group when the application takes that event (a send-only join is not attached), and
 * detached when it leaves; the engine joins the IP group for an attached QP (verbs-shim/mcast.h),
 * so that other hosts' members receive. Unlike the kernel, IPv6 groups are joined too (Linux
 * refuses them on RoCEv2 with ENOTSUPP).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cm/wire.h"
#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

struct cma_mc {
	union ibv_gid mgid;
	bool sendonly;
	struct cma_mc *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* every id's list of groups */

static bool is_multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/*
 * 0 (MULTICAST_JOIN follows), or -1 with errno: EINVAL (NULL, a mask without ADDRESS and
 * JOIN_FLAGS, an unknown join flag, an id that is not UD or has no device: bind or resolve
 * it first, an address that is no multicast group), EAFNOSUPPORT (not IPv4 or IPv6), ENOMEM.
 */
UROCE_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
					struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	const uint32_t need = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	struct cma_event_ud ud = {.qp_num = 0xFFFFFF, .qkey = CM_UDP_QKEY};
	struct cma_id *c;
	struct cma_mc *mc;
	int idx, err;

	if (!id || !mc_join_attr || (mc_join_attr->comp_mask & need) != need || !mc_join_attr->addr)
		return cma_fail(EINVAL);
	if (mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return cma_fail(EINVAL);
	if (mc_join_attr->addr->sa_family != AF_INET && mc_join_attr->addr->sa_family != AF_INET6)
		return cma_fail(EAFNOSUPPORT);
	c = to_cma_id(id);
	/* The kernel's rules: a bound or resolved UD id, with a device. */
	if ((c->state != CMA_BOUND && c->state != CMA_ADDR_RESOLVED) || !id->verbs ||
	    id->qp_type != IBV_QPT_UD || !is_multicast(mc_join_attr->addr))
		return cma_fail(EINVAL);
	idx = cma_gid_index(id->verbs, cma_gid(&id->route.addr.src_addr).raw);
	if (idx < 0)
		return cma_fail(ENODEV);
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return cma_fail(ENOMEM);
	mc->mgid = cma_gid(mc_join_attr->addr);
	mc->sendonly = mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	ud.ah_attr.is_global = 1;
	ud.ah_attr.port_num = id->port_num;
	ud.ah_attr.grh.dgid = mc->mgid;
	ud.ah_attr.grh.sgid_index = (uint8_t)idx;
	ud.ah_attr.grh.hop_limit = 64; /* IPV6_DEFAULT_HOPLIMIT, RoCEv2 */
	ud.ah_attr.grh.traffic_class = c->tos;
	pthread_mutex_lock(&lock);
	mc->next = c->mcs;
	c->mcs = mc;
	pthread_mutex_unlock(&lock);
	err = cma_join_event(id, &ud, context, !mc->sendonly);
	if (err) {
		rdma_leave_multicast(id, mc_join_attr->addr);
		return cma_fail(err);
	}
	return cma_complete(id);
}

/* rdma_join_multicast_ex as a full member. */
UROCE_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(id, &attr, context);
}

/*
 * 0, or -1 with errno: EINVAL (NULL), EADDRNOTAVAIL (@id has not joined @addr), or what
 * ibv_detach_mcast returns for the id's QP.
 */
UROCE_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c;
	struct cma_mc **pp, *mc = NULL;
	union ibv_gid mgid;
	int err = 0;

	if (!id || !addr)
		return cma_fail(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return cma_fail(EADDRNOTAVAIL);
	c = to_cma_id(id);
	mgid = cma_gid(addr);
	pthread_mutex_lock(&lock);
	for (pp = &c->mcs; *pp; pp = &(*pp)->next) {
		if (!memcmp(&(*pp)->mgid, &mgid, sizeof(mgid))) {
			mc = *pp;
			*pp = mc->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!mc)
		return cma_fail(EADDRNOTAVAIL);
	if (id->qp && !mc->sendonly)
		err = ibv_detach_mcast(id->qp, &mgid, 0);
	free(mc);
	return err ? cma_fail(err) : 0;
}

void cma_mc_release(struct cma_id *c)
{
	pthread_mutex_lock(&lock);
	while (c->mcs) {
		struct cma_mc *mc = c->mcs;

		c->mcs = mc->next;
		free(mc);
	}
	pthread_mutex_unlock(&lock);
}
