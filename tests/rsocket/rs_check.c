// SPDX-License-Identifier: MIT
/*
 * rsockets as a socket user sees them (verbs-shim/rdmacm/rsocket*.c): a server and a client
 * process over uroce, each check naming what it expects.
 *   rs_check server PORT         serves connections until told to stop (or killed)
 *   rs_check client ADDR PORT [reset]
 *   rs_check defaults SNDBUF RCVBUF SQSIZE RQSIZE INLINE IOMAPSIZE
 *                                a new stream socket's options are these (the defaults of
 *                                /etc/rdma/rsocket/, tests/rsocket/conf.sh)
 * The client connects once per check and tells the server by its first byte what to do: echo
 * ('E'), close at once ('C'), publish an iomap and check what lands there ('R'), or exit
 * without closing ('K': the connection is reset, checked with "reset" on one host only, where
 * another uroce process reports the dead one) and stop ('Q').
 * Checked: bad input (EBADF, ENOTSUP, EINVAL, ENOPROTOOPT), a refused connection (blocking:
 * ECONNREFUSED; non-blocking: EINPROGRESS, then rpoll and SO_ERROR), options, data through
 * rwritev/rreadv/rsend/rrecv with MSG_PEEK and MSG_WAITALL, EAGAIN, rpoll and rselect over an
 * rsocket and a pipe, rshutdown(SHUT_WR) then EOF, EOF and EPIPE after the peer closed,
 * riomap/riowrite, SO_KEEPALIVE (keepalives leave while the connection is idle). Exit 0 when
 * every check passed.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uroce/uroce.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));               \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define DIE(...)                                                                                   \
	do {                                                                                       \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fprintf(stderr, ": %s\n", strerror(errno));                                        \
		exit(2);                                                                           \
	} while (0)

static struct sockaddr_in addr_of(const char *ip, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		DIE("bad address %s", ip);
	return a;
}

/* One-byte messages of the 'P' case: more than the default receive queue's 384 credits. */
#define PEEK_SMALL_SENDS 600

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 9));
}

/* Read exactly @len bytes (blocking socket). */
static int read_all(int s, void *buf, size_t len)
{
	ssize_t n = rrecv(s, buf, len, MSG_WAITALL);

	return n == (ssize_t)len ? 0 : -1;
}

/* --- the server --- */

static void serve_echo(int s)
{
	static uint8_t buf[65536];
	ssize_t n;

	while ((n = rrecv(s, buf, sizeof(buf), 0)) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = rsend(s, buf + off, (size_t)(n - off), 0);

			if (w <= 0)
				return;
			off += w;
		}
}

/* Publish a buffer through riomap, wait for the client's "done", answer whether it holds the
 * pattern the client wrote there. */
static void serve_iomap(int s)
{
	size_t len = 1 << 16;
	uint8_t *buf = calloc(1, len), ok = 1, done;
	off_t off = riomap(s, buf, len, PROT_WRITE, 0, 0);

	rsend(s, &off, sizeof(off), 0);
	if (read_all(s, &done, 1) < 0)
		return;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(i))
			ok = 0;
	rsend(s, &ok, 1, 0);
	riounmap(s, buf, len);
	free(buf);
}

static int server(int port)
{
	struct sockaddr_in a = addr_of("0.0.0.0", port);
	int l = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (l < 0 || rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(l, (struct sockaddr *)&a, sizeof(a)) || rlisten(l, 8))
		DIE("server: listen on %d", port);
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		int s = raccept(l, NULL, NULL);
		uint8_t cmd;

		if (s < 0)
			DIE("raccept");
		if (read_all(s, &cmd, 1) < 0) {
			rclose(s);
			continue;
		}
		switch (cmd) {
		case 'E':
			serve_echo(s);
			break;
		case 'R':
			serve_iomap(s);
			break;
		case 'P': /* one byte, a pause, three more: a peek for four must wait */
			rsend(s, "p", 1, 0);
			usleep(100000);
			rsend(s, "eek", 3, 0);
			read_all(s, &cmd, 1);
			for (int i = 0; i < PEEK_SMALL_SENDS; i++) /* then one byte per message */
				if (rsend(s, &(uint8_t){pattern((size_t)i)}, 1, 0) != 1)
					break;
			read_all(s, &cmd, 1);
			break;
		case 'K':
			_exit(0); /* no close: the peer sees the connection reset */
		case 'Q':
			rclose(s);
			rclose(l);
			return 0;
		default: /* 'C': close at once */
			break;
		}
		rclose(s);
	}
}

