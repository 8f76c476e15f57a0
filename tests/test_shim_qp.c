/* SPDX-License-Identifier: MIT */
/*
 * verbs-shim queue pairs: creation, the state machine of ibv_modify_qp (the attributes Linux
 * requires and allows per transition), posting rules, flush on error, a remote access error and
 * what UROCE_LOG=info says of it, the ibv_wr_* interface, multicast attachment and SRQs.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *ch;
static struct ibv_cq *scq, *rcq;
static char buf[4096];
static struct ibv_mr *mr;

static void setup(void)
{
	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 32, &rcq, ch, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert(pd && ch && scq && rcq && mr);
}

TestSuite(shim_qp, .init = setup, .timeout = 20);

static struct ibv_qp *create(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2},
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);

	cr_assert_not_null(qp);
	cr_assert_eq(attr.cap.max_inline_data, 256, "the inline capacity is reported back");
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

static int rc_to_rtr(struct ibv_qp *qp, int drop, int add)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.ah_attr = lo_ah_attr(ctx),
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = qp->qp_num,
		.rq_psn = 0x1abcdef, /* 25 bits: stored as 24 */
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	return ibv_modify_qp(qp, &a, (mask & ~drop) | add);
}

static int rc_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 0x123456,
		.max_rd_atomic = 4,
	};

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = {.qp_state = state};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND},
			   *bad = NULL;

	return ibv_post_send(qp, &wr, &bad);
}

Test(shim_qp, create_and_layout)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	cr_assert(qp->qp_num > 1 && qp->qp_num < 0xffffff, "QPN %#x is not an ordinary QP number",
		  qp->qp_num);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(qp->qp_type, IBV_QPT_RC);
	cr_assert_eq(qp->send_cq, scq);
	cr_assert_eq((void *)x, (void *)qp);
	cr_assert(x->wr_start && x->wr_complete && x->wr_abort && x->wr_send && x->wr_send_imm &&
		  x->wr_rdma_write && x->wr_rdma_write_imm && x->wr_rdma_read &&
		  x->wr_atomic_cmp_swp && x->wr_atomic_fetch_add && x->wr_bind_mw &&
		  x->wr_local_inv && x->wr_send_inv && x->wr_send_tso && x->wr_set_ud_addr &&
		  x->wr_set_xrc_srqn && x->wr_set_inline_data && x->wr_set_inline_data_list &&
		  x->wr_set_sge && x->wr_set_sge_list && x->wr_atomic_write);
	/* A CQ or PD in use cannot go. */
	cr_assert_eq(ibv_destroy_cq(scq), EBUSY);
	cr_assert_eq(ibv_dealloc_pd(pd), EBUSY);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_qp, create_refusals)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RAW_PACKET};

	errno = 0;
	cr_assert_null(ibv_create_qp(pd, &attr));
	cr_assert_eq(errno, EOPNOTSUPP);
	attr.qp_type = IBV_QPT_RC;
	attr.send_cq = NULL;
	errno = 0;
	cr_assert_null(ibv_create_qp(pd, &attr));
	cr_assert_eq(errno, EINVAL);
	attr.send_cq = scq;
	attr.cap.max_inline_data = 257;
	cr_assert_null(ibv_create_qp(pd, &attr));
	attr.cap.max_inline_data = 0;
	attr.cap.max_send_sge = 33;
	cr_assert_null(ibv_create_qp(pd, &attr));
}

