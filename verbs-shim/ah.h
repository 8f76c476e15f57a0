/* SPDX-License-Identifier: MIT */
/* Address vectors: the check shared by ibv_create_ah and ibv_modify_qp(IBV_QP_AV). */
#ifndef UROCE_VERBS_SHIM_AH_H
#define UROCE_VERBS_SHIM_AH_H

#include <infiniband/verbs.h>

#include "verbs-shim/device.h"

/*
 * 0 if ATTR can address a peer from DEV's port, else EINVAL: port_num must be 1, and RoCE
 * needs a GRH (is_global) whose sgid_index names a GID in the table (the kernel's
 * rdma_check_ah_attr / rdma_ah_attr type RoCE).
 */
int uroce_ah_attr_check(struct uroce_device *dev, const struct ibv_ah_attr *attr);

#endif
