/* SPDX-License-Identifier: MIT */
/*
 * What a work-request opcode means, in one table (as rxe's rxe_wr_opcode_info[]): its kind,
 * the services that allow it, the completion it makes, its IBV_QP_EX_WITH_* bit and the packet
 * opcodes it becomes. The shim checks a posted WR against it and the core builds its packets
 * from it; nothing else decides what an opcode is. Adding an opcode starts here.
 */
#ifndef UROCE_TRANSPORT_WR_OPCODE_H
#define UROCE_TRANSPORT_WR_OPCODE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

enum roce_wr_flag {
	ROCE_WR_SEND = 1u << 0,   /* consumes a receive at the responder */
	ROCE_WR_WRITE = 1u << 1,  /* RDMA WRITE: RETH in the first packet */
	ROCE_WR_READ = 1u << 2,   /* RDMA READ: one request, responses back */
	ROCE_WR_ATOMIC = 1u << 3, /* AtomicETH; one naturally aligned 8-byte word (IBA 9.4.5) */
	ROCE_WR_IMM = 1u << 4,    /* immediate data in the last packet */
	ROCE_WR_INV = 1u << 5,    /* an IETH in the last packet: the responder invalidates */
	/* A local operation (bind a window, invalidate): no packet; the requester executes it
	 * (rxe_do_local_ops), so it has no packet opcodes. */
	ROCE_WR_LOCAL = 1u << 6,
};

/* The services of enum ibv_qp_type that allow an opcode (IBA Table 38, rxe's mask). */
enum roce_wr_service {
	ROCE_WR_RC = 1u << 0,  /* IBV_QPT_RC */
	ROCE_WR_UC = 1u << 1,  /* IBV_QPT_UC */
	ROCE_WR_UD = 1u << 2,  /* IBV_QPT_UD */
	ROCE_WR_XRC = 1u << 3, /* IBV_QPT_XRC_SEND */
};

struct roce_wr_info {
	const char *name;
	uint8_t flags;    /* enum roce_wr_flag */
	uint8_t services; /* enum roce_wr_service */
	enum ibv_wc_opcode wc_opcode;
	uint64_t ex_flag; /* its IBV_QP_EX_WITH_* bit (ibv_create_qp_ex's send_ops_flags) */
	/* Its RC packet opcodes (ROCE_OP_*; another service's are these | its transport bits):
	 * the only packet of a message and, for a message of several, its first, middle and
	 * last. A READ or atomic is one request packet whatever its length: all four are it.
	 * A local operation has none. */
	uint8_t only, first, middle, last;
};

#define ROCE_WR_OPCODES 16 /* enum ibv_wr_opcode's values, IBV_WR_ATOMIC_WRITE (15) the last */

/* Indexed by enum ibv_wr_opcode; an entry without a name is an opcode uroce does not implement. */
extern const struct roce_wr_info roce_wr_table[ROCE_WR_OPCODES];

/* The entry of @op, or NULL for an opcode uroce does not implement (docs/UNSUPPORTED.md). */
static inline const struct roce_wr_info *roce_wr_info(enum ibv_wr_opcode op)
{
	if ((unsigned int)op >= ROCE_WR_OPCODES || !roce_wr_table[op].name)
		return NULL;
	return &roce_wr_table[op];
}

/* The enum roce_wr_flag bits of @op, 0 for an opcode uroce does not implement. */
static inline unsigned int roce_wr_flags(enum ibv_wr_opcode op)
{
	const struct roce_wr_info *w = roce_wr_info(op);

	return w ? w->flags : 0;
}

/* The enum roce_wr_service bit of QP type @t, 0 for a type that sends nothing (XRC_RECV). */
unsigned int roce_wr_service_of(enum ibv_qp_type t);

/* The IBV_QP_EX_WITH_* bits of every opcode that service @service allows. */
uint64_t roce_wr_ex_flags(unsigned int service);

#endif
