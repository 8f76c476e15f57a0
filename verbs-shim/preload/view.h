/* SPDX-License-Identifier: MIT */
/*
 * Which paths liburoce-preload.so answers, and how: the kernel's view of this host's uroce
 * devices (sysview.h), built afresh from the interfaces at each call so that it always agrees
 * with what uroce's libibverbs lists (both read the same interfaces, iface.h). RDMA netlink
 * (netlink.c) answers from the same devices.
 */
#ifndef UROCE_PRELOAD_VIEW_H
#define UROCE_PRELOAD_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "verbs-shim/sysview.h"

/*
 * The devices of this host now, as libibverbs lists them (device.c uroce_devices_scan), in
 * uverbs order: what the tree (below) and RDMA netlink (netlink.c) are built from. On success
 * *out is a malloc'ed array of *n devices. Returns 0 or an errno value (uroce_ifaces_read's).
 */
int preload_devices(struct uroce_sysview_dev **out, int *n);

/* Outcomes of preload_resolve, besides UROCE_SV_NODE and UROCE_SV_REAL. */
#define PRELOAD_NOT_OURS UROCE_SV_OUTSIDE

/*
 * Resolve @path (as a program gave it) as the kernel would, links followed (the last one only
 * if @follow). Returns PRELOAD_NOT_OURS for a path outside the tree (the caller passes the call
 * through with the program's own path, untouched), UROCE_SV_NODE with *node and its resolved
 * path in @real, UROCE_SV_REAL when a link of the tree leads to the real file @real (@size
 * bytes), or a negative errno (-ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG, -ENOMEM).
 * Relative paths are never the tree's.
 */
int preload_resolve(const char *path, bool follow, struct uroce_sysview_node *node, char *real,
		    size_t size);

/* A stable inode number for the node at the resolved @path (never 0). */
unsigned long preload_ino(const char *path);

#endif
