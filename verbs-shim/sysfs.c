// SPDX-License-Identifier: MIT
/*
 * The sysfs helpers of libibverbs (ABI.md §3.6): ibv_device.ibdev_path and dev_path (device.c)
 * name folders of the kernel's view of uroce devices (sysview.h), which
 * ibv_read_sysfs_file() answers from the devices themselves, never from the real /sys (a
 * process run without liburoce-preload.so has no such folders).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs-shim/abi_extra.h"
#include "verbs-shim/device.h"
#include "verbs-shim/export.h"
#include "verbs-shim/port.h"
#include "verbs-shim/sysview.h"

UROCE_EXPORT const char *ibv_get_sysfs_path(void)
{
	return UROCE_SYSFS_ROOT;
}

/* What the tree needs to know of @dev (sysview.h), from its port snapshot. */
static void device_view(struct uroce_device *dev, struct uroce_sysview_dev *out)
{
	struct uroce_port_state port;

	uroce_device_port(dev, &port);
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", dev->ibdev.name);
	snprintf(out->ifname, sizeof(out->ifname), "%s", dev->ifname);
	out->ifindex = dev->ifindex;
	out->index = dev->index;
	out->guid = dev->guid;
	out->ifflags = port.ifflags;
	out->ifmtu = port.ifmtu;
	out->width = port.width;
	out->speed = port.speed;
	memcpy(out->gids, port.gids, sizeof(out->gids));
	uroce_iface_parent(dev->ifname, out->parent, sizeof(out->parent));
}

/*
 * A file of the synthetic tree, @path normalized: its content (at most @size bytes) into @out
 * and its length; -1 with errno set; or -2 when a link of the tree leads to a real file, whose
 * path is then in @real (@real_size bytes).
 */
static ssize_t synthetic_file(const char *path, char *out, size_t size, char *real,
			      size_t real_size)
{
	struct uroce_sysview_node *node = NULL;
	struct uroce_sysview_dev *views = NULL;
	struct uroce_device **devs;
	struct uroce_sysview v;
	ssize_t len = -1;
	int n, ret;

	ret = uroce_devices_scan(&devs, &n);
	if (ret) {
		errno = ret;
		return -1;
	}
	views = calloc(n ? n : 1, sizeof(*views));
	node = malloc(sizeof(*node));
	if (!views || !node) {
		errno = ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		device_view(devs[i], &views[i]);
	v.devs = views;
	v.ndevs = n;
	ret = uroce_sysview_resolve(&v, path, true, node, real, real_size);
	if (ret == UROCE_SV_REAL) {
		len = -2;
	} else if (ret < 0) {
		errno = -ret;
	} else if (node->kind == UROCE_SV_DIR) {
		errno = EISDIR;
	} else if (node->kind != UROCE_SV_FILE) {
		errno = EINVAL;
	} else if (node->read_err) {
		errno = node->read_err;
	} else {
		len = node->len < size ? node->len : size;
		memcpy(out, node->text, len);
	}
out:
	free(node);
	free(views);
	free(devs);
	return len;
}

/* rdma-core sysfs.c semantics: strip one trailing newline; fail if it cannot be terminated. */
static int finish(char *buf, size_t size, ssize_t len)
{
	if (len > 0) {
		if (buf[len - 1] == '\n') {
			buf[--len] = '\0';
		} else if ((size_t)len < size) {
			buf[len] = '\0';
		} else {
			errno = EINVAL;
			return -1;
		}
	}
	return len;
}

UROCE_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[IBV_SYSFS_PATH_MAX * 2], norm[IBV_SYSFS_PATH_MAX * 2];
	ssize_t len;
	int fd, err;

	if (!dir || !file || !buf) {
		errno = EINVAL;
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* As rdma-core: no "/." anywhere, so no escaping the folder with "..". */
	if (strstr(path, "/.")) {
		errno = EINVAL;
		return -1;
	}
	if (!uroce_sysview_normalize(path, norm, sizeof(norm)) && uroce_sysview_owns(norm)) {
		len = synthetic_file(norm, buf, size, path, sizeof(path));
		if (len != -2)
			return len < 0 ? -1 : finish(buf, size, len);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	err = errno;
	close(fd);
	if (len < 0) {
		errno = err;
		return -1;
	}
	return finish(buf, size, len);
}
