// SPDX-License-Identifier: MIT
/*
 * Regression tests: one small deterministic scenario for each transport bug the scenario
 * families found, so each stays fixed whatever the families' seeds do.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"

static struct sim_pair p;

static void teardown(void)
{
	sim_pair_fini(&p);
}

TestSuite(sim_regress, .fini = teardown);

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

/* Lose the READ response packet whose number (from 1) filter_arg holds, once. */
static uint32_t read_resp_seen;

static bool lose_read_resp(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)from;
	if (op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY)
		return ++read_resp_seen != (uintptr_t)arg;
	return true;
}

/*
 * One lost READ response: the eight responses behind it are out of sequence, but they are of
 * the stream the restart replaces and must not each burn a retry (retry_cnt 1 would run out).
 */
Test(sim_regress, read_response_loss_costs_one_retry)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.retry_cnt = 1;
	c.mtu = IBV_MTU_256;
	read_resp_seen = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 16);
	p.s->filter = lose_read_resp;
	p.s->filter_arg = (void *)(uintptr_t)2;
	sim_fill(p.bbuf, 10 * 256, 7);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 10 * 256, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 10 * 256), 0);
	cr_assert_eq(p.a->core.counters.retransmits, 1);
}

/* Lose the 2nd READ response; deliver the n-th response n * 40 us after it was sent. */
static uint64_t slow_read_stream(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	(void)from;
	if (op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY)
		return (uint64_t)++read_resp_seen * 40000;
	return 0;
}

static uint32_t filtered_resps;

static bool lose_second_read_resp(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	(void)from;
	if (op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY)
		return ++filtered_resps != 2;
	return true;
}

/*
 * A slow responder still streaming the READ response a restart replaces (the kernel's rxe in
 * a TCG guest): its responses keep coming for 1.6 ms, twelve ACK timeouts. They show the
 * responder is alive, so the ACK timer must not spend the one retry left while they come:
 * the READ completes once the replacement stream arrives behind them.
 */
Test(sim_regress, slow_read_stream_spends_no_retry)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.retry_cnt = 1;
	c.timeout = 5; /* 131 us */
	c.mtu = IBV_MTU_256;
	read_resp_seen = filtered_resps = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 16);
	p.s->filter = lose_second_read_resp;
	p.s->hold = slow_read_stream;
	sim_fill(p.bbuf, 40 * 256, 9);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 40 * 256, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 40 * 256), 0);
}

static uint64_t link_free;

/* READ responses arrive one every 40 us, in the order they were sent: a slow responder. */
static uint64_t serial_read_stream(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	(void)from;
	if (op < ROCE_OP_READ_RESP_FIRST || op > ROCE_OP_READ_RESP_ONLY)
		return 0;
	link_free = (link_free > p.s->now ? link_free : p.s->now) + 40000;
	return link_free - p.s->now;
}

static bool lose_fourth_read_resp(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	(void)from;
	if (op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY)
		return ++filtered_resps != 4;
	return true;
}

/*
 * Two READs outstanding; the last response of the first is lost, and the responder (slow, as
 * the kernel's rxe in a TCG guest, and serving requests in order) streams the second READ's
 * responses for 1.6 ms, twelve ACK timeouts, before it answers the first one asked again. Those
 * responses show the responder alive: the ACK timer must not spend the one retry left while they
 * come (CI's interop_loss failed so with ib_read_bw against rxe: RETRY_EXC_ERR while rxe still
 * streamed later READs).
 */
Test(sim_regress, later_read_stream_spends_no_retry)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.retry_cnt = 1;
	c.timeout = 5; /* 131 us */
	c.mtu = IBV_MTU_256;
	c.max_rd_atomic = 2;
	c.max_dest_rd_atomic = 2;
	filtered_resps = 0;
	link_free = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 16);
	p.s->filter = lose_fourth_read_resp;
	p.s->hold = serial_read_stream;
	sim_fill(p.bbuf, 44 * 256, 9);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 4 * 256, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_READ, p.abuf + 4 * 256, 40 * 256, p.akey,
			      (uintptr_t)p.bbuf + 4 * 256, p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 44 * 256), 0);
}

