/* SPDX-License-Identifier: MIT */
/*
 * The scripted RoCEv2 conversation uroce-demo records: two hosts, A and B,
 * exchanging the packets of the common RC operations (SEND, RDMA WRITE and
 * READ, atomics, ACK/NAK/RNR NAK), a UD SEND, an RC SEND over IPv6 and a
 * congestion notification, each described as IP/UDP values plus a
 * struct roce_pkt for the transport encoder.
 */
#ifndef UROCE_TOOLS_DEMO_CONVERSATION_H
#define UROCE_TOOLS_DEMO_CONVERSATION_H

#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"
#include "transport/wire.h"

enum {
	DEMO_MAX_FRAMES = 32,
	DEMO_PMTU = 1024,     /* path MTU of a 1500-byte Ethernet (PROTOCOL.md §1.8) */
	DEMO_DATA_LEN = 2500, /* bytes moved by the RDMA WRITE */
};

struct demo_frame {
	const char *dir;  /* "A->B", "B->A" */
	const char *note; /* what the packet means here, or "" */
	struct roce_ipudp ip;
	struct roce_pkt pkt; /* payload points into the conversation's data */
	uint64_t gap_ns;     /* time since the previous frame */
};

struct demo_conversation {
	struct demo_frame frames[DEMO_MAX_FRAMES];
	size_t count;
	uint8_t data[DEMO_DATA_LEN];
};

/* Fill @c with the conversation. */
void demo_conversation_init(struct demo_conversation *c);

#endif
