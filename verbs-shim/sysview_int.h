/* SPDX-License-Identifier: MIT */
/* What the tree (sysview.c) and the walk through it (sysview_walk.c) share. */
#ifndef UROCE_VERBS_SHIM_SYSVIEW_INT_H
#define UROCE_VERBS_SHIM_SYSVIEW_INT_H

#include "verbs-shim/sysview.h"

/* The roots of the tree: every path the view answers is at or below one of them. */
#define UROCE_SV_CLASS_IB       "/sys/class/infiniband"
#define UROCE_SV_CLASS_UVERBS   "/sys/class/infiniband_verbs"
#define UROCE_SV_DEVICES_IB     "/sys/devices/virtual/infiniband"
#define UROCE_SV_DEVICES_UVERBS "/sys/devices/virtual/infiniband_verbs"
#define UROCE_SV_DEVICES_NET    "/sys/devices/virtual/uroce"
#define UROCE_SV_DEV_IB         "/dev/infiniband"

/* Match @path against the root @root: the rest after it ("" for the root itself), or NULL. */
const char *uroce_sysview_under(const char *path, const char *root);

/* The node at the normalized @path, links not followed: 0 or ENOENT. */
int uroce_sysview_lookup(const struct uroce_sysview *v, const char *path,
			 struct uroce_sysview_node *nd);

#endif
