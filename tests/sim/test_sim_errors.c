// SPDX-License-Identifier: MIT
/*
 * RC error paths through the simulated wire: RNR, retry exhaustion against a dead peer, remote
 * access and invalid-request NAKs, local errors, and the flush of everything after an error.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"

static struct sim_pair p;

static void teardown(void)
{
	sim_pair_fini(&p);
}

TestSuite(sim_err, .fini = teardown);

/* IBA 9.7.6.1.3: 4.096 us * 2^timeout, written out here rather than taken from the core. */
static uint64_t timeout_ns(unsigned t)
{
	return 4096ull << t;
}

static uint32_t leftovers(void)
{
	return sim_pending(p.a_scq) + sim_pending(p.a_rcq) + sim_pending(p.b_scq) +
	       sim_pending(p.b_rcq);
}

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

/* Every WR after the failed one completes with a flush error, in order, and the QP is in ERR. */
static void expect_flushed(struct sim_cq *cq, uint64_t first, uint64_t last)
{
	for (uint64_t id = first; id <= last; id++) {
		struct ibv_wc wc = sim_expect_wc(cq);

		cr_assert_eq(wc.wr_id, id);
		cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR, "wr %llu: status %d",
			     (unsigned long long)id, wc.status);
	}
}

Test(sim_err, rnr_then_receive_posted)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;

	c.rnr_retry = 3;
	c.min_rnr_timer = 14; /* 0.96 ms (IBA table 45) */
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 3000, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	/* Two RNR NAKs go by (the first at once, one 0.96 ms later), then a receive appears. */
	cr_assert_eq(sim_run_for(p.s, 1500000), SIM_TIME);
	cr_assert_eq(p.b->core.counters.rnr_naks_sent, 2);
	cr_assert_eq(sim_pending(p.a_scq), 0);
	cr_assert_eq(sim_recv(p.b, 5, p.bbuf, 4096, p.bkey), 0);
	run_idle();
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(p.b->core.counters.rnr_naks_sent, 2, "the third try found the receive");
	cr_assert_eq(p.a->to_error_calls + p.b->to_error_calls, 0);
}

Test(sim_err, rnr_retry_exhausted)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_wc wc;
	uint64_t t0;

	c.rnr_retry = 2;
	c.min_rnr_timer = 1; /* 0.01 ms */
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 2, 1 << 16);
	t0 = p.s->now;
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 10, p.akey, 0, 0, IBV_SEND_SIGNALED), 0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, 0),
		     0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR, "status %d", wc.status);
	expect_flushed(p.a_scq, 2, 2);
	/* The first try and rnr_retry more: each NAKed. */
	cr_assert_eq(p.b->core.counters.rnr_naks_sent, 3);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
	cr_assert_eq(p.a->to_error_calls, 1);
	cr_assert_eq(p.b->state, IBV_QPS_RTS, "an RNR NAK does not hurt the responder");
	/* Two waits of the RNR timer (10 us) and three round trips of 4 us. */
	cr_assert_geq(p.s->now - t0, 2 * 10000 + 3 * 4000);
	cr_assert_lt(p.s->now - t0, 2 * 10000 + 3 * 4000 + 1000);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_err, rnr_retry_7_is_infinite)
{
	struct sim_conn c = sim_conn_default();

	c.rnr_retry = 7;
	c.min_rnr_timer = 1;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 3, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 10, p.akey, 0, 0, IBV_SEND_SIGNALED), 0);
	cr_assert_eq(sim_run_for(p.s, 20000000), SIM_TIME); /* 20 ms: over 1000 RNR NAKs */
	cr_assert_gt(p.b->core.counters.rnr_naks_sent, 1000);
	cr_assert_eq(sim_pending(p.a_scq), 0);
	cr_assert_eq(sim_recv(p.b, 5, p.bbuf, 4096, p.bkey), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.b_rcq).status, IBV_WC_SUCCESS);
}