/* Every response of the responder's QP leaves in turn, 40 us apart: a slow in-order responder. */
static uint64_t serial_responses(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	(void)pkt;
	if (from != p.b)
		return 0;
	link_free = (link_free > p.s->now ? link_free : p.s->now) + 40000;
	return link_free - p.s->now;
}

static bool lose_first_read_resp(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	(void)from;
	if (op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY)
		return ++filtered_resps != 1;
	return true;
}

/*
 * A READ whose response is lost, 30 WRITEs behind it. The first WRITE's ACK shows the READ
 * unanswered and it is asked again (IBA 9.7.5.1.3); the slow responder's ACKs of the other
 * WRITEs keep coming for 1.2 ms, nine ACK timeouts, before the READ's new response. ACKs show
 * the responder alive as READ responses do: the one retry left must not be spent while they
 * come.
 */
Test(sim_regress, later_write_acks_spend_no_retry)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.retry_cnt = 1;
	c.timeout = 5; /* 131 us */
	c.mtu = IBV_MTU_256;
	filtered_resps = 0;
	link_free = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 16);
	p.s->filter = lose_first_read_resp;
	p.s->hold = serial_responses;
	sim_fill(p.bbuf, 256, 9);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 256, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	for (int i = 0; i < 30; i++)
		cr_assert_eq(sim_send(p.a, 2 + i, IBV_WR_RDMA_WRITE, p.abuf + 1024, 64, p.akey,
				      (uintptr_t)p.bbuf + 1024, p.bkey,
				      i == 29 ? IBV_SEND_SIGNALED : 0),
			     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(wc.wr_id, 1);
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %d", wc.status);
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 256), 0);
	cr_assert_eq(p.a->core.counters.timeouts, 0, "%llu ACK timeouts",
		     (unsigned long long)p.a->core.counters.timeouts);
}

/*
 * RNR on the last packet of a multi-packet WRITE with immediate, more packets behind it: the
 * sequence NAKs those provoke must not count as progress, or rnr_retry never runs out.
 */
Test(sim_regress, rnr_retry_runs_out_with_packets_behind)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.rnr_retry = 2;
	c.min_rnr_timer = 1;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 2, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE_WITH_IMM, p.abuf, 3000, p.akey,
			      (uintptr_t)p.bbuf, p.bkey, 0),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 3000, p.akey,
			      (uintptr_t)p.bbuf + 4096, p.bkey, 0),
		     0);
	cr_assert_eq(sim_run_for(p.s, 1000000000), SIM_IDLE, "%s", p.s->fail ? p.s->fail : "hang");
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR, "status %d", wc.status);
	cr_assert_eq(p.b->core.counters.rnr_naks_sent, 3);
}

/* An RNR NAK that arrives while the RNR timer runs answers an older copy: no retry spent. */
Test(sim_regress, duplicate_rnr_nak_spends_no_retry)
{
	struct sim_wire_cfg w = {.delay_ns = 2000, .dup_ppm = 1000000, .reorder_ns = 1};
	struct sim_conn c = sim_conn_default();

	c.rnr_retry = 1;
	c.min_rnr_timer = 5; /* 60 us */
	sim_pair_init(&p, IBV_QPT_RC, &c, &w, 3, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 100, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	/* Every packet arrives twice: the first try draws two RNR NAKs, one spends a retry. */
	cr_assert_eq(sim_run_for(p.s, 40000), SIM_TIME);
	cr_assert_eq(sim_recv(p.b, 9, p.bbuf, 4096, p.bkey), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.b_rcq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_pending(p.b_rcq), 0, "the duplicate SEND is not received twice");
}

/*
 * A peer QP reset and reconnected with new PSNs ACKs the old stream's packets as duplicates of
 * its own PSN space. Those ACKs name PSNs the requester never sent: they retire nothing, and
 * the requester fails by retry exhaustion instead of reporting WRITEs that never landed.
 */
Test(sim_regress, ghost_acks_retire_nothing)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.timeout = 8;
	c.retry_cnt = 2;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 4, 1 << 16);
	/* b now expects PSNs far behind what a sends: a's packets look like duplicates. */
	sim_connect_one(p.b, p.a, &c, 5000, roce_psn_add(c.psn_a, 1u << 22));
	sim_fill(p.abuf, 2000, 3);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 2000, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "status %d", wc.status);
	cr_assert_eq(p.bbuf[0], 0, "nothing was written");
	cr_assert_gt(p.a->core.counters.rx_bad_resp, 0);
}