Test(shim_qp, rc_state_machine)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	/* RESET -> RTR does not exist; RESET -> INIT needs P_Key index, port, access flags. */
	cr_assert_eq(rc_to_rtr(qp, 0, 0), EINVAL);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1};
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	cr_assert_eq(ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY),
		     EINVAL, "Q_Key is not an RC attribute");
	a.port_num = 2;
	cr_assert_eq(
		ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		EINVAL, "port 2 does not exist");
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	/* INIT -> RTR: every required attribute, nothing extra. */
	cr_assert_eq(rc_to_rtr(qp, IBV_QP_MIN_RNR_TIMER, 0), EINVAL);
	cr_assert_eq(rc_to_rtr(qp, IBV_QP_AV, 0), EINVAL);
	cr_assert_eq(rc_to_rtr(qp, 0, IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(rc_to_rtr(qp, 0, 0), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTR);
	/* No RTR -> RTR, and RTR -> RTS needs its own attributes. */
	cr_assert_eq(rc_to_rtr(qp, 0, 0), EINVAL);
	cr_assert_eq(to_state(qp, IBV_QPS_RTS), EINVAL);
	cr_assert_eq(rc_to_rts(qp), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTS);
	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
	cr_assert_eq(a.qp_state, IBV_QPS_RTS);
	cr_assert_eq(a.dest_qp_num, qp->qp_num);
	cr_assert_eq(a.rq_psn, 0xabcdef);
	cr_assert_eq(a.sq_psn, 0x123456);
	cr_assert_eq(a.path_mtu, IBV_MTU_1024);
	cr_assert_eq(a.ah_attr.grh.sgid_index, lo_gid_index(ctx));
	cr_assert_eq(a.cap.max_inline_data, 256);
	cr_assert_eq(init.qp_type, IBV_QPT_RC);
	cr_assert_eq(init.send_cq, scq);
	/* RTS -> SQD -> RTS, CUR_STATE only from RTR/RTS/SQD/SQE, any -> ERR -> RESET. */
	cr_assert_eq(to_state(qp, IBV_QPS_SQD), 0);
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_SQD};
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	a.cur_qp_state = IBV_QPS_INIT;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(qp->state, IBV_QPS_ERR);
	cr_assert_eq(to_state(qp, IBV_QPS_RTS), EINVAL);
	cr_assert_eq(to_state(qp, IBV_QPS_RESET), 0);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(to_state(qp, 42), EINVAL);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_qp, value_checks)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
				.ah_attr = lo_ah_attr(ctx),
				.path_mtu = 6,
				.min_rnr_timer = 1};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), EINVAL, "no IB MTU code 6");
	a.path_mtu = IBV_MTU_4096;
	a.ah_attr.is_global = 0;
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), EINVAL, "RoCE needs a GRH");
	a.ah_attr = lo_ah_attr(ctx);
	a.dest_qp_num = 1 << 24;
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), EINVAL, "QPNs are 24 bits");
	a.dest_qp_num = 0x12;
	a.max_dest_rd_atomic = 200;
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), EINVAL);
	a.max_dest_rd_atomic = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, mask), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_qp, ud_state_machine)
{
	struct ibv_qp *qp = create(IBV_QPT_UD);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS, .sq_psn = 5};

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_RTR), 0, "UD needs nothing for RTR");
	cr_assert_eq(to_state(qp, IBV_QPS_RTS), EINVAL, "but an SQ PSN for RTS");
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTS);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

/*
 * A UD receive's first 40 bytes hold the IP header its packet came with: for IPv4, in the last
 * 20 (responder.c), with the traffic class and hop limit the sender's address vector gave. The
 * sockets report those only once a UD QP exists (net.h: uroce_net_want_ip_fields).
 */