/* --- the client --- */

static int connect_to(const struct sockaddr_in *a, char cmd)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	/* The peer may publish one mapping in our table (riomap: 'R'). */
	if (s < 0 || rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof(one)) ||
	    rconnect(s, (const struct sockaddr *)a, sizeof(*a)))
		DIE("connect for '%c'", cmd);
	if (rsend(s, &cmd, 1, 0) != 1)
		DIE("send '%c'", cmd);
	return s;
}

static void check_bad_input(void)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), v = 0;
	socklen_t len = sizeof(v);
	char c;

	CHECK(s >= 0, "rsocket");
	errno = 0;
	CHECK(rsocket(AF_UNIX, SOCK_STREAM, 0) == -1 && errno == ENOTSUP, "AF_UNIX: ENOTSUP");
	CHECK(rsocket(AF_INET, SOCK_SEQPACKET, 0) == -1 && errno == ENOTSUP, "SEQPACKET: ENOTSUP");
	CHECK(rsend(STDIN_FILENO, "x", 1, 0) == -1 && errno == EBADF, "rsend on stdin: EBADF");
	CHECK(rclose(-1) == -1 && errno == EBADF, "rclose(-1): EBADF");
	CHECK(rlisten(s, 1) == -1 && errno == EINVAL, "rlisten unbound: EINVAL");
	CHECK(rrecv(s, &c, 1, 0) == -1 && errno == ENOTCONN, "rrecv unconnected: ENOTCONN");
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)) == -1 && errno == ENOPROTOOPT,
	      "SO_BROADCAST: ENOPROTOOPT");
	CHECK(rgetsockopt(s, IPPROTO_TCP, TCP_CORK, &v, &len) == -1 && errno == ENOPROTOOPT,
	      "TCP_CORK: ENOPROTOOPT");
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, NULL, 4) == -1 && errno == EINVAL,
	      "NULL value: EINVAL");
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len) == 0 && v == 1 << 17,
	      "default SO_RCVBUF 128 KiB, got %d", v);
	v = 1 << 16;
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) == 0, "SO_SNDBUF");
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len) == 0 && v == 1 << 17,
	      "SO_SNDBUF doubled, got %d", v);
	v = 100;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)) == 0 &&
		      rgetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, &len) == 0 && v == 100,
	      "RDMA_SQSIZE");
	CHECK(rfcntl(s, F_GETFL) == 0 && rfcntl(s, F_SETFL, O_NONBLOCK) == 0 &&
		      rfcntl(s, F_GETFL) == O_NONBLOCK,
	      "rfcntl O_NONBLOCK");
	CHECK(rclose(s) == 0, "rclose");
}

static void check_refused(const struct sockaddr_in *nobody)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), err = 0;
	socklen_t len = sizeof(err);
	struct pollfd p;

	errno = 0;
	CHECK(rconnect(s, (const struct sockaddr *)nobody, sizeof(*nobody)) == -1 &&
		      errno == ECONNREFUSED,
	      "blocking connect to nobody: ECONNREFUSED");
	rclose(s);
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	rfcntl(s, F_SETFL, O_NONBLOCK);
	/* As TCP on loopback, the refusal may come before rconnect returns. */
	if (rconnect(s, (const struct sockaddr *)nobody, sizeof(*nobody)) == -1 &&
	    errno == ECONNREFUSED) {
		rclose(s);
		return;
	}
	CHECK(errno == EINPROGRESS, "non-blocking connect: EINPROGRESS or ECONNREFUSED");
	p = (struct pollfd){.fd = s, .events = POLLOUT};
	CHECK(rpoll(&p, 1, 5000) == 1 && (p.revents & POLLERR), "rpoll: POLLERR, got %#x",
	      p.revents);
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == ECONNREFUSED,
	      "SO_ERROR ECONNREFUSED, got %d", err);
	rclose(s);
}

