// SPDX-License-Identifier: MIT
/*
 * XRC through the simulated wire (IBA A14): one initiator QP reaches several SRQs behind one
 * target QP; the XRCETH picks the SRQ, whose PD guards memory and whose CQ gets the receive.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim/pair.h"

enum { LEN = 1 << 16, XRCD = 7, PD_X = 3, PD_Y = 4 };

static struct sim *s;
static struct sim_host *ha, *hb;
static struct sim_qp *ini, *tgt;
static struct sim_cq *scq, *cq_x, *cq_y;
static struct sim_srq *srq_x, *srq_y, *srq_other;
static uint8_t *abuf, *xbuf, *ybuf;
static uint32_t akey, xkey, ykey;

static void setup(void)
{
	static const struct sim_wire_cfg clean = {.delay_ns = 2000};
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;
	struct sim_qp_init qi = {
		.type = IBV_QPT_XRC_SEND, .pd = 1, .sq_slots = 64, .max_sge = 4, .max_inline = 64};
	struct sim_conn c = sim_conn_default();

	s = sim_new(11, &clean);
	ha = sim_host_new(s);
	hb = sim_host_new(s);
	scq = sim_cq_new();
	cq_x = sim_cq_new();
	cq_y = sim_cq_new();
	qi.send_cq = scq;
	ini = sim_qp_new(ha, &qi);
	/* The target has no PD, CQs or queues of its own: only its domain. */
	memset(&qi, 0, sizeof(qi));
	qi.type = IBV_QPT_XRC_RECV;
	qi.xrcd = XRCD;
	tgt = sim_qp_new(hb, &qi);
	srq_x = sim_xrc_srq_new(hb, 16, 2, XRCD, PD_X, cq_x);
	srq_y = sim_xrc_srq_new(hb, 16, 2, XRCD, PD_Y, cq_y);
	srq_other = sim_xrc_srq_new(hb, 16, 2, XRCD + 1, PD_X, cq_x);
	abuf = aligned_alloc(64, LEN);
	xbuf = aligned_alloc(64, LEN);
	ybuf = aligned_alloc(64, LEN);
	cr_assert(abuf && xbuf && ybuf);
	memset(xbuf, 0, LEN);
	memset(ybuf, 0, LEN);
	sim_fill(abuf, LEN, 5);
	akey = sim_mr_reg(ha, 1, abuf, LEN, all);
	xkey = sim_mr_reg(hb, PD_X, xbuf, LEN, all);
	ykey = sim_mr_reg(hb, PD_Y, ybuf, LEN, all);
	sim_connect(ini, tgt, &c);
}

static void teardown(void)
{
	sim_free(s);
	sim_cq_free(scq);
	sim_cq_free(cq_x);
	sim_cq_free(cq_y);
	free(abuf);
	free(xbuf);
	free(ybuf);
}

TestSuite(sim_xrc, .init = setup, .fini = teardown);

/* ibv_post_send on the initiator to SRQ @srqn. */
static int xsend(uint64_t wr_id, enum ibv_wr_opcode op, uint32_t off, uint32_t len, uint64_t raddr,
		 uint32_t rkey, uint32_t srqn)
{
	struct ibv_sge sge = {.addr = (uintptr_t)abuf + off, .length = len, .lkey = akey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = raddr, .rkey = rkey},
	};

	wr.qp_type.xrc.remote_srqn = srqn;
	return sim_post_send(ini, &wr);
}

static void srq_recv(struct sim_srq *srq, uint64_t wr_id, uint8_t *buf, uint32_t len, uint32_t key)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = key};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};

	cr_assert_eq(sim_srq_post_recv(srq, &wr), 0);
}

static void run_idle(void)
{
	cr_assert_eq(sim_run(s, UINT64_MAX), SIM_IDLE, "%s", s->fail);
}

/* Every packet the initiator sends carries the XRC opcodes and an XRCETH. */
static bool check_xrc(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	(void)arg;
	cr_assert_eq(pkt->bth.opcode & 0xE0, ROCE_TR_XRC, "opcode 0x%02x", pkt->bth.opcode);
	if (from == ini)
		cr_assert(pkt->hdrs & ROCE_HDR_XRCETH);
	return true;
}

Test(sim_xrc, sends_reach_the_srq_the_xrceth_names)
{
	struct ibv_wc wc;

	s->filter = check_xrc;
	srq_recv(srq_x, 10, xbuf, 8192, xkey);
	srq_recv(srq_y, 20, ybuf, 8192, ykey);
	cr_assert_eq(xsend(1, IBV_WR_SEND, 0, 5000, 0, 0, srq_y->srqn), 0);
	cr_assert_eq(xsend(2, IBV_WR_SEND, 100, 300, 0, 0, srq_x->srqn), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(scq).wr_id, 1);
	cr_assert_eq(sim_expect_wc(scq).wr_id, 2);
	wc = sim_expect_wc(cq_y);
	cr_assert_eq(wc.wr_id, 20);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 5000);
	cr_assert_eq(wc.qp_num, tgt->core.qpn);
	cr_assert_eq(wc.src_qp, ini->core.qpn);
	wc = sim_expect_wc(cq_x);
	cr_assert_eq(wc.wr_id, 10);
	cr_assert_eq(wc.byte_len, 300);
	cr_assert_eq(memcmp(ybuf, abuf, 5000), 0);
	cr_assert_eq(memcmp(xbuf, abuf + 100, 300), 0);
}

