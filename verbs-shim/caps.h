/* SPDX-License-Identifier: MIT */
/*
 * Device capabilities uroce reports and enforces (ibv_query_device). Values follow rxe's
 * (rxe_param.h) where uroce has no reason to differ; the vendor IDs are rxe's "none" so that
 * perftest treats the device as generic (ABI.md §1.4 (e), §3.4). max_cqe is above rxe's
 * 32,767, as an RNIC's (mlx5's): libfabric's ofi_rxm asks its verbs MSG CQ for (tx + rx size) x
 * FI_UNIVERSE_SIZE entries, 262,144 by default, without looking at max_cqe (libfabric#10692); a
 * CQ's ring is allocated zeroed and touched only as far as it is used.
 */
#ifndef UROCE_VERBS_SHIM_CAPS_H
#define UROCE_VERBS_SHIM_CAPS_H

#include <infiniband/verbs.h>

#define UROCE_VENDOR_ID           0xffffff
#define UROCE_VENDOR_PART_ID      0
#define UROCE_MAX_QP              16384
#define UROCE_MAX_QP_WR           16384
#define UROCE_MAX_SGE             32
#define UROCE_MAX_INLINE_DATA     256
#define UROCE_MAX_CQ              16384
#define UROCE_MAX_CQE             ((1 << 22) - 1)
#define UROCE_MAX_MR              65536
#define UROCE_MAX_MW              UROCE_MAX_MR /* rxe reports as many windows as regions */
#define UROCE_MAX_PD              16384
#define UROCE_MAX_QP_RD_ATOM      128
#define UROCE_MAX_RES_RD_ATOM     0x3f000
#define UROCE_MAX_MCAST_GRP       8192
#define UROCE_MAX_MCAST_QP_ATTACH 56
#define UROCE_MAX_AH              65536
#define UROCE_MAX_SRQ             4096
#define UROCE_MAX_SRQ_WR          16384
#define UROCE_MAX_SRQ_SGE         32
#define UROCE_NUM_COMP_VECTORS    1
/* Local CA ACK delay exponent (4.096 us * 2^15 = 134 ms), rxe's RXE_LOCAL_CA_ACK_DELAY. */
#define UROCE_LOCAL_CA_ACK_DELAY 15
/* Completion timestamps are nanoseconds: the "HCA clock" runs at 1 GHz (given in kHz). */
#define UROCE_HCA_CORE_CLOCK_KHZ 1000000

#define UROCE_QPN_MULTICAST 0xffffff

/* ibv_device_attr.device_cap_flags, and the CAP_FLAGS of the device's RDMA netlink answer (the
 * kernel's IB_DEVICE_* bits, which these IBV_DEVICE_* values equal). */
#define UROCE_DEVICE_CAP_FLAGS                                                                     \
	(IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_PORT_ACTIVE_EVENT |      \
	 IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |           \
	 IBV_DEVICE_XRC | IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_MGT_EXTENSIONS |                  \
	 IBV_DEVICE_MEM_WINDOW_TYPE_2B)

/* The only port of a device (rxe has one, RXE_NUM_PORT). */
#define UROCE_PORT_NUM 1
/* P_Key table: the default full-membership P_Key only, IBA 10.9.1.2. */
#define UROCE_PKEY_TBL_LEN 1
#define UROCE_DEFAULT_PKEY 0xffff
/* RoCE ports: CM supported, IP-based GIDs (what the kernel reports for rxe). */
#define UROCE_PORT_CAP_FLAGS (IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS)
/*
 * The objects counted per device for RDMA_NLDEV_CMD_RES_GET, in the order the kernel's
 * fill_res_info() lists them (its names[] over enum rdma_restrack_type, less COUNTER).
 */
enum uroce_res {
	UROCE_RES_PD,
	UROCE_RES_CQ,
	UROCE_RES_QP,
	UROCE_RES_CM_ID,
	UROCE_RES_MR,
	UROCE_RES_CTX,
	UROCE_RES_SRQ,
	UROCE_RES_NUM
};

#endif
