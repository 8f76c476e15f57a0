// SPDX-License-Identifier: MIT
/* Port attributes of a uroce device (port.h). */
#include "verbs-shim/port.h"

#include <string.h>

void uroce_port_attr(struct uroce_device *dev, struct ibv_port_attr *attr)
{
	struct uroce_port_state port;
	bool running;

	uroce_device_port(dev, &port);
	running = port.ifflags & IFF_RUNNING;
	memset(attr, 0, sizeof(*attr));
	/* The port follows its interface's operational state, as rxe's does. */
	attr->state = running ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->phys_state = running ? 5 /* LinkUp */ : 3 /* Disabled */;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = uroce_active_mtu(port.ifmtu);
	attr->gid_tbl_len = UROCE_GID_TBL_LEN;
	/* RoCE ports: CM supported, IP-based GIDs (what the kernel reports for rxe). */
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = 1u << 31; /* IBA: at most 2^31 bytes per message */
	attr->pkey_tbl_len = UROCE_PKEY_TBL_LEN;
	attr->lid = 0; /* no LIDs on Ethernet */
	attr->sm_lid = 0;
	attr->max_vl_num = 1;
	/* Nominal 1X 25 Gb/s: uroce does not measure the interface's speed. */
	attr->active_width = 1;  /* 1X */
	attr->active_speed = 32; /* EDR, 25.78 Gb/s */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
}
