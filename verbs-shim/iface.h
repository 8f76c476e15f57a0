/* SPDX-License-Identifier: MIT */
/*
 * The network interfaces uroce makes devices of, read from the kernel (getifaddrs, SIOCGIFMTU):
 * one device per interface that is up with an IPv4 or IPv6 address, as rxe binds one device to
 * one netdev. What a device reports that follows from its interface -- its GIDs, node GUID,
 * port state and MTU -- is derived here, so that the verbs (device.c, port.c) and the kernel's
 * view of the devices (sysview.h, liburoce-preload.so) agree.
 */
#ifndef UROCE_VERBS_SHIM_IFACE_H
#define UROCE_VERBS_SHIM_IFACE_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GID table length of every port (fixed, like a hardware table; ABI.md §2.4). */
#define UROCE_GID_TBL_LEN 16
/* Device names are "uroce_" + interface name. */
#define UROCE_DEVICE_PREFIX "uroce_"

struct uroce_gid_slot {
	union ibv_gid gid;
	bool valid;
};

/* ibv_port_attr.active_width and active_speed: the kernel's enum ib_port_width and
 * ib_port_speed (IBA 14.2.5.6, PortInfo), which rdma-core's headers do not name. */
enum {
	UROCE_WIDTH_1X = 1,
	UROCE_WIDTH_4X = 2,
	UROCE_WIDTH_8X = 4,
	UROCE_WIDTH_12X = 8,
};
enum {
	UROCE_SPEED_SDR = 1,
	UROCE_SPEED_DDR = 2,
	UROCE_SPEED_QDR = 4,
	UROCE_SPEED_FDR10 = 8,
	UROCE_SPEED_FDR = 16,
	UROCE_SPEED_EDR = 32,
};

struct uroce_iface {
	char name[IF_NAMESIZE];
	unsigned int flags;   /* IFF_* */
	unsigned int ifindex; /* 0 if the interface went away while it was read */
	int mtu;              /* bytes; 1500 if the kernel would not say */
	uint8_t width, speed; /* the port's UROCE_WIDTH_* and UROCE_SPEED_* (ib_get_eth_speed) */
	uint8_t mac[6];
	bool has_mac;
	int ngids; /* link-local IPv6 first, then the others in the kernel's order */
	union ibv_gid gids[UROCE_GID_TBL_LEN];
};

/*
 * Every interface with an address, in the kernel's (getifaddrs) order. On success *out is a
 * malloc'ed array of *n entries. Returns 0 or an errno value: getifaddrs' errno, or ENOMEM.
 */
int uroce_ifaces_read(struct uroce_iface **out, int *n);

/* True if @f becomes a uroce device: up, with at least one address. */
bool uroce_iface_is_device(const struct uroce_iface *f);

/*
 * Node GUID, network order: the EUI-64 of the MAC address, as rxe derives it; interfaces
 * without a MAC (lo) use 02:00:00 and the low 24 bits of the interface index.
 */
__be64 uroce_iface_guid(const struct uroce_iface *f);

/*
 * The sysfs folder of @ifname's parent device into @out (@size bytes): where
 * /sys/class/net/<ifname>/device leads ("/sys/devices/pci0000:00/..."), or "" for an interface
 * without one (lo, veth, bridges).
 */
void uroce_iface_parent(const char *ifname, char *out, size_t size);

/* Active MTU of a port (enum ibv_mtu) for an interface MTU: see iface.c. */
enum ibv_mtu uroce_active_mtu(int ifmtu);

/* The port follows its interface's operational state, as rxe's does (IFF_RUNNING). */
static inline enum ibv_port_state uroce_iface_port_state(unsigned int ifflags)
{
	return ifflags & IFF_RUNNING ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
}

/* IBA 14.2.5.6 PortPhysicalState: 5 LinkUp, 3 Disabled. */
static inline uint8_t uroce_iface_phys_state(unsigned int ifflags)
{
	return ifflags & IFF_RUNNING ? 5 : 3;
}

#endif
