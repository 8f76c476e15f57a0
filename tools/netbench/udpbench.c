// SPDX-License-Identifier: MIT
/*
 * uroce-udpbench: what the kernel's UDP path does between two processes on 127.0.0.1, the
 * baselines uroce-netbench sets uroce's figures against (docs/PERFORMANCE.md):
 *
 *   latency   2-byte ping-pong, both sides busy polling (recv with MSG_DONTWAIT in a loop):
 *             the median and 99th percentile of half the round trip, in microseconds
 *   bulk      4 KiB datagrams sent 15 at a time (a UDP packet is < 64 KiB) as UDP GSO sends and
 * received with UDP GRO (what uroce's trains use), for a duration: gigabits per second received
 *   rate      64-byte datagrams sent with sendmmsg and received with recvmmsg, 64 at a time,
 *             for a duration: datagrams per second received
 *
 * The receiver forks off the sender; each prints one line "NAME VALUE UNIT".
 *
 *   uroce-udpbench latency|bulk|rate [--count N] [--seconds S]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

enum { BULK_SEG = 4096, BULK_SEGS = 15, RATE_LEN = 64, RATE_BATCH = 64 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "uroce-udpbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A UDP socket on 127.0.0.1 (an ephemeral port), with big buffers; its address in @a. */
static int udp_socket(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 16 << 20;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		die("socket");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	return fd;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static void latency(long count)
{
	struct sockaddr_in pa, pb;
	int a = udp_socket(&pa), b = udp_socket(&pb);
	double *t = malloc(count * sizeof(double));
	char buf[64] = {0};
	pid_t child;

	if (!t)
		die("malloc");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		for (long i = 0; i < count + 100; i++) {
			while (recv(b, buf, sizeof(buf), MSG_DONTWAIT) < 0)
				;
			sendto(b, buf, 2, 0, (struct sockaddr *)&pa, sizeof(pa));
		}
		_exit(0);
	}
	for (long i = 0; i < count + 100; i++) {
		double t0 = now_s();

		sendto(a, buf, 2, 0, (struct sockaddr *)&pb, sizeof(pb));
		while (recv(a, buf, sizeof(buf), MSG_DONTWAIT) < 0)
			;
		if (i >= 100) /* the first ones warm up */
			t[i - 100] = (now_s() - t0) / 2 * 1e6;
	}
	waitpid(child, NULL, 0);
	qsort(t, count, sizeof(double), cmp_double);
	printf("latency %.2f us (p99 %.2f us)\n", t[count / 2], t[count * 99 / 100]);
	free(t);
}

/* Fork a sender that runs @send_batch on @fd to @to until the parent kills it. */
static pid_t sender(int fd, const struct sockaddr_in *to, void (*send_batch)(int, const void *))
{
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (child == 0) {
		for (;;)
			send_batch(fd, to);
	}
	return child;
}

static void bulk_batch(int fd, const void *to)
{
	static char buf[BULK_SEG * BULK_SEGS];
	char control[CMSG_SPACE(sizeof(uint16_t))] = {0};
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr m = {.msg_name = (void *)to,
			   .msg_namelen = sizeof(struct sockaddr_in),
			   .msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = control,
			   .msg_controllen = sizeof(control)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	uint16_t seg = BULK_SEG;

	c->cmsg_level = IPPROTO_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	if (sendmsg(fd, &m, 0) < 0 && errno != EAGAIN && errno != ENOBUFS)
		die("sendmsg with UDP_SEGMENT");
}

static void bulk(double seconds)
{
	struct sockaddr_in ps, pr;
	int s = udp_socket(&ps), r = udp_socket(&pr), one = 1;
	static char buf[65536];
	double t0, t;
	long bytes = 0;
	pid_t child;

	setsockopt(r, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	child = sender(s, &pr, bulk_batch);
	struct timeval tick = {0, 100000};

	/* A receive timeout, so that a sender that cannot send ends the run instead of hanging. */
	setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
	t0 = now_s();
	while ((t = now_s()) - t0 < seconds) {
		ssize_t n = recv(r, buf, sizeof(buf), 0);

		if (n > 0)
			bytes += n;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("bulk %.2f Gb/s\n", bytes * 8 / (t - t0) / 1e9);
}

static void rate_batch(int fd, const void *to)
{
	static char buf[RATE_LEN];
	static struct mmsghdr m[RATE_BATCH];
	static struct iovec iov = {.iov_base = buf, .iov_len = RATE_LEN};

	for (int i = 0; i < RATE_BATCH; i++)
		m[i].msg_hdr = (struct msghdr){.msg_name = (void *)to,
					       .msg_namelen = sizeof(struct sockaddr_in),
					       .msg_iov = &iov,
					       .msg_iovlen = 1};
	sendmmsg(fd, m, RATE_BATCH, 0);
}

static void rate(double seconds)
{
	struct sockaddr_in ps, pr;
	int s = udp_socket(&ps), r = udp_socket(&pr);
	static char buf[RATE_BATCH][RATE_LEN];
	struct mmsghdr m[RATE_BATCH];
	struct iovec iov[RATE_BATCH];
	struct timespec wait = {0, 10000000};
	double t0, t;
	long got = 0;
	pid_t child;

	child = sender(s, &pr, rate_batch);
	t0 = now_s();
	while ((t = now_s()) - t0 < seconds) {
		int n;

		for (int i = 0; i < RATE_BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = buf[i], .iov_len = RATE_LEN};
			m[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
		}
		n = recvmmsg(r, m, RATE_BATCH, MSG_WAITFORONE, &wait);
		if (n > 0)
			got += n;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("rate %.3f Mmsg/s\n", got / (t - t0) / 1e6);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"count", required_argument, NULL, 'n'},
		{"seconds", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	long count = 20000;
	double seconds = 2;
	int c;

	while ((c = getopt_long(argc, argv, "n:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			count = atol(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		default:
			printf("usage: uroce-udpbench latency|bulk|rate [--count N] [--seconds "
			       "S]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1 || count < 100 || !(seconds > 0 && seconds <= 600)) {
		fprintf(stderr, "uroce-udpbench: one of latency, bulk, rate; --count at least 100, "
				"--seconds in (0, 600]\n");
		return 2;
	}
	if (!strcmp(argv[optind], "latency"))
		latency(count);
	else if (!strcmp(argv[optind], "bulk"))
		bulk(seconds);
	else if (!strcmp(argv[optind], "rate"))
		rate(seconds);
	else {
		fprintf(stderr, "uroce-udpbench: unknown benchmark \"%s\"\n", argv[optind]);
		return 2;
	}
	return 0;
}
