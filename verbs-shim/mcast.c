// SPDX-License-Identifier: MIT
/*
 * Multicast attachment of UD QPs (mcast.h): one table of (group, QP) pairs for the process,
 * which the engine reads for each datagram sent to a group; the first QP of the process to
 * attach to a group on an interface makes the engine take the IP membership there, the last
 * to leave drops it.
 */
#include "verbs-shim/mcast.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ipudp.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"

struct member {
	union ibv_gid group;
	uint32_t qpn;
};

static struct {
	pthread_rwlock_t lock;
	struct member *m;
	unsigned int n, cap;
} table = {.lock = PTHREAD_RWLOCK_INITIALIZER};

/* Index of (@group, @qpn), or -1. Lock held. */
static int find(const union ibv_gid *group, uint32_t qpn)
{
	for (unsigned int i = 0; i < table.n; i++)
		if (table.m[i].qpn == qpn && !memcmp(&table.m[i].group, group, sizeof(*group)))
			return (int)i;
	return -1;
}

/* QPs attached to @group. Lock held. */
static unsigned int members_of(const union ibv_gid *group)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < table.n; i++)
		n += !memcmp(&table.m[i].group, group, sizeof(*group));
	return n;
}

unsigned int uroce_mcast_members(const uint8_t group[16], uint32_t *qpn, unsigned int max)
{
	unsigned int n = 0;

	pthread_rwlock_rdlock(&table.lock);
	for (unsigned int i = 0; i < table.n && n < max; i++)
		if (!memcmp(table.m[i].group.raw, group, 16))
			qpn[n++] = table.m[i].qpn;
	pthread_rwlock_unlock(&table.lock);
	return n;
}

/* Remove entry @i. Lock held. */
static void remove_at(unsigned int i)
{
	table.m[i] = table.m[--table.n];
}

/*
 * 0, or EINVAL (not a UD QP, not a multicast GID: IPv6 ff00::/8 or IPv4-mapped 224.0.0.0/4, as
 * the kernel's rdma_is_multicast_addr), ENOMEM (the group has UROCE_MAX_MCAST_QP_ATTACH QPs of
 * this process, max_mcast_qp_attach, or no memory). The LID is ignored: there are no LIDs on
 * Ethernet. Attaching twice is not an error (as the kernel).
 */
UROCE_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct uroce_qp *qp = to_uqp(ibqp);
	int err = 0;

	(void)lid;
	if (ibqp->qp_type != IBV_QPT_UD || !roce_gid_is_multicast(gid->raw))
		return EINVAL;
	uroce_engine_set_mcast(uroce_mcast_members, uroce_mcast_detach_all);
	pthread_rwlock_wrlock(&table.lock);
	if (find(gid, ibqp->qp_num) >= 0) {
		pthread_rwlock_unlock(&table.lock);
		return 0;
	}
	if (members_of(gid) == UROCE_MAX_MCAST_QP_ATTACH) {
		err = ENOMEM;
	} else if (table.n == table.cap) {
		unsigned int cap = table.cap ? 2 * table.cap : 16;
		struct member *m = realloc(table.m, cap * sizeof(*m));

		if (m) {
			table.m = m;
			table.cap = cap;
		} else {
			err = ENOMEM;
		}
	}
	if (!err)
		table.m[table.n++] = (struct member){.group = *gid, .qpn = ibqp->qp_num};
	pthread_rwlock_unlock(&table.lock);
	if (!err)
		uroce_engine_mcast(qp, gid, true);
	return err;
}

/* 0, or EINVAL when the QP is not attached to GID. */
UROCE_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	int i;

	(void)lid;
	pthread_rwlock_wrlock(&table.lock);
	i = find(gid, ibqp->qp_num);
	if (i >= 0)
		remove_at((unsigned int)i);
	pthread_rwlock_unlock(&table.lock);
	if (i < 0)
		return EINVAL;
	uroce_engine_mcast(to_uqp(ibqp), gid, false);
	return 0;
}

void uroce_mcast_detach_all(struct uroce_qp *qp)
{
	uint32_t qpn = qp->qpx.qp_base.qp_num;

	for (;;) {
		union ibv_gid group;
		bool found = false;

		pthread_rwlock_wrlock(&table.lock);
		for (unsigned int i = 0; i < table.n && !found; i++) {
			if (table.m[i].qpn == qpn) {
				group = table.m[i].group;
				remove_at(i);
				found = true;
			}
		}
		pthread_rwlock_unlock(&table.lock);
		if (!found)
			return;
		uroce_engine_mcast(qp, &group, false);
	}
}
