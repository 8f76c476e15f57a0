// SPDX-License-Identifier: MIT
/*
 * RC through the simulated wire, one operation at a time on a clean wire: SEND/RECV sizes,
 * WRITE, WRITE with immediate, READ, atomics, signalling, inline data, scatter lists.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"
#include "transport/qp_int.h"

static struct sim_pair p;

static void teardown(void)
{
	sim_pair_fini(&p);
}

TestSuite(sim_rc, .fini = teardown);

/* SEND of @len bytes from a to b: one receive completion with the bytes, one send completion. */
static void send_recv(uint32_t len, enum ibv_mtu mtu)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.mtu = mtu;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 20);
	sim_fill(p.abuf, len, len);
	memset(p.bbuf, 0xEE, len + 16);
	cr_assert_eq(sim_recv(p.b, 7, p.bbuf, len + 16, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, len, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %d", wc.status);
	cr_assert_eq(wc.wr_id, 7);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, len);
	cr_assert_eq(wc.qp_num, p.b->core.qpn);
	cr_assert_eq(wc.src_qp, p.a->core.qpn);
	cr_assert_eq(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, len), 0);
	cr_assert_eq(p.bbuf[len], 0xEE, "wrote past the message");
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send status %d", wc.status);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(sim_pending(p.a_scq) + sim_pending(p.b_rcq) + sim_pending(p.b_scq) +
			     sim_pending(p.a_rcq),
		     0);
	cr_assert_eq(p.a->core.counters.retransmits, 0);
	cr_assert_eq(p.a->core.counters.timeouts, 0);
	/* Both were in RTS before anything arrived: no COMM_EST, and nothing failed. */
	cr_assert_eq(p.a->nevents + p.b->nevents, 0);
	cr_assert_eq(p.a->to_error_calls + p.b->to_error_calls, 0);
}

Test(sim_rc, send_0_bytes)
{
	send_recv(0, IBV_MTU_1024);
}

Test(sim_rc, send_1_byte)
{
	send_recv(1, IBV_MTU_1024);
}

Test(sim_rc, send_mtu)
{
	send_recv(1024, IBV_MTU_1024);
}

Test(sim_rc, send_mtu_plus_1)
{
	send_recv(1025, IBV_MTU_1024);
}

Test(sim_rc, send_many_mtus)
{
	send_recv(100 * 256 + 3, IBV_MTU_256);
}

Test(sim_rc, send_4k_mtu_large)
{
	send_recv(300000, IBV_MTU_4096);
}

/* Completions left anywhere after the expected ones were taken. */
static uint32_t leftovers(void)
{
	return sim_pending(p.a_scq) + sim_pending(p.a_rcq) + sim_pending(p.b_scq) +
	       sim_pending(p.b_rcq);
}

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

Test(sim_rc, write_lands_without_receive)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 2, 1 << 16);
	sim_fill(p.abuf, 5000, 5);
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE, p.abuf, 5000, p.akey,
			      (uintptr_t)p.bbuf + 100, p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(wc.wr_id, 3);
	cr_assert_eq(memcmp(p.bbuf + 100, p.abuf, 5000), 0);
	cr_assert_eq(p.bbuf[99], 0);
	cr_assert_eq(p.bbuf[5100], 0);
	cr_assert_eq(leftovers(), 0, "a WRITE without immediate completes nothing at b");
}