Test(shim_qp, ud_receive_holds_the_ip_header)
{
	struct ibv_qp *qp = create(IBV_QPT_UD);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
	struct ibv_ah_attr ah_attr = lo_ah_attr(ctx);
	struct ibv_sge rsge = {.addr = (uintptr_t)buf, .length = 40 + 8, .lkey = mr->lkey};
	struct ibv_sge ssge = {.addr = (uintptr_t)buf + 1024, .length = 8, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_send_wr swr = {.sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND}, *sbad;
	const uint8_t *ip = (const uint8_t *)buf + 20;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int n;

	ah_attr.grh.traffic_class = 0x28;
	ah_attr.grh.hop_limit = 9;
	ah = ibv_create_ah(pd, &ah_attr);
	cr_assert_not_null(ah);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_RTR), 0);
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	memset(buf, 0, 48);
	memcpy(buf + 1024, "uroce-ud", 8);
	cr_assert_eq(ibv_post_recv(qp, &rwr, &rbad), 0);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = qp->qp_num;
	swr.wr.ud.remote_qkey = 0x11111111;
	cr_assert_eq(ibv_post_send(qp, &swr, &sbad), 0);
	for (int i = 0; i < 2000000 && (n = ibv_poll_cq(rcq, 1, &wc)) == 0; i++)
		;
	cr_assert_eq(n, 1, "no receive");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	cr_assert_eq(wc.byte_len, 40 + 8);
	cr_assert_eq(memcmp(buf + 40, "uroce-ud", 8), 0);
	cr_assert_eq(ip[0], 0x45, "an IPv4 header");
	cr_assert_eq(ip[1], 0x28, "its TOS is the traffic class sent: 0x%02x", ip[1]);
	cr_assert_eq(ip[8], 9, "its TTL is the hop limit sent: %u", ip[8]);
	cr_assert_eq(memcmp(ip + 12, (const uint8_t[]){127, 0, 0, 1, 127, 0, 0, 1}, 8), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(shim_qp, posting_rules)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct ibv_sge sge[3] = {{.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey}};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = sge, .num_sge = 3}, *rbad = NULL;
	struct ibv_send_wr swr = {.wr_id = 2, .sg_list = sge, .num_sge = 1}, *sbad = NULL;

	cr_assert_eq(post_recv(qp, 1), EINVAL, "no receives in RESET");
	cr_assert_eq(ibv_post_send(qp, &swr, &sbad), EINVAL);
	cr_assert_eq(sbad, &swr);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(ibv_post_recv(qp, &rwr, &rbad), EINVAL, "3 SGEs, max_recv_sge is 2");
	cr_assert_eq(rbad, &rwr);
	cr_assert_eq(post_recv(qp, 1), 0);
	cr_assert_eq(ibv_post_send(qp, &swr, &sbad), EINVAL, "no sends before RTS");
	cr_assert_eq(rc_to_rtr(qp, 0, 0), 0);
	cr_assert_eq(post_send(qp, 3), EINVAL);
	cr_assert_eq(rc_to_rts(qp), 0);
	/* A list stops at the first bad WR, which bad_wr names. */
	struct ibv_send_wr second = swr;

	second.num_sge = 3;
	swr.next = &second;
	cr_assert_eq(ibv_post_send(qp, &swr, &sbad), EINVAL);
	cr_assert_eq(sbad, &second);
	second.num_sge = 1;
	second.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; /* 8 bytes needed, 8 given, address 0 */
	cr_assert_eq(ibv_post_send(qp, &second, &sbad), 0);
	second.wr.atomic.remote_addr = 4;
	cr_assert_eq(ibv_post_send(qp, &second, &sbad), EINVAL, "unaligned atomic");
	second.opcode = IBV_WR_LOCAL_INV;
	cr_assert_eq(ibv_post_send(qp, &second, &sbad), EINVAL);
	/* Inline beyond the capacity. */
	second.opcode = IBV_WR_SEND;
	second.send_flags = IBV_SEND_INLINE;
	sge[0].length = 300;
	cr_assert_eq(ibv_post_send(qp, &second, &sbad), EINVAL);
	/* The send queue holds max_send_wr WRs: 2 are queued (1 above + 1 from the list). */
	sge[0].length = 8;
	second.send_flags = 0;
	for (int i = 0; i < 6; i++)
		cr_assert_eq(post_send(qp, 10 + i), 0);
	cr_assert_eq(post_send(qp, 99), ENOMEM);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

/*
 * An empty SGE may name no memory (UCX posts inline sends with address 0, length 0), and a WR
 * with no SGE may have no list at all: both post, without a copy from address 0 (which UBSan
 * reports as undefined behaviour).
 */
Test(shim_qp, empty_sges_name_no_buffer)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct ibv_sge empty = {.addr = 0, .length = 0, .lkey = 0};
	struct ibv_send_wr inl = {.wr_id = 1,
				  .sg_list = &empty,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_INLINE};
	struct ibv_send_wr none = {
		.wr_id = 2, .sg_list = NULL, .num_sge = 0, .opcode = IBV_WR_SEND};
	struct ibv_send_wr *bad = NULL;

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(rc_to_rtr(qp, 0, 0), 0);
	cr_assert_eq(rc_to_rts(qp), 0);
	cr_assert_eq(ibv_post_send(qp, &inl, &bad), 0);
	cr_assert_eq(ibv_post_send(qp, &none, &bad), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

/* Take N completions from CQ (none more) into WC. */
static void expect_completions(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	cr_assert_eq(ibv_poll_cq(cq, n + 1, wc), n);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR, "%s",
			     ibv_wc_status_str(wc[i].status));
		cr_assert_eq(wc[i].vendor_err, 0);
	}
}

