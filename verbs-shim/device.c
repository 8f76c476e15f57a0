// SPDX-License-Identifier: MIT
/* Device discovery: one uroce device per interface (device.h). */
#include "verbs-shim/device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_device *registry;
static uint32_t next_index;

/* Fill dev->ibdev.dev_name, dev_path and ibdev_path from dev->ibdev.name and dev->index. */
static void uroce_sysfs_device_paths(struct uroce_device *dev)
{
	struct ibv_device *ib = &dev->ibdev;

	snprintf(ib->dev_name, sizeof(ib->dev_name), UROCE_UVERBS_PREFIX "%u", dev->index);
	snprintf(ib->dev_path, sizeof(ib->dev_path), UROCE_UVERBS_CLASS "%s", ib->dev_name);
	snprintf(ib->ibdev_path, sizeof(ib->ibdev_path), UROCE_IBDEV_CLASS "%s", ib->name);
}

static struct uroce_device *device_new(const struct uroce_iface *f)
{
	struct uroce_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	snprintf(dev->ifname, sizeof(dev->ifname), "%s", f->name);
	dev->ifindex = f->ifindex;
	dev->index = next_index++;
	dev->guid = uroce_iface_guid(f);
	dev->loopback = f->flags & IFF_LOOPBACK;
	pthread_mutex_init(&dev->lock, NULL);
	dev->ibdev.node_type = IBV_NODE_CA;
	/* RoCE reports the IB transport (ABI.md §3.1: perftest treats iWARP differently). */
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), UROCE_DEVICE_PREFIX "%s", f->name);
	uroce_sysfs_device_paths(dev);
	return dev;
}

/*
 * Keep each GID's slot stable across scans, as the kernel's GID cache does: a vanished
 * address frees its slot, a new one takes the first free slot.
 */
static void port_update_gids(struct uroce_port_state *port, const struct uroce_iface *f)
{
	for (int s = 0; s < UROCE_GID_TBL_LEN; s++) {
		bool keep = false;

		for (int g = 0; g < f->ngids && port->gids[s].valid; g++)
			keep |= !memcmp(&port->gids[s].gid, &f->gids[g], sizeof(union ibv_gid));
		if (!keep)
			memset(&port->gids[s], 0, sizeof(port->gids[s]));
	}
	for (int g = 0; g < f->ngids; g++) {
		int free_slot = -1;
		bool present = false;

		for (int s = 0; s < UROCE_GID_TBL_LEN; s++) {
			if (!port->gids[s].valid) {
				if (free_slot < 0)
					free_slot = s;
			} else if (!memcmp(&port->gids[s].gid, &f->gids[g], sizeof(f->gids[g]))) {
				present = true;
			}
		}
		if (!present && free_slot >= 0) {
			port->gids[free_slot].gid = f->gids[g];
			port->gids[free_slot].valid = true;
		}
	}
}

static int device_order(const void *a, const void *b)
{
	const struct uroce_device *x = *(struct uroce_device *const *)a;
	const struct uroce_device *y = *(struct uroce_device *const *)b;

	if (x->loopback != y->loopback)
		return x->loopback ? 1 : -1;
	return x->ifindex < y->ifindex ? -1 : x->ifindex > y->ifindex;
}

int uroce_devices_scan(struct uroce_device ***devs, int *n)
{
	struct uroce_device **list;
	struct uroce_iface *ifs = NULL;
	int nifs = 0, count = 0, err;

	err = uroce_ifaces_read(&ifs, &nifs);
	if (err)
		return err;
	list = calloc(nifs + 1, sizeof(*list));
	if (!list) {
		free(ifs);
		return ENOMEM;
	}
	pthread_mutex_lock(&registry_lock);
	for (struct uroce_device *dev = registry; dev; dev = dev->next) {
		pthread_mutex_lock(&dev->lock);
		dev->listed = false;
		pthread_mutex_unlock(&dev->lock);
	}
	for (int i = 0; i < nifs; i++) {
		const struct uroce_iface *f = &ifs[i];
		struct uroce_device *dev;

		if (!uroce_iface_is_device(f))
			continue;
		for (dev = registry; dev && strcmp(dev->ifname, f->name); dev = dev->next)
			;
		if (!dev) {
			dev = device_new(f);
			if (!dev) {
				err = ENOMEM;
				break;
			}
			dev->next = registry;
			registry = dev;
		}
		pthread_mutex_lock(&dev->lock);
		dev->port.ifflags = f->flags;
		dev->port.ifmtu = f->mtu;
		dev->port.width = f->width;
		dev->port.speed = f->speed;
		port_update_gids(&dev->port, f);
		dev->listed = true;
		pthread_mutex_unlock(&dev->lock);
		list[count++] = dev;
	}
	pthread_mutex_unlock(&registry_lock);
	free(ifs);
	if (err) {
		free(list);
		return err;
	}
	qsort(list, count, sizeof(*list), device_order);
	*devs = list;
	*n = count;
	return 0;
}

struct uroce_device *uroce_device_by_name(const char *name)
{
	struct uroce_device *dev;

	pthread_mutex_lock(&registry_lock);
	for (dev = registry; dev && strcmp(dev->ibdev.name, name); dev = dev->next)
		;
	pthread_mutex_unlock(&registry_lock);
	return dev;
}

void uroce_device_port(struct uroce_device *dev, struct uroce_port_state *out)
{
	pthread_mutex_lock(&dev->lock);
	*out = dev->port;
	pthread_mutex_unlock(&dev->lock);
}

int uroce_device_gid(struct uroce_device *dev, uint32_t index, union ibv_gid *gid)
{
	int ret = 0;

	if (index >= UROCE_GID_TBL_LEN)
		return EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->port.gids[index].valid)
		*gid = dev->port.gids[index].gid;
	else
		ret = ENODATA;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int uroce_device_find_gid(struct uroce_device *dev, const union ibv_gid *gid)
{
	int found = -1;

	pthread_mutex_lock(&dev->lock);
	for (int s = 0; s < UROCE_GID_TBL_LEN && found < 0; s++)
		if (dev->port.gids[s].valid && !memcmp(&dev->port.gids[s].gid, gid, sizeof(*gid)))
			found = s;
	pthread_mutex_unlock(&dev->lock);
	return found;
}