Test(sim_rc, write_0_bytes)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 2, 4096);
	/* A zero-length WRITE checks no R_Key (IBA 9.7.5.2): any key will do. */
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE, p.abuf, 0, p.akey, 0, 0xdead00,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_rc, write_with_imm_consumes_a_receive)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 3, 1 << 16);
	sim_fill(p.abuf, 3000, 9);
	/* The receive buffer is not touched: the payload goes to the WRITE's address. */
	cr_assert_eq(sim_recv(p.b, 77, p.bbuf + 60000, 16, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 0x55, IBV_WR_RDMA_WRITE_WITH_IMM, p.abuf, 3000, p.akey,
			      (uintptr_t)p.bbuf, p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.byte_len, 3000, "byte_len of a WRITE with immediate is its length");
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(be32toh(wc.imm_data), 0x55);
	cr_assert_eq(memcmp(p.bbuf, p.abuf, 3000), 0);
	cr_assert_eq(p.bbuf[60000], 0);
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_rc, send_with_imm_and_solicited)
{
	struct sim_wc swc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 3, 1 << 16);
	cr_assert_eq(sim_recv(p.b, 1, p.bbuf, 4096, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 0x1234, IBV_WR_SEND_WITH_IMM, p.abuf, 2000, p.akey, 0, 0,
			      IBV_SEND_SIGNALED | IBV_SEND_SOLICITED),
		     0);
	run_idle();
	cr_assert(sim_poll(p.b_rcq, &swc));
	cr_assert_eq(swc.wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(swc.wc.opcode, IBV_WC_RECV);
	cr_assert_eq(swc.wc.byte_len, 2000);
	cr_assert(swc.wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(be32toh(swc.wc.imm_data), 0x1234);
	cr_assert(swc.solicited);
}

Test(sim_rc, read_multi_packet)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 4, 1 << 16);
	sim_fill(p.bbuf, 10000, 11);
	cr_assert_eq(sim_send(p.a, 9, IBV_WR_RDMA_READ, p.abuf + 8, 10000, p.akey,
			      (uintptr_t)p.bbuf, p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_READ);
	cr_assert_eq(wc.byte_len, 10000);
	cr_assert_eq(memcmp(p.abuf + 8, p.bbuf, 10000), 0);
	cr_assert_eq(p.abuf[10008], 0);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_rc, read_0_bytes)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 4, 4096);
	cr_assert_eq(sim_send(p.a, 9, IBV_WR_RDMA_READ, p.abuf, 0, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
}

Test(sim_rc, cas_and_faa_return_the_original_value)
{
	uint64_t *word = (uint64_t *)(p.bbuf + 64), *res = (uint64_t *)p.abuf;
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 5, 4096);
	word = (uint64_t *)(p.bbuf + 64);
	res = (uint64_t *)p.abuf;
	*word = 1000;
	/* FAA +5: 1000 -> 1005, returns 1000. */
	cr_assert_eq(sim_atomic(p.a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, &res[0], p.akey,
				(uintptr_t)word, p.bkey, 5, 0, IBV_SEND_SIGNALED),
		     0);
	/* CAS 1005 -> 7: swaps, returns 1005. */
	cr_assert_eq(sim_atomic(p.a, 2, IBV_WR_ATOMIC_CMP_AND_SWP, &res[1], p.akey, (uintptr_t)word,
				p.bkey, 1005, 7, IBV_SEND_SIGNALED),
		     0);
	/* CAS 1005 -> 9: fails (value is 7), returns 7. */
	cr_assert_eq(sim_atomic(p.a, 3, IBV_WR_ATOMIC_CMP_AND_SWP, &res[2], p.akey, (uintptr_t)word,
				p.bkey, 1005, 9, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	for (uint64_t i = 1; i <= 3; i++) {
		wc = sim_expect_wc(p.a_scq);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, i);
		cr_assert_eq(wc.opcode, i == 1 ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
		cr_assert_eq(wc.byte_len, 8);
	}
	cr_assert_eq(res[0], 1000);
	cr_assert_eq(res[1], 1005);
	cr_assert_eq(res[2], 7);
	cr_assert_eq(*word, 7);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_rc, unsignalled_completes_nothing_but_errors_do)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 6, 1 << 16);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sim_send(p.a, 10 + i, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey,
				      (uintptr_t)p.bbuf, p.bkey, i == 3 ? IBV_SEND_SIGNALED : 0),
			     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 13);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(leftovers(), 0);
	cr_assert_eq(p.a->sq.tail, p.a->sq.head, "unsignalled WQEs are retired too");
	/* An unsignalled WR that fails still completes, with its error. */
	cr_assert_eq(sim_send(p.a, 20, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey, (uintptr_t)p.bbuf,
			      p.bkey + 1, 0),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 20);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
}

Test(sim_rc, sig_all_signals_every_wr)
{
	struct sim_qp_init qi = {
		.type = IBV_QPT_RC,
		.pd = 1,
		.sq_slots = 8,
		.rq_slots = 8,
		.max_sge = 1,
		.sig_all = true,
	};
	struct sim_qp *a2, *b2;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 6, 1 << 16);
	qi.send_cq = p.a_scq;
	qi.recv_cq = p.a_rcq;
	a2 = sim_qp_new(p.ha, &qi);
	qi.send_cq = p.b_scq;
	qi.recv_cq = p.b_rcq;
	b2 = sim_qp_new(p.hb, &qi);
	sim_connect(a2, b2, &p.conn);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sim_send(a2, i, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey,
				      (uintptr_t)p.bbuf, p.bkey, 0),
			     0);
	run_idle();
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, (uint64_t)i);
	cr_assert_eq(leftovers(), 0);
}

