// SPDX-License-Identifier: MIT
/*
 * rsockets (rsocket(7)): not built. Each call says so on stderr and fails with ENOSYS
 * (riowrite, which returns a size, returns 0); docs/UNSUPPORTED.md lists them.
 */
#include <errno.h>
#include <rdma/rsocket.h>
#include <stdio.h>

#include "verbs-shim/export.h"

static int not_built(const char *call)
{
	fprintf(stderr, "uroce: %s: rsockets are not supported by uroce\n", call);
	errno = ENOSYS;
	return -1;
}

UROCE_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return not_built("rsocket");
}

UROCE_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_built("rbind");
}

UROCE_EXPORT int rlisten(int socket, int backlog)
{
	(void)socket;
	(void)backlog;
	return not_built("rlisten");
}

UROCE_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_built("raccept");
}

UROCE_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_built("rconnect");
}

UROCE_EXPORT int rshutdown(int socket, int how)
{
	(void)socket;
	(void)how;
	return not_built("rshutdown");
}

UROCE_EXPORT int rclose(int socket)
{
	(void)socket;
	return not_built("rclose");
}

UROCE_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return not_built("rrecv");
}

UROCE_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)src_addr;
	(void)addrlen;
	return not_built("rrecvfrom");
}

UROCE_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return not_built("rrecvmsg");
}

UROCE_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	return not_built("rsend");
}

UROCE_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)flags;
	(void)dest_addr;
	(void)addrlen;
	return not_built("rsendto");
}

UROCE_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket;
	(void)msg;
	(void)flags;
	return not_built("rsendmsg");
}

UROCE_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return not_built("rread");
}

UROCE_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return not_built("rreadv");
}

UROCE_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket;
	(void)buf;
	(void)count;
	return not_built("rwrite");
}

UROCE_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket;
	(void)iov;
	(void)iovcnt;
	return not_built("rwritev");
}

UROCE_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds;
	(void)nfds;
	(void)timeout;
	return not_built("rpoll");
}

UROCE_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			 struct timeval *timeout)
{
	(void)nfds;
	(void)readfds;
	(void)writefds;
	(void)exceptfds;
	(void)timeout;
	return not_built("rselect");
}

UROCE_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_built("rgetpeername");
}

UROCE_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return not_built("rgetsockname");
}

UROCE_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			     socklen_t optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return not_built("rsetsockopt");
}

UROCE_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)socket;
	(void)level;
	(void)optname;
	(void)optval;
	(void)optlen;
	return not_built("rgetsockopt");
}

UROCE_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return not_built("riomap");
}

UROCE_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return not_built("riounmap");
}

UROCE_EXPORT int rfcntl(int socket, int cmd, ...)
{
	(void)socket;
	(void)cmd;
	return not_built("rfcntl");
}

UROCE_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	not_built("riowrite");
	return 0;
}