Test(shim_qp, flush_on_error_with_channel_event)
{
	struct ibv_qp *qp = create(IBV_QPT_RC);
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc[8];

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(post_recv(qp, 100), 0);
	cr_assert_eq(post_recv(qp, 101), 0);
	cr_assert_eq(rc_to_rtr(qp, 0, 0), 0);
	cr_assert_eq(rc_to_rts(qp), 0);
	cr_assert_eq(post_send(qp, 200), 0);
	cr_assert_eq(ibv_req_notify_cq(rcq, 0), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	/* rping's teardown: the QP goes to ERR, the CQ thread wakes up on the flush. */
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(poll(&pfd, 1, 1000), 1);
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, rcq);
	cr_assert_eq(ev_ctx, &rcq);
	ibv_ack_cq_events(ev_cq, 1);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "one event per arming");
	expect_completions(rcq, wc, 2);
	cr_assert_eq(wc[0].wr_id, 100);
	cr_assert_eq(wc[1].wr_id, 101);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV);
	cr_assert_eq(wc[0].qp_num, qp->qp_num);
	expect_completions(scq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 200);
	cr_assert_eq(wc[0].opcode, IBV_WC_SEND);
	/* Receives posted in ERR complete at once. */
	cr_assert_eq(post_recv(qp, 102), 0);
	expect_completions(rcq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 102);
	/* A move to RESET drops posted WRs without completing them. */
	cr_assert_eq(to_state(qp, IBV_QPS_RESET), 0);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(post_recv(qp, 103), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_RESET), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	expect_completions(rcq, wc, 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

/*
 * A completion channel's fd is readable exactly while events wait: two CQs on one channel
 * each fire once; after the first ibv_get_cq_event the fd stays readable, after the second it
 * is not, and a third read of the non-blocking fd finds nothing.
 */
Test(shim_qp, channel_fd_readable_while_events_wait)
{
	struct ibv_cq *cq2 = ibv_create_cq(ctx, 8, &cq2, ch, 0), *ev_cq;
	struct ibv_qp_init_attr attr = {
		.send_cq = cq2,
		.recv_cq = rcq,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct ibv_wc wc[4];
	void *ev_ctx;
	bool seen_r = false, seen_s = false;

	cr_assert(cq2 && qp);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(post_recv(qp, 1), 0);
	cr_assert_eq(ibv_req_notify_cq(rcq, 0), 0);
	cr_assert_eq(ibv_req_notify_cq(cq2, 0), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "readable with no event");
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(post_send(qp, 2), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(poll(&pfd, 1, 1000), 1, "not readable with %d event(s) waiting",
			     2 - i);
		cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
		seen_r |= ev_cq == rcq;
		seen_s |= ev_cq == cq2;
	}
	cr_assert(seen_r && seen_s, "one event from each CQ");
	cr_assert_eq(poll(&pfd, 1, 0), 0, "readable once every event was taken");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK), 0);
	ibv_ack_cq_events(rcq, 1);
	ibv_ack_cq_events(cq2, 1);
	expect_completions(rcq, wc, 1);
	expect_completions(cq2, wc, 1);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq2), 0);
}

/*
 * ibv_destroy_qp removes the QP's completions from the CQs it shares with other QPs, as mlx5
 * does, and keeps the others in order: nothing polled afterwards names a QP that is gone.
 */
Test(shim_qp, destroy_drops_its_completions_only)
{
	struct ibv_qp *gone = create(IBV_QPT_RC), *kept = create(IBV_QPT_RC);
	uint32_t kept_qpn = kept->qp_num;
	struct ibv_wc wc[8];

	cr_assert_eq(to_init(gone), 0);
	cr_assert_eq(to_init(kept), 0);
	cr_assert_eq(to_state(gone, IBV_QPS_ERR), 0);
	cr_assert_eq(to_state(kept, IBV_QPS_ERR), 0);
	/* Interleaved on the receive CQ: gone 1, kept 2, gone 3, kept 4. */
	cr_assert_eq(post_recv(gone, 1), 0);
	cr_assert_eq(post_recv(kept, 2), 0);
	cr_assert_eq(post_recv(gone, 3), 0);
	cr_assert_eq(post_recv(kept, 4), 0);
	cr_assert_eq(post_send(gone, 5), 0);
	cr_assert_eq(post_send(kept, 6), 0);
	cr_assert_eq(ibv_destroy_qp(gone), 0);
	expect_completions(rcq, wc, 2);
	cr_assert_eq(wc[0].wr_id, 2);
	cr_assert_eq(wc[1].wr_id, 4);
	cr_assert_eq(wc[0].qp_num, kept_qpn);
	expect_completions(scq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 6);
	cr_assert_eq(ibv_destroy_qp(kept), 0);
}

/*
 * A WRITE to a key the target does not have: the QP (connected to itself) NAKs it and goes to
 * the error state, and with UROCE_LOG=info the engine says where the QP stood (core_env.c).
 */