/* A peer that never answers: retry_cnt + 1 transmissions, each after a full ACK timeout. */
static void dead_peer(unsigned timeout, unsigned retry_cnt, enum ibv_wr_opcode op)
{
	struct sim_conn c = sim_conn_default();
	struct sim_wc swc;
	uint64_t t0, tx0;

	c.timeout = (uint8_t)timeout;
	c.retry_cnt = (uint8_t)retry_cnt;
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 4, 1 << 16);
	p.hb->down = true;
	t0 = p.s->now;
	tx0 = p.a->tx_pkts;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		cr_assert_eq(
			sim_atomic(p.a, 1, op, p.abuf, p.akey, (uintptr_t)p.bbuf, p.bkey, 1, 0, 0),
			0);
	else
		cr_assert_eq(
			sim_send(p.a, 1, op, p.abuf, 100, p.akey, (uintptr_t)p.bbuf, p.bkey, 0), 0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert(sim_poll(p.a_scq, &swc));
	cr_assert_eq(swc.wc.wr_id, 1);
	cr_assert_eq(swc.wc.status, IBV_WC_RETRY_EXC_ERR, "status %d", swc.wc.status);
	cr_assert_eq(swc.time - t0, (retry_cnt + 1) * timeout_ns(timeout), "error after %llu ns",
		     (unsigned long long)(swc.time - t0));
	expect_flushed(p.a_scq, 2, 2);
	/* Each try sends both WRs' packets again (go-back-N from the oldest). */
	cr_assert_eq(p.a->tx_pkts - tx0, 2 * (retry_cnt + 1), "sent %llu",
		     (unsigned long long)(p.a->tx_pkts - tx0));
	cr_assert_eq(p.a->core.counters.timeouts, retry_cnt + 1);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
	cr_assert_eq(leftovers(), 0);
}

Test(sim_err, dead_peer_send)
{
	dead_peer(10, 3, IBV_WR_SEND);
}

Test(sim_err, dead_peer_write_retry_0)
{
	dead_peer(8, 0, IBV_WR_RDMA_WRITE);
}

Test(sim_err, dead_peer_read_retry_7)
{
	dead_peer(12, 7, IBV_WR_RDMA_READ);
}

Test(sim_err, dead_peer_atomic)
{
	dead_peer(1, 2, IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/* A request the responder refuses: @status at a, @event at b, both QPs in ERR, rest flushed. */
static void remote_error(enum ibv_wc_status status, enum ibv_event_type event)
{
	struct ibv_wc wc;

	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, status, "status %d, want %d", wc.status, status);
	expect_flushed(p.a_scq, 2, 2);
	cr_assert_eq(sim_events(p.b, event), 1);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
	cr_assert_eq(p.b->state, IBV_QPS_ERR);
	cr_assert_eq(p.a->to_error_calls, 1);
	cr_assert_eq(p.b->to_error_calls, 1);
}

static void post_second(void)
{
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 8, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, 0),
		     0);
}

Test(sim_err, write_bad_rkey)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 5, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey, (uintptr_t)p.bbuf,
			      p.bkey ^ 0x80, 0),
		     0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	cr_assert_eq(p.bbuf[0], 0);
}

Test(sim_err, write_past_region_end)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 6, 1 << 16);
	/* The last byte of the WRITE is one past the region. */
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 3000, p.akey,
			      (uintptr_t)p.bbuf + (1 << 16) - 2999, p.bkey, 0),
		     0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
}

Test(sim_err, read_without_remote_read_access)
{
	uint32_t key;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 7, 1 << 16);
	key = sim_mr_reg(p.hb, 1, p.bbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(
		sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 100, p.akey, (uintptr_t)p.bbuf, key, 0),
		0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
}

Test(sim_err, stale_rkey_after_dereg)
{
	uint32_t key;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 7, 1 << 16);
	key = sim_mr_reg(p.hb, 1, p.bbuf, 4096, IBV_ACCESS_REMOTE_WRITE);
	sim_mr_dereg(p.hb, key);
	sim_mr_reg(p.hb, 1, p.bbuf, 4096, IBV_ACCESS_REMOTE_WRITE); /* same slot, new key byte */
	cr_assert_eq(
		sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf, key, 0),
		0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
}

Test(sim_err, other_pd_rkey)
{
	uint32_t key;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 7, 1 << 16);
	key = sim_mr_reg(p.hb, 2, p.bbuf, 4096, IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(
		sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf, key, 0),
		0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
}

