// SPDX-License-Identifier: MIT
/*
 * Fork support. rdma-core marks registered memory MADV_DONTFORK so a child's copy-on-write
 * cannot move pages a NIC is DMA-ing to. uroce never pins pages: the engine reaches registered
 * memory through the process's own mappings, so fork needs no preparation.
 */
#include <infiniband/verbs.h>
#include <stdbool.h>

#include "verbs-shim/abi_extra.h"
#include "verbs-shim/export.h"

UROCE_EXPORT int ibv_fork_init(void)
{
	return 0;
}

UROCE_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

UROCE_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

UROCE_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