/* A connection echoing 1 MiB sent in pieces of every kind, read back in others. */
static void check_echo(const struct sockaddr_in *a)
{
	size_t len = 1 << 20, got = 0, sent = 0;
	uint8_t *out = malloc(len), *in = calloc(1, len), cmd = 'E', peek[4];
	int s = rsocket(AF_INET, SOCK_STREAM, 0), err = -1, pfd[2];
	socklen_t elen = sizeof(err);
	struct pollfd p[2];
	fd_set rd, wr;
	struct timeval tv = {5, 0};

	for (size_t i = 0; i < len; i++)
		out[i] = pattern(i);
	/* A non-blocking connect, as a socket user does it. */
	rfcntl(s, F_SETFL, O_NONBLOCK);
	CHECK(rconnect(s, (const struct sockaddr *)a, sizeof(*a)) == 0 || errno == EINPROGRESS,
	      "non-blocking connect");
	p[0] = (struct pollfd){.fd = s, .events = POLLOUT};
	CHECK(rpoll(p, 1, 5000) == 1 && (p[0].revents & POLLOUT), "connected: POLLOUT");
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0,
	      "SO_ERROR 0 once connected, got %d", err);
	CHECK(rrecv(s, in, 1, 0) == -1 && errno == EAGAIN, "nothing yet: EAGAIN");
	rfcntl(s, F_SETFL, 0);
	rsend(s, &cmd, 1, 0);
	/* rpoll and rselect over an ordinary fd and the rsocket. */
	if (pipe(pfd))
		DIE("pipe");
	CHECK(write(pfd[1], "x", 1) == 1, "pipe write");
	p[0] = (struct pollfd){.fd = pfd[0], .events = POLLIN};
	p[1] = (struct pollfd){.fd = s, .events = POLLIN | POLLOUT};
	CHECK(rpoll(p, 2, 1000) == 2 && p[0].revents == POLLIN && p[1].revents == POLLOUT,
	      "rpoll: pipe POLLIN, rsocket POLLOUT only, got %#x %#x", p[0].revents, p[1].revents);
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(pfd[0], &rd);
	FD_SET(s, &rd);
	FD_SET(s, &wr);
	CHECK(rselect((pfd[0] > s ? pfd[0] : s) + 1, &rd, &wr, NULL, &tv) == 2 &&
		      FD_ISSET(pfd[0], &rd) && FD_ISSET(s, &wr) && !FD_ISSET(s, &rd),
	      "rselect: pipe readable, rsocket writable");
	/* The first 64 KiB through rwritev in three pieces, the rest by rsend. */
	{
		struct iovec v[3] = {{out, 1000}, {out + 1000, 1}, {out + 1001, 65535}};

		CHECK(rwritev(s, v, 3) == 66536, "rwritev");
		sent = 66536;
	}
	while (sent < len - 4) {
		size_t chunk = len - 4 - sent < 32768 ? len - 4 - sent : 32768;
		ssize_t n = rsend(s, out + sent, chunk, 0);

		CHECK(n > 0, "rsend");
		if (n <= 0)
			break;
		sent += (size_t)n;
		/* The echo comes back meanwhile: take what rpoll says is there, and wait for it
		 * when 64 KiB are out, so that neither side's buffer fills while it sends. */
		p[0] = (struct pollfd){.fd = s, .events = POLLIN};
		while (got < sent && (sent - got > 65536 || rpoll(p, 1, 0) == 1)) {
			ssize_t r = rrecv(s, in + got, sent - got, 0);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	/* The last bytes after the draining: some are left for MSG_PEEK. */
	CHECK(rsend(s, out + sent, 4, 0) == 4, "rsend the last 4 bytes");
	{
		ssize_t r = rrecv(s, peek, sizeof(peek), MSG_PEEK | MSG_WAITALL);

		CHECK(r == sizeof(peek) && !memcmp(peek, out + got, sizeof(peek)),
		      "MSG_PEEK: %zd bytes", r);
	}
	{
		struct iovec v[2] = {{in + got, 3}, {in + got + 3, len - got - 3}};
		ssize_t r = 0, n;

		while ((size_t)r < len - got && (n = rreadv(s, v, 2)) > 0) {
			r += n;
			/* rreadv fills its buffers in order: move them on by what came */
			for (int i = 0; i < 2 && n; i++) {
				size_t k = (size_t)n < v[i].iov_len ? (size_t)n : v[i].iov_len;

				v[i].iov_base = (uint8_t *)v[i].iov_base + k;
				v[i].iov_len -= k;
				n -= (ssize_t)k;
			}
		}
		got += (size_t)r;
	}
	CHECK(got == len && !memcmp(in, out, len), "1 MiB echoed intact (%zu bytes)", got);
	/* Our write side closes: the server sees EOF and closes; we read EOF. */
	CHECK(rshutdown(s, SHUT_WR) == 0, "rshutdown SHUT_WR");
	CHECK(rsend(s, "x", 1, 0) == -1 && errno == EPIPE, "send after SHUT_WR: EPIPE");
	CHECK(rrecv(s, in, 1, 0) == 0, "EOF after the server's close");
	rclose(s);
	close(pfd[0]);
	close(pfd[1]);
	free(out);
	free(in);
}

static void check_peer_close(const struct sockaddr_in *a)
{
	int s = connect_to(a, 'C');
	char c;
	struct pollfd p = {.fd = s, .events = POLLIN};

	CHECK(rpoll(&p, 1, 5000) == 1 && (p.revents & POLLIN), "closed peer: POLLIN");
	CHECK(rrecv(s, &c, 1, 0) == 0, "closed peer: EOF (0)");
	CHECK(rrecv(s, &c, 1, 0) == 0, "closed peer: EOF again");
	errno = 0;
	CHECK(rsend(s, "x", 1, 0) == -1 && errno == EPIPE, "send to a closed peer: EPIPE");
	rclose(s);
}

/* MSG_PEEK | MSG_WAITALL waits until all it asks for is there, as Linux's TCP does. */
static void check_peek_waitall(const struct sockaddr_in *a)
{
	int s = connect_to(a, 'P');
	char buf[5] = {0};
	ssize_t n = rrecv(s, buf, 4, MSG_PEEK | MSG_WAITALL);

	CHECK(n == 4 && !memcmp(buf, "peek", 4), "MSG_PEEK | MSG_WAITALL: %zd bytes, '%s'", n, buf);
	memset(buf, 0, sizeof(buf));
	CHECK(rrecv(s, buf, 4, MSG_WAITALL) == 4 && !memcmp(buf, "peek", 4),
	      "the peeked bytes are read after");
	rsend(s, "x", 1, 0);
	/*
	 * More one-byte messages than the peer has message credits (the receive queue, 384):
	 * a peek of all of them gets what can come before anything is read, not a wait for
	 * ever (SIGALRM ends the run if it waits), and then they are all read.
	 */
	{
		uint8_t in[PEEK_SMALL_SENDS];
		ssize_t got;
		bool same = true;

		alarm(30);
		got = rrecv(s, in, sizeof(in), MSG_PEEK | MSG_WAITALL);
		alarm(0);
		for (ssize_t i = 0; i < got; i++)
			same = same && in[i] == pattern((size_t)i);
		CHECK(got > 0 && got < PEEK_SMALL_SENDS && same,
		      "a peek beyond the peer's message credits: %zd bytes", got);
		CHECK(rrecv(s, in, sizeof(in), MSG_WAITALL) == PEEK_SMALL_SENDS,
		      "the small messages read after the peek");
		for (size_t i = 0; i < sizeof(in); i++)
			same = same && in[i] == pattern(i);
		CHECK(same, "the small messages' bytes");
	}
	rsend(s, "x", 1, 0);
	rclose(s);
}

static void check_iomap(const struct sockaddr_in *a)
{
	size_t len = 1 << 16;
	uint8_t *buf = malloc(len), ok = 0, done = 1;
	int s = connect_to(a, 'R');
	off_t off = -1;

	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i);
	CHECK(read_all(s, &off, sizeof(off)) == 0 && off == 0, "the server's riomap offset");
	CHECK(riowrite(s, buf, len / 2, 0, 0) == len / 2, "riowrite first half");
	CHECK(riowrite(s, buf + len / 2, len / 2, (off_t)(len / 2), 0) == len / 2,
	      "riowrite second half");
	errno = 0;
	CHECK(riowrite(s, buf, 1, (off_t)len, 0) == (size_t)-1 && errno == EINVAL,
	      "riowrite beyond the mapping: EINVAL");
	rsend(s, &done, 1, 0);
	CHECK(read_all(s, &ok, 1) == 0 && ok == 1, "the server found the data in its iomap");
	rclose(s);
	free(buf);
}

