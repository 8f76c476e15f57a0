// SPDX-License-Identifier: MIT
/*
 * QP states and ordering rules through the simulated wire: COMM_EST, SQD and SQ_DRAINED, the
 * fence, the max_rd_atomic limit, SRQs shared by several QPs, and reset and reconnect.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"

static struct sim_pair p;

static void teardown(void)
{
	sim_pair_fini(&p);
}

TestSuite(sim_state, .fini = teardown);

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

Test(sim_state, comm_est_on_first_packet_in_rtr)
{
	struct sim_conn c = sim_conn_default();
	struct ibv_qp_attr r = {.qp_state = IBV_QPS_RESET};

	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 1, 4096);
	/* Take b back to RTR only: a passive side whose RTU has not come yet. */
	sim_modify(p.b, &r, IBV_QP_STATE);
	memset(&r, 0, sizeof(r));
	r.qp_state = IBV_QPS_INIT;
	r.qp_access_flags = c.access;
	sim_modify(p.b, &r, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	memset(&r, 0, sizeof(r));
	r.qp_state = IBV_QPS_RTR;
	r.path_mtu = c.mtu;
	r.dest_qp_num = p.a->core.qpn;
	r.rq_psn = c.psn_a;
	r.max_dest_rd_atomic = 4;
	r.ah_attr.is_global = 1;
	memcpy(r.ah_attr.grh.dgid.raw, p.ha->gid, 16);
	sim_modify(p.b, &r,
		   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_events(p.b, IBV_EVENT_COMM_EST), 1, "once, on the first packet");
	cr_assert_eq(sim_events(p.a, IBV_EVENT_COMM_EST), 0, "a was in RTS");
	/* A QP in RTR answers (ACKs go out) but sends no requests. */
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_send(p.b, 3, IBV_WR_RDMA_WRITE, p.bbuf, 10, p.bkey, (uintptr_t)p.abuf,
			      p.akey, 0),
		     EINVAL, "posting in RTR is refused");
}

/* The filter: what a sent, in order (opcodes), and when. */
static struct {
	uint8_t op[256];
	uint32_t n;
	uint32_t reads_out, max_reads_out;
} seen;

static bool watch(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode & 0x1F;

	(void)arg;
	if (from == p.a && seen.n < 256)
		seen.op[seen.n++] = op;
	if (from == p.a && (op == ROCE_OP_READ_REQUEST || op == ROCE_OP_FETCH_ADD) &&
	    ++seen.reads_out > seen.max_reads_out)
		seen.max_reads_out = seen.reads_out;
	if (from == p.b && (op == ROCE_OP_READ_RESP_LAST || op == ROCE_OP_READ_RESP_ONLY ||
			    op == ROCE_OP_ATOMIC_ACK))
		seen.reads_out--;
	return true;
}

Test(sim_state, max_rd_atomic_respected)
{
	struct sim_conn c = sim_conn_default();

	c.max_rd_atomic = 2;
	c.max_dest_rd_atomic = 2;
	memset(&seen, 0, sizeof(seen));
	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 2, 1 << 16);
	p.s->filter = watch;
	for (int i = 0; i < 8; i++) {
		if (i % 3 == 2)
			cr_assert_eq(sim_atomic(p.a, i, IBV_WR_ATOMIC_FETCH_AND_ADD, p.abuf + 8 * i,
						p.akey, (uintptr_t)p.bbuf, p.bkey, 1, 0,
						IBV_SEND_SIGNALED),
				     0);
		else
			cr_assert_eq(sim_send(p.a, i, IBV_WR_RDMA_READ, p.abuf + 4096 * (i + 1),
					      3000, p.akey, (uintptr_t)p.bbuf + 1024, p.bkey,
					      IBV_SEND_SIGNALED),
				     0);
	}
	run_idle();
	for (int i = 0; i < 8; i++) {
		struct ibv_wc wc = sim_expect_wc(p.a_scq);

		cr_assert_eq(wc.wr_id, (uint64_t)i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(seen.max_reads_out, 2, "at most max_rd_atomic outstanding, saw %u",
		     seen.max_reads_out);
	cr_assert_eq(((uint64_t *)p.bbuf)[0], 2, "two FAAs, each once");
}

Test(sim_state, fence_waits_for_read_responses)
{
	memset(&seen, 0, sizeof(seen));
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 3, 1 << 16);
	p.s->filter = watch;
	sim_fill(p.bbuf, 4096, 1);
	/* READ b[0..4096) into a; then a fenced WRITE of a's copy back to b+8192. */
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 4096, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, 0),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 4096, p.akey,
			      (uintptr_t)p.bbuf + 8192, p.bkey, IBV_SEND_FENCE | IBV_SEND_SIGNALED),
		     0);
	/* Before the READ's responses are back, only the READ request has left. */
	cr_assert_eq(seen.n, 1);
	cr_assert_eq(seen.op[0], ROCE_OP_READ_REQUEST);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, 2);
	cr_assert_eq(memcmp(p.bbuf + 8192, p.bbuf, 4096), 0, "the WRITE carried the READ's data");
}

Test(sim_state, no_fence_no_wait)
{
	memset(&seen, 0, sizeof(seen));
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 3, 1 << 16);
	p.s->filter = watch;
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 4096, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, 0),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey,
			      (uintptr_t)p.bbuf + 8192, p.bkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(seen.n, 2);
	run_idle();
}

