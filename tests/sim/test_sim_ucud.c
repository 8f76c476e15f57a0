// SPDX-License-Identifier: MIT
/* UC and UD through the simulated wire. */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"

static struct sim_pair p;

static void teardown(void)
{
	sim_pair_fini(&p);
}

TestSuite(sim_ucud, .fini = teardown);

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

Test(sim_ucud, uc_send_and_write)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_UC, NULL, NULL, 1, 1 << 16);
	sim_fill(p.abuf, 8192, 4);
	cr_assert_eq(sim_recv(p.b, 5, p.bbuf, 4096, p.bkey), 0);
	cr_assert_eq(sim_recv(p.b, 6, p.bbuf + 4096, 16, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 3000, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf + 3000, 2500, p.akey,
			      (uintptr_t)p.bbuf + 8192, p.bkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE_WITH_IMM, p.abuf + 6000, 1500, p.akey,
			      (uintptr_t)p.bbuf + 16384, p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	for (uint64_t i = 1; i <= 3; i++) {
		wc = sim_expect_wc(p.a_scq);
		cr_assert_eq(wc.wr_id, i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	}
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.wr_id, 5);
	cr_assert_eq(wc.byte_len, 3000);
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.wr_id, 6);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.byte_len, 1500);
	cr_assert_eq(memcmp(p.bbuf, p.abuf, 3000), 0);
	cr_assert_eq(memcmp(p.bbuf + 8192, p.abuf + 3000, 2500), 0);
	cr_assert_eq(memcmp(p.bbuf + 16384, p.abuf + 6000, 1500), 0);
	cr_assert_eq(p.s->stats.sent, 3 + 3 + 2, "UC sends no ACKs");
}

/* Lose the MIDDLE packet of the first message. */
static bool lose_middle(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	(void)from;
	return (pkt->bth.opcode & 0x1F) != ROCE_OP_SEND_MIDDLE;
}

Test(sim_ucud, uc_gap_drops_the_message)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_UC, NULL, NULL, 2, 1 << 16);
	p.s->filter = lose_middle;
	cr_assert_eq(sim_recv(p.b, 5, p.bbuf, 4096, p.bkey), 0);
	cr_assert_eq(sim_recv(p.b, 6, p.bbuf + 4096, 4096, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 3000, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_SEND, p.abuf, 700, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	/* The second message lands in the receive WQE the first one had begun filling. */
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 700);
	cr_assert_eq(wc.wr_id, 5);
	cr_assert_eq(sim_pending(p.b_rcq), 0);
	cr_assert_eq(p.b->state, IBV_QPS_RTS);
}

Test(sim_ucud, ud_send_grh_and_src_qp)
{
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
	struct ibv_wc wc;
	const uint8_t *grh;

	sim_pair_init(&p, IBV_QPT_UD, NULL, NULL, 3, 1 << 16);
	ah = sim_ah_new(p.ha, p.hb);
	sim_fill(p.abuf, 1024, 5);
	memset(p.bbuf, 0xEE, 2048);
	cr_assert_eq(sim_recv(p.b, 9, p.bbuf, 40 + 1024, p.bkey), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)p.abuf, .length = 1024, .lkey = p.akey};
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0xCAFE);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = p.b->core.qpn;
	wr.wr.ud.remote_qkey = 0x1234;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 40 + 1024, "byte_len counts the GRH");
	cr_assert_eq(wc.src_qp, p.a->core.qpn);
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	/* mlx5's L3 header type of an IPv4 frame, where UCX's UD transport reads it. */
	cr_assert_eq(wc.sl, 2);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(be32toh(wc.imm_data), 0xCAFE);
	cr_assert_eq(memcmp(p.bbuf + 40, p.abuf, 1024), 0);
	/* The IPv4 header in bytes 20..39: version 4, protocol UDP, a's and b's addresses. */
	grh = p.bbuf;
	for (int i = 0; i < 20; i++)
		cr_assert_eq(grh[i], 0, "byte %d of the GRH area", i);
	cr_assert_eq(grh[20], 0x45);
	cr_assert_eq(grh[20 + 9], 17);
	cr_assert_eq(memcmp(grh + 20 + 12, p.ha->gid + 12, 4), 0);
	cr_assert_eq(memcmp(grh + 20 + 16, p.hb->gid + 12, 4), 0);
	/* IPv4 total length: IP + UDP + BTH + DETH + ImmDt + payload + ICRC. */
	cr_assert_eq(grh[22] << 8 | grh[23], 20 + 8 + 12 + 8 + 4 + 1024 + 4, "total length %d",
		     grh[22] << 8 | grh[23]);
}

