/* SPDX-License-Identifier: MIT */
/*
 * The synthetic sysfs tree of uroce devices (ABI.md §3.6): ibv_device.ibdev_path and dev_path
 * name folders that do not exist; ibv_read_sysfs_file() serves the few files applications read
 * through it (ibv_devinfo reads board_id) from the device itself and never touches the real
 * /sys for a uroce device.
 */
#ifndef UROCE_VERBS_SHIM_SYSFS_H
#define UROCE_VERBS_SHIM_SYSFS_H

#include <stddef.h>

struct uroce_device;

/* Fill dev->ibdev.dev_name, dev_path and ibdev_path from dev->ibdev.name and dev->index. */
void uroce_sysfs_device_paths(struct uroce_device *dev);

#endif
