// SPDX-License-Identifier: MIT
/*
 * Verbs uroce does not implement, each failing the way its man page says an unsupported verb
 * fails. This is the one list of them (docs/UNSUPPORTED.md mirrors it).
 */
/* clang-format off */
/*
 * | verb                                   | how it reaches uroce        | result                 |
 * |----------------------------------------|-----------------------------|------------------------|
 * | ibv_wr_send_tso, ibv_wr_atomic_write   | ibv_qp_ex (qp_ex.c)         | ibv_wr_complete        |
 * |                                        |                             |   returns EOPNOTSUPP   |
 * | ibv_import_device, _pd, _mr, _dm       | exported                    | NULL, errno EOPNOTSUPP |
 * | ibv_unimport_pd, _mr, _dm              | exported                    | nothing to release     |
 * | ibv_query_ece, ibv_set_ece             | exported                    | EOPNOTSUPP             |
 * | ibv_reg_dmabuf_mr                      | exported                    | NULL, errno EOPNOTSUPP |
 * | ibv_resolve_eth_l2_from_gid            | exported                    | -EOPNOTSUPP, errno too |
 * | ibv_open_qp, ibv_modify_cq,            | verbs_context op left NULL: | the inline verb fails  |
 * |   ibv_post_srq_ops,                    |   verbs.h answers           |   with EOPNOTSUPP      |
 * |   ibv_create/modify/destroy_wq,        |                             |   (NULL + errno, or    |
 * |   ibv_create/destroy_rwq_ind_table,    |                             |   the errno value)     |
 * |   ibv_alloc_td, ibv_dealloc_td,        |                             |                        |
 * |   ibv_alloc_parent_domain,             |                             |                        |
 * |   ibv_advise_mr, ibv_alloc_null_mr,    |                             |                        |
 * |   ibv_alloc_dm, ibv_free_dm,           |                             |                        |
 * |   ibv_reg_dm_mr,                       |                             |                        |
 * |   ibv_create/destroy/read_counters,    |                             |                        |
 * |   ibv_attach_counters_point_flow,      |                             |                        |
 * |   ibv_create/destroy_flow,             |                             |                        |
 * |   ibv_create/modify/destroy_           |                             |                        |
 * |     flow_action_esp,                   |                             |                        |
 * |   ibv_modify_qp_rate_limit,            |                             |                        |
 * |   ibv_query_rt_values_ex               |                             |                        |
 * | RAW_PACKET QPs; TM SRQs;               | create_qp(_ex),             | NULL, errno EOPNOTSUPP |
 * |   QP create flags;                     |                             |                        |
 * |   CQ VLAN/flow-tag/TM fields;          |   create_srq_ex,            |                        |
 * |                                        |   create_cq_ex,             |                        |
 * |   on-demand paging MRs                 |   ibv_reg_mr*               |                        |
 * | IBVERBS_PRIVATE_<N> provider interface | exported (private.c)        | see private.c          |
 */
/* clang-format on */
#include <errno.h>

#include <infiniband/verbs.h>

#include "verbs-shim/export.h"

/* Sharing objects between processes through the kernel's uverbs file: no kernel objects. */
UROCE_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

UROCE_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

UROCE_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd; /* no PD can have been imported */
}

UROCE_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

UROCE_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr; /* no MR can have been imported */
}

UROCE_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

UROCE_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm; /* no device memory can have been imported */
}

/* Enhanced connection establishment: no ECE options to offer. */
UROCE_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

UROCE_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/* dma-buf memory belongs to a device driver; uroce reaches only process memory. */
UROCE_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					      uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* uroce sends over UDP sockets: the kernel resolves layer 2, nobody needs the MAC here. */
UROCE_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					     uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP; /* this verb returns negative errno values */
}
