/* SPDX-License-Identifier: MIT */
/*
 * uroce-sockbench: the kernel's UDP and TCP paths between two processes on 127.0.0.1, the
 * baselines uroce-bench sets uroce's figures against. One workload per run, one result line.
 */
#ifndef UROCE_TOOLS_SOCKBENCH_H
#define UROCE_TOOLS_SOCKBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What to run: the workload's message size, length and direction. */
struct sock_run {
	size_t size;    /* bytes per message */
	long count;     /* latency: round trips measured; connect: connections */
	double seconds; /* stream: how long the receiver counts */
	bool bidir;     /* stream: both processes send and receive at once */
	bool blocking;  /* latency: both processes wait in a blocking recvmsg, never polling */
	bool busy;      /* stream: the receiver polls a non-blocking recvmmsg, never sleeping */
};

/*
 * The UDP segment size: a message larger than this leaves as UDP GSO segments of it, as
 * uroce's trains carry a message's packets of one path MTU (4096 on loopback).
 */
enum { SOCK_SEG = 4096, SOCK_MAX_SIZE = 1 << 20 };

/* Datagrams per sendmmsg of a small-message stream, and per recvmmsg of a stream's receiver. */
enum { SOCK_BATCH = 64 };

/*
 * A ping-pong's round trips before the measured ones, and how long it may run: a datagram lost
 * would stall it for ever.
 */
enum { SOCK_WARMUP = 100, SOCK_HANG_SECONDS = 60 };

/*
 * A socket type: how to make two connected endpoints on 127.0.0.1 and send on one. Both
 * senders return the bytes sent or -1 with errno (EAGAIN and ENOBUFS are a full buffer).
 */
struct sock_ops {
	/*
	 * Make @fd[0] and @fd[1], connected to each other, with large buffers; for a ping-pong
	 * (@latency), each message leaves at once (TCP_NODELAY).
	 */
	void (*pair)(int fd[2], bool latency);
	/* Send one message of @size bytes (a ping-pong's turn). */
	ssize_t (*send_msg)(int fd, const char *buf, size_t size);
	/* Send what a streaming sender sends in one call: one message or a batch of them. */
	ssize_t (*send_burst)(int fd, const char *buf, size_t size);
};

/*
 * sock_udp_mmsg: sock_udp whose streaming sender sends batches of exactly SOCK_BATCH datagrams
 * per sendmmsg without ever blocking (MSG_DONTWAIT), for messages of at most SOCK_SEG bytes:
 * with a busy receiver (sock_run.busy), the kernel's best small-message rate.
 */
extern const struct sock_ops sock_udp, sock_udp_mmsg, sock_tcp;

/*
 * The workloads print one line "WORKLOAD VALUE UNIT ..." and exit 1 with a message when a
 * system call fails:
 *   latency  the median (and the 99th and 99.9th percentiles) of half the round trip of a
 *            ping-pong of @r->size bytes, both processes busy polling, or with @r->blocking
 *            both waiting in a blocking recvmsg (us)
 *   stream   the bytes received per second while the sender(s) send all they can for
 *            @r->seconds (Gb/s), and the messages per second (Mmsg/s); the receiver reads
 *            batches of SOCK_BATCH with recvmmsg, waiting for the first, or with @r->busy
 *            polling without ever sleeping
 *   connect  (TCP) @r->count connections started at once, until all are accepted, per
 *            connection (us)
 */
void sock_latency(const struct sock_ops *ops, const struct sock_run *r);
/*
 * latency over UDP through io_uring (sock_uring.c), the baseline issue "Fabric engine" names:
 * messages of at most SOCK_SEG bytes (one datagram).
 */
void sock_latency_uring(const struct sock_run *r);
void sock_stream(const struct sock_ops *ops, const struct sock_run *r);
void tcp_connect(const struct sock_run *r);

/*
 * Sort the @count one-way times @t (seconds) and print the latency line:
 * "latency MEDIAN us p99 P99 us p99.9 P999 us".
 */
void sock_report_latency(double *t, long count);

/* Shared helpers (sockbench.c). */
double sock_now(void);
_Noreturn void sock_die(const char *what);
void *sock_alloc(size_t size);

#endif
