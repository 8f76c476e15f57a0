// SPDX-License-Identifier: MIT
/*
 * Multicast attachment of UD QPs: the shim keeps each QP's groups (qp->mcast); delivering
 * datagrams sent to a group is the engine's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"

/* A multicast GID: IPv6 multicast (ff00::/8) or IPv4-mapped 224.0.0.0/4 (kernel
 * rdma_is_multicast_addr). */
static bool is_multicast(const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (gid->raw[0] == 0xff)
		return true;
	return !memcmp(gid->raw, v4mapped, sizeof(v4mapped)) && (gid->raw[12] & 0xf0) == 0xe0;
}

static int find(const struct uroce_qp *qp, const union ibv_gid *gid)
{
	for (uint32_t i = 0; i < qp->nmcast; i++)
		if (!memcmp(&qp->mcast[i], gid, sizeof(*gid)))
			return i;
	return -1;
}

/* 0, or EINVAL (not a UD QP, not a multicast GID), ENOMEM (too many groups). The LID is
 * ignored: there are no LIDs on Ethernet. */
UROCE_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	union ibv_gid *groups;
	int err = 0;

	(void)lid;
	if (ibqp->qp_type != IBV_QPT_UD || !is_multicast(gid))
		return EINVAL;
	pthread_mutex_lock(&qp->lock);
	if (find(qp, gid) >= 0) {
		err = 0; /* attaching twice is not an error (as the kernel) */
	} else if (qp->nmcast == UROCE_MAX_MCAST_QP_ATTACH) {
		err = ENOMEM;
	} else {
		groups = realloc(qp->mcast, (qp->nmcast + 1) * sizeof(*groups));
		if (!groups) {
			err = ENOMEM;
		} else {
			groups[qp->nmcast++] = *gid;
			qp->mcast = groups;
		}
	}
	pthread_mutex_unlock(&qp->lock);
	return err;
}

/* 0, or EINVAL when the QP is not attached to GID. */
UROCE_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	int i, err = 0;

	(void)lid;
	pthread_mutex_lock(&qp->lock);
	i = find(qp, gid);
	if (i < 0) {
		err = EINVAL;
	} else {
		qp->mcast[i] = qp->mcast[qp->nmcast - 1];
		qp->nmcast--;
	}
	pthread_mutex_unlock(&qp->lock);
	return err;
}
