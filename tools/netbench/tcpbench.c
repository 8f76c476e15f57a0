// SPDX-License-Identifier: MIT
/*
 * uroce-tcpbench: the kernel's TCP connection setup between two processes on 127.0.0.1, the
 * baseline uroce-cmbench sets rdma_cm connection setup against (docs/PERFORMANCE.md):
 *
 *   connect   N non-blocking connects started at once (as cmtime starts its N rdma_connect
 *             calls), timed until every one is established and the server has accepted all:
 *             microseconds per connection, amortised
 *
 * The server is a forked process. Prints one line "connect VALUE us".
 *
 *   uroce-tcpbench connect [--count N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "uroce-tcpbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Server: accept @count connections on @lfd, then tell the client (one byte on @done). */
static void serve(int lfd, long count, int done)
{
	int *fds = calloc((size_t)count, sizeof(*fds));

	if (!fds)
		die("calloc");
	for (long i = 0; i < count; i++) {
		fds[i] = accept(lfd, NULL, NULL);
		if (fds[i] < 0)
			die("accept");
	}
	if (write(done, "a", 1) != 1)
		die("write");
	for (long i = 0; i < count; i++)
		close(fds[i]);
	_exit(0);
}

static void connect_bench(long count)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	struct epoll_event ev[64];
	int lfd, ep, done[2], *fds, pending = (int)count, status;
	double t0, t1;
	char c;
	pid_t pid;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, (int)count) ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) || pipe(done))
		die("listen");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		serve(lfd, count, done[1]);
	close(lfd);
	fds = calloc((size_t)count, sizeof(*fds));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!fds || ep < 0)
		die("epoll");
	t0 = now_s();
	for (long i = 0; i < count; i++) {
		struct epoll_event e = {.events = EPOLLOUT, .data.u64 = (uint64_t)i};

		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fds[i] < 0)
			die("socket");
		if (connect(fds[i], (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
			die("connect");
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e))
			die("epoll_ctl");
	}
	while (pending) {
		int n = epoll_wait(ep, ev, 64, 10000);

		if (n <= 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = fds[ev[i].data.u64], err = 0;
			socklen_t el = sizeof(err);

			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
				errno = err;
				die("connect");
			}
			epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
			pending--;
		}
	}
	if (read(done[0], &c, 1) != 1)
		die("read");
	t1 = now_s();
	printf("connect %.2f us\n", (t1 - t0) * 1e6 / (double)count);
	for (long i = 0; i < count; i++)
		close(fds[i]);
	waitpid(pid, &status, 0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"count", required_argument, NULL, 'n'}, {0}};
	long count = 1000;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o != 'n') {
			fprintf(stderr, "usage: uroce-tcpbench connect [--count N]\n");
			return 2;
		}
		count = strtol(optarg, NULL, 10);
	}
	if (optind != argc - 1 || strcmp(argv[optind], "connect") || count < 1 || count > 30000) {
		fprintf(stderr, "usage: uroce-tcpbench connect [--count N] (N in 1..30000)\n");
		return 2;
	}
	connect_bench(count);
	return 0;
}
