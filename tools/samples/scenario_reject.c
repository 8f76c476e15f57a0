// SPDX-License-Identifier: MIT
/*
 * Scenario "reject" (scenarios.h): the server's application turns the connection request down
 * with rdma_reject and a reason in its private data. The client must see REJECTED with status
 * 28, "consumer reject" (PROTOCOL.md §4.6), and that private data at the start of the
 * REJ's (the rest of the 148 bytes is zeros).
 */
#include <string.h>

#include "tools/samples/conn.h"
#include "tools/samples/scenarios.h"

#define CONSUMER_REJECT 28

static const char reason[] = "uroce-sample: not today, thanks";

int reject_server(struct sample_conn *c, const char *addr, const char *port)
{
	if (sample_listen(c, addr, port))
		return -1;
	if (rdma_reject(c->id, reason, sizeof(reason)))
		return sample_fail("rdma_reject", "refused");
	return 0;
}

int reject_client(struct sample_conn *c, const char *addr, const char *port)
{
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct sample_event ev;

	if (sample_resolve(c, addr, port) || sample_setup(c, 64))
		return -1;
	if (rdma_connect(c->id, &p))
		return sample_fail("rdma_connect", "refused");
	if (sample_expect(c, RDMA_CM_EVENT_REJECTED, &ev))
		return -1;
	if (ev.status != CONSUMER_REJECT)
		return sample_fail("reject", "the REJ's reason is not 28 (consumer reject)");
	if (ev.priv_len < sizeof(reason) || memcmp(ev.priv, reason, sizeof(reason)))
		return sample_fail("reject", "the REJ does not carry the server's private data");
	return 0;
}
