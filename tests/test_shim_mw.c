/* SPDX-License-Identifier: MIT */
/*
 * verbs-shim memory windows: the device attributes rxe reports for them, ibv_alloc_mw's
 * refusals, and one RC QP connected to itself on loopback binding windows (ibv_bind_mw for
 * type 1, ibv_wr_bind_mw and ibv_post_send for type 2), writing through them, invalidating
 * them locally and with a SEND with invalidate (IBV_WC_WITH_INV on the receive), and the region
 * that cannot be deregistered while a window is bound to it. One QP is both ends: an access
 * error fails it before its NAK returns, so such a WRITE may complete as flushed. The rules
 * themselves are the transport core's (tests/sim/test_sim_mw.c); this checks that the verbs reach
 * them.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "shim/lo.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static char buf[8192], win[4096];
static struct ibv_mr *mr, *wmr; /* buf: data; win: the windows' region */

static void setup(void)
{
	struct ibv_qp_init_attr_ex attr = {
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV,
	};

	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cr_assert(pd && cq);
	attr.pd = pd;
	attr.send_cq = cq;
	attr.recv_cq = cq;
	qp = ibv_create_qp_ex(ctx, &attr);
	cr_assert_not_null(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	wmr = ibv_reg_mr(pd, win, sizeof(win), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	cr_assert(mr && wmr);
	cr_assert_eq(lo_connect(ctx, qp, qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
}

TestSuite(shim_mw, .init = setup, .timeout = 20);

/* The next completion, waiting up to 2 s for it. */
static struct ibv_wc next_wc(void)
{
	struct ibv_wc wc;
	int n = 0;

	for (int i = 0; i < 2000 && !(n = ibv_poll_cq(cq, 1, &wc)); i++)
		usleep(1000);
	cr_assert_eq(n, 1, "no completion came");
	return wc;
}

static void expect_wc(uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc = next_wc();

	cr_assert_eq(wc.wr_id, wr_id, "wr_id %llu", (unsigned long long)wc.wr_id);
	cr_assert_eq(wc.status, status, "wr %llu: %s", (unsigned long long)wr_id,
		     ibv_wc_status_str(wc.status));
	if (status == IBV_WC_SUCCESS)
		cr_assert_eq(wc.opcode, opcode);
}

/* An RDMA WRITE of 64 bytes of buf to @addr under @rkey. */
static void write_to(uint64_t wr_id, void *addr, uint32_t rkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)addr, .rkey = rkey},
	};
	struct ibv_send_wr *bad;

	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
}

Test(shim_mw, device_attributes_as_rxe)
{
	struct ibv_device_attr attr;

	cr_assert_eq(ibv_query_device(ctx, &attr), 0);
	cr_assert_eq(attr.max_mw, attr.max_mr, "rxe reports as many windows as regions");
	cr_assert_gt(attr.max_mw, 0);
	cr_assert(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	cr_assert(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	cr_assert(attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	cr_assert_not(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A);
}

Test(shim_mw, allocation_and_refusals)
{
	struct ibv_mw *t1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *t2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind bind = {.bind_info = {.mr = wmr, .addr = (uintptr_t)win, .length = 64}};

	cr_assert(t1 && t2);
	cr_assert_eq(t1->type, IBV_MW_TYPE_1);
	cr_assert_eq(t2->pd, pd);
	cr_assert_neq(t1->rkey >> 8, t2->rkey >> 8, "each window has a key of its own");
	cr_assert_neq(t1->rkey >> 8, wmr->rkey >> 8, "and no region's");
	errno = 0;
	cr_assert_null(ibv_alloc_mw(pd, (enum ibv_mw_type)3));
	cr_assert_eq(errno, EINVAL, "a type other than 1 or 2 is invalid, not unsupported");
	/* ibv_bind_mw binds type 1 windows only, never zero-based ones. */
	cr_assert_eq(ibv_bind_mw(qp, t2, &bind), EINVAL);
	bind.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	cr_assert_eq(ibv_bind_mw(qp, t1, &bind), EINVAL);
	cr_assert_eq(ibv_dealloc_pd(pd), EBUSY, "the windows hold their PD");
	cr_assert_eq(ibv_dealloc_mw(t1), 0);
	cr_assert_eq(ibv_dealloc_mw(t2), 0);
}

/* Type 1: ibv_bind_mw posts the bind and gives the window its next key at once. */
Test(shim_mw, type1_bind_verb_and_write)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	uint32_t old = mw->rkey;
	struct ibv_mw_bind bind = {
		.wr_id = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {.mr = wmr,
			      .addr = (uintptr_t)win + 1024,
			      .length = 1024,
			      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE},
	};

	cr_assert_eq(ibv_bind_mw(qp, mw, &bind), 0);
	cr_assert_eq(mw->rkey, ibv_inc_rkey(old));
	expect_wc(1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	memset(buf, 0x5a, 64);
	write_to(2, win + 1024, mw->rkey);
	expect_wc(2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cr_assert_eq(win[1024], 0x5a);
	cr_assert_eq(win[1024 + 63], 0x5a);
	cr_assert_eq(ibv_dereg_mr(wmr), EINVAL, "a window is bound to it (rxe_dereg_mr)");
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
	cr_assert_eq(ibv_dereg_mr(wmr), 0);
}

/*
 * Type 2 through ibv_wr_bind_mw, a WRITE through it, a SEND with invalidate of it (the QP
 * receives its own SEND), then a WRITE through the invalidated key: a remote access error.
 */
Test(shim_mw, type2_bind_send_with_invalidate)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_mw_bind_info info = {
		.mr = wmr,
		.addr = (uintptr_t)win,
		.length = sizeof(win),
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_sge rsge = {.addr = (uintptr_t)buf + 4096, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 9, .sg_list = &rsge, .num_sge = 1}, *rbad;
	struct ibv_wc wc;

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qpx, mw, rkey, &info);
	cr_assert_eq(ibv_wr_complete(qpx), 0);
	expect_wc(1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	memset(buf, 0x33, 64);
	write_to(2, win + 100, rkey);
	expect_wc(2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cr_assert_eq(win[100], 0x33);

	cr_assert_eq(ibv_post_recv(qp, &rwr, &rbad), 0);
	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	ibv_wr_send_inv(qpx, rkey);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 16);
	cr_assert_eq(ibv_wr_complete(qpx), 0);
	/* The send and the receive, in either order. */
	for (int i = 0; i < 2; i++) {
		wc = next_wc();
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		if (wc.wr_id == 3)
			continue;
		cr_assert_eq(wc.wr_id, 9);
		cr_assert_eq(wc.opcode, IBV_WC_RECV);
		cr_assert_eq(wc.byte_len, 16);
		cr_assert_eq(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
		cr_assert_eq(wc.invalidated_rkey, rkey);
	}
	cr_assert_eq(ibv_dereg_mr(wmr), 0, "the invalidated window left its region");
	wmr = ibv_reg_mr(pd, win, sizeof(win), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	memset(buf, 0x44, 64);
	write_to(4, win, rkey);
	/* Refused. The responder is this very QP: the error that fails it may flush the WRITE
	 * before the NAK comes back. */
	wc = next_wc();
	cr_assert_eq(wc.wr_id, 4);
	cr_assert(wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_WR_FLUSH_ERR, "%s",
		  ibv_wc_status_str(wc.status));
	cr_assert_neq(win[0], 0x44);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
}

/* ibv_post_send's BIND_MW and LOCAL_INV, and a local invalidate that fails the QP. */
Test(shim_mw, post_send_bind_and_local_invalidate)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = {
		.wr_id = 1,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr,
		.addr = (uintptr_t)win,
		.length = 128,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	/* A local operation carries no data. */
	wr.sg_list = &sge;
	wr.num_sge = 1;
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), EINVAL);
	wr.sg_list = NULL;
	wr.num_sge = 0;
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	expect_wc(1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = ibv_inc_rkey(mw->rkey);
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	expect_wc(2, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	/* Again: the window is free, so the invalidate fails and the QP with it (rxe). */
	wr.wr_id = 3;
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	expect_wc(3, IBV_WC_LOC_QP_OP_ERR, 0);
	cr_assert_eq(qp->state, IBV_QPS_ERR);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
}