/*
 * A request's payload that lies in one entry of the gather list stays in memory until it is
 * sent (roce_qp_write_pkt_gap; the harness takes every other packet so, spoils the room the
 * core left and computes the ICRC over the gap's bytes); one that spans two entries is copied,
 * as is one of fewer than ROCE_GAP_MIN bytes. With a 1024-byte MTU, entries of 3000 and 5000
 * bytes make packets of all three kinds.
 */
Test(sim_rc, payloads_left_in_memory_arrive_whole)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_sge sge[2];
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = sge,
				 .num_sge = 2,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED};

	c.mtu = IBV_MTU_1024;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 11, 1 << 16);
	sim_fill(p.abuf, 16384, 9);
	sge[0] = (struct ibv_sge){.addr = (uintptr_t)p.abuf, .length = 3000, .lkey = p.akey};
	sge[1] = (struct ibv_sge){.addr = (uintptr_t)p.abuf + 4000, .length = 5000, .lkey = p.akey};
	wr.wr.rdma.remote_addr = (uintptr_t)p.bbuf;
	wr.wr.rdma.rkey = p.bkey;
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sim_post_send(p.a, &wr), 0);
	run_idle();
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(p.bbuf, p.abuf, 3000), 0);
	cr_assert_eq(memcmp(p.bbuf + 3000, p.abuf + 4000, 5000), 0);
	cr_assert_gt(p.s->stats.gapped, 0, "no payload was left in memory");
	cr_assert_eq(p.s->stats.bad_icrc, 0);
}

/*
 * Payloads received straight into place (sim.c: steer takes every other packet that
 * roce_qp_steer plans for): four 64 KiB WRITEs (or READs) of 64 packets each arrive whole, the
 * packet that ends each placed by the core itself, and nothing beyond the messages is written.
 * On a wire that corrupts one packet in twenty, the bad payloads of steered packets land in
 * the message's target before their ICRC fails, and the copies sent again write them over.
 */
static void into_place(enum ibv_wr_opcode op, uint32_t corrupt_ppm)
{
	struct sim_wire_cfg w = {.delay_ns = 2000, .corrupt_ppm = corrupt_ppm};
	struct sim_conn c = sim_conn_default();
	const uint32_t len = 65536;
	uint8_t *from, *to;

	c.mtu = IBV_MTU_1024;
	sim_pair_init(&p, IBV_QPT_RC, &c, &w, 12, 5 * len);
	from = op == IBV_WR_RDMA_READ ? p.bbuf : p.abuf;
	to = op == IBV_WR_RDMA_READ ? p.abuf : p.bbuf;
	sim_fill(from, 4 * len, 12);
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(sim_send(p.a, i, op, p.abuf + i * len, len, p.akey,
				      (uintptr_t)p.bbuf + i * len, p.bkey, IBV_SEND_SIGNALED),
			     0);
	run_idle();
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(to, from, 4 * len), 0, "a message's bytes differ");
	cr_assert_eq(to[4 * len], 0, "written past the last message");
	cr_assert_gt(p.s->stats.steered, 4 * 16, "few payloads were steered");
}

Test(sim_rc, writes_received_into_place_arrive_whole)
{
	into_place(IBV_WR_RDMA_WRITE, 0);
	cr_assert_eq(p.s->stats.corrupted + p.s->stats.bad_icrc, 0);
}

Test(sim_rc, corrupted_payloads_received_into_place_are_written_again)
{
	into_place(IBV_WR_RDMA_WRITE, 50000);
	cr_assert_gt(p.s->stats.bad_icrc, 0, "nothing was corrupted");
	cr_assert_gt(p.a->core.counters.retransmits, 0);
}

Test(sim_rc, reads_received_into_place_arrive_whole)
{
	into_place(IBV_WR_RDMA_READ, 0);
	cr_assert_eq(p.s->stats.corrupted + p.s->stats.bad_icrc, 0);
}

