// SPDX-License-Identifier: MIT
/*
 * uroce-sockbench over UDP: connected sockets with large buffers; a message above SOCK_SEG
 * bytes leaves as UDP GSO segments and arrives coalesced (UDP GRO), and small messages are
 * streamed in sendmmsg batches: the kernel's fastest UDP paths (uroce's trains are GSO sends).
 * sock_udp_mmsg streams batches of exactly SOCK_BATCH datagrams of one segment, never blocking.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>

#include "tools/bench/sockbench.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* One GSO send carries at most 64 KiB of UDP payload: 15 segments of SOCK_SEG. */
enum { GSO_MAX = 15 * SOCK_SEG };

static int bound_socket(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), big = 16 << 20, one = 1;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		sock_die("UDP socket");
	/* The privileged may exceed net.core.[rw]mem_max; others get what it allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
		sock_die("UDP_GRO");
	return fd;
}

static void udp_pair(int fd[2], bool latency)
{
	struct sockaddr_in a[2];

	(void)latency; /* a datagram leaves at once anyway */
	for (int i = 0; i < 2; i++)
		fd[i] = bound_socket(&a[i]);
	if (connect(fd[0], (struct sockaddr *)&a[1], sizeof(a[1])) ||
	    connect(fd[1], (struct sockaddr *)&a[0], sizeof(a[0])))
		sock_die("UDP connect");
}

/* Send @len bytes (at most GSO_MAX) as one datagram, or as GSO segments of SOCK_SEG. */
static ssize_t send_chunk(int fd, const char *buf, size_t len)
{
	char control[CMSG_SPACE(sizeof(uint16_t))] = {0};
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	uint16_t seg = SOCK_SEG;

	if (len > SOCK_SEG) {
		struct cmsghdr *c;

		m.msg_control = control;
		m.msg_controllen = sizeof(control);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = IPPROTO_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
	return sendmsg(fd, &m, 0);
}

static ssize_t udp_send_msg(int fd, const char *buf, size_t size)
{
	size_t off = 0;

	while (off < size) {
		size_t len = size - off < GSO_MAX ? size - off : GSO_MAX;

		if (send_chunk(fd, buf + off, len) < 0)
			return -1;
		off += len;
	}
	return (ssize_t)size;
}

/* Send @n datagrams of @size bytes in one sendmmsg call: the bytes sent, or -1. */
static ssize_t send_batch(int fd, const char *buf, size_t size, int n, int flags)
{
	struct mmsghdr m[SOCK_BATCH];
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = size};
	int sent;

	for (int i = 0; i < n; i++)
		m[i].msg_hdr = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1};
	sent = sendmmsg(fd, m, (unsigned)n, flags);
	return sent < 0 ? -1 : (ssize_t)((size_t)sent * size);
}

/* Small messages go out in a sendmmsg batch of up to 64 datagrams (at most 60 KiB). */
static ssize_t udp_send_burst(int fd, const char *buf, size_t size)
{
	int n = (int)(GSO_MAX / size);

	if (size > SOCK_SEG)
		return udp_send_msg(fd, buf, size);
	return send_batch(fd, buf, size, n > SOCK_BATCH ? SOCK_BATCH : n, 0);
}

/*
 * A batch of SOCK_BATCH datagrams (of at most SOCK_SEG bytes) that never waits: a full send
 * buffer is EAGAIN, and the sender tries again at once.
 */
static ssize_t udp_send_mmsg(int fd, const char *buf, size_t size)
{
	if (size > SOCK_SEG) {
		errno = EMSGSIZE;
		return -1;
	}
	return send_batch(fd, buf, size, SOCK_BATCH, MSG_DONTWAIT);
}

const struct sock_ops sock_udp = {
	.pair = udp_pair,
	.send_msg = udp_send_msg,
	.send_burst = udp_send_burst,
};

const struct sock_ops sock_udp_mmsg = {
	.pair = udp_pair,
	.send_msg = udp_send_msg,
	.send_burst = udp_send_mmsg,
};
