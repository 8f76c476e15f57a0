// SPDX-License-Identifier: MIT
/*
 * Opening the tree's files (ARCHITECTURE.md "The kernel's view"): open(), its 64-bit, *at and
 * fortified variants, and fopen(). A file of the tree opens as a sealed memory file holding its
 * content, so read, lseek, fstat's size and mmap behave as for a file; one that reads with an
 * error on the kernel (an empty GID slot's attributes: EINVAL) opens as a descriptor whose
 * read() fails with that error. Writing is refused with EACCES, as sysfs refuses a read-only
 * attribute. A folder cannot be opened as a descriptor (EACCES; opendir() works), and
 * /dev/infiniband/uverbsN, whose driver uroce has no need of, opens with ENXIO as a device
 * node without its driver does. Every other path goes to the C library untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs-shim/preload/open.h"
#include "verbs-shim/export.h"
#include "verbs-shim/preload/real.h"
#include "verbs-shim/preload/view.h"

/* The fortified entry points of <fcntl.h> (_FORTIFY_SOURCE), which call the plain ones. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

/* A descriptor whose read() fails with EINVAL: an epoll instance's (epoll(7)). */
static int failing_fd(int err, int flags)
{
	int fd;

	if (err != EINVAL) {
		errno = err;
		return -1;
	}
	fd = epoll_create1(flags & O_CLOEXEC ? EPOLL_CLOEXEC : 0);
	return fd;
}

/* A read-only descriptor holding @len bytes of @text, positioned at 0. */
static int content_fd(const char *text, size_t len, int flags)
{
	unsigned int mflags = MFD_ALLOW_SEALING | (flags & O_CLOEXEC ? MFD_CLOEXEC : 0);
	int fd = memfd_create("uroce-sysfs", mflags);
	int pipefd[2];

	if (fd >= 0) {
		if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
			close(fd);
			errno = EIO;
			return -1;
		}
		fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
		return fd;
	}
	/* No memfd_create (a seccomp profile that denies it): a pipe holds the content as well. */
	if (pipe2(pipefd, flags & O_CLOEXEC) < 0)
		return -1;
	if (write(pipefd[1], text, len) != (ssize_t)len) {
		close(pipefd[0]);
		close(pipefd[1]);
		errno = EIO;
		return -1;
	}
	close(pipefd[1]);
	return pipefd[0];
}

UROCE_EXPORT int preload_open_node(const struct uroce_sysview_node *node, int flags)
{
	switch (node->kind) {
	case UROCE_SV_FILE:
		if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT))) {
			errno = (flags & O_CREAT) && (flags & O_EXCL) ? EEXIST : EACCES;
			return -1;
		}
		if (flags & O_DIRECTORY) {
			errno = ENOTDIR;
			return -1;
		}
		if (node->read_err)
			return failing_fd(node->read_err, flags);
		return content_fd(node->text, node->len, flags);
	case UROCE_SV_CHR:
		errno = ENXIO;
		return -1;
	case UROCE_SV_LINK: /* only with O_NOFOLLOW: the walk followed every other link */
		errno = ELOOP;
		return -1;
	default:
		errno = (flags & O_ACCMODE) != O_RDONLY ? EISDIR : EACCES;
		return -1;
	}
}

/*
 * open() of @path: the C library's openat (@at) for a path outside the tree, and for the real
 * file a link of the tree leads to; the tree's node otherwise.
 */
static int open_path(int dirfd, const char *path, int flags, mode_t mode,
		     int (*at)(int, const char *, int, ...))
{
	struct uroce_sysview_node node;
	char real[PATH_MAX];
	int r = preload_resolve(path, !(flags & O_NOFOLLOW), &node, real, sizeof(real));

	if (r == PRELOAD_NOT_OURS)
		return at(dirfd, path, flags, mode);
	if (r == UROCE_SV_REAL)
		return at(AT_FDCWD, real, flags, mode);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return preload_open_node(&node, flags);
}

/* O_CREAT and O_TMPFILE take a mode (open(2)); the other calls have none to read. */
#define MODE_ARG(flags, mode)                                                                      \
	do {                                                                                       \
		if ((flags) & (O_CREAT | __O_TMPFILE)) {                                           \
			va_list ap_;                                                               \
			va_start(ap_, flags);                                                      \
			mode = va_arg(ap_, mode_t);                                                \
			va_end(ap_);                                                               \
		}                                                                                  \
	} while (0)

UROCE_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_path(AT_FDCWD, path, flags, mode, REAL(openat));
}

UROCE_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_path(AT_FDCWD, path, flags, mode, REAL(openat64));
}

UROCE_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_path(dirfd, path, flags, mode, REAL(openat));
}

UROCE_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_path(dirfd, path, flags, mode, REAL(openat64));
}

UROCE_EXPORT int __open_2(const char *path, int flags)
{
	return open_path(AT_FDCWD, path, flags, 0, REAL(openat));
}

UROCE_EXPORT int __open64_2(const char *path, int flags)
{
	return open_path(AT_FDCWD, path, flags, 0, REAL(openat64));
}

UROCE_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return open_path(dirfd, path, flags, 0, REAL(openat));
}

UROCE_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return open_path(dirfd, path, flags, 0, REAL(openat64));
}

/* fopen(3)'s modes as open(2) flags: "r", "w", "a", each with '+', 'e' (O_CLOEXEC), 'x'. */
static int fopen_flags(const char *mode)
{
	int flags;

	switch (mode[0]) {
	case 'r':
		flags = O_RDONLY;
		break;
	case 'w':
		flags = O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case 'a':
		flags = O_WRONLY | O_CREAT | O_APPEND;
		break;
	default:
		return -1;
	}
	for (const char *m = mode + 1; *m; m++) {
		if (*m == '+')
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'e')
			flags |= O_CLOEXEC;
		else if (*m == 'x')
			flags |= O_EXCL;
	}
	return flags;
}

static FILE *fopen_path(const char *path, const char *mode,
			FILE *(*real)(const char *, const char *))
{
	struct uroce_sysview_node node;
	char realpath_[PATH_MAX];
	int flags = fopen_flags(mode);
	int r, fd;
	FILE *f;

	if (flags < 0)
		return real(path, mode);
	r = preload_resolve(path, true, &node, realpath_, sizeof(realpath_));
	if (r == PRELOAD_NOT_OURS)
		return real(path, mode);
	if (r == UROCE_SV_REAL)
		return real(realpath_, mode);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	fd = preload_open_node(&node, flags);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

UROCE_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return fopen_path(path, mode, REAL(fopen));
}

UROCE_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return fopen_path(path, mode, REAL(fopen64));
}
