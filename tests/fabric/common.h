/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fabric tests and their helper program: RoCEv2 test packets on loopback, and a
 * driver for helper processes (tests/fabric/peer.c) that answer one line per command.
 */
#ifndef UROCE_TEST_FABRIC_COMMON_H
#define UROCE_TEST_FABRIC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/ipudp.h"

#define FABRIC_TEST_QKEY 0x11111111u

/*
 * A UD SEND Only packet to @dqpn from @sqpn with PSN @psn and @payload_len bytes of @payload,
 * with room for the ICRC at the end. Returns its length, or 0 if @cap is too small.
 */
size_t fabric_test_ud(uint8_t *buf, size_t cap, uint32_t dqpn, uint32_t sqpn, uint32_t psn,
		      const void *payload, size_t payload_len);

/* The path from loopback to loopback: 127.0.0.1 (@v6 = 0) or ::1, tos 0, ttl 64. */
struct roce_ipudp fabric_test_loopback(int v6);

/* True if this host can send to ::1. */
int fabric_test_have_ipv6(void);

/* A helper process speaking the line protocol of tests/fabric/peer.c. */
struct fabric_peer {
	pid_t pid;
	int in;  /* its stdin */
	int out; /* its stdout */
	char buf[8192];
	size_t len;
};

/*
 * Start @prog with UROCE_UDP_PORT=@port (and the NULL-terminated "NAME=VALUE" list @env, which
 * may be NULL). Returns 0 or -1 with errno.
 */
int fabric_peer_start(struct fabric_peer *p, const char *prog, uint16_t port, char *const env[]);

/* Send one command line (a newline is added). Returns 0 or -1. */
int fabric_peer_cmd(struct fabric_peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Wait up to @timeout_ms for the first line starting with @prefix and copy it (without the
 * newline) to @line; other lines stay for later calls (answers and RECV lines interleave).
 * Returns 0, or -1 at the timeout, at the end of the output, or when 8 KiB of other lines
 * have piled up.
 */
int fabric_peer_expect(struct fabric_peer *p, const char *prefix, char *line, size_t size,
		       int timeout_ms);

/* Send @sig and reap the process; close the pipes. Returns its wait status. */
int fabric_peer_kill(struct fabric_peer *p, int sig);

/* Close its stdin, wait up to @timeout_ms for it to exit. Returns its wait status, or -1. */
int fabric_peer_finish(struct fabric_peer *p, int timeout_ms);

#endif
