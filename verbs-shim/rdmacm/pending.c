// SPDX-License-Identifier: MIT
/*
 * The rdma_cm calls not built yet (cma.h): each says so on stderr, naming itself, and
 * fails with ENOSYS, so that a program stops with a clear message instead of misbehaving. They
 * come with the IB CM on the fabric (issue "Connection manager"); docs/UNSUPPORTED.md lists them.
 */
#include <errno.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
#include <stdlib.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

int cma_not_yet(const char *call)
{
	fprintf(stderr, "uroce: %s: not implemented yet in uroce's rdma_cm (docs/UNSUPPORTED.md)\n",
		call);
	errno = ENOSYS;
	return -1;
}

UROCE_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
				 uint8_t private_data_len)
{
	(void)id;
	(void)private_data;
	(void)private_data_len;
	return cma_not_yet("rdma_reject_ece");
}

UROCE_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return cma_not_yet("rdma_set_local_ece");
}

UROCE_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return cma_not_yet("rdma_get_remote_ece");
}
