/* SPDX-License-Identifier: MIT */
/* Memory regions: the key lookup the data path uses (rkey of a request, lkey of an SGE). */
#ifndef UROCE_VERBS_SHIM_MR_H
#define UROCE_VERBS_SHIM_MR_H

#include <stdint.h>

#include "verbs-shim/objects.h"

/*
 * The MR whose lkey/rkey is KEY, or NULL. The pointer stays valid until the application
 * deregisters the MR; the data path must not use an MR across a deregistration (IBA 10.6.3.1
 * leaves I/O to a deregistered region undefined; uroce's engine has to serialize).
 */
struct uroce_mr *uroce_mr_lookup(uint32_t key);

#endif