Test(sim_rc, corrupted_read_responses_received_into_place_are_taken_again)
{
	into_place(IBV_WR_RDMA_READ, 50000);
	cr_assert_gt(p.s->stats.bad_icrc, 0, "nothing was corrupted");
}

/* Only the first packet of each message leaves (sim filter). */
static bool only_first(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	(void)from;
	return pkt->info->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY);
}

/*
 * roce_qp_steer plans the MIDDLE packets the responder expects next, in the memory the WRITE's
 * RETH named, never the packet that ends the WRITE, and nothing for a packet it does not
 * expect: a 4-packet WRITE whose FIRST alone arrived gets a plan for 2 packets at most.
 */
Test(sim_rc, steer_plans_the_middle_packets_expected_next)
{
	struct sim_conn c = sim_conn_default();
	const uint16_t seg = ROCE_BTH_LEN + 1024 + ROCE_ICRC_LEN;
	uint8_t bth[ROCE_BTH_LEN] = {ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE, 0, 0xFF, 0xFF};
	struct roce_steer plan;
	uint32_t psn;

	c.mtu = IBV_MTU_1024;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 13, 1 << 16);
	p.s->filter = only_first;
	psn = p.a->core.req.psn;
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 4 * 1024, p.akey,
			      (uintptr_t)p.bbuf + 100, p.bkey, IBV_SEND_SIGNALED),
		     0);
	sim_run(p.s, p.s->now + 50000);
	roce_put24(bth + 5, p.b->core.qpn);
	roce_put24(bth + 9, roce_psn_add(psn, 1));
	cr_assert(roce_qp_steer(&p.b->core, bth, seg, 3 * (size_t)seg, &plan));
	cr_assert_eq(plan.at, p.bbuf + 100 + 1024);
	cr_assert_eq(plan.count, 2, "%u packets planned: the LAST is one", plan.count);
	cr_assert_eq(plan.psn, roce_psn_add(psn, 1));
	cr_assert_eq(plan.qpn, p.b->core.qpn);
	cr_assert_eq(plan.pmtu, 1024);
	cr_assert_eq(plan.hdr_len, ROCE_BTH_LEN);
	cr_assert_eq(plan.opcode, ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE);
	cr_assert(roce_qp_steer(&p.b->core, bth, seg, seg + 100, &plan));
	cr_assert_eq(plan.count, 1, "the whole segments only");
	cr_assert_not(roce_qp_steer(&p.b->core, bth, seg, seg - 4, &plan), "no whole segment");
	cr_assert_not(roce_qp_steer(&p.b->core, bth, seg - 4, 3 * (size_t)seg, &plan),
		      "segments of another length");
	roce_put24(bth + 9, roce_psn_add(psn, 2));
	cr_assert_not(roce_qp_steer(&p.b->core, bth, seg, 3 * (size_t)seg, &plan),
		      "not the PSN expected");
	roce_put24(bth + 9, roce_psn_add(psn, 1));
	bth[0] = ROCE_TR_RC | ROCE_OP_WRITE_LAST;
	cr_assert_not(roce_qp_steer(&p.b->core, bth, seg, 3 * (size_t)seg, &plan));
	bth[0] = ROCE_TR_RC | ROCE_OP_SEND_MIDDLE;
	cr_assert_not(roce_qp_steer(&p.b->core, bth, seg, 3 * (size_t)seg, &plan));
}

Test(sim_rc, inline_and_scatter_gather)
{
	uint8_t src[40];
	struct ibv_sge sge[3] = {
		{.addr = (uintptr_t)src, .length = 10},
		{.addr = (uintptr_t)src + 10, .length = 0},
		{.addr = (uintptr_t)src + 10, .length = 30},
	};
	struct ibv_send_wr wr = {
		.wr_id = 1,
		.sg_list = sge,
		.num_sge = 3,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct ibv_sge rsge[3];
	struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = rsge, .num_sge = 3};
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 7, 1 << 16);
	sim_fill(src, sizeof(src), 3);
	/* Scatter over three pieces of b's buffer: 7, 1 and 100 bytes. */
	rsge[0] = (struct ibv_sge){.addr = (uintptr_t)p.bbuf + 1000, .length = 7, .lkey = p.bkey};
	rsge[1] = (struct ibv_sge){.addr = (uintptr_t)p.bbuf + 2000, .length = 1, .lkey = p.bkey};
	rsge[2] = (struct ibv_sge){.addr = (uintptr_t)p.bbuf + 3000, .length = 100, .lkey = p.bkey};
	cr_assert_eq(sim_post_recv(p.b, &rwr), 0);
	cr_assert_eq(sim_post_send(p.a, &wr), 0);
	memset(src, 0, sizeof(src)); /* inline data was copied at post time */
	sim_fill(src, sizeof(src), 3);
	run_idle();
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 40);
	cr_assert_eq(memcmp(p.bbuf + 1000, src, 7), 0);
	cr_assert_eq(p.bbuf[2000], src[7]);
	cr_assert_eq(memcmp(p.bbuf + 3000, src + 8, 32), 0);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
}

