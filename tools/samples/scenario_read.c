// SPDX-License-Identifier: MIT
/*
 * Scenario "read" (scenarios.h): one RDMA READ of three path-MTU packets, checked byte by byte.
 * Alone it is a plain READ; with UROCE_FAULTS on the server losing its first READ response
 * (make-samples.sh picks the seed), the client's capture shows the READ asked again at the same
 * PSN and all three responses replayed (PROTOCOL.md §3.7).
 */
#include <stdio.h>

#include "tools/samples/ops.h"
#include "tools/samples/scenarios.h"

enum { PACKETS = 3, MAX_MTU = 4096, BUF_LEN = PACKETS * MAX_MTU };

static uint8_t byte_at(size_t i)
{
	return (uint8_t)(i * 13 + i / 256);
}

int read_server(struct sample_conn *c, const char *addr, const char *port)
{
	if (sample_listen(c, addr, port) || sample_setup(c, BUF_LEN))
		return -1;
	for (size_t i = 0; i < BUF_LEN; i++)
		c->buf[i] = byte_at(i);
	if (sample_accept(c))
		return -1;
	return sample_await_disconnect(c);
}

int read_client(struct sample_conn *c, const char *addr, const char *port)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	size_t len;

	if (sample_resolve(c, addr, port) || sample_setup(c, BUF_LEN) || sample_connect(c))
		return -1;
	if (ibv_query_qp(c->qp, &a, IBV_QP_PATH_MTU, &init))
		return sample_fail("ibv_query_qp", "failed");
	/* enum ibv_mtu: 1 is 256 bytes, each next one doubles. */
	len = PACKETS * ((size_t)128 << a.path_mtu);
	if (len > BUF_LEN || c->peer.len < len)
		return sample_fail("read", "the path MTU is larger than the buffers");
	if (sample_read(c, 0, len, 0))
		return -1;
	for (size_t i = 0; i < len; i++)
		if (c->buf[i] != byte_at(i))
			return sample_fail("read", "the RDMA READ brought other bytes");
	printf("uroce-sample: read %zu bytes in %d packets\n", len, PACKETS);
	return sample_disconnect(c);
}
