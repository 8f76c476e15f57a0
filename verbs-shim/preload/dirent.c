// SPDX-License-Identifier: MIT
/*
 * Listing the tree's folders (ARCHITECTURE.md "The kernel's view"): opendir() of a folder of
 * the tree gives one of dir.h's streams, and the readdir() family tells those from the C
 * library's by their address. scandir() is here too, as glibc's calls its internal opendir.
 * Every other path and stream goes to the C library untouched.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/preload/dir.h"
#include "verbs-shim/export.h"
#include "verbs-shim/preload/real.h"
#include "verbs-shim/preload/view.h"

UROCE_EXPORT DIR *opendir(const char *path)
{
	struct uroce_sysview_node *node = malloc(sizeof(*node));
	char real[PATH_MAX];
	DIR *d = NULL;
	int r;

	if (!node)
		return REAL(opendir)(path);
	r = preload_resolve(path, true, node, real, sizeof(real));
	if (r == PRELOAD_NOT_OURS)
		d = REAL(opendir)(path);
	else if (r == UROCE_SV_REAL)
		d = REAL(opendir)(real);
	else if (r < 0)
		errno = -r;
	else if (node->kind != UROCE_SV_DIR)
		errno = ENOTDIR;
	else
		d = preload_dir_open(node, real);
	free(node);
	return d;
}

UROCE_EXPORT struct dirent *readdir(DIR *d)
{
	return preload_dir_is_ours(d) ? preload_dir_read(d) : REAL(readdir)(d);
}

UROCE_EXPORT struct dirent64 *readdir64(DIR *d)
{
	/* struct dirent64 is struct dirent on 64-bit ABIs (_Static_assert below). */
	return preload_dir_is_ours(d) ? (struct dirent64 *)preload_dir_read(d) : REAL(readdir64)(d);
}

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent64 is dirent here");

/* readdir_r is deprecated (glibc 2.24) but still exported and called by old programs. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
UROCE_EXPORT int readdir_r(DIR *d, struct dirent *entry, struct dirent **result)
{
	struct dirent *e;

	if (!preload_dir_is_ours(d))
		return REAL(readdir_r)(d, entry, result);
	e = preload_dir_read(d);
	if (e)
		memcpy(entry, e, sizeof(*e));
	*result = e ? entry : NULL;
	return 0;
}

UROCE_EXPORT int readdir64_r(DIR *d, struct dirent64 *entry, struct dirent64 **result)
{
	return readdir_r(d, (struct dirent *)entry, (struct dirent **)result);
}
#pragma GCC diagnostic pop

UROCE_EXPORT int closedir(DIR *d)
{
	if (!preload_dir_is_ours(d))
		return REAL(closedir)(d);
	preload_dir_close(d);
	return 0;
}

UROCE_EXPORT int dirfd(DIR *d)
{
	if (!preload_dir_is_ours(d))
		return REAL(dirfd)(d);
	/* A stream of the tree has no descriptor (open.c: folders cannot be opened as one). */
	errno = ENOTSUP;
	return -1;
}

UROCE_EXPORT void rewinddir(DIR *d)
{
	if (preload_dir_is_ours(d))
		preload_dir_rewind(d);
	else
		REAL(rewinddir)(d);
}

UROCE_EXPORT long telldir(DIR *d)
{
	return preload_dir_is_ours(d) ? preload_dir_tell(d) : REAL(telldir)(d);
}

UROCE_EXPORT void seekdir(DIR *d, long pos)
{
	if (preload_dir_is_ours(d))
		preload_dir_seek(d, pos);
	else
		REAL(seekdir)(d, pos);
}

/* scandir(3) over one of our streams: the entries @filter keeps, sorted with @compar. */
static int scan_ours(DIR *d, struct dirent ***list, int (*filter)(const struct dirent *),
		     int (*compar)(const struct dirent **, const struct dirent **))
{
	struct dirent **out = NULL, *e;
	size_t n = 0, cap = 0;

	while ((e = preload_dir_read(d))) {
		struct dirent *copy;

		if (filter && !filter(e))
			continue;
		if (n == cap) {
			struct dirent **grown =
				realloc(out, (cap = cap ? 2 * cap : 16) * sizeof(*out));

			if (!grown)
				goto fail;
			out = grown;
		}
		copy = malloc(sizeof(*copy));
		if (!copy)
			goto fail;
		memcpy(copy, e, sizeof(*copy));
		out[n++] = copy;
	}
	if (compar)
		qsort(out, n, sizeof(*out), (int (*)(const void *, const void *))compar);
	*list = out;
	return (int)n;
fail:
	while (n)
		free(out[--n]);
	free(out);
	errno = ENOMEM;
	return -1;
}

UROCE_EXPORT int scandir(const char *path, struct dirent ***list,
			 int (*filter)(const struct dirent *),
			 int (*compar)(const struct dirent **, const struct dirent **))
{
	struct uroce_sysview_node *node = malloc(sizeof(*node));
	char real[PATH_MAX];
	DIR *d;
	int r;

	if (!node)
		return REAL(scandir)(path, list, filter, compar);
	r = preload_resolve(path, true, node, real, sizeof(real));
	if (r == PRELOAD_NOT_OURS || r == UROCE_SV_REAL) {
		free(node);
		return REAL(scandir)(r == UROCE_SV_REAL ? real : path, list, filter, compar);
	}
	if (r < 0 || node->kind != UROCE_SV_DIR) {
		errno = r < 0 ? -r : ENOTDIR;
		free(node);
		return -1;
	}
	d = preload_dir_open(node, real);
	free(node);
	if (!d)
		return -1;
	r = scan_ours(d, list, filter, compar);
	preload_dir_close(d);
	return r;
}

UROCE_EXPORT int scandir64(const char *path, struct dirent64 ***list,
			   int (*filter)(const struct dirent64 *),
			   int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
	return scandir(path, (struct dirent ***)list, (int (*)(const struct dirent *))filter,
		       (int (*)(const struct dirent **, const struct dirent **))compar);
}
