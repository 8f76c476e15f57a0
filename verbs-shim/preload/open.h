/* SPDX-License-Identifier: MIT */
/* Opening the tree's nodes as descriptors (open.c). */
#ifndef UROCE_PRELOAD_OPEN_H
#define UROCE_PRELOAD_OPEN_H

#include "verbs-shim/sysview.h"

/*
 * A descriptor for @node opened with open(2) @flags, or -1 with errno: EACCES (writing, or a
 * folder), EEXIST (O_CREAT|O_EXCL), ENOTDIR (O_DIRECTORY on a file), ENXIO (a device node),
 * ELOOP (O_NOFOLLOW on a link), EMFILE and the like from the descriptor's creation.
 */
int preload_open_node(const struct uroce_sysview_node *node, int flags);

#endif
