// SPDX-License-Identifier: MIT
/* Port attributes of a uroce device (port.h). */
#include "verbs-shim/port.h"

#include <string.h>

void uroce_port_attr(struct uroce_device *dev, struct ibv_port_attr *attr)
{
	struct uroce_port_state port;

	uroce_device_port(dev, &port);
	memset(attr, 0, sizeof(*attr));
	attr->state = uroce_iface_port_state(port.ifflags);
	attr->phys_state = uroce_iface_phys_state(port.ifflags);
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = uroce_active_mtu(port.ifmtu);
	attr->gid_tbl_len = UROCE_GID_TBL_LEN;
	attr->port_cap_flags = UROCE_PORT_CAP_FLAGS;
	attr->max_msg_sz = 1u << 31; /* IBA: at most 2^31 bytes per message */
	attr->pkey_tbl_len = UROCE_PKEY_TBL_LEN;
	attr->lid = 0; /* no LIDs on Ethernet */
	attr->sm_lid = 0;
	attr->max_vl_num = 1;
	attr->active_width = port.width;
	attr->active_speed = port.speed;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
}
