/* SPDX-License-Identifier: MIT */
/* Port 1 of a uroce device: its attributes as ibv_query_port reports them (ABI.md §2.4). */
#ifndef UROCE_VERBS_SHIM_PORT_H
#define UROCE_VERBS_SHIM_PORT_H

#include <infiniband/verbs.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/device.h"

/* Attributes of port 1 now (device lock taken inside). */
void uroce_port_attr(struct uroce_device *dev, struct ibv_port_attr *attr);

#endif
