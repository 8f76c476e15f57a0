// SPDX-License-Identifier: MIT
/*
 * Paths through the kernel's view (sysview.h): which paths are the tree's, their lexical
 * normal form (uroce_sysview_normalize), and the walk of a path through the tree as the
 * kernel's path walk does (link_path_walk: each component a folder, links followed, the last
 * one only if asked).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "verbs-shim/sysview.h"
#include "verbs-shim/sysview_int.h"

static const char *const roots[] = {UROCE_SV_CLASS_IB,    UROCE_SV_CLASS_UVERBS,
				    UROCE_SV_DEVICES_IB,  UROCE_SV_DEVICES_UVERBS,
				    UROCE_SV_DEVICES_NET, UROCE_SV_DEV_IB};

const char *uroce_sysview_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strncmp(path, root, n) || (path[n] && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : path + n;
}

bool uroce_sysview_owns(const char *path)
{
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (uroce_sysview_under(path, roots[i]))
			return true;
	return false;
}

int uroce_sysview_normalize(const char *path, char *out, size_t size)
{
	size_t len = 0;

	if (path[0] != '/')
		return EINVAL;
	while (*path) {
		size_t n;

		while (*path == '/')
			path++;
		n = strcspn(path, "/");
		if (n == 0)
			break;
		if (n == 1 && path[0] == '.') {
			/* nothing */
		} else if (n == 2 && path[0] == '.' && path[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--; /* the '/' before the dropped component */
		} else {
			if (len + 1 + n + 1 > size)
				return ENAMETOOLONG;
			out[len++] = '/';
			memcpy(out + len, path, n);
			len += n;
		}
		path += n;
	}
	if (len == 0) {
		if (size < 2)
			return ENAMETOOLONG;
		out[len++] = '/';
	}
	out[len] = '\0';
	return 0;
}

/* At most this many links on one walk, as the kernel's MAXSYMLINKS. */
#define MAX_LINKS 40

/* Take the next component of *rest into @name; false when none is left. */
static bool next_component(const char **rest, char *name, size_t size, bool *last,
			   bool *trailing_slash)
{
	const char *p = *rest;
	size_t n;

	while (*p == '/')
		p++;
	n = strcspn(p, "/");
	if (n == 0 || n >= size)
		return false;
	memcpy(name, p, n);
	name[n] = '\0';
	p += n;
	*trailing_slash = *p == '/';
	while (*p == '/')
		p++;
	*last = *p == '\0';
	*rest = p;
	return true;
}

int uroce_sysview_resolve(const struct uroce_sysview *v, const char *path, bool follow,
			  struct uroce_sysview_node *node, char *real, size_t real_size)
{
	char cur[PATH_MAX] = "", name[NAME_MAX + 1], buf[2][PATH_MAX];
	const char *rest = path;
	bool entered = false, last = true, slash = false;
	int links = 0, which = 0;

	if (path[0] != '/')
		return -EINVAL;
	/* The kernel's walk (path_resolution(7)): component by component, ".." taken on the
	 * path as resolved so far, a link's target put in place of the link. */
	while (next_component(&rest, name, sizeof(name), &last, &slash)) {
		size_t len = strlen(cur);
		int err;

		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			while (len > 0 && cur[len - 1] != '/')
				len--;
			cur[len ? len - 1 : 0] = '\0';
			continue;
		}
		if (len + 1 + strlen(name) >= sizeof(cur))
			return -ENAMETOOLONG;
		cur[len] = '/';
		strcpy(cur + len + 1, name);
		/*
		 * Outside the tree -- above its roots, or where a link of it led (a device's
		 * parent, a netdev): the components go on lexically, and the kernel walks the
		 * result (UROCE_SV_REAL). Below a root everything is the tree's.
		 */
		if (!uroce_sysview_owns(cur))
			continue;
		entered = true;
		err = uroce_sysview_lookup(v, cur, node);
		if (err)
			return -err;
		if (node->kind == UROCE_SV_LINK && (!last || follow || slash)) {
			char *next = buf[which ^= 1];

			if (++links > MAX_LINKS)
				return -ELOOP;
			if ((size_t)snprintf(next, PATH_MAX, "%s/%s", node->text, rest) >= PATH_MAX)
				return -ENAMETOOLONG;
			if (node->text[0] == '/')
				cur[0] = '\0';
			else
				cur[len] = '\0'; /* relative: from the link's folder */
			rest = next;
			continue;
		}
		if (!last && node->kind != UROCE_SV_DIR)
			return -ENOTDIR;
	}
	if (!entered)
		return UROCE_SV_OUTSIDE;
	if (!cur[0])
		strcpy(cur, "/");
	if (!uroce_sysview_owns(cur)) {
		if (real && (size_t)snprintf(real, real_size, "%s", cur) >= real_size)
			return -ENAMETOOLONG;
		return UROCE_SV_REAL;
	}
	if (uroce_sysview_lookup(v, cur, node))
		return -ENOENT;
	if (real && (size_t)snprintf(real, real_size, "%s", cur) >= real_size)
		return -ENAMETOOLONG;
	return UROCE_SV_NODE;
}