/* A move to RESET drops the QP's waiting completions too (mlx5_modify_qp), and only its. */
Test(shim_qp, reset_drops_its_completions_only)
{
	struct ibv_qp *reset = create(IBV_QPT_RC), *kept = create(IBV_QPT_RC);
	struct ibv_wc wc[8];

	cr_assert_eq(to_init(reset), 0);
	cr_assert_eq(to_init(kept), 0);
	cr_assert_eq(to_state(reset, IBV_QPS_ERR), 0);
	cr_assert_eq(to_state(kept, IBV_QPS_ERR), 0);
	cr_assert_eq(post_recv(reset, 1), 0);
	cr_assert_eq(post_recv(kept, 2), 0);
	cr_assert_eq(post_send(reset, 3), 0);
	cr_assert_eq(post_send(kept, 4), 0);
	cr_assert_eq(to_state(reset, IBV_QPS_RESET), 0);
	expect_completions(rcq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 2);
	expect_completions(scq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 4);
	/* Used again from RESET, it completes as before. */
	cr_assert_eq(to_init(reset), 0);
	cr_assert_eq(to_state(reset, IBV_QPS_ERR), 0);
	cr_assert_eq(post_recv(reset, 5), 0);
	expect_completions(rcq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 5);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(ibv_destroy_qp(reset), 0);
	cr_assert_eq(ibv_destroy_qp(kept), 0);
}

Test(shim_qp, remote_access_error_is_logged)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = (uintptr_t)buf, .rkey = mr->rkey + 1}},
			   *bad = NULL;
	/* It expects its own first PSN (rc_to_rts), so that the request is not out of sequence. */
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR,
				  .path_mtu = IBV_MTU_1024,
				  .rq_psn = 0x123456,
				  .max_dest_rd_atomic = 4,
				  .min_rnr_timer = 12};
	char said[4096] = "";
	struct ibv_wc wc;
	struct ibv_qp *qp;
	int pipefd[2], saved = dup(2), n = 0;
	ssize_t got;

	/* Before the first QP starts the engine, which reads the environment. */
	cr_assert_eq(setenv("UROCE_LOG", "info", 1), 0);
	cr_assert_eq(pipe2(pipefd, O_NONBLOCK), 0);
	cr_assert_eq(dup2(pipefd[1], 2), 2);
	qp = create(IBV_QPT_RC);
	cr_assert_eq(to_init(qp), 0);
	rtr.ah_attr = lo_ah_attr(ctx);
	rtr.dest_qp_num = qp->qp_num;
	cr_assert_eq(ibv_modify_qp(qp, &rtr,
				   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER),
		     0);
	cr_assert_eq(rc_to_rts(qp), 0);
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	for (int i = 0; i < 2000 && !(n = ibv_poll_cq(scq, 1, &wc)); i++)
		usleep(1000);
	dup2(saved, 2);
	got = read(pipefd[0], said, sizeof(said) - 1);
	said[got > 0 ? got : 0] = '\0';
	cr_assert_eq(n, 1, "the WRITE completes");
	cr_assert(wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_WR_FLUSH_ERR, "%s",
		  ibv_wc_status_str(wc.status));
	cr_assert_not_null(strstr(said, ": error state; sending: PSN 0x123457 next, 0x123456 "
					"oldest unacknowledged, 7 retries left; receiving: PSN "
					"0x123456 expected; 0 retransmissions, 0 timeouts"),
			   "UROCE_LOG=info said: %s", said);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_qp, extended_send_interface)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &attr);
	struct ibv_qp_ex *x;
	struct ibv_wc wc[4];

	cr_assert_not_null(qp);
	x = ibv_qp_to_qp_ex(qp);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(rc_to_rtr(qp, 0, 0), 0);
	cr_assert_eq(rc_to_rts(qp), 0);
	ibv_wr_start(x);
	x->wr_id = 7;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
	x->wr_id = 8;
	ibv_wr_rdma_write(x, 0x1234, 0x1000);
	ibv_wr_set_inline_data(x, buf, 32);
	cr_assert_eq(ibv_wr_complete(x), 0);
	/* An operation the QP was not created for, or one uroce lacks, fails the batch. */
	ibv_wr_start(x);
	ibv_wr_rdma_read(x, 0x1234, 0x1000);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_local_inv(x, 5);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_send_tso(x, buf, 16, 1024);
	cr_assert_eq(ibv_wr_complete(x), EOPNOTSUPP);
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_abort(x);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	expect_completions(scq, wc, 2);
	cr_assert_eq(wc[0].wr_id, 7);
	cr_assert_eq(wc[1].wr_id, 8);
	cr_assert_eq(wc[1].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_qp, multicast_attach)
{
	struct ibv_qp *ud = create(IBV_QPT_UD), *rc = create(IBV_QPT_RC);
	union ibv_gid group = {.raw = {0xff, 0x0e, [15] = 1}};
	union ibv_gid v4group = {.raw = {[10] = 0xff, [11] = 0xff, [12] = 239, [15] = 1}};
	union ibv_gid unicast = lo_ipv4_gid();

	cr_assert_eq(ibv_attach_mcast(ud, &group, 0), 0);
	cr_assert_eq(ibv_attach_mcast(ud, &group, 0), 0, "twice is fine");
	cr_assert_eq(ibv_attach_mcast(ud, &v4group, 0), 0);
	cr_assert_eq(ibv_attach_mcast(ud, &unicast, 0), EINVAL);
	cr_assert_eq(ibv_attach_mcast(rc, &group, 0), EINVAL, "only UD QPs join groups");
	cr_assert_eq(ibv_detach_mcast(ud, &group, 0), 0);
	cr_assert_eq(ibv_detach_mcast(ud, &group, 0), EINVAL);
	cr_assert_eq(ibv_destroy_qp(ud), 0);
	cr_assert_eq(ibv_destroy_qp(rc), 0);
}

