/* SPDX-License-Identifier: MIT */
/*
 * The scenarios of uroce-sample, each a server and a client half run as two processes over
 * rdma_cm (pcap-samples/README.md says what each capture shows). A half returns 0 when the
 * scenario went as it should, -1 after printing what did not.
 */
#ifndef UROCE_TOOLS_SAMPLES_SCENARIOS_H
#define UROCE_TOOLS_SAMPLES_SCENARIOS_H

#include "tools/samples/conn.h"

/* A half on @c (zeroed; the caller closes it after, whatever the outcome). */
typedef int (*sample_half_fn)(struct sample_conn *c, const char *addr, const char *port);

struct sample_scenario {
	const char *name;
	const char *what;
	sample_half_fn server, client;
};

/* SEND, RDMA WRITE, RDMA READ, compare-and-swap and fetch-and-add, then disconnect. */
int ops_server(struct sample_conn *c, const char *addr, const char *port);
int ops_client(struct sample_conn *c, const char *addr, const char *port);

/* The server rejects the connection with private data (REJ reason 28, consumer reject). */
int reject_server(struct sample_conn *c, const char *addr, const char *port);
int reject_client(struct sample_conn *c, const char *addr, const char *port);

/* The client's SEND arrives before the server posted a receive: RNR NAK, then the retry. */
int rnr_server(struct sample_conn *c, const char *addr, const char *port);
int rnr_client(struct sample_conn *c, const char *addr, const char *port);

/* One RDMA READ of three packets (with UROCE_FAULTS on the server: a lost response). */
int read_server(struct sample_conn *c, const char *addr, const char *port);
int read_client(struct sample_conn *c, const char *addr, const char *port);

#endif