/* Hold the first copy of the first SEND back 500 us. */
static uint32_t sends_seen;

static uint64_t hold_first_send(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	(void)from;
	return (pkt->bth.opcode & 0x1F) == ROCE_OP_SEND_ONLY && ++sends_seen == 1 ? 500000 : 0;
}

/*
 * The requester goes back to a SEND for an RNR NAK; while it waits out the RNR timer, an older
 * copy of the SEND is accepted and ACKed, which retires the SEND. The WRITEs posted next must
 * take new PSNs: reusing the SEND's would have them "acknowledged" as duplicates, never written.
 */
Test(sim_regress, stale_rnr_wait_never_reuses_psns)
{
	struct sim_conn c = sim_conn_default();

	c.timeout = 5;        /* 131 us: the retransmission draws the RNR NAK */
	c.min_rnr_timer = 14; /* 0.96 ms */
	sends_seen = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 5, 1 << 16);
	p.s->hold = hold_first_send;
	sim_fill(p.abuf, 5000, 8);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 100, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_run_for(p.s, 300000), SIM_TIME);
	cr_assert_eq(p.b->core.counters.rnr_naks_sent, 1);
	cr_assert_eq(sim_recv(p.b, 7, p.bbuf, 4096, p.bkey), 0);
	/* The held copy lands at 500 us and is ACKed; the RNR wait lasts until about 1.1 ms. */
	cr_assert_eq(sim_run_for(p.s, 300000), SIM_TIME);
	cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, 1);
	cr_assert_eq(p.a->core.req.state, ROCE_REQ_WAIT_RNR);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(sim_send(p.a, 10 + i, IBV_WR_RDMA_WRITE, p.abuf + 1000 * i, 1000,
				      p.akey, (uintptr_t)p.bbuf + 8192 + 1000 * i, p.bkey,
				      IBV_SEND_SIGNALED),
			     0);
	run_idle();
	for (int i = 0; i < 5; i++) {
		struct ibv_wc wc = sim_expect_wc(p.a_scq);

		cr_assert_eq(wc.wr_id, 10 + (uint64_t)i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(memcmp(p.bbuf + 8192, p.abuf, 5000), 0, "every WRITE landed");
	cr_assert_eq(sim_pending(p.b_rcq), 1, "the SEND was received once");
}

/* UC: a duplicated SEND_ONLY (older PSN than expected) is dropped, never received twice. */
Test(sim_regress, uc_duplicate_not_received_twice)
{
	struct sim_wire_cfg w = {.delay_ns = 2000, .dup_ppm = 1000000, .reorder_ns = 10};

	sim_pair_init(&p, IBV_QPT_UC, NULL, &w, 6, 1 << 16);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sim_recv(p.b, i, p.bbuf + 1024 * i, 1024, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 100, p.akey, 0, 0, 0), 0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_SEND, p.abuf, 200, p.akey, 0, 0, 0), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.b_rcq).byte_len, 100);
	cr_assert_eq(sim_expect_wc(p.b_rcq).byte_len, 200);
	cr_assert_eq(sim_pending(p.b_rcq), 0);
	cr_assert_eq(p.b->core.counters.rx_duplicate, 2);
}

/* Give both QPs 3-slot work queues whose counters (and the requester's) start at @start. */
static void small_queues_at(uint32_t start)
{
	struct sim_qp *qps[] = {p.a, p.b};

	for (int i = 0; i < 2; i++) {
		struct sim_qp *q = qps[i];

		roce_wq_free(&q->sq);
		roce_wq_free(&q->rq);
		cr_assert_eq(roce_wq_init(&q->sq, 3, roce_send_wqe_size(4, 64)), 0);
		cr_assert_eq(roce_wq_init(&q->rq, 3, roce_recv_wqe_size(4)), 0);
		q->init.sq_slots = q->init.rq_slots = 3;
		q->sq.head = q->sq.tail = q->rq.head = q->rq.tail = start;
		q->core.req.wqe = start;
	}
}

/*
 * Queues of a size that is no power of two, their free-running counters crossing 2^32: a slot
 * taken as the counter's remainder by 3 would serve two consecutive WQEs there (2^32 - 1 and 0
 * are both slot 0), and the second would overwrite the first before it was done.
 */
