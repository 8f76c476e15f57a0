/* SPDX-License-Identifier: MIT */
/* Memory regions: the key lookup the data path uses (rkey of a request, lkey of an SGE). */
#ifndef UROCE_VERBS_SHIM_MR_H
#define UROCE_VERBS_SHIM_MR_H

#include <stdbool.h>
#include <stdint.h>

#include "verbs-shim/objects.h"

/* What the data path needs of an MR, copied at once (ibv_rereg_mr may change it). */
struct uroce_mr_view {
	struct uroce_pd *pd;
	uint8_t *addr;   /* where byte @iova of the region is in this process */
	uint64_t iova;   /* address the peer names byte 0 with (0 for ZERO_BASED) */
	uint64_t length; /* bytes */
	int access;      /* IBV_ACCESS_* */
};

/*
 * Copy the MR whose lkey/rkey is KEY into *@view: true, or false if no MR has that key. The
 * caller holds the lock of the QP the access is for, and may use the memory the view names
 * until it releases it: ibv_dereg_mr and ibv_rereg_mr return only once every QP lock taken
 * before they changed the MR has been released (uroce_engine_quiesce), so no packet writes
 * into memory the application has taken back, as on an RNIC (IBA 10.6.3.1: a deregistered
 * region is no longer accessible once the verb returns).
 */
bool uroce_mr_lookup(uint32_t key, struct uroce_mr_view *view);

#endif