Test(sim_ucud, ud_wrong_qkey_and_too_long)
{
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_UD, NULL, NULL, 4, 1 << 16);
	ah = sim_ah_new(p.ha, p.hb);
	cr_assert_eq(sim_recv(p.b, 9, p.bbuf, 4096, p.bkey), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)p.abuf, .length = 100, .lkey = p.akey};
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = p.b->core.qpn;
	wr.wr.ud.remote_qkey = 0x9999;
	wr.wr_id = 1;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	/* Longer than the MTU: a local length error, and the send queue stops (SQE). */
	sge.length = 1025;
	wr.wr_id = 2;
	wr.wr.ud.remote_qkey = 0x1234;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	run_idle();
	cr_assert_eq(p.b->core.counters.rx_qkey, 1);
	cr_assert_eq(sim_pending(p.b_rcq), 0);
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR);
}

/*
 * IBA 10.3.1: a UD (or UC) send that fails locally stops only the send queue (SQE): later sends
 * are flushed, receiving goes on, and SQE -> RTS resumes sending.
 */
Test(sim_ucud, ud_send_error_enters_sqe)
{
	struct ibv_ah *ab, *ba;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS};

	sim_pair_init(&p, IBV_QPT_UD, NULL, NULL, 5, 1 << 16);
	ab = sim_ah_new(p.ha, p.hb);
	ba = sim_ah_new(p.hb, p.ha);
	sge = (struct ibv_sge){.addr = (uintptr_t)p.abuf, .length = 1025, .lkey = p.akey};
	wr.wr.ud.ah = ab;
	wr.wr.ud.remote_qpn = p.b->core.qpn;
	wr.wr.ud.remote_qkey = 0x1234;
	wr.wr_id = 1;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	sge.length = 10;
	wr.wr_id = 2;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(p.a->state, IBV_QPS_SQE);
	cr_assert_eq(p.a->core.state, IBV_QPS_SQE);
	cr_assert_eq(p.a->sq_error_calls, 1);
	cr_assert_eq(p.a->to_error_calls, 0);
	/* Posted in SQE: flushed at once, nothing sent. */
	wr.wr_id = 3;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_WR_FLUSH_ERR);
	/* The receive side still works. */
	cr_assert_eq(sim_recv(p.a, 7, p.abuf + 4096, 40 + 64, p.akey), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)p.bbuf, .length = 64, .lkey = p.bkey};
	wr.wr.ud.ah = ba;
	wr.wr.ud.remote_qpn = p.a->core.qpn;
	wr.wr_id = 4;
	cr_assert_eq(sim_post_send(p.b, &wr), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_rcq).status, IBV_WC_SUCCESS);
	/* SQE -> RTS: sending resumes. */
	sim_modify(p.a, &rts, IBV_QP_STATE);
	cr_assert_eq(sim_recv(p.b, 8, p.bbuf + 4096, 40 + 64, p.bkey), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)p.abuf, .length = 64, .lkey = p.akey};
	wr.wr.ud.ah = ab;
	wr.wr.ud.remote_qpn = p.b->core.qpn;
	wr.wr_id = 5;
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, 5);
	cr_assert_eq(sim_expect_wc(p.b_rcq).wr_id, 8);
	cr_assert_eq(memcmp(p.bbuf + 4096 + 40, p.abuf, 64), 0);
}
