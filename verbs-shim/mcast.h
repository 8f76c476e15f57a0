/* SPDX-License-Identifier: MIT */
/*
 * Multicast attachments of UD QPs (ibv_attach_mcast): which QPs of this process belong to which
 * group, for the engine to deliver a datagram sent to a group to each of them (IBA 10.5.2.3).
 */
#ifndef UROCE_VERBS_SHIM_MCAST_H
#define UROCE_VERBS_SHIM_MCAST_H

#include <stdint.h>

struct uroce_qp;

/*
 * The numbers of this process's QPs attached to @group (a GID), at most @max of them into
 * @qpn. Returns how many. Any thread (the engine's receive path: uroce_engine_set_mcast).
 */
unsigned int uroce_mcast_members(const uint8_t group[16], uint32_t *qpn, unsigned int max);

/* Detach @qp from every group (it is being destroyed: uroce_engine_set_mcast). */
void uroce_mcast_detach_all(struct uroce_qp *qp);

#endif
