// SPDX-License-Identifier: MIT
/* uroce-sockbench's workloads over a socket type: the ping-pong and the stream. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/bench/sockbench.h"

enum {
	RECV_BUF = 1 << 20, /* a ping-pong's receive buffer */
	RECV_SEG = 1 << 16, /* a coalesced UDP datagram fits */
};

/*
 * Wait until @size bytes have arrived on @fd (a message may come as several datagrams):
 * busy polling with a non-blocking recv, or (@blocking) asleep in a blocking recvmsg.
 */
static void recv_msg(int fd, char *buf, size_t size, bool blocking)
{
	struct iovec iov = {.iov_base = buf, .iov_len = RECV_BUF};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t got = 0;

	while (got < size) {
		ssize_t n = blocking ? recvmsg(fd, &m, 0) : recv(fd, buf, RECV_BUF, MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			sock_die("recv");
	}
}

static void send_msg(const struct sock_ops *ops, int fd, const char *buf, size_t size)
{
	if (ops->send_msg(fd, buf, size) < 0)
		sock_die("send");
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

void sock_report_latency(double *t, long count)
{
	qsort(t, (size_t)count, sizeof(*t), cmp_double);
	printf("latency %.2f us p99 %.2f us p99.9 %.2f us\n", t[count / 2] * 1e6,
	       t[count * 99 / 100] * 1e6, t[count * 999 / 1000] * 1e6);
}

void sock_latency(const struct sock_ops *ops, const struct sock_run *r)
{
	double *t = sock_alloc((size_t)r->count * sizeof(*t));
	char *buf = sock_alloc(RECV_BUF);
	long n = r->count + SOCK_WARMUP;
	int fd[2];
	pid_t child;

	ops->pair(fd, true);
	alarm(SOCK_HANG_SECONDS); /* a datagram lost would stall the ping-pong for ever */
	child = fork();
	if (child < 0)
		sock_die("fork");
	if (child == 0) {
		for (long i = 0; i < n; i++) {
			recv_msg(fd[1], buf, r->size, r->blocking);
			send_msg(ops, fd[1], buf, r->size);
		}
		_exit(0);
	}
	for (long i = 0; i < n; i++) {
		double t0 = sock_now();

		send_msg(ops, fd[0], buf, r->size);
		recv_msg(fd[0], buf, r->size, r->blocking);
		if (i >= SOCK_WARMUP)
			t[i - SOCK_WARMUP] = (sock_now() - t0) / 2;
	}
	waitpid(child, NULL, 0);
	sock_report_latency(t, r->count);
	free(t);
	free(buf);
}

struct sender {
	const struct sock_ops *ops;
	int fd;
	size_t size;
};

/* Send all one can until the process ends. A full socket buffer is not an error. */
static void *send_forever(void *arg)
{
	const struct sender *s = arg;
	char *buf = sock_alloc(SOCK_MAX_SIZE);

	for (;;) {
		if (s->ops->send_burst(s->fd, buf, s->size) < 0 && errno != EAGAIN &&
		    errno != ENOBUFS && errno != EINTR)
			sock_die("send");
	}
	return NULL;
}

/*
 * Count the bytes that arrive on @fd during @seconds from now, a batch of reads at a time:
 * waiting for the first of each batch, or (@busy) polling without ever sleeping.
 */
static double receive_for(int fd, double seconds, bool busy, double *elapsed)
{
	struct timeval tick = {0, 100000};
	char *buf = sock_alloc((size_t)SOCK_BATCH * RECV_SEG);
	struct mmsghdr m[SOCK_BATCH];
	struct iovec iov[SOCK_BATCH];
	double t0 = sock_now(), t, bytes = 0;

	/* A receive timeout, so that the window's end is seen even when nothing arrives. */
	if (!busy)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
	/* recvmmsg fills in msg_len and the flags; the buffers stay as they are. */
	for (int i = 0; i < SOCK_BATCH; i++) {
		iov[i] =
			(struct iovec){.iov_base = buf + (size_t)i * RECV_SEG, .iov_len = RECV_SEG};
		m[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
	}
	while ((t = sock_now()) - t0 < seconds) {
		int n = recvmmsg(fd, m, SOCK_BATCH, busy ? MSG_DONTWAIT : MSG_WAITFORONE, NULL);

		if (n < 0 && errno != EAGAIN && errno != EINTR)
			sock_die("recvmmsg");
		for (int i = 0; i < n; i++)
			bytes += m[i].msg_len;
	}
	free(buf);
	*elapsed = t - t0;
	return bytes;
}

/*
 * The stream: the child process sends on fd[1] to the parent's fd[0]; with --bidir each
 * process also sends from a thread while it receives, and the child reports what it
 * received through a pipe.
 */
void sock_stream(const struct sock_ops *ops, const struct sock_run *r)
{
	struct sender mine, theirs;
	double bytes, secs, child_bytes = 0, child_secs;
	int fd[2], report[2];
	pthread_t thread;
	pid_t child;

	ops->pair(fd, false);
	if (pipe(report))
		sock_die("pipe");
	child = fork();
	if (child < 0)
		sock_die("fork");
	if (child == 0) {
		theirs = (struct sender){ops, fd[1], r->size};
		if (!r->bidir)
			send_forever(&theirs);
		if (pthread_create(&thread, NULL, send_forever, &theirs))
			sock_die("pthread_create");
		child_bytes = receive_for(fd[1], r->seconds, r->busy, &child_secs);
		if (write(report[1], &child_bytes, sizeof(child_bytes)) != sizeof(child_bytes))
			sock_die("write");
		_exit(0);
	}
	mine = (struct sender){ops, fd[0], r->size};
	if (r->bidir && pthread_create(&thread, NULL, send_forever, &mine))
		sock_die("pthread_create");
	bytes = receive_for(fd[0], r->seconds, r->busy, &secs);
	if (r->bidir && read(report[0], &child_bytes, sizeof(child_bytes)) != sizeof(child_bytes))
		sock_die("read");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	bytes += child_bytes;
	printf("stream %.3f Gb/s %.4f Mmsg/s\n", bytes * 8 / secs / 1e9,
	       bytes / (double)r->size / secs / 1e6);
	/* The process ends here, and with it a sender thread blocked in send. */
	fflush(stdout);
	_exit(0);
}