Test(sim_regress, work_queue_counters_wrap)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 7, 4096);
	small_queues_at(UINT32_MAX - 3);
	for (int round = 0, k = 0; round < 3; round++, k += 3) {
		for (int i = k; i < k + 3; i++) {
			sim_fill(p.abuf + 64 * i, 64, (uint64_t)i);
			cr_assert_eq(sim_recv(p.b, 100 + i, p.bbuf + 64 * i, 64, p.bkey), 0);
		}
		for (int i = k; i < k + 3; i++)
			cr_assert_eq(sim_send(p.a, i, IBV_WR_SEND, p.abuf + 64 * i, 64, p.akey, 0,
					      0, IBV_SEND_SIGNALED),
				     0);
		run_idle();
		for (int i = k; i < k + 3; i++) {
			struct ibv_wc r = sim_expect_wc(p.b_rcq), s = sim_expect_wc(p.a_scq);

			cr_assert_eq(r.status, IBV_WC_SUCCESS, "receive %d: status %d", i,
				     r.status);
			cr_assert_eq(r.wr_id, 100 + (uint64_t)i, "receive %d: wr_id %lu", i,
				     (unsigned long)r.wr_id);
			cr_assert_eq(s.wr_id, (uint64_t)i, "send %d: wr_id %lu", i,
				     (unsigned long)s.wr_id);
			cr_assert_eq(memcmp(p.bbuf + 64 * i, p.abuf + 64 * i, 64), 0, "message %d",
				     i);
		}
	}
}

/*
 * The responder's READ resources likewise: 3 of them (max_dest_rd_atomic), their counters
 * crossing 2^32. The answer to the READ of counter 2^32 - 1 is lost: its retry must find that
 * READ, which a remainder by 3 would have put in the slot of the next one (counter 0).
 */
Test(sim_regress, read_resource_counters_wrap)
{
	struct sim_conn c = sim_conn_default();
	const uint32_t start = UINT32_MAX - 3;

	c.max_rd_atomic = c.max_dest_rd_atomic = 3;
	c.retry_cnt = 2;
	read_resp_seen = 0;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 8, 4096);
	p.s->filter = lose_read_resp;
	p.s->filter_arg = (void *)(uintptr_t)4;
	p.b->core.resp.res_head = p.b->core.resp.res_tail = p.b->core.resp.res_fresh = start;
	sim_fill(p.bbuf, 9 * 64, 9);
	for (int round = 0, k = 0; round < 3; round++, k += 3) {
		for (int i = k; i < k + 3; i++)
			cr_assert_eq(sim_send(p.a, i, IBV_WR_RDMA_READ, p.abuf + 64 * i, 64, p.akey,
					      (uintptr_t)(p.bbuf + 64 * i), p.bkey,
					      IBV_SEND_SIGNALED),
				     0);
		run_idle();
		for (int i = k; i < k + 3; i++) {
			struct ibv_wc s = sim_expect_wc(p.a_scq);

			cr_assert_eq(s.status, IBV_WC_SUCCESS, "READ %d: status %d", i, s.status);
			cr_assert_eq(s.wr_id, (uint64_t)i);
		}
	}
	cr_assert_eq(memcmp(p.abuf, p.bbuf, 9 * 64), 0, "every READ brought its own bytes");
}

/*
 * A receive WQE whose entry its region does not hold (the region moved, as ibv_rereg_mr with
 * IBV_REREG_MR_CHANGE_TRANSLATION moves it under WQEs already posted) is a malformed WQE, as a
 * bad key is: a remote operational error NAK, LOC_PROT_ERR on the receive. It was taken for a
 * receive too short for the message (an invalid request NAK, LOC_LEN_ERR), which rdma-core's
 * test_mr_rereg_addr refuses.
 */
Test(sim_regress, receive_outside_its_region_is_malformed)
{
	uint32_t head;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 13, 1 << 16);
	head = sim_mr_reg(p.hb, 1, p.bbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_eq(sim_recv(p.b, 50, p.bbuf + 8192, 1000, head), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 500, p.akey, 0, 0, 0), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_REM_OP_ERR);
	cr_assert_eq(sim_expect_wc(p.b_rcq).status, IBV_WC_LOC_PROT_ERR);
	cr_assert_eq(p.b->nevents, 0, "a completion error raises no event");
}