/* Keepalives leave while the connection is idle (frames sent grow). */
static void check_keepalive(const struct sockaddr_in *a)
{
	int (*stats)(struct uroce_stats *, size_t) = dlsym(RTLD_DEFAULT, "uroce_get_stats");
	int s = connect_to(a, 'E'), on = 1, idle = 1, v = 0;
	socklen_t len = sizeof(v);
	struct uroce_stats st0, st1;

	CHECK(stats != NULL, "uroce_get_stats (run over uroce)");
	if (!stats)
		return;
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == 0 &&
		      rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) == 0,
	      "SO_KEEPALIVE, TCP_KEEPIDLE 1");
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0 && v == 1,
	      "SO_KEEPALIVE reads 1");
	stats(&st0, sizeof(st0));
	sleep(3);
	stats(&st1, sizeof(st1));
	CHECK(st1.tx_packets - st0.tx_packets >= 2, "keepalives sent while idle: %llu frames",
	      (unsigned long long)(st1.tx_packets - st0.tx_packets));
	rclose(s);
}

static void check_reset(const struct sockaddr_in *a)
{
	int s = connect_to(a, 'K');
	char c;

	alarm(20);
	errno = 0;
	CHECK(rrecv(s, &c, 1, 0) == -1 && errno == ECONNRESET, "killed peer: ECONNRESET");
	errno = 0;
	CHECK(rsend(s, "x", 1, 0) == -1 && errno == ECONNRESET,
	      "send to a killed peer: ECONNRESET");
	rclose(s);
}

