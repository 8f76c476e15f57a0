// SPDX-License-Identifier: MIT
/*
 * An ordinary TCP echo server and client (no rsocket call in it), for running over rsockets
 * under librspreload.so (tests/rsocket/preload.sh).
 *   sock_echo server PORT          echoes each connection until its EOF; stops after COUNT=1
 *   sock_echo client ADDR PORT N   sends N bytes of a pattern (while reading the echo with
 *                                  poll), then shuts its write side; exit 0 when every byte
 *                                  came back intact and then EOF
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 13 + (i >> 10));
}

static int server(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, s;
	static uint8_t buf[65536];
	ssize_t n;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4)) {
		perror("server: listen");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	s = accept(l, NULL, NULL);
	if (s < 0) {
		perror("accept");
		return 2;
	}
	while ((n = read(s, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(s, buf + off, (size_t)(n - off));

			if (w <= 0) {
				perror("server: write");
				return 1;
			}
			off += w;
		}
	close(s);
	close(l);
	return n < 0 ? 1 : 0;
}

static int client(const char *ip, int port, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	uint8_t *out = malloc(len), *in = malloc(len);
	size_t sent = 0, got = 0;

	inet_pton(AF_INET, ip, &a.sin_addr);
	for (size_t i = 0; i < len; i++)
		out[i] = pattern(i);
	if (s < 0 || setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("client: connect");
		return 2;
	}
	while (got < len) {
		struct pollfd p = {.fd = s, .events = POLLIN | (sent < len ? POLLOUT : 0)};

		if (poll(&p, 1, 10000) <= 0) {
			fprintf(stderr, "client: poll timed out (%zu sent, %zu back)\n", sent, got);
			return 1;
		}
		if ((p.revents & POLLOUT) && sent < len && sent - got < 65536) {
			ssize_t w = write(s, out + sent, len - sent < 16384 ? len - sent : 16384);

			if (w <= 0) {
				perror("client: write");
				return 1;
			}
			sent += (size_t)w;
			if (sent == len)
				shutdown(s, SHUT_WR);
		}
		if (p.revents & POLLIN) {
			ssize_t r = read(s, in + got, len - got);

			if (r <= 0) {
				fprintf(stderr, "client: read %zd after %zu bytes\n", r, got);
				return 1;
			}
			got += (size_t)r;
		}
	}
	if (memcmp(in, out, len)) {
		fprintf(stderr, "client: the echo differs\n");
		return 1;
	}
	if (read(s, in, 1) != 0) {
		fprintf(stderr, "client: no EOF after the echo\n");
		return 1;
	}
	close(s);
	printf("echo: %zu bytes back intact, then EOF\n", len);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: sock_echo server PORT | sock_echo client ADDR PORT BYTES\n");
	return 2;
}