Test(sim_rc, many_messages_in_order_both_ways)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 8, 1 << 20);
	for (int i = 0; i < 40; i++) {
		cr_assert_eq(sim_recv(p.b, 100 + i, p.bbuf + i * 4096, 4096, p.bkey), 0);
		cr_assert_eq(sim_recv(p.a, 200 + i, p.abuf + 512 * 1024 + i * 4096, 4096, p.akey),
			     0);
	}
	for (int i = 0; i < 40; i++) {
		sim_fill(p.abuf + i * 4096, 4096, 1000 + i);
		sim_fill(p.bbuf + 512 * 1024 + i * 4096, 4096, 2000 + i);
	}
	for (int i = 0; i < 40; i++) {
		cr_assert_eq(sim_send(p.a, i, IBV_WR_SEND, p.abuf + i * 4096, 1 + i * 100, p.akey,
				      0, 0, IBV_SEND_SIGNALED),
			     0, "post %d", i);
		cr_assert_eq(sim_send(p.b, i, IBV_WR_SEND, p.bbuf + 512 * 1024 + i * 4096, 4096 - i,
				      p.bkey, 0, 0, IBV_SEND_SIGNALED),
			     0);
	}
	run_idle();
	for (uint32_t i = 0; i < 40; i++) {
		struct ibv_wc wc = sim_expect_wc(p.b_rcq);

		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 100 + i);
		cr_assert_eq(wc.byte_len, 1 + i * 100);
		wc = sim_expect_wc(p.a_rcq);
		cr_assert_eq(wc.wr_id, 200 + i);
		cr_assert_eq(wc.byte_len, 4096 - i);
		cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, i);
		cr_assert_eq(sim_expect_wc(p.b_scq).wr_id, i);
	}
}

/* Flow control (roce_qp_set_window_bytes): the requester never has more out than the window. */
static uint32_t last_req_psn, last_ack_psn, max_out;
static bool seen_ack;

static bool track_window(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	if (from == p.a) {
		last_req_psn = pkt->bth.psn;
		if (seen_ack && ((last_req_psn - last_ack_psn) & ROCE_PSN_MASK) > max_out)
			max_out = (last_req_psn - last_ack_psn) & ROCE_PSN_MASK;
	} else {
		last_ack_psn = pkt->bth.psn;
		seen_ack = true;
	}
	return true;
}

Test(sim_rc, window_follows_receiver_budget)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.mtu = IBV_MTU_256;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 200 * 256);
	roce_qp_set_window_bytes(&p.a->core, 1);
	cr_assert_eq(p.a->core.window, ROCE_WINDOW_MIN);
	roce_qp_set_window_bytes(&p.a->core, 0);
	cr_assert_eq(p.a->core.window, ROCE_WINDOW_MAX);
	roce_qp_set_window_bytes(&p.a->core, 20 * 256);
	cr_assert_eq(p.a->core.window, 20);
	p.s->filter = track_window;
	sim_fill(p.abuf, 200 * 256, 3);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 200 * 256, p.akey,
			      (uintptr_t)p.bbuf, p.bkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 200 * 256), 0);
	cr_assert(seen_ack && max_out > 0 && max_out <= 20, "%u PSNs out", max_out);
}

/* The longest run of a's packets without AckReq, counted from its first PSN. */
static uint32_t prev_ackreq, max_unasked;

static bool track_ackreq(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint32_t gap;

	(void)arg;
	if (from != p.a || !pkt->bth.ack_req)
		return true;
	gap = (pkt->bth.psn - prev_ackreq) & ROCE_PSN_MASK;
	if (gap > max_unasked)
		max_unasked = gap;
	prev_ackreq = pkt->bth.psn;
	return true;
}