/* A new stream socket's options, each against its expected value in @want. */
static int check_defaults(char **want)
{
	static const struct {
		int level, name;
		const char *what;
	} opt[] = {{SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF"},
		   {SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF"},
		   {SOL_RDMA, RDMA_SQSIZE, "RDMA_SQSIZE"},
		   {SOL_RDMA, RDMA_RQSIZE, "RDMA_RQSIZE"},
		   {SOL_RDMA, RDMA_INLINE, "RDMA_INLINE"},
		   {SOL_RDMA, RDMA_IOMAPSIZE, "RDMA_IOMAPSIZE"}};
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	CHECK(s >= 0, "rsocket");
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		int v = -1;
		socklen_t len = sizeof(v);

		CHECK(rgetsockopt(s, opt[i].level, opt[i].name, &v, &len) == 0 &&
			      v == atoi(want[i]),
		      "%s is %d, not %s", opt[i].what, v, want[i]);
	}
	rclose(s);
	printf("rs_check: %d failures\n", failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a, nobody;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 8 && !strcmp(argv[1], "defaults"))
		return check_defaults(argv + 2);
	if (argc < 4 || strcmp(argv[1], "client"))
		DIE("usage: rs_check server PORT | rs_check client ADDR PORT [reset] | "
		    "rs_check defaults SNDBUF RCVBUF SQSIZE RQSIZE INLINE IOMAPSIZE");
	a = addr_of(argv[2], atoi(argv[3]));
	nobody = addr_of(argv[2], atoi(argv[3]) + 1);
	check_bad_input();
	check_refused(&nobody);
	check_echo(&a);
	check_peer_close(&a);
	check_peek_waitall(&a);
	check_iomap(&a);
	check_keepalive(&a);
	if (argc > 4 && !strcmp(argv[4], "reset")) {
		check_reset(&a);
	} else {
		int s = connect_to(&a, 'Q');

		rclose(s);
	}
	printf("rs_check: %d failures\n", failures);
	return failures ? 1 : 0;
}
