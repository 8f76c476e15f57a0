/* SPDX-License-Identifier: MIT */
/*
 * QP number -> QP, for received packets. QP numbers come from the host-wide ranges of
 * fabric/net.h, so they are sparse: an open-addressing hash (linear probing, backward-shift
 * deletion) under a read-write lock. The receive path holds the read lock while it works on a
 * QP, so removing a QP (write lock) waits until no packet is using it.
 */
#ifndef UROCE_VERBS_SHIM_QPN_MAP_H
#define UROCE_VERBS_SHIM_QPN_MAP_H

#include <stdint.h>

struct uroce_qp;

/* Add @qp under @qpn: 0, or ENOSPC (the map holds UROCE_MAX_QP QPs). */
int uroce_qpn_map_add(uint32_t qpn, struct uroce_qp *qp);

/* Remove @qpn; returns once no reader holds the map. */
void uroce_qpn_map_remove(uint32_t qpn);

/* Read side: lock, look up (NULL if absent) and unlock. The QP stays valid until unlock. */
void uroce_qpn_map_read_lock(void);
struct uroce_qp *uroce_qpn_map_find(uint32_t qpn);
void uroce_qpn_map_read_unlock(void);

/* Call @fn on every QP of the map, under the read lock. */
void uroce_qpn_map_for_each(void (*fn)(struct uroce_qp *qp, void *arg), void *arg);

#endif
