/* SPDX-License-Identifier: MIT */
/*
 * The messages of the rendezvous protocol (fabric/rdv.h describes the protocol). One message per
 * SOCK_SEQPACKET record; both ends are processes of one host, so fields are in host byte order,
 * with explicit padding so that the layout does not depend on the compiler. Every message starts
 * with struct rdv_hdr; a record whose magic or version differs, or that is shorter than its type
 * needs, is a protocol error.
 */
#ifndef UROCE_FABRIC_RDV_PROTO_H
#define UROCE_FABRIC_RDV_PROTO_H

#include <stdint.h>

#define RDV_MAGIC   0x76645275u /* "uRdv" in memory on a little-endian host */
#define RDV_VERSION 5u

enum rdv_type {
	RDV_HELLO = 1, /* process -> hub: struct rdv_hello, first message */
	RDV_REFUSED,   /* hub -> process: struct rdv_hdr; the hub does not speak this version */
	RDV_TABLE,     /* hub -> process: struct rdv_table, the block owners (in several records) */
	RDV_REQUEST,   /* process -> hub: struct rdv_hdr, asks for a block */
	RDV_GRANT,   /* hub -> requester: struct rdv_block_msg, the block is now the requester's */
	RDV_FULL,    /* hub -> requester: struct rdv_hdr, no block is free */
	RDV_OWNER,   /* hub -> the others: struct rdv_owner_msg, a block changed owner */
	RDV_CLAIM,   /* process -> new hub: struct rdv_block_msg, a block it already owns */
	RDV_CLAIMED, /* hub -> process: struct rdv_block_msg, whether the claim was honoured */
	RDV_FRAME,   /* hub -> owner: struct rdv_frame and the UDP payload */
	RDV_MCAST,   /* process -> hub: struct rdv_frame and a multicast datagram it sent */
	RDV_SERVICE, /* process -> hub: struct rdv_service_msg, a CM directory request or claim */
	RDV_SERVICE_DONE, /* hub -> process: struct rdv_service_msg, its outcome */
	RDV_CONN,         /* either way: struct rdv_conn_msg, a CM connection up or down */
};

struct rdv_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
};

struct rdv_hello {
	struct rdv_hdr hdr;
	uint64_t token;    /* the process's random identity: owners are named by it */
	uint32_t pid;      /* for messages only (SO_PEERCRED gives the hub's own view) */
	uint16_t ports[2]; /* its own UDP sockets' ports, IPv4 and IPv6 (0: none) */
};

/* A block and its owner (token 0: free), with the owner's own UDP ports (rdv_hello). */
struct rdv_owner {
	uint32_t block;
	uint16_t ports[2];
	uint64_t token;
};

#define RDV_TABLE_MAX 256 /* entries per RDV_TABLE record */

struct rdv_table {
	struct rdv_hdr hdr;
	uint32_t count;
	uint32_t pad;
	struct rdv_owner entry[]; /* count entries */
};

struct rdv_owner_msg {
	struct rdv_hdr hdr;
	struct rdv_owner owner;
};

struct rdv_block_msg {
	struct rdv_hdr hdr;
	uint32_t block;
	uint32_t ok; /* RDV_CLAIMED: 1 honoured, 0 the block belongs to another process */
};

/* The IP and UDP values of a forwarded datagram (struct roce_ipudp); the payload follows. */
struct rdv_frame {
	struct rdv_hdr hdr;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint16_t sport;
	uint16_t dport;
	uint8_t tos;
	uint8_t ttl;
	uint16_t flags; /* RDV_FRAME_LOCAL */
	uint32_t flow_label;
	uint32_t pad;
};

/* A multicast datagram a process of this host sent (not one received from the network). */
#define RDV_FRAME_LOCAL 1u

/* A CM directory request (enum uroce_service_op) and, as RDV_SERVICE_DONE, its outcome. */
struct rdv_service_msg {
	struct rdv_hdr hdr;
	uint32_t seq;      /* the requester's number; 0: a claim after a takeover (no answer) */
	uint16_t op;       /* a claim: UROCE_SERVICE_BIND */
	uint16_t ps;       /* struct uroce_service */
	uint16_t port;     /* DONE: the port bound */
	uint8_t listening; /* a claim: the binding listens */
	uint8_t flags;     /* struct uroce_service */
	int32_t err;       /* DONE: 0 or an errno */
	uint8_t gid[16];
};

/* An established CM connection of the process (up 1), or one that no longer is (up 0). */
struct rdv_conn_msg {
	struct rdv_hdr hdr;
	uint32_t up;
	uint32_t local_id, remote_id, remote_qpn;
	uint8_t sgid[16], dgid[16];
	uint8_t tos;
	uint8_t pad[7];
};

#endif
