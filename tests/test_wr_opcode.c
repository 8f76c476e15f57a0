// SPDX-License-Identifier: MIT
/*
 * transport/wr_opcode.h: every implemented work-request opcode agrees with the packet opcode
 * table (transport/wire.h) and with IBA's rules for the services that may use it.
 */
#include <criterion/criterion.h>

#include "transport/wire.h"
#include "transport/wq.h"
#include "transport/wr_opcode.h"

static const enum ibv_wr_opcode implemented[] = {
	IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM,
	IBV_WR_SEND,
	IBV_WR_SEND_WITH_IMM,
	IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
	IBV_WR_SEND_WITH_INV,
	IBV_WR_LOCAL_INV,
	IBV_WR_BIND_MW,
};

/* The packet flag a WR kind needs in each of its packet opcodes. */
static uint16_t packet_kind(unsigned int wr_flags)
{
	if (wr_flags & ROCE_WR_SEND)
		return ROCE_OPF_SEND;
	if (wr_flags & ROCE_WR_WRITE)
		return ROCE_OPF_WRITE;
	if (wr_flags & ROCE_WR_READ)
		return ROCE_OPF_READ;
	return ROCE_OPF_ATOMIC;
}

Test(wr_opcode, entries_agree_with_the_packet_opcodes)
{
	for (size_t i = 0; i < sizeof(implemented) / sizeof(implemented[0]); i++) {
		const struct roce_wr_info *w = roce_wr_info(implemented[i]);
		const uint8_t ops[4] = {w->only, w->first, w->middle, w->last};

		cr_assert_not_null(w, "opcode %d", implemented[i]);
		cr_assert(w->services & ROCE_WR_RC, "%s: RC allows every operation", w->name);
		cr_assert_eq(__builtin_popcountll(w->ex_flag), 1, "%s: one IBV_QP_EX_WITH_* bit",
			     w->name);
		if (w->flags & ROCE_WR_LOCAL) {
			/* No packet: nothing else of the entry may say otherwise. */
			cr_assert_eq(w->flags, ROCE_WR_LOCAL, "%s", w->name);
			cr_assert_eq(w->only | w->first | w->middle | w->last, 0, "%s", w->name);
			continue;
		}
		for (int k = 0; k < 4; k++) {
			const struct roce_opcode_info *p = roce_opcode(ops[k]);

			cr_assert_not_null(p->name, "%s: packet opcode %#x", w->name, ops[k]);
			cr_assert(p->flags & ROCE_OPF_REQUEST, "%s: %s", w->name, p->name);
			cr_assert(p->flags & packet_kind(w->flags), "%s: %s", w->name, p->name);
			/* Immediate data rides in the last (or only) packet alone. */
			cr_assert_eq(!!(p->flags & ROCE_OPF_IMM),
				     (w->flags & ROCE_WR_IMM) && (k == 0 || k == 3), "%s: %s",
				     w->name, p->name);
			/* So does the R_Key to invalidate (IETH, IBA 9.2.6). */
			cr_assert_eq(!!(p->flags & ROCE_OPF_INV),
				     (w->flags & ROCE_WR_INV) && (k == 0 || k == 3), "%s: %s",
				     w->name, p->name);
		}
		if (w->flags & (ROCE_WR_SEND | ROCE_WR_WRITE)) {
			cr_assert(roce_opcode(w->only)->flags & ROCE_OPF_ONLY, "%s", w->name);
			cr_assert(roce_opcode(w->first)->flags & ROCE_OPF_FIRST, "%s", w->name);
			cr_assert(roce_opcode(w->middle)->flags & ROCE_OPF_MIDDLE, "%s", w->name);
			cr_assert(roce_opcode(w->last)->flags & ROCE_OPF_LAST, "%s", w->name);
		}
	}
}

/* IBA Table 38 (rxe's rxe_wr_opcode_info masks): which service allows what. */
Test(wr_opcode, services_as_iba_table_38)
{
	cr_assert_eq(roce_wr_ex_flags(ROCE_WR_UD),
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	/* UC: no READ or atomics, and no SEND with invalidate (IBA has no UC opcode for it) or
	 * local invalidate (rxe's masks); windows bind. */
	cr_assert_eq(roce_wr_ex_flags(ROCE_WR_UC),
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_BIND_MW);
	cr_assert_eq(roce_wr_ex_flags(ROCE_WR_RC), roce_wr_ex_flags(ROCE_WR_XRC));
	/* RC: every operation rxe offers through rdma-core 44 but atomic write (not built). */
	cr_assert_eq(roce_wr_ex_flags(ROCE_WR_RC),
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
			     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV);
	cr_assert_eq(roce_wr_service_of(IBV_QPT_XRC_RECV), 0, "an XRC target sends nothing");
	cr_assert_eq(roce_wr_service_of(IBV_QPT_UC), ROCE_WR_UC);
}

Test(wr_opcode, unimplemented_opcodes_have_no_entry)
{
	cr_assert_null(roce_wr_info(IBV_WR_TSO));
	cr_assert_null(roce_wr_info(IBV_WR_ATOMIC_WRITE));
	cr_assert_null(roce_wr_info((enum ibv_wr_opcode)200));
	cr_assert_eq(roce_wr_flags(IBV_WR_TSO), 0);
	cr_assert_eq(roce_wc_opcode(IBV_WR_RDMA_READ), IBV_WC_RDMA_READ);
	cr_assert_eq(roce_wc_opcode(IBV_WR_BIND_MW), IBV_WC_BIND_MW);
	cr_assert_eq(roce_wc_opcode(IBV_WR_LOCAL_INV), IBV_WC_LOCAL_INV);
}