Test(sim_xrc, rdma_uses_the_pd_of_the_named_srq)
{
	struct ibv_sge sge = {.addr = (uintptr_t)abuf + 16384, .length = 8, .lkey = akey};
	struct ibv_send_wr fadd = {
		.wr_id = 3,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = {.remote_addr = (uintptr_t)xbuf + 4096,
			      .compare_add = 5,
			      .rkey = xkey},
	};

	s->filter = check_xrc;
	fadd.qp_type.xrc.remote_srqn = srq_x->srqn;
	memcpy(xbuf + 4096, &(uint64_t){40}, 8);
	cr_assert_eq(xsend(1, IBV_WR_RDMA_WRITE, 0, 3000, (uintptr_t)xbuf, xkey, srq_x->srqn), 0);
	cr_assert_eq(
		xsend(2, IBV_WR_RDMA_READ, 8192, 2500, (uintptr_t)ybuf + 64, ykey, srq_y->srqn), 0);
	cr_assert_eq(sim_post_send(ini, &fadd), 0);
	run_idle();
	for (uint64_t i = 1; i <= 3; i++) {
		struct ibv_wc wc = sim_expect_wc(scq);

		cr_assert_eq(wc.wr_id, i);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(memcmp(xbuf, abuf, 3000), 0);
	cr_assert_eq(memcmp(abuf + 8192, ybuf + 64, 2500), 0);
	cr_assert_eq(*(uint64_t *)(abuf + 16384), 40);
	cr_assert_eq(*(uint64_t *)(xbuf + 4096), 45);
	cr_assert_eq(sim_pending(cq_x) + sim_pending(cq_y), 0, "RDMA consumes no receive");
}

/* A region of another PD than the named SRQ's: remote access error, the target fails. */
Test(sim_xrc, region_of_another_srqs_pd_is_refused)
{
	cr_assert_eq(xsend(1, IBV_WR_RDMA_WRITE, 0, 100, (uintptr_t)xbuf, xkey, srq_y->srqn), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(scq).status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(sim_events(tgt, IBV_EVENT_QP_ACCESS_ERR), 1);
	cr_assert_eq(tgt->state, IBV_QPS_ERR);
	cr_assert_eq(xbuf[0], 0);
}

/* An SRQ outside the target's domain (or no SRQ at all) is refused the same way. */
Test(sim_xrc, srq_of_another_domain_is_refused)
{
	srq_recv(srq_other, 30, xbuf, 4096, xkey);
	cr_assert_eq(xsend(1, IBV_WR_SEND, 0, 100, 0, 0, srq_other->srqn), 0);
	run_idle();
	cr_assert_eq(sim_expect_wc(scq).status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(sim_pending(cq_x), 0);
	cr_assert_eq(sim_events(tgt, IBV_EVENT_QP_ACCESS_ERR), 1);
}

/* An empty SRQ makes the target answer RNR; the retry lands once a receive is posted. */
Test(sim_xrc, empty_srq_is_an_rnr_then_delivers)
{
	cr_assert_eq(xsend(1, IBV_WR_SEND, 0, 200, 0, 0, srq_x->srqn), 0);
	cr_assert_eq(sim_run_for(s, 50000), SIM_TIME);
	cr_assert_gt(tgt->core.counters.rnr_naks_sent, 0);
	srq_recv(srq_x, 10, xbuf, 4096, xkey);
	run_idle();
	cr_assert_eq(sim_expect_wc(scq).status, IBV_WC_SUCCESS);
	cr_assert_eq(sim_expect_wc(cq_x).wr_id, 10);
	cr_assert_eq(memcmp(xbuf, abuf, 200), 0);
}

/* Requests go one way only: a request arriving at the initiator is not taken. */
Test(sim_xrc, initiator_takes_no_requests)
{
	struct roce_pkt pkt = {0};
	struct roce_ipudp ip = {0};
	const struct roce_opcode_info *info = roce_opcode(ROCE_TR_XRC | ROCE_OP_SEND_ONLY);

	pkt.info = info;
	pkt.bth.opcode = ROCE_TR_XRC | ROCE_OP_SEND_ONLY;
	pkt.bth.dqpn = ini->core.qpn;
	roce_qp_read_pkt(&ini->core, &pkt, &ip, s->now);
	cr_assert_eq(ini->core.counters.rx_transport, 1);
}
