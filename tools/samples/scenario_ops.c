// SPDX-License-Identifier: MIT
/*
 * Scenario "ops" (scenarios.h): every RC operation once on one connection. The client SENDs a
 * greeting, WRITEs 64 bytes into the server's buffer, READs 64 others back, swaps the server's
 * counter 5 -> 7 (compare-and-swap) and adds 3 (fetch-and-add), then SENDs "done"; the server
 * checks what arrived and the counter (10) before the client disconnects.
 */
#include <stdio.h>
#include <string.h>

#include "tools/samples/ops.h"
#include "tools/samples/scenarios.h"

/* The layout of both buffers. */
enum { BUF_LEN = 4096, AT_COUNTER = 0, AT_WRITE = 64, AT_READ = 128, AT_MSG = 256, CHUNK = 64 };

static const char hello[] = "hello from uroce-sample", done[] = "done";

static uint8_t write_byte(size_t i)
{
	return (uint8_t)(i ^ 0x5a);
}

static uint8_t read_byte(size_t i)
{
	return (uint8_t)(i * 7 + 1);
}

/* The receive completion's message must be @want. */
static int expect_msg(struct sample_conn *c, size_t off, const char *want)
{
	uint32_t len;

	if (sample_wait_recv(c, &len))
		return -1;
	if (len != strlen(want) + 1 || memcmp(c->buf + off, want, len))
		return sample_fail("ops", "the server received another message than was sent");
	return 0;
}

int ops_server(struct sample_conn *c, const char *addr, const char *port)
{
	uint64_t counter = 5;

	if (sample_listen(c, addr, port) || sample_setup(c, BUF_LEN))
		return -1;
	memcpy(c->buf + AT_COUNTER, &counter, 8);
	for (size_t i = 0; i < CHUNK; i++)
		c->buf[AT_READ + i] = read_byte(i);
	/* Both receives before the accept, so that no SEND meets an empty queue (no RNR). */
	if (sample_post_recv(c, AT_MSG, CHUNK) || sample_post_recv(c, AT_MSG + CHUNK, CHUNK) ||
	    sample_accept(c) || expect_msg(c, AT_MSG, hello) || expect_msg(c, AT_MSG + CHUNK, done))
		return -1;
	for (size_t i = 0; i < CHUNK; i++)
		if (c->buf[AT_WRITE + i] != write_byte(i))
			return sample_fail("ops", "the RDMA WRITE's bytes are not in the buffer");
	memcpy(&counter, c->buf + AT_COUNTER, 8);
	if (counter != 10)
		return sample_fail("ops", "the counter is not 5 swapped to 7 plus 3");
	return sample_await_disconnect(c);
}

int ops_client(struct sample_conn *c, const char *addr, const char *port)
{
	uint64_t orig;

	if (sample_resolve(c, addr, port) || sample_setup(c, BUF_LEN) || sample_connect(c))
		return -1;
	memcpy(c->buf + AT_MSG, hello, sizeof(hello));
	if (sample_send(c, AT_MSG, sizeof(hello)))
		return -1;
	for (size_t i = 0; i < CHUNK; i++)
		c->buf[AT_WRITE + i] = write_byte(i);
	if (sample_write(c, AT_WRITE, CHUNK, AT_WRITE) || sample_read(c, AT_READ, CHUNK, AT_READ))
		return -1;
	for (size_t i = 0; i < CHUNK; i++)
		if (c->buf[AT_READ + i] != read_byte(i))
			return sample_fail("ops", "the RDMA READ brought other bytes");
	if (sample_cas(c, AT_COUNTER, AT_COUNTER, 5, 7, &orig))
		return -1;
	if (orig != 5)
		return sample_fail("ops", "compare-and-swap did not find 5");
	if (sample_faa(c, AT_COUNTER, AT_COUNTER, 3, &orig))
		return -1;
	if (orig != 7)
		return sample_fail("ops", "fetch-and-add did not find 7");
	memcpy(c->buf + AT_MSG, done, sizeof(done));
	if (sample_send(c, AT_MSG, sizeof(done)))
		return -1;
	return sample_disconnect(c);
}