/*
 * The requester asks for an ACK every half window wherever its PSNs start: a responder that
 * ACKs only what asks (the kernel's rxe) otherwise leaves a long message waiting at the window
 * for the retransmission timeout.
 */
Test(sim_rc, ackreq_every_half_window_from_any_first_psn)
{
	static const uint32_t starts[] = {0, 0x400000, 0x7ffff0, 0x800010, 0xfffff0};

	for (unsigned int i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct sim_conn c = sim_conn_default();
		struct ibv_wc wc;

		c.mtu = IBV_MTU_256;
		c.psn_a = starts[i];
		sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 64 * 256);
		roce_qp_set_window_bytes(&p.a->core, 1); /* ROCE_WINDOW_MIN packets */
		prev_ackreq = starts[i]; /* the requester counts from its first PSN */
		max_unasked = 0;
		p.s->filter = track_ackreq;
		sim_fill(p.abuf, 64 * 256, (uint8_t)i);
		cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 64 * 256, p.akey,
				      (uintptr_t)p.bbuf, p.bkey, IBV_SEND_SIGNALED),
			     0);
		cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
		wc = sim_expect_wc(p.a_scq);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "first PSN 0x%x: status %d", starts[i],
			     wc.status);
		cr_assert_leq(max_unasked, ROCE_WINDOW_MIN / 2, "first PSN 0x%x: %u PSNs unasked",
			      starts[i], max_unasked);
		cr_assert_eq(p.a->core.counters.retransmits, 0, "first PSN 0x%x", starts[i]);
		if (i + 1 < sizeof(starts) / sizeof(starts[0]))
			sim_pair_fini(&p); /* the suite's fini frees the last */
	}
}

/* b's packets from the instant a's ACK and SEND reach it together, in order. */
static uint8_t b_ops[8];
static unsigned int b_nops;
enum { WIRE_NS = 10000 };

static bool record_b(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	if (from == p.b && p.s->now >= 2 * WIRE_NS + ROCE_ACK_DELAY_NS && b_nops < sizeof(b_ops))
		b_ops[b_nops++] = pkt->bth.opcode;
	return true;
}

/*
 * a's SEND is held so that it reaches b with a's ACK of b's first packets (which a sends
 * ROCE_ACK_DELAY_NS after they arrived: none asked for an ACK).
 */
static uint64_t hold_a_send(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	return from == p.a && pkt->bth.opcode == ROCE_OP_SEND_ONLY ? WIRE_NS + ROCE_ACK_DELAY_NS
								   : 0;
}

/*
 * A plain ACK due while the requester has packets ready goes before them (roce_qp_write_pkt),
 * as an RNIC acknowledges a request before its application answers: b's WRITE, window-blocked
 * until a's ACK arrives, and b's ACK of a's SEND that arrives with it, leave as ACK then the
 * WRITE's last packet, so that a sees its SEND complete before anything b sends after it.
 */
Test(sim_rc, plain_ack_leaves_before_the_requesters_packets)
{
	struct sim_wire_cfg w = {.delay_ns = WIRE_NS};
	struct sim_conn c = sim_conn_default();

	c.mtu = IBV_MTU_256;
	sim_pair_init(&p, IBV_QPT_RC, &c, &w, 1, 17 * 256);
	p.s->batch = true;
	roce_qp_set_window_bytes(&p.b->core, 1); /* ROCE_WINDOW_MIN: 16 packets */
	p.s->filter = record_b;
	p.s->hold = hold_a_send;
	cr_assert_eq(sim_recv(p.b, 7, p.bbuf, 64, p.bkey), 0);
	cr_assert_eq(sim_send(p.b, 1, IBV_WR_RDMA_WRITE, p.bbuf, 17 * 256, p.bkey,
			      (uintptr_t)p.abuf, p.akey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_SEND, p.abuf, 8, p.akey, 0, 0, IBV_SEND_SIGNALED), 0);
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
	cr_assert_geq(b_nops, 2, "b sent %u packets after a's ACK", b_nops);
	cr_assert_eq(b_ops[0], ROCE_OP_ACK, "first 0x%02x", b_ops[0]);
	cr_assert_eq(b_ops[1], ROCE_OP_WRITE_LAST, "then 0x%02x", b_ops[1]);
	cr_assert_eq(sim_expect_wc(p.b_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.b_rcq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
}
