// SPDX-License-Identifier: MIT
/*
 * The other path calls that reach the tree (ARCHITECTURE.md "The kernel's view"): access(),
 * readlink(), realpath() and the extended-attribute reads `ls -l` makes, each with its *at,
 * fortified and GNU variants. The tree's nodes have no extended attributes (ENODATA), as
 * sysfs's have none. Every other path goes to the C library untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/preload/real.h"
#include "verbs-shim/preload/view.h"

/* The fortified entry points (_FORTIFY_SOURCE), which call the plain ones. */
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);

/* access() of a node: folders and files read, files never written, nothing executed but a
 * folder searched. */
static int access_node(const struct uroce_sysview_node *node, int mode)
{
	if (mode == F_OK)
		return 0;
	if ((mode & W_OK) && node->kind != UROCE_SV_CHR) {
		errno = EACCES;
		return -1;
	}
	if ((mode & X_OK) && node->kind != UROCE_SV_DIR) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

UROCE_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	struct uroce_sysview_node node;
	char real[PATH_MAX];
	int r = preload_resolve(path, !(flags & AT_SYMLINK_NOFOLLOW), &node, real, sizeof(real));

	if (r == PRELOAD_NOT_OURS)
		return REAL(faccessat)(dirfd, path, mode, flags);
	if (r == UROCE_SV_REAL)
		return REAL(faccessat)(AT_FDCWD, real, mode, flags);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return access_node(&node, mode);
}

UROCE_EXPORT int access(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, 0);
}

UROCE_EXPORT int euidaccess(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

UROCE_EXPORT int eaccess(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

UROCE_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
	struct uroce_sysview_node node;
	char real[PATH_MAX];
	int r = preload_resolve(path, false, &node, real, sizeof(real));

	if (r == PRELOAD_NOT_OURS)
		return REAL(readlinkat)(dirfd, path, buf, len);
	if (r == UROCE_SV_REAL)
		return REAL(readlinkat)(AT_FDCWD, real, buf, len);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (node.kind != UROCE_SV_LINK) {
		errno = EINVAL;
		return -1;
	}
	/* readlink(2): the target, truncated to @len, not terminated. */
	if (node.len > len)
		node.len = len;
	memcpy(buf, node.text, node.len);
	return (ssize_t)node.len;
}

UROCE_EXPORT ssize_t readlink(const char *path, char *buf, size_t len)
{
	return readlinkat(AT_FDCWD, path, buf, len);
}

UROCE_EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		abort(); /* glibc's __chk_fail: the buffer is smaller than the caller says */
	return readlinkat(AT_FDCWD, path, buf, len);
}

UROCE_EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len,
				      size_t buflen)
{
	if (len > buflen)
		abort();
	return readlinkat(dirfd, path, buf, len);
}

UROCE_EXPORT char *realpath(const char *path, char *resolved)
{
	struct uroce_sysview_node node;
	char real[PATH_MAX];
	int r = preload_resolve(path, true, &node, real, sizeof(real));

	if (r == PRELOAD_NOT_OURS)
		return REAL(realpath)(path, resolved);
	if (r == UROCE_SV_REAL)
		return REAL(realpath)(real, resolved);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	if (!resolved)
		return strdup(real);
	memcpy(resolved, real, strlen(real) + 1); /* real is at most PATH_MAX bytes */
	return resolved;
}

UROCE_EXPORT char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolvedlen < PATH_MAX)
		abort();
	return realpath(path, resolved);
}

UROCE_EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}

/*
 * Extended attributes: none on the tree's nodes. Returns 1 if @path is the tree's (errno set:
 * 0 for a list, ENODATA for a read, or why the path does not resolve); 0 to pass @path
 * through; 2 to pass through @real, where a link of the tree leads.
 */
static int no_xattrs(const char *path, bool follow, bool list, char *real, size_t size)
{
	struct uroce_sysview_node node;
	int r = preload_resolve(path, follow, &node, real, size);

	if (r == PRELOAD_NOT_OURS)
		return 0;
	if (r == UROCE_SV_REAL)
		return 2;
	errno = r < 0 ? -r : list ? 0 : ENODATA;
	return 1;
}

#define XATTR_BODY(fn, follow, list, path, ...)                                                    \
	do {                                                                                       \
		char real_[PATH_MAX];                                                              \
		switch (no_xattrs(path, follow, list, real_, sizeof(real_))) {                     \
		case 0:                                                                            \
			return REAL(fn)(path, __VA_ARGS__);                                        \
		case 2:                                                                            \
			return REAL(fn)(real_, __VA_ARGS__);                                       \
		default:                                                                           \
			return errno ? -1 : 0;                                                     \
		}                                                                                  \
	} while (0)

UROCE_EXPORT ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
	XATTR_BODY(getxattr, true, false, path, name, value, size);
}

UROCE_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
	XATTR_BODY(lgetxattr, false, false, path, name, value, size);
}

UROCE_EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
	XATTR_BODY(listxattr, true, true, path, list, size);
}

UROCE_EXPORT ssize_t llistxattr(const char *path, char *list, size_t size)
{
	XATTR_BODY(llistxattr, false, true, path, list, size);
}