Test(shim_qp, shared_receive_queue)
{
	struct ibv_srq_init_attr sattr = {.attr = {.max_wr = 4, .max_sge = 1, .srq_limit = 3}};
	struct ibv_srq *srq = ibv_create_srq(pd, &sattr);
	struct ibv_srq_attr q;
	struct ibv_sge sge[2] = {{.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey}};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = sge, .num_sge = 1}, *bad = NULL;

	cr_assert_not_null(srq);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 4);
	cr_assert_eq(q.srq_limit, 0, "the limit is not armed at creation");
	q.srq_limit = 2;
	cr_assert_eq(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 2);
	q.srq_limit = 5;
	cr_assert_eq(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), EINVAL);
	cr_assert_eq(ibv_post_srq_recv(srq, &wr, &bad), 0);
	wr.num_sge = 2;
	cr_assert_eq(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
	cr_assert_eq(bad, &wr);
	q.max_wr = 8;
	cr_assert_eq(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), 0);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 8);

	/* A QP on the SRQ has no receive queue of its own and keeps the SRQ busy. */
	struct ibv_qp_init_attr qattr = {.send_cq = scq,
					 .recv_cq = rcq,
					 .srq = srq,
					 .cap = {.max_send_wr = 1, .max_send_sge = 1},
					 .qp_type = IBV_QPT_RC};
	struct ibv_qp *qp = ibv_create_qp(pd, &qattr);
	struct ibv_async_event ev;

	cr_assert_not_null(qp);
	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(post_recv(qp, 1), EINVAL);
	cr_assert_eq(ibv_destroy_srq(srq), EBUSY);
	/* Entering ERR raises "last WQE reached" for the QP. */
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	cr_assert_eq(ev.element.qp, qp);
	ibv_ack_async_event(&ev);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}

static void *destroy_cq_thread(void *cq)
{
	return (void *)(intptr_t)ibv_destroy_cq(cq);
}

Test(shim_qp, destroy_cq_waits_for_acknowledged_events)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, ch, 0), *ev_cq;
	struct ibv_qp_init_attr attr = {.send_cq = cq,
					.recv_cq = cq,
					.qp_type = IBV_QPT_UD,
					.cap = {.max_recv_wr = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);
	struct timespec pause = {0, 100 * 1000 * 1000};
	void *ev_ctx, *ret;
	pthread_t t;

	cr_assert_eq(to_init(qp), 0);
	cr_assert_eq(post_recv(qp, 1), 0);
	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(to_state(qp, IBV_QPS_ERR), 0);
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, cq);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	/* rdma-core: destroying a CQ waits until the events read from it are acknowledged. */
	cr_assert_eq(pthread_create(&t, NULL, destroy_cq_thread, cq), 0);
	nanosleep(&pause, NULL);
	cr_assert_eq(pthread_tryjoin_np(t, &ret), EBUSY, "destroy returned before the ack");
	ibv_ack_cq_events(cq, 1);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq((intptr_t)ret, 0);
}
