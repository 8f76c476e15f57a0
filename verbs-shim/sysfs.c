// SPDX-License-Identifier: MIT
/*
 * The sysfs helpers of libibverbs and the synthetic sysfs tree of uroce devices (ABI.md §3.6):
 * ibv_device.ibdev_path and dev_path (device.c) name folders that do not exist;
 * ibv_read_sysfs_file() serves the few files applications read through it (ibv_devinfo reads
 * board_id) from the device itself and never touches the real /sys for a uroce device.
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

/* What ibv_devinfo prints as board_id. */
#define UROCE_BOARD_ID   "uroce_soft_roce"
#define UROCE_FW_VERSION UROCE_VERSION

UROCE_EXPORT const char *ibv_get_sysfs_path(void)
{
	return UROCE_SYSFS_ROOT;
}

static void format_guid(char *buf, size_t size, __be64 guid)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
}

static void format_gid(char *buf, size_t size, const union ibv_gid *gid)
{
	snprintf(buf, size,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 gid->raw[0], gid->raw[1], gid->raw[2], gid->raw[3], gid->raw[4], gid->raw[5],
		 gid->raw[6], gid->raw[7], gid->raw[8], gid->raw[9], gid->raw[10], gid->raw[11],
		 gid->raw[12], gid->raw[13], gid->raw[14], gid->raw[15]);
}

/* A file of port 1 ("state", "gids/3", ...); 0 or an errno value. */
static int port_file(struct uroce_device *dev, const char *rel, char *out, size_t size)
{
	static const char *const states[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE"};
	struct ibv_port_attr attr;
	union ibv_gid gid;
	unsigned int idx;
	char tail;
	int err;

	uroce_port_attr(dev, &attr);
	if (!strcmp(rel, "state")) {
		snprintf(out, size, "%d: %s", attr.state, states[attr.state]);
	} else if (!strcmp(rel, "phys_state")) {
		snprintf(out, size, "%d: %s", attr.phys_state,
			 attr.phys_state == 5 ? "LinkUp" : "Disabled");
	} else if (!strcmp(rel, "link_layer")) {
		snprintf(out, size, "Ethernet");
	} else if (!strcmp(rel, "lid") || !strcmp(rel, "sm_lid")) {
		snprintf(out, size, "0x0");
	} else if (sscanf(rel, "pkeys/%u%c", &idx, &tail) == 1) {
		if (idx >= UROCE_PKEY_TBL_LEN)
			return ENOENT;
		snprintf(out, size, "0x%04x", UROCE_DEFAULT_PKEY);
	} else if (sscanf(rel, "gids/%u%c", &idx, &tail) == 1) {
		err = uroce_device_gid(dev, idx, &gid);
		if (err == EINVAL)
			return ENOENT;
		if (err) /* an empty slot reads as the zero GID, as the kernel's file does */
			memset(&gid, 0, sizeof(gid));
		format_gid(out, size, &gid);
	} else if (sscanf(rel, "gid_attrs/types/%u%c", &idx, &tail) == 1 ||
		   sscanf(rel, "gid_attrs/ndevs/%u%c", &idx, &tail) == 1) {
		err = uroce_device_gid(dev, idx, &gid);
		if (err)
			return err == ENODATA ? EINVAL : ENOENT; /* the kernel: EINVAL, empty */
		snprintf(out, size, "%s", rel[10] == 't' ? "RoCE v2" : dev->ifname);
	} else {
		return ENOENT;
	}
	return 0;
}

/* A file of the synthetic tree of a uroce device; 0 or an errno value. */
static int synthetic_file(const char *path, char *out, size_t size)
{
	char name[IBV_SYSFS_NAME_MAX];
	struct uroce_device *dev;
	const char *rel;
	size_t len;

	/* The uverbs class folder of a uroce device is empty: nothing reads it. */
	if (strncmp(path, UROCE_IBDEV_CLASS, strlen(UROCE_IBDEV_CLASS)))
		return ENOENT;
	rel = path + strlen(UROCE_IBDEV_CLASS);
	len = strcspn(rel, "/");
	if (len >= sizeof(name) || rel[len] != '/')
		return ENOENT;
	memcpy(name, rel, len);
	name[len] = '\0';
	dev = uroce_device_by_name(name);
	if (!dev)
		return ENOENT;
	rel += len + 1;
	if (!strcmp(rel, "node_guid") || !strcmp(rel, "sys_image_guid"))
		format_guid(out, size, dev->guid);
	else if (!strcmp(rel, "node_type"))
		snprintf(out, size, "%d: CA", IBV_NODE_CA);
	else if (!strcmp(rel, "fw_ver"))
		snprintf(out, size, "%s", UROCE_FW_VERSION);
	else if (!strcmp(rel, "board_id"))
		snprintf(out, size, "%s", UROCE_BOARD_ID);
	else if (!strncmp(rel, "ports/1/", 8))
		return port_file(dev, rel + 8, out, size);
	else
		return ENOENT;
	return 0;
}

static bool is_synthetic(const char *path)
{
	return !strncmp(path, UROCE_IBDEV_CLASS UROCE_DEVICE_PREFIX,
			strlen(UROCE_IBDEV_CLASS UROCE_DEVICE_PREFIX)) ||
	       !strncmp(path, UROCE_UVERBS_CLASS UROCE_UVERBS_PREFIX,
			strlen(UROCE_UVERBS_CLASS UROCE_UVERBS_PREFIX));
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
	char path[IBV_SYSFS_PATH_MAX * 2];
	char content[128];
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
	if (is_synthetic(path)) {
		err = synthetic_file(path, content, sizeof(content));
		if (err) {
			errno = err;
			return -1;
		}
		len = strlen(content);
		if ((size_t)len > size)
			len = size;
		memcpy(buf, content, len);
		return finish(buf, size, len);
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
