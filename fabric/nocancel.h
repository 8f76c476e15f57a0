/* SPDX-License-Identifier: MIT */
/*
 * The system calls the engine makes on application threads, without glibc's cancellation
 * points. glibc (after POSIX) makes sendmsg, sendmmsg, recvmsg, recvmmsg, epoll_wait, poll and
 * write cancellation points, and the engine calls them from inside ibv_poll_cq and
 * ibv_post_send while it holds a QP's lock or the receive lock: a thread cancelled there would
 * end holding the lock, and every other thread of the process would wait for it for ever. On an
 * RNIC these verbs only touch memory and are no cancellation points; here neither. (The
 * blocking waits a program may cancel, ibv_get_cq_event and ibv_get_async_event, stay
 * cancellable: verbs-shim/channel.c.) They are also cheaper: glibc's cancellable wrappers switch
 * the thread to asynchronous cancellation and back around every call, which a busy-polling
 * thread pays on each empty poll.
 *
 * Each returns what the system call does: the result, or -1 with errno set.
 */
#ifndef UROCE_FABRIC_NOCANCEL_H
#define UROCE_FABRIC_NOCANCEL_H

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline ssize_t nc_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static inline ssize_t nc_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static inline ssize_t nc_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return syscall(SYS_sendmsg, fd, msg, flags);
}

static inline int nc_sendmmsg(int fd, struct mmsghdr *msgs, unsigned int n, int flags)
{
	return (int)syscall(SYS_sendmmsg, fd, msgs, n, flags);
}

static inline ssize_t nc_recvmsg(int fd, struct msghdr *msg, int flags)
{
	return syscall(SYS_recvmsg, fd, msg, flags);
}

static inline int nc_recvmmsg(int fd, struct mmsghdr *msgs, unsigned int n, int flags)
{
	return (int)syscall(SYS_recvmmsg, fd, msgs, n, flags, NULL);
}

/* epoll_wait() through epoll_pwait with no signal mask: some architectures have only that. */
static inline int nc_epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout_ms)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, n, timeout_ms, NULL, _NSIG / 8);
}

/* poll() through ppoll with no signal mask (the same reason). */
static inline int nc_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};

	return (int)syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, _NSIG / 8);
}

#endif