Test(sim_err, atomic_misaligned)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 8, 4096);
	/* verbs-shim refuses this at post time; a foreign requester may still send it. */
	cr_assert_eq(sim_atomic(p.a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, p.abuf, p.akey,
				(uintptr_t)p.bbuf + 4, p.bkey, 1, 0, 0),
		     0);
	post_second();
	remote_error(IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
	cr_assert_eq(((uint64_t *)p.bbuf)[0], 0);
}

Test(sim_err, atomic_without_atomic_access)
{
	uint32_t key;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 8, 4096);
	key = sim_mr_reg(p.hb, 1, p.bbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(sim_atomic(p.a, 1, IBV_WR_ATOMIC_CMP_AND_SWP, p.abuf, p.akey,
				(uintptr_t)p.bbuf, key, 0, 5, 0),
		     0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	cr_assert_eq(((uint64_t *)p.bbuf)[0], 0);
}

Test(sim_err, receive_too_short)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 9, 1 << 16);
	cr_assert_eq(sim_recv(p.b, 50, p.bbuf, 1000, p.bkey), 0);
	cr_assert_eq(sim_recv(p.b, 51, p.bbuf, 1000, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 1500, p.akey, 0, 0, 0), 0);
	post_second();
	remote_error(IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.wr_id, 50);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	expect_flushed(p.b_rcq, 51, 51);
}

/* A receive WQE whose lkey refuses: LOC_PROT_ERR there, remote operational error here. */
Test(sim_err, receive_with_bad_lkey)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 12, 1 << 16);
	cr_assert_eq(sim_recv(p.b, 50, p.bbuf, 1000, p.bkey + 1), 0);
	cr_assert_eq(sim_recv(p.b, 51, p.bbuf, 1000, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 500, p.akey, 0, 0, 0), 0);
	post_second();
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_REM_OP_ERR, "status %d", wc.status);
	expect_flushed(p.a_scq, 2, 2);
	wc = sim_expect_wc(p.b_rcq);
	cr_assert_eq(wc.wr_id, 50);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_flushed(p.b_rcq, 51, 51);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
	cr_assert_eq(p.b->state, IBV_QPS_ERR);
	cr_assert_eq(p.b->nevents, 0, "a completion error raises no event");
}

Test(sim_err, local_protection_error)
{
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 10, 1 << 16);
	cr_assert_eq(sim_recv(p.a, 60, p.abuf, 100, p.akey), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_SEND, p.abuf, 100, p.akey + 1, 0, 0, 0), 0);
	post_second();
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_flushed(p.a_scq, 2, 2);
	expect_flushed(p.a_rcq, 60, 60);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
	cr_assert_eq(p.b->state, IBV_QPS_RTS);
	cr_assert_eq(p.s->stats.sent, 0, "nothing of a failed WR goes out");
}

Test(sim_err, read_into_read_only_region)
{
	uint32_t key;
	struct ibv_wc wc;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 10, 1 << 16);
	key = sim_mr_reg(p.ha, 1, p.abuf, 4096, 0);
	cr_assert_eq(
		sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 100, key, (uintptr_t)p.bbuf, p.bkey, 0),
		0);
	run_idle();
	wc = sim_expect_wc(p.a_scq);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR);
}

Test(sim_err, later_wrs_flush_after_error)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 11, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey, (uintptr_t)p.bbuf,
			      p.bkey + 1, 0),
		     0);
	post_second();
	remote_error(IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	/* Posted in ERR: flushed at once, nothing sent. */
	sim_run(p.s, UINT64_MAX);
	for (int i = 3; i < 6; i++)
		cr_assert_eq(sim_send(p.a, i, IBV_WR_SEND, p.abuf, 10, p.akey, 0, 0, 0), 0);
	cr_assert_eq(sim_recv(p.a, 6, p.abuf, 10, p.akey), 0);
	run_idle();
	expect_flushed(p.a_scq, 3, 5);
	expect_flushed(p.a_rcq, 6, 6);
	cr_assert_eq(leftovers(), 0);
}
