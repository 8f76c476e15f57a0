// SPDX-License-Identifier: MIT
/*
 * uroce-sockbench over TCP: a connected pair with the kernel's buffer autotuning, with
 * TCP_NODELAY for a ping-pong (its message leaves at once) and Nagle's coalescing for a stream; and
 * connection setup, the baseline of rdma_cm's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/bench/sockbench.h"

/* A listening socket on 127.0.0.1 (an ephemeral port, its address in @a). */
static int listener(struct sockaddr_in *a, int backlog)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		sock_die("TCP listen");
	return fd;
}

static void tcp_pair(int fd[2], bool latency)
{
	struct sockaddr_in a;
	int lfd = listener(&a, 1), one = 1;

	fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a)))
		sock_die("TCP connect");
	fd[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd[1] < 0)
		sock_die("TCP accept");
	close(lfd);
	for (int i = 0; latency && i < 2; i++)
		if (setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
			sock_die("TCP_NODELAY");
}

static ssize_t tcp_send_msg(int fd, const char *buf, size_t size)
{
	size_t off = 0;

	while (off < size) {
		ssize_t n = send(fd, buf + off, size - off, MSG_NOSIGNAL);

		if (n < 0 && errno != EINTR)
			return -1;
		off += n > 0 ? (size_t)n : 0;
	}
	return (ssize_t)size;
}

const struct sock_ops sock_tcp = {
	.pair = tcp_pair,
	.send_msg = tcp_send_msg,
	.send_burst = tcp_send_msg,
};

/* The server: accept @count connections on @lfd, then tell the client (a byte on @done). */
static _Noreturn void serve(int lfd, long count, int done)
{
	int *fds = sock_alloc((size_t)count * sizeof(*fds));

	for (long i = 0; i < count; i++) {
		fds[i] = accept(lfd, NULL, NULL);
		if (fds[i] < 0)
			sock_die("accept");
	}
	if (write(done, "a", 1) != 1)
		sock_die("write");
	_exit(0);
}

/* As cmtime starts its N rdma_connect calls: N non-blocking connects at once. */
void tcp_connect(const struct sock_run *r)
{
	struct sockaddr_in a;
	struct epoll_event ev[64];
	int lfd = listener(&a, (int)r->count), ep, done[2], *fds;
	long pending = r->count;
	double t0, t1;
	char c;
	pid_t pid;

	if (pipe(done))
		sock_die("pipe");
	pid = fork();
	if (pid < 0)
		sock_die("fork");
	if (pid == 0)
		serve(lfd, r->count, done[1]);
	close(lfd);
	fds = sock_alloc((size_t)r->count * sizeof(*fds));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		sock_die("epoll");
	t0 = sock_now();
	for (long i = 0; i < r->count; i++) {
		struct epoll_event e = {.events = EPOLLOUT, .data.u64 = (uint64_t)i};

		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fds[i] < 0)
			sock_die("socket");
		if (connect(fds[i], (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
			sock_die("connect");
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e))
			sock_die("epoll_ctl");
	}
	while (pending) {
		int n = epoll_wait(ep, ev, 64, 10000);

		if (n <= 0)
			sock_die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = fds[ev[i].data.u64], err = 0;
			socklen_t el = sizeof(err);

			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
				errno = err;
				sock_die("connect");
			}
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
			pending--;
		}
	}
	if (read(done[0], &c, 1) != 1)
		sock_die("read");
	t1 = sock_now();
	printf("connect %.2f us\n", (t1 - t0) * 1e6 / (double)r->count);
	for (long i = 0; i < r->count; i++)
		close(fds[i]);
	waitpid(pid, NULL, 0);
	free(fds);
}
