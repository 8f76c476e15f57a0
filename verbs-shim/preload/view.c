// SPDX-License-Identifier: MIT
/* The tree liburoce-preload.so answers (view.h). */
#include "verbs-shim/preload/view.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Quick test before any work: every path of the tree is under /sys or /dev. */
static bool maybe_ours(const char *path)
{
	if (!path || path[0] != '/')
		return false;
	while (*path == '/')
		path++;
	return !strncmp(path, "sys/", 4) || !strncmp(path, "dev/", 4);
}

int preload_devices(struct uroce_sysview_dev **out, int *n)
{
	struct uroce_sysview_dev *devs;
	struct uroce_iface *ifs;
	int nifs, count = 0, err;

	err = uroce_ifaces_read(&ifs, &nifs);
	if (err)
		return err;
	devs = calloc(nifs ? nifs : 1, sizeof(*devs));
	if (!devs) {
		free(ifs);
		return ENOMEM;
	}
	for (int i = 0; i < nifs; i++) {
		const struct uroce_iface *f = &ifs[i];
		struct uroce_sysview_dev *d = &devs[count];

		if (!uroce_iface_is_device(f))
			continue;
		/* The uverbs number: the order of discovery, as device.c numbers its devices. */
		d->index = count++;
		snprintf(d->name, sizeof(d->name), UROCE_DEVICE_PREFIX "%s", f->name);
		memcpy(d->ifname, f->name, sizeof(d->ifname));
		d->ifindex = f->ifindex;
		d->guid = uroce_iface_guid(f);
		d->ifflags = f->flags;
		d->ifmtu = f->mtu;
		for (int g = 0; g < f->ngids; g++) {
			d->gids[g].gid = f->gids[g];
			d->gids[g].valid = true;
		}
		uroce_iface_parent(f->name, d->parent, sizeof(d->parent));
	}
	free(ifs);
	*out = devs;
	*n = count;
	return 0;
}

/* True if a prefix of @path, taken component by component, is in the tree: the walk may enter
 * it (a cheap test before the interfaces are read). */
static bool passes_through(const char *path)
{
	char prefix[PATH_MAX], norm[PATH_MAX];
	size_t end = 0, len = strlen(path);

	if (len >= sizeof(prefix))
		return false;
	while (end < len) {
		end += 1 + strcspn(path + end + 1, "/");
		memcpy(prefix, path, end);
		prefix[end] = '\0';
		if (!uroce_sysview_normalize(prefix, norm, sizeof(norm)) &&
		    uroce_sysview_owns(norm))
			return true;
	}
	return false;
}

int preload_resolve(const char *path, bool follow, struct uroce_sysview_node *node, char *real,
		    size_t size)
{
	struct uroce_sysview_dev *devs;
	struct uroce_sysview v;
	int n, err;

	if (!maybe_ours(path) || !passes_through(path))
		return PRELOAD_NOT_OURS;
	err = preload_devices(&devs, &n);
	if (err)
		return -err;
	v.devs = devs;
	v.ndevs = n;
	err = uroce_sysview_resolve(&v, path, follow, node, real, size);
	free(devs);
	return err == UROCE_SV_OUTSIDE ? PRELOAD_NOT_OURS : err;
}

unsigned long preload_ino(const char *path)
{
	/* FNV-1a: distinct paths get distinct numbers, with overwhelming likelihood. */
	unsigned long h = 14695981039346656037ul;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ul;
	return h ? h : 1;
}
