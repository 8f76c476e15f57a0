// SPDX-License-Identifier: MIT
/*
 * The stat family for the tree's paths (ARCHITECTURE.md "The kernel's view"): a node gets the
 * metadata sysfs and devtmpfs give theirs -- files 0444 of 4096 bytes, folders 0755, links
 * 0777, /dev/infiniband/uverbsN a character device 0666 231:192+N, owned by root, timed at boot.
 * Every other path goes to the C library untouched. Both the glibc 2.33+ entry points and the
 * __xstat ones older binaries call are here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "verbs-shim/export.h"
#include "verbs-shim/preload/real.h"
#include "verbs-shim/preload/view.h"

/* The version-numbered stat functions of glibc before 2.33, still exported for old binaries. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64 is stat on this ABI");

/* When this host booted: the time sysfs gives its nodes. */
static struct timespec boot_time(void)
{
	struct timespec now, up;

	clock_gettime(CLOCK_REALTIME, &now);
	clock_gettime(CLOCK_BOOTTIME, &up);
	now.tv_sec -= up.tv_sec;
	now.tv_nsec = 0;
	return now;
}

static mode_t type_bits(enum uroce_sysview_kind kind)
{
	switch (kind) {
	case UROCE_SV_DIR:
		return S_IFDIR;
	case UROCE_SV_LINK:
		return S_IFLNK;
	case UROCE_SV_CHR:
		return S_IFCHR;
	default:
		return S_IFREG;
	}
}

/* The device numbers of the file systems the kernel serves these from: devtmpfs, sysfs. */
static dev_t fs_dev(const char *path)
{
	return !strncmp(path, "/dev/", 5) ? makedev(0, 5) : makedev(0, 21);
}

static void fill_stat(const struct uroce_sysview_node *node, const char *path, struct stat *st)
{
	struct timespec t = boot_time();

	memset(st, 0, sizeof(*st));
	st->st_dev = fs_dev(path);
	st->st_ino = preload_ino(path);
	st->st_mode = type_bits(node->kind) | node->mode;
	st->st_nlink = node->kind == UROCE_SV_DIR ? 2 : 1;
	st->st_rdev = node->kind == UROCE_SV_CHR ? makedev(node->major, node->minor) : 0;
	st->st_size = node->kind == UROCE_SV_FILE ? 4096 : 0;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = t;
}

/*
 * Answer a stat of @path for the tree: 1 with *st filled, 0 to pass @path through (it is not
 * the tree's), 2 to pass the real path @real through instead, -1 with errno set.
 */
static int stat_of(const char *path, bool follow, struct stat *st, char *real, size_t size)
{
	struct uroce_sysview_node node;
	int r = preload_resolve(path, follow, &node, real, size);

	if (r == PRELOAD_NOT_OURS)
		return 0;
	if (r == UROCE_SV_REAL)
		return 2;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	fill_stat(&node, real, st);
	return 1;
}

#define STAT_BODY(call_real, call_real_at, path, follow, st)                                       \
	do {                                                                                       \
		char real_[PATH_MAX];                                                              \
		struct stat s_;                                                                    \
		int r_ = stat_of(path, follow, &s_, real_, sizeof(real_));                         \
		if (r_ == 0)                                                                       \
			return call_real;                                                          \
		if (r_ == 2)                                                                       \
			return call_real_at;                                                       \
		if (r_ < 0)                                                                        \
			return -1;                                                                 \
		memcpy(st, &s_, sizeof(s_));                                                       \
		return 0;                                                                          \
	} while (0)

UROCE_EXPORT int stat(const char *path, struct stat *st)
{
	STAT_BODY(REAL(stat)(path, st), REAL(stat)(real_, st), path, true, st);
}

UROCE_EXPORT int stat64(const char *path, struct stat64 *st)
{
	STAT_BODY(REAL(stat64)(path, st), REAL(stat64)(real_, st), path, true, st);
}

UROCE_EXPORT int lstat(const char *path, struct stat *st)
{
	STAT_BODY(REAL(lstat)(path, st), REAL(lstat)(real_, st), path, false, st);
}

UROCE_EXPORT int lstat64(const char *path, struct stat64 *st)
{
	STAT_BODY(REAL(lstat64)(path, st), REAL(lstat64)(real_, st), path, false, st);
}

UROCE_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	STAT_BODY(REAL(fstatat)(dirfd, path, st, flags), REAL(fstatat)(AT_FDCWD, real_, st, flags),
		  path, !(flags & AT_SYMLINK_NOFOLLOW), st);
}

UROCE_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	STAT_BODY(REAL(fstatat64)(dirfd, path, st, flags),
		  REAL(fstatat64)(AT_FDCWD, real_, st, flags), path, !(flags & AT_SYMLINK_NOFOLLOW),
		  st);
}

UROCE_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	STAT_BODY(REAL(__xstat)(ver, path, st), REAL(__xstat)(ver, real_, st), path, true, st);
}

UROCE_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	STAT_BODY(REAL(__xstat64)(ver, path, st), REAL(__xstat64)(ver, real_, st), path, true, st);
}

UROCE_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	STAT_BODY(REAL(__lxstat)(ver, path, st), REAL(__lxstat)(ver, real_, st), path, false, st);
}

UROCE_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	STAT_BODY(REAL(__lxstat64)(ver, path, st), REAL(__lxstat64)(ver, real_, st), path, false,
		  st);
}

UROCE_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	STAT_BODY(REAL(__fxstatat)(ver, dirfd, path, st, flags),
		  REAL(__fxstatat)(ver, AT_FDCWD, real_, st, flags), path,
		  !(flags & AT_SYMLINK_NOFOLLOW), st);
}

UROCE_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	STAT_BODY(REAL(__fxstatat64)(ver, dirfd, path, st, flags),
		  REAL(__fxstatat64)(ver, AT_FDCWD, real_, st, flags), path,
		  !(flags & AT_SYMLINK_NOFOLLOW), st);
}

static struct statx_timestamp stx_time(struct timespec t)
{
	return (struct statx_timestamp){.tv_sec = t.tv_sec, .tv_nsec = (uint32_t)t.tv_nsec};
}

UROCE_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	char real[PATH_MAX];
	struct stat st;
	int r;

	/* AT_EMPTY_PATH with "" asks about dirfd itself: never one of the tree's. */
	r = stat_of(path, !(flags & AT_SYMLINK_NOFOLLOW), &st, real, sizeof(real));
	if (r == 0 || r == 2) {
		if (!REAL(statx)) {
			errno = ENOSYS;
			return -1;
		}
		return r == 0 ? REAL(statx)(dirfd, path, flags, mask, stx)
			      : REAL(statx)(AT_FDCWD, real, flags, mask, stx);
	}
	if (r < 0)
		return -1;
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = STATX_BASIC_STATS;
	stx->stx_blksize = st.st_blksize;
	stx->stx_nlink = st.st_nlink;
	stx->stx_uid = st.st_uid;
	stx->stx_gid = st.st_gid;
	stx->stx_mode = st.st_mode;
	stx->stx_ino = st.st_ino;
	stx->stx_size = st.st_size;
	stx->stx_blocks = st.st_blocks;
	stx->stx_atime = stx->stx_ctime = stx->stx_mtime = stx_time(st.st_mtim);
	stx->stx_rdev_major = major(st.st_rdev);
	stx->stx_rdev_minor = minor(st.st_rdev);
	stx->stx_dev_major = major(st.st_dev);
	stx->stx_dev_minor = minor(st.st_dev);
	return 0;
}
