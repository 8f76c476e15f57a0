// SPDX-License-Identifier: MIT
/*
 * uroce-sockbench: the kernel's UDP and TCP paths between two processes on 127.0.0.1, the
 * baselines of uroce-bench (sockbench.h says what each workload measures).
 *
 *   uroce-sockbench udp|tcp latency|stream|connect [--size N] [--count N] [--seconds S]
 *                   [--bidir] [--uring] [--blocking] [--mmsg]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tools/bench/sockbench.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "uroce-sockbench"

double sock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sock_die(const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(errno));
	exit(1);
}

void *sock_alloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		sock_die("calloc");
	return p;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " udp|tcp latency|stream|connect [OPTIONS]\n"
		"The kernel's UDP or TCP path between two processes on 127.0.0.1: one line\n"
		"\"WORKLOAD VALUE UNIT ...\".\n"
		"  latency   ping-pong of --size bytes, both sides busy polling with non-blocking\n"
		"            recv: \"latency MEDIAN us p99 P99 us p99.9 P999 us\", one way\n"
		"  stream    --size byte messages sent as fast as possible for --seconds (Gb/s, "
		"Mmsg/s);\n"
		"            UDP sends messages above %d bytes as GSO segments of %d and smaller\n"
		"            ones in sendmmsg batches (up to %d, at most 60 KiB); the receiver\n"
		"            waits for the first datagram of each recvmmsg batch of %d\n"
		"  connect   (tcp) --count connections started at once: us per connection\n"
		"  --size N     message size, 1..%d (default 2)\n"
		"  --count N    latency round trips (default 20000) or connections (default 1000)\n"
		"  --seconds S  stream duration, (0, 600] (default 2)\n"
		"  --bidir      stream both ways at once (the sum is reported)\n"
		"  --uring      (udp latency) send and receive through io_uring, polling its\n"
		"               completions without sleeping; --size at most %d\n"
		"  --blocking   (latency) both sides sleep in a blocking recvmsg, never polling:\n"
		"               the baseline of RDMA programs that wait on completion events\n"
		"               (ib_send_lat -e)\n"
		"  --mmsg       (udp stream, one way) the strong message-rate baseline: sendmmsg\n"
		"               batches of exactly %d that never block, received by recvmmsg\n"
		"               batches of %d polled without sleeping; --size at most %d\n",
		SOCK_SEG, SOCK_SEG, SOCK_BATCH, SOCK_BATCH, SOCK_MAX_SIZE, SOCK_SEG, SOCK_BATCH,
		SOCK_BATCH, SOCK_SEG);
}

/* A number option, or exit 2 naming it. */
static double number(const char *name, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, PROG ": --%s: \"%s\" is not a number in [%g, %g]\n", name, s, lo,
			hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"size", required_argument, NULL, 'z'},
		{"count", required_argument, NULL, 'n'},
		{"seconds", required_argument, NULL, 's'},
		{"bidir", no_argument, NULL, 'b'},
		{"uring", no_argument, NULL, 'u'},
		{"blocking", no_argument, NULL, 'B'},
		{"mmsg", no_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct sock_run r = {.size = 2, .count = 0, .seconds = 2};
	bool uring = false, mmsg = false;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'z':
			r.size = (size_t)number("size", optarg, 1, SOCK_MAX_SIZE);
			break;
		case 'n':
			r.count = (long)number("count", optarg, 1, 1e8);
			break;
		case 's':
			r.seconds = number("seconds", optarg, 1e-3, 600);
			break;
		case 'b':
			r.bidir = true;
			break;
		case 'u':
			uring = true;
			break;
		case 'B':
			r.blocking = true;
			break;
		case 'm':
			mmsg = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 2) {
		usage(stderr);
		return 2;
	}
	const char *proto = argv[optind], *work = argv[optind + 1];
	bool udp = !strcmp(proto, "udp"), tcp = !strcmp(proto, "tcp");

	if (!udp && !tcp) {
		fprintf(stderr, PROG ": unknown protocol \"%s\" (udp or tcp)\n", proto);
		return 2;
	}
	if (uring && (!udp || strcmp(work, "latency") || r.size > SOCK_SEG)) {
		fprintf(stderr, PROG ": --uring: only for udp latency, with --size at most %d\n",
			SOCK_SEG);
		return 2;
	}
	if (r.blocking && (strcmp(work, "latency") || uring)) {
		fprintf(stderr, PROG ": --blocking: only for latency, without --uring\n");
		return 2;
	}
	if (mmsg && (!udp || strcmp(work, "stream") || r.bidir || r.size > SOCK_SEG)) {
		fprintf(stderr, PROG ": --mmsg: only for udp stream, one way, --size at most %d\n",
			SOCK_SEG);
		return 2;
	}
	r.busy = mmsg;
	if (!strcmp(work, "latency")) {
		r.count = r.count ? r.count : 20000;
		if (r.count < 100) {
			fprintf(stderr, PROG ": --count: latency needs at least 100 round trips\n");
			return 2;
		}
		if (uring)
			sock_latency_uring(&r);
		else
			sock_latency(udp ? &sock_udp : &sock_tcp, &r);
	} else if (!strcmp(work, "stream")) {
		sock_stream(mmsg ? &sock_udp_mmsg : udp ? &sock_udp : &sock_tcp, &r);
	} else if (!strcmp(work, "connect") && tcp) {
		r.count = r.count ? r.count : 1000;
		if (r.count > 30000) {
			fprintf(stderr, PROG ": --count: at most 30000 connections\n");
			return 2;
		}
		tcp_connect(&r);
	} else {
		fprintf(stderr, PROG ": unknown workload \"%s\" for %s\n", work, proto);
		return 2;
	}
	return 0;
}
