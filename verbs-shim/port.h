/* SPDX-License-Identifier: MIT */
/* Port 1 of a uroce device: its attributes as ibv_query_port reports them (ABI.md §2.4). */
#ifndef UROCE_VERBS_SHIM_PORT_H
#define UROCE_VERBS_SHIM_PORT_H

#include <infiniband/verbs.h>

#include "verbs-shim/device.h"

/* The only port of a device (rxe has one, RXE_NUM_PORT). */
#define UROCE_PORT_NUM 1
/* P_Key table: the default full-membership P_Key only, IBA 10.9.1.2. */
#define UROCE_PKEY_TBL_LEN 1
#define UROCE_DEFAULT_PKEY 0xffff

/* Attributes of port 1 now (device lock taken inside). */
void uroce_port_attr(struct uroce_device *dev, struct ibv_port_attr *attr);

#endif
