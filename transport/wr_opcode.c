// SPDX-License-Identifier: MIT
/* The work-request opcode table (wr_opcode.h). */
#include "transport/wr_opcode.h"

#include "transport/wire.h"

/* IBA Table 38: UD sends only; UC no READ or atomics; RC and XRC every operation. */
#define ALL_SERVICES (ROCE_WR_RC | ROCE_WR_UC | ROCE_WR_UD | ROCE_WR_XRC)
#define CONNECTED    (ROCE_WR_RC | ROCE_WR_UC | ROCE_WR_XRC)
#define RELIABLE     (ROCE_WR_RC | ROCE_WR_XRC)

/* clang-format off */
const struct roce_wr_info roce_wr_table[ROCE_WR_OPCODES] = {
	[IBV_WR_RDMA_WRITE] = {
		.name = "RDMA_WRITE", .flags = ROCE_WR_WRITE, .services = CONNECTED,
		.wc_opcode = IBV_WC_RDMA_WRITE, .ex_flag = IBV_QP_EX_WITH_RDMA_WRITE,
		.only = ROCE_OP_WRITE_ONLY, .first = ROCE_OP_WRITE_FIRST,
		.middle = ROCE_OP_WRITE_MIDDLE, .last = ROCE_OP_WRITE_LAST,
	},
	[IBV_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "RDMA_WRITE_WITH_IMM", .flags = ROCE_WR_WRITE | ROCE_WR_IMM,
		.services = CONNECTED,
		.wc_opcode = IBV_WC_RDMA_WRITE, .ex_flag = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		.only = ROCE_OP_WRITE_ONLY_IMM, .first = ROCE_OP_WRITE_FIRST,
		.middle = ROCE_OP_WRITE_MIDDLE, .last = ROCE_OP_WRITE_LAST_IMM,
	},
	[IBV_WR_SEND] = {
		.name = "SEND", .flags = ROCE_WR_SEND, .services = ALL_SERVICES,
		.wc_opcode = IBV_WC_SEND, .ex_flag = IBV_QP_EX_WITH_SEND,
		.only = ROCE_OP_SEND_ONLY, .first = ROCE_OP_SEND_FIRST,
		.middle = ROCE_OP_SEND_MIDDLE, .last = ROCE_OP_SEND_LAST,
	},
	[IBV_WR_SEND_WITH_IMM] = {
		.name = "SEND_WITH_IMM", .flags = ROCE_WR_SEND | ROCE_WR_IMM, .services = ALL_SERVICES,
		.wc_opcode = IBV_WC_SEND, .ex_flag = IBV_QP_EX_WITH_SEND_WITH_IMM,
		.only = ROCE_OP_SEND_ONLY_IMM, .first = ROCE_OP_SEND_FIRST,
		.middle = ROCE_OP_SEND_MIDDLE, .last = ROCE_OP_SEND_LAST_IMM,
	},
	[IBV_WR_RDMA_READ] = {
		.name = "RDMA_READ", .flags = ROCE_WR_READ, .services = RELIABLE,
		.wc_opcode = IBV_WC_RDMA_READ, .ex_flag = IBV_QP_EX_WITH_RDMA_READ,
		.only = ROCE_OP_READ_REQUEST, .first = ROCE_OP_READ_REQUEST,
		.middle = ROCE_OP_READ_REQUEST, .last = ROCE_OP_READ_REQUEST,
	},
	[IBV_WR_ATOMIC_CMP_AND_SWP] = {
		.name = "ATOMIC_CMP_AND_SWP", .flags = ROCE_WR_ATOMIC, .services = RELIABLE,
		.wc_opcode = IBV_WC_COMP_SWAP, .ex_flag = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		.only = ROCE_OP_CMP_SWAP, .first = ROCE_OP_CMP_SWAP,
		.middle = ROCE_OP_CMP_SWAP, .last = ROCE_OP_CMP_SWAP,
	},
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = {
		.name = "ATOMIC_FETCH_AND_ADD", .flags = ROCE_WR_ATOMIC, .services = RELIABLE,
		.wc_opcode = IBV_WC_FETCH_ADD, .ex_flag = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		.only = ROCE_OP_FETCH_ADD, .first = ROCE_OP_FETCH_ADD,
		.middle = ROCE_OP_FETCH_ADD, .last = ROCE_OP_FETCH_ADD,
	},
	/* rxe offers SEND with invalidate and local invalidate on RC; IBA Table 38 on XRC too. */
	[IBV_WR_SEND_WITH_INV] = {
		.name = "SEND_WITH_INV", .flags = ROCE_WR_SEND | ROCE_WR_INV, .services = RELIABLE,
		.wc_opcode = IBV_WC_SEND, .ex_flag = IBV_QP_EX_WITH_SEND_WITH_INV,
		.only = ROCE_OP_SEND_ONLY_INV, .first = ROCE_OP_SEND_FIRST,
		.middle = ROCE_OP_SEND_MIDDLE, .last = ROCE_OP_SEND_LAST_INV,
	},
	[IBV_WR_LOCAL_INV] = {
		.name = "LOCAL_INV", .flags = ROCE_WR_LOCAL, .services = RELIABLE,
		.wc_opcode = IBV_WC_LOCAL_INV, .ex_flag = IBV_QP_EX_WITH_LOCAL_INV,
	},
	/* rxe binds windows on RC and UC (rxe_wr_opcode_info); XRC initiators send as RC. */
	[IBV_WR_BIND_MW] = {
		.name = "BIND_MW", .flags = ROCE_WR_LOCAL, .services = CONNECTED,
		.wc_opcode = IBV_WC_BIND_MW, .ex_flag = IBV_QP_EX_WITH_BIND_MW,
	},
	/* Not implemented (docs/UNSUPPORTED.md): TSO, DRIVER1, ATOMIC_WRITE. */
};
/* clang-format on */

unsigned int roce_wr_service_of(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return ROCE_WR_RC;
	case IBV_QPT_UC:
		return ROCE_WR_UC;
	case IBV_QPT_UD:
		return ROCE_WR_UD;
	case IBV_QPT_XRC_SEND:
		return ROCE_WR_XRC;
	default:
		return 0;
	}
}

uint64_t roce_wr_ex_flags(unsigned int service)
{
	uint64_t flags = 0;

	for (unsigned int i = 0; i < ROCE_WR_OPCODES; i++)
		if (roce_wr_table[i].name && (roce_wr_table[i].services & service))
			flags |= roce_wr_table[i].ex_flag;
	return flags;
}
