/* SPDX-License-Identifier: MIT */
/*
 * Prototypes of exported libibverbs functions that <infiniband/verbs.h> does not declare:
 * rdma-core keeps them in its uninstalled driver.h, marshall.h and sysfs.h (rdma-core v44).
 * The types named only through pointers stay incomplete: uroce never looks inside them.
 */
#ifndef UROCE_VERBS_SHIM_ABI_EXTRA_H
#define UROCE_VERBS_SHIM_ABI_EXTRA_H

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* rdma-core driver.h: the GID type as sysfs spells it (ABI.md §0 item 7). */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

/*
 * IBVERBS_1.0 / 1.1 helpers.
 * ibv_get_sysfs_path: the sysfs mount point ("/sys"); never NULL.
 * ibv_read_sysfs_file: reads DIR/FILE into BUF (NUL-terminated, trailing newline removed);
 *   returns the length, or -1 with errno (EINVAL for ".." in the path or a result that does not
 *   fit, ENOENT for a file of a uroce device that does not exist, else open/read's errno).
 * ibv_copy_*: convert between the kernel's and the verbs layouts; they cannot fail.
 * ibv_dontfork_range/ibv_dofork_range: 0 (uroce never pins memory; ibv_is_fork_initialized
 *   reports IBV_FORK_UNNEEDED).
 */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/*
 * IBVERBS_PRIVATE_<N>: ibv_query_gid_type writes the sysfs enum; returns 0, or -1 with errno
 * EINVAL (bad port or index). An empty slot reads as IB/RoCE v1, as rdma-core does.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type);

#endif
