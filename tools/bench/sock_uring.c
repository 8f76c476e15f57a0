// SPDX-License-Identifier: MIT
/*
 * uroce-sockbench's UDP ping-pong through io_uring: the latency baseline issue "Fabric engine"
 * names ("raw UDP ping-pong with io_uring busy polling"). Each process has a ring set up as
 * uroce's progress thread sets up its own (one issuer, deferred task work) and keeps a receive
 * armed at all times: a turn submits the send together with the next receive, then polls for
 * the receive's completion -- the completion queue, and when it is empty one
 * io_uring_get_events(), the system call that runs the deferred work -- without ever
 * sleeping. The connected UDP pair is sock_udp's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/bench/sockbench.h"

enum {
	TAG_SEND = 1,
	TAG_RECV = 2,
};

static void ring_init(struct io_uring *ring)
{
	struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER |
					     IORING_SETUP_DEFER_TASKRUN};
	int err = io_uring_queue_init_params(8, ring, &p);

	if (err) {
		errno = -err;
		sock_die("io_uring_queue_init");
	}
}

static struct io_uring_sqe *sqe_of(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		errno = EBUSY;
		sock_die("io_uring_get_sqe");
	}
	return sqe;
}

/* Queue a send of @size bytes at @out (if @out) and a receive into @in, and submit both. */
static void submit(struct io_uring *ring, int fd, const char *out, size_t size, char *in)
{
	struct io_uring_sqe *sqe;
	int err;

	if (out) {
		sqe = sqe_of(ring);
		io_uring_prep_send(sqe, fd, out, size, 0);
		io_uring_sqe_set_data64(sqe, TAG_SEND);
	}
	sqe = sqe_of(ring);
	io_uring_prep_recv(sqe, fd, in, SOCK_SEG, 0);
	io_uring_sqe_set_data64(sqe, TAG_RECV);
	err = io_uring_submit(ring);
	if (err < 0) {
		errno = -err;
		sock_die("io_uring_submit");
	}
}

/* Busy-poll @ring until the armed receive completes; reap send completions on the way. */
static void poll_recv(struct io_uring *ring)
{
	for (;;) {
		struct io_uring_cqe *cqe;
		int err;

		while (io_uring_peek_cqe(ring, &cqe) == 0) {
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			int res = cqe->res;

			io_uring_cqe_seen(ring, cqe);
			if (res < 0) {
				errno = -res;
				sock_die(tag == TAG_RECV ? "io_uring recv" : "io_uring send");
			}
			if (tag == TAG_RECV)
				return;
		}
		err = io_uring_get_events(ring);
		if (err < 0 && err != -EINTR) {
			errno = -err;
			sock_die("io_uring_get_events");
		}
	}
}

void sock_latency_uring(const struct sock_run *r)
{
	double *t = sock_alloc((size_t)r->count * sizeof(*t));
	char *out = sock_alloc(SOCK_SEG), *in = sock_alloc(SOCK_SEG);
	long n = r->count + SOCK_WARMUP;
	struct io_uring ring;
	int fd[2];
	pid_t child;

	sock_udp.pair(fd, true);
	alarm(SOCK_HANG_SECONDS); /* a datagram lost would stall the ping-pong for ever */
	child = fork();
	if (child < 0)
		sock_die("fork");
	ring_init(&ring); /* one each, after the fork: a ring is not shared */
	if (child == 0) {
		submit(&ring, fd[1], NULL, 0, in);
		for (long i = 0; i < n; i++) {
			poll_recv(&ring);
			submit(&ring, fd[1], out, r->size, in);
		}
		_exit(0);
	}
	for (long i = 0; i < n; i++) {
		double t0 = sock_now();

		submit(&ring, fd[0], out, r->size, in);
		poll_recv(&ring);
		if (i >= SOCK_WARMUP)
			t[i - SOCK_WARMUP] = (sock_now() - t0) / 2;
	}
	waitpid(child, NULL, 0);
	io_uring_queue_exit(&ring);
	sock_report_latency(t, r->count);
	free(t);
	free(out);
	free(in);
}
