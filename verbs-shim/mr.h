/* SPDX-License-Identifier: MIT */
/* Memory regions: the key lookup the data path uses (rkey of a request, lkey of an SGE). */
#ifndef UROCE_VERBS_SHIM_MR_H
#define UROCE_VERBS_SHIM_MR_H

#include <stdint.h>

#include "verbs-shim/objects.h"

/*
 * The MR whose lkey/rkey is KEY, or NULL; no lock taken. The caller holds the lock of the QP
 * the access is for, and may use the MR and the memory it names until it releases it: an MR
 * is taken out of the data path's sight before it changes or goes, and ibv_dereg_mr and
 * ibv_rereg_mr then wait until every QP lock held meanwhile has been released
 * (uroce_engine_quiesce). So no packet writes into memory the application has taken back, as
 * on an RNIC (IBA 10.6.3.1: a deregistered region is no longer accessible once the verb
 * returns), and none sees an MR half changed.
 */
struct uroce_mr *uroce_mr_lookup(uint32_t key);

/* An 8-bit key part that changes from one key to the next, like a hardware key's. */
uint8_t uroce_key_byte(void);

#endif