Test(sim_state, sqd_drains_then_resumes)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};
	uint32_t sent;

	memset(&seen, 0, sizeof(seen));
	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 4, 1 << 16);
	p.s->filter = watch;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sim_send(p.a, i, IBV_WR_RDMA_WRITE, p.abuf, 3000, p.akey,
				      (uintptr_t)p.bbuf, p.bkey, IBV_SEND_SIGNALED),
			     0);
	sent = seen.n;
	sim_modify(p.a, &a, IBV_QP_STATE);
	cr_assert_eq(sim_events(p.a, IBV_EVENT_SQ_DRAINED), 0, "WRs are still outstanding");
	/* Posted in SQD: accepted, not started. */
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE, p.abuf, 10, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(seen.n, sent, "nothing new left in SQD");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, (uint64_t)i);
	cr_assert_eq(sim_pending(p.a_scq), 0);
	cr_assert_eq(sim_events(p.a, IBV_EVENT_SQ_DRAINED), 1);
	a.qp_state = IBV_QPS_RTS;
	sim_modify(p.a, &a, IBV_QP_STATE);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).wr_id, 3);
	cr_assert_eq(sim_events(p.a, IBV_EVENT_SQ_DRAINED), 1);
}

Test(sim_state, sqd_with_empty_queue_drains_at_once)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_SQD};

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 4, 4096);
	sim_modify(p.a, &a, IBV_QP_STATE);
	run_idle();
	cr_assert_eq(sim_events(p.a, IBV_EVENT_SQ_DRAINED), 1);
}

Test(sim_state, srq_shared_by_two_qps)
{
	struct sim_srq *srq = sim_srq_new(16, 2);
	struct sim_qp_init qi = {
		.type = IBV_QPT_RC,
		.pd = 1,
		.sq_slots = 8,
		.max_sge = 2,
		.srq = srq,
	};
	struct sim_qp *b1, *b2, *a1, *a2;

	sim_pair_init(&p, IBV_QPT_RC, NULL, NULL, 5, 1 << 16);
	qi.send_cq = p.b_scq;
	qi.recv_cq = p.b_rcq;
	b1 = sim_qp_new(p.hb, &qi);
	b2 = sim_qp_new(p.hb, &qi);
	qi.srq = NULL;
	qi.rq_slots = 4;
	qi.send_cq = p.a_scq;
	qi.recv_cq = p.a_rcq;
	a1 = sim_qp_new(p.ha, &qi);
	a2 = sim_qp_new(p.ha, &qi);
	sim_connect(a1, b1, &p.conn);
	sim_connect(a2, b2, &p.conn);
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)p.bbuf + 1024 * i, .length = 1024, .lkey = p.bkey};
		struct ibv_recv_wr wr = {.wr_id = 100 + i, .sg_list = &sge, .num_sge = 1};

		cr_assert_eq(sim_srq_post_recv(srq, &wr), 0);
	}
	srq->limit = 2;
	cr_assert_eq(sim_recv(b1, 1, p.bbuf, 10, p.bkey), EINVAL, "a QP on an SRQ has no RQ");
	cr_assert_eq(sim_send(a1, 1, IBV_WR_SEND, p.abuf, 11, p.akey, 0, 0, 0), 0);
	cr_assert_eq(sim_send(a2, 2, IBV_WR_SEND, p.abuf, 22, p.akey, 0, 0, 0), 0);
	cr_assert_eq(sim_send(a1, 3, IBV_WR_SEND, p.abuf, 33, p.akey, 0, 0, 0), 0);
	run_idle();
	for (int i = 0; i < 3; i++) {
		struct ibv_wc wc = sim_expect_wc(p.b_rcq);

		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 100 + (uint64_t)i, "SRQ WQEs are taken in order");
		cr_assert_eq(wc.qp_num, wc.byte_len == 22 ? b2->core.qpn : b1->core.qpn);
	}
	cr_assert_eq(srq->limit_events, 1);
	/* b1 fails: a QP of an SRQ gets LAST_WQE_REACHED, the SRQ's WQEs stay. */
	{
		struct ibv_qp_attr e = {.qp_state = IBV_QPS_ERR};

		sim_modify(b1, &e, IBV_QP_STATE);
	}
	cr_assert_eq(sim_events(b1, IBV_EVENT_QP_LAST_WQE_REACHED), 1);
	cr_assert_eq(roce_wq_used(&srq->rq), 1);
	cr_assert_eq(sim_pending(p.b_rcq), 0);
	sim_srq_free(srq);
}

Test(sim_state, reset_and_reconnect)
{
	struct sim_conn c = sim_conn_default();

	sim_pair_init(&p, IBV_QPT_RC, &c, NULL, 6, 1 << 16);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 100, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	c.psn_a = 0x123456;
	c.psn_b = 77;
	sim_connect(p.a, p.b, &c);
	cr_assert_eq(sim_recv(p.b, 9, p.bbuf, 100, p.bkey), 0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_SEND, p.abuf, 100, p.akey, 0, 0, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	cr_assert_eq(sim_expect_wc(p.a_scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(p.b_rcq).wr_id, 9);
}
