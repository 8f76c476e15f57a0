/* SPDX-License-Identifier: MIT */
#include "tests/fabric/common.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/wire.h"

size_t fabric_test_ud(uint8_t *buf, size_t cap, uint32_t dqpn, uint32_t sqpn, uint32_t psn,
		      const void *payload, size_t payload_len)
{
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY,
			.pkey = ROCE_DEFAULT_PKEY,
			.dqpn = dqpn,
			.psn = psn},
		.deth = {.qkey = FABRIC_TEST_QKEY, .src_qpn = sqpn},
		.payload = payload,
		.payload_len = (uint32_t)payload_len,
	};

	return roce_encode(buf, cap, &pkt);
}

struct roce_ipudp fabric_test_loopback(int v6)
{
	static const uint8_t v4lo[4] = {127, 0, 0, 1};
	struct roce_ipudp f = {.ttl = 64};

	if (v6) {
		f.sgid[15] = 1;
		f.dgid[15] = 1;
	} else {
		roce_gid_from_v4(f.sgid, v4lo);
		roce_gid_from_v4(f.dgid, v4lo);
	}
	return f;
}

int fabric_test_have_ipv6(void)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ok = fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	if (fd >= 0)
		close(fd);
	return ok;
}

int fabric_peer_start(struct fabric_peer *p, const char *prog, uint16_t port, char *const env[])
{
	int to[2], from[2];
	char portstr[16];

	memset(p, 0, sizeof(*p));
	if (pipe2(to, O_CLOEXEC))
		return -1;
	if (pipe2(from, O_CLOEXEC)) {
		close(to[0]);
		close(to[1]);
		return -1;
	}
	snprintf(portstr, sizeof(portstr), "%u", port);
	p->pid = fork();
	if (p->pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		setenv("UROCE_UDP_PORT", portstr, 1);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	p->in = to[1];
	p->out = from[0];
	if (p->pid < 0) {
		close(p->in);
		close(p->out);
		return -1;
	}
	return 0;
}

int fabric_peer_cmd(struct fabric_peer *p, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return -1;
	line[n++] = '\n';
	return write(p->in, line, (size_t)n) == n ? 0 : -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Take the first complete line of @p's output that starts with @prefix. */
static int take_line(struct fabric_peer *p, const char *prefix, char *line, size_t size)
{
	size_t at = 0, plen = strlen(prefix);

	while (at < p->len) {
		char *nl = memchr(p->buf + at, '\n', p->len - at);
		size_t n;

		if (!nl)
			return -1;
		n = (size_t)(nl - (p->buf + at));
		if (n >= plen && !strncmp(p->buf + at, prefix, plen)) {
			size_t copy = n < size - 1 ? n : size - 1;

			memcpy(line, p->buf + at, copy);
			line[copy] = '\0';
			memmove(p->buf + at, nl + 1, p->len - at - n - 1);
			p->len -= n + 1;
			return 0;
		}
		at += n + 1;
	}
	return -1;
}

int fabric_peer_expect(struct fabric_peer *p, const char *prefix, char *line, size_t size,
		       int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	while (take_line(p, prefix, line, size)) {
		struct pollfd pfd = {.fd = p->out, .events = POLLIN};
		uint64_t t = now_ms();
		ssize_t got;

		if (t >= deadline || p->len == sizeof(p->buf))
			return -1;
		if (poll(&pfd, 1, (int)(deadline - t)) <= 0)
			continue;
		got = read(p->out, p->buf + p->len, sizeof(p->buf) - p->len);
		if (got <= 0)
			return -1;
		p->len += (size_t)got;
	}
	return 0;
}

static void close_pipes(struct fabric_peer *p)
{
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	p->in = p->out = -1;
}

int fabric_peer_kill(struct fabric_peer *p, int sig)
{
	int status = -1;

	kill(p->pid, sig);
	waitpid(p->pid, &status, 0);
	close_pipes(p);
	return status;
}

int fabric_peer_finish(struct fabric_peer *p, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int status;

	if (p->in >= 0)
		close(p->in);
	p->in = -1;
	while (waitpid(p->pid, &status, WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			fabric_peer_kill(p, SIGKILL);
			return -1;
		}
		usleep(10000);
	}
	close_pipes(p);
	return status;
}
