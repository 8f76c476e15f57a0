// SPDX-License-Identifier: MIT
/* Protection domains. */
#include <errno.h>
#include <stdlib.h>

#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"

UROCE_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	static atomic_uint next_handle;
	struct uroce_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.context = context;
	pd->pd.handle = atomic_fetch_add(&next_handle, 1);
	pd->res_tag = uroce_res_add(context, UROCE_RES_PD);
	return &pd->pd;
}

UROCE_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct uroce_pd *pd = to_upd(ibpd);

	/* The kernel refuses while MRs, QPs, SRQs or AHs still use the PD. */
	if (atomic_load(&pd->usecnt))
		return EBUSY;
	uroce_res_del(ibpd->context, UROCE_RES_PD, pd->res_tag);
	free(pd);
	return 0;
}
