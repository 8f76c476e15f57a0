// SPDX-License-Identifier: MIT
/*
 * uroce-sample: the scenarios of pcap-samples/ that no rdma-core program plays (every RC
 * operation on one connection, a consumer reject with private data, an RNR NAK, a READ to be
 * retried), each as a server and a client process over rdma_cm:
 *
 *   uroce-sample SCENARIO server|client ADDRESS PORT
 *
 * The server listens on ADDRESS:PORT (UROCE_LOG=info logs when); the client connects to it. Both
 * exit 0 when the scenario went as it should, 1 otherwise, 2 for a bad command line.
 */
#include <stdio.h>
#include <string.h>

#include "tools/samples/scenarios.h"

static const struct sample_scenario scenarios[] = {
	{"ops", "SEND, RDMA WRITE, RDMA READ, compare-and-swap, fetch-and-add", ops_server,
	 ops_client},
	{"reject", "the server rejects the connection with private data", reject_server,
	 reject_client},
	{"rnr", "a SEND before the receive is posted: RNR NAK and retry", rnr_server, rnr_client},
	{"read", "one RDMA READ of three packets", read_server, read_client},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: uroce-sample SCENARIO server|client ADDRESS PORT\n\nScenarios:\n");
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(out, "  %-7s %s\n", scenarios[i].name, scenarios[i].what);
}

int main(int argc, char **argv)
{
	const struct sample_scenario *s = NULL;
	struct sample_conn c = {0};
	sample_half_fn half;
	int err;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; argc == 5 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(argv[1], scenarios[i].name))
			s = &scenarios[i];
	if (!s || (strcmp(argv[2], "server") && strcmp(argv[2], "client"))) {
		usage(stderr);
		return 2;
	}
	half = strcmp(argv[2], "server") ? s->client : s->server;
	err = half(&c, argv[3], argv[4]);
	sample_close(&c);
	return err ? 1 : 0;
}
