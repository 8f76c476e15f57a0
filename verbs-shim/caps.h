/* SPDX-License-Identifier: MIT */
/*
 * Device capabilities uroce reports and enforces (ibv_query_device). Values follow rxe's
 * (rxe_param.h) where uroce has no reason to differ; the vendor IDs are rxe's "none" so that
 * perftest treats the device as generic (ABI.md §1.4 (e), §3.4).
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
#define UROCE_MAX_CQE             ((1 << 15) - 1)
#define UROCE_MAX_MR              65536
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

#endif
