/* SPDX-License-Identifier: MIT */
/*
 * uroce devices: one per network interface that is up and has an IPv4 or IPv6 address, as rxe
 * binds one device to one netdev (ARCHITECTURE.md "Devices, GIDs ..."). Each has one port whose
 * GID table holds the interface's addresses as RoCE v2 GIDs.
 *
 * Devices live in a process-wide registry and are never freed: an ibv_device pointer handed out
 * once stays valid (rdma-core keeps devices alive while a context uses them). A device whose
 * interface went away stays usable by open contexts but is no longer listed.
 */
#ifndef UROCE_VERBS_SHIM_DEVICE_H
#define UROCE_VERBS_SHIM_DEVICE_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/container.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/export.h"
#include "verbs-shim/iface.h"

/* Where a device's synthetic sysfs folders are (ibv_device.ibdev_path, dev_path; sysfs.c). */
#define UROCE_SYSFS_ROOT    "/sys"
#define UROCE_IBDEV_CLASS   UROCE_SYSFS_ROOT "/class/infiniband/"
#define UROCE_UVERBS_CLASS  UROCE_SYSFS_ROOT "/class/infiniband_verbs/"
#define UROCE_UVERBS_PREFIX "uverbs"

/* A snapshot of what the port reports, refreshed by each scan. */
struct uroce_port_state {
	unsigned int ifflags; /* IFF_* of the interface */
	int ifmtu;            /* interface MTU in bytes */
	uint8_t width, speed; /* active width and speed (uroce_iface) */
	struct uroce_gid_slot gids[UROCE_GID_TBL_LEN];
};

struct uroce_device {
	struct ibv_device ibdev; /* first: applications hold &ibdev */
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	uint32_t index; /* ibv_get_device_index() */
	__be64 guid;    /* node GUID, network order */
	bool loopback;
	pthread_mutex_t lock; /* guards port and listed */
	struct uroce_port_state port;
	bool listed; /* present in the last scan */
	struct uroce_device *next;
};

static inline struct uroce_device *to_udev(struct ibv_device *ibdev)
{
	return uroce_container_of(ibdev, struct uroce_device, ibdev);
}

/*
 * Scan the interfaces (getifaddrs) and update the registry. On success *devs is a malloc'ed,
 * NULL-terminated array of the listed devices (non-loopback first, then by interface index)
 * and *n their number. Returns 0 or an errno value (ENOMEM, or getifaddrs' errno).
 */
int uroce_devices_scan(struct uroce_device ***devs, int *n);

/* The registered device named NAME (listed or not), or NULL. */
struct uroce_device *uroce_device_by_name(const char *name);

/* Copy of the port snapshot, taken under the device lock. */
void uroce_device_port(struct uroce_device *dev, struct uroce_port_state *out);

/*
 * GID at INDEX: 0 and *gid, ENODATA for an empty slot, EINVAL for INDEX >= UROCE_GID_TBL_LEN.
 */
int uroce_device_gid(struct uroce_device *dev, uint32_t index, union ibv_gid *gid);

/* Index of GID in the table, or -1 when it is not there. */
int uroce_device_find_gid(struct uroce_device *dev, const union ibv_gid *gid);

/*
 * An object of kind @r was made on @context's device: count it in the process's resource
 * registry (resreg.h), which RDMA netlink's RES_GET reads. Returns the tag to give
 * uroce_res_del, 0 when it is not counted (never an error: a verb does not fail for it).
 * Exported at UROCE_PRIVATE_1 for librdmacm's ids (UROCE_RES_CM_ID); context.c.
 */
UROCE_EXPORT uint32_t uroce_res_add(struct ibv_context *context, enum uroce_res r);

/* The object of kind @r counted with @tag on @context's device is gone. */
UROCE_EXPORT void uroce_res_del(struct ibv_context *context, enum uroce_res r, uint32_t tag);

#endif
