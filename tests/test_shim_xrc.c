/* SPDX-License-Identifier: MIT */
/*
 * verbs-shim XRC (ibv_open_xrcd(3), ibv_create_srq_ex(3), ibv_create_qp_ex(3)): domains opened by
 * file, XRC SRQs and their numbers, initiator and target QPs, and one message each way of
 * routing through the engine on loopback: the XRCETH picks the SRQ and so the CQ.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *cq1, *cq2;
static char path[64];
static int fd;

static void setup(void)
{
	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert(pd && scq && cq1 && cq2);
	snprintf(path, sizeof(path), "/tmp/uroce-xrcd-%d", (int)getpid());
	fd = open(path, O_RDONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
}

static void teardown(void)
{
	close(fd);
	unlink(path);
}

TestSuite(shim_xrc, .init = setup, .fini = teardown, .timeout = 20);

static struct ibv_xrcd *open_xrcd(int file, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = file,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xrc_srq(struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = {.max_wr = 8, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = xrcd,
		.cq = cq,
	};

	return ibv_create_srq_ex(ctx, &a);
}

static struct ibv_qp *xrc_qp(enum ibv_qp_type type, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = type,
		.send_cq = scq,
		.cap = {.max_send_wr = 8, .max_send_sge = 1},
	};

	if (type == IBV_QPT_XRC_RECV) {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = xrcd;
	} else {
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd;
	}
	return ibv_create_qp_ex(ctx, &a);
}

Test(shim_xrc, domains_by_file)
{
	struct ibv_xrcd *a, *b, *c;

	errno = 0;
	cr_assert_null(open_xrcd(fd, 0), "no domain for the file yet, and no O_CREAT");
	cr_assert_eq(errno, EAGAIN);
	a = open_xrcd(fd, O_CREAT);
	cr_assert_not_null(a);
	errno = 0;
	cr_assert_null(open_xrcd(fd, O_CREAT | O_EXCL));
	cr_assert_eq(errno, EINVAL);
	b = open_xrcd(fd, 0); /* the same domain, another handle */
	cr_assert_not_null(b);
	cr_assert_neq(a, b);
	c = open_xrcd(-1, O_CREAT); /* a private domain */
	cr_assert_not_null(c);
	errno = 0;
	cr_assert_null(open_xrcd(12345, O_CREAT));
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_null(ibv_open_xrcd(ctx, &(struct ibv_xrcd_init_attr){.fd = -1}));
	cr_assert_eq(errno, EINVAL, "FD and OFLAGS are required");

	/* An SRQ made through one handle keeps the shared domain busy until it goes. */
	struct ibv_srq *srq = xrc_srq(b, cq1);

	cr_assert_not_null(srq);
	cr_assert_eq(ibv_close_xrcd(a), 0, "not the last handle");
	cr_assert_eq(ibv_close_xrcd(b), EBUSY);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_close_xrcd(b), 0);
	cr_assert_eq(ibv_close_xrcd(c), 0);
}

Test(shim_xrc, object_rules)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT);
	struct ibv_srq_init_attr_ex bad = {
		.attr = {.max_wr = 8, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = x,
	};
	struct ibv_srq *s1, *s2;
	struct ibv_qp *ini, *tgt;
	uint32_t n1, n2;
	struct ibv_recv_wr rwr = {.wr_id = 1}, *rbad;
	struct ibv_send_wr swr = {.wr_id = 1}, *sbad;

	errno = 0;
	cr_assert_null(ibv_create_srq_ex(ctx, &bad), "an XRC SRQ needs its CQ");
	cr_assert_eq(errno, EINVAL);
	s1 = xrc_srq(x, cq1);
	s2 = xrc_srq(x, cq2);
	cr_assert(s1 && s2);
	cr_assert_eq(ibv_get_srq_num(s1, &n1), 0);
	cr_assert_eq(ibv_get_srq_num(s2, &n2), 0);
	cr_assert(n1 && n2 && n1 != n2 && n1 <= 0xffffff);
	ini = xrc_qp(IBV_QPT_XRC_SEND, NULL);
	tgt = xrc_qp(IBV_QPT_XRC_RECV, x);
	cr_assert(ini && tgt);
	cr_assert_null(tgt->pd);
	cr_assert_null(tgt->send_cq);
	cr_assert_null(ini->recv_cq);
	errno = 0;
	cr_assert_null(xrc_qp(IBV_QPT_XRC_RECV, NULL), "a target needs its domain");
	cr_assert_eq(errno, EINVAL);
	/* Neither half has a receive queue; a target sends nothing. */
	cr_assert_eq(ibv_post_recv(ini, &rwr, &rbad), EINVAL);
	cr_assert_eq(ibv_post_recv(tgt, &rwr, &rbad), EINVAL);
	cr_assert_eq(ibv_post_send(tgt, &swr, &sbad), EINVAL);
	cr_assert_eq(ibv_close_xrcd(x), EBUSY);
	cr_assert_eq(ibv_destroy_qp(tgt), 0);
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_srq(s1), 0);
	cr_assert_eq(ibv_destroy_srq(s2), 0);
	cr_assert_eq(ibv_close_xrcd(x), 0);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(cq, 1, wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (n == 0 && t.tv_sec - t0.tv_sec < 10);
	return n;
}

Test(shim_xrc, send_to_two_srqs_over_loopback)
{
	struct ibv_xrcd *x = open_xrcd(fd, O_CREAT);
	static char src[256], dst1[256], dst2[256];
	struct ibv_mr *smr = ibv_reg_mr(pd, src, sizeof(src), 0);
	struct ibv_mr *m1 = ibv_reg_mr(pd, dst1, sizeof(dst1), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *m2 = ibv_reg_mr(pd, dst2, sizeof(dst2), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_srq *s1 = xrc_srq(x, cq1), *s2 = xrc_srq(x, cq2);
	struct ibv_qp *ini = xrc_qp(IBV_QPT_XRC_SEND, NULL), *tgt = xrc_qp(IBV_QPT_XRC_RECV, x);
	struct ibv_sge sge = {.addr = (uintptr_t)dst1, .length = 256, .lkey = m1->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 11, .sg_list = &sge, .num_sge = 1}, *rbad;
	struct ibv_wc wc;
	uint32_t n2;

	cr_assert(smr && m1 && m2 && s1 && s2 && ini && tgt);
	cr_assert_eq(ibv_post_srq_recv(s1, &rwr, &rbad), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)dst2, .length = 256, .lkey = m2->lkey};
	rwr.wr_id = 22;
	cr_assert_eq(ibv_post_srq_recv(s2, &rwr, &rbad), 0);
	/* Both halves get every attribute, as perftest gives them: the ignored ones are dropped. */
	cr_assert_eq(lo_connect(ctx, ini, tgt->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(lo_connect(ctx, tgt, ini->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	memset(src, 'x', sizeof(src));
	/* Through ibv_wr_*: the SRQ number set with ibv_wr_set_xrc_srqn. */
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(ini);

	cr_assert_eq(ibv_get_srq_num(s2, &n2), 0);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, n2);
	ibv_wr_set_sge(qx, smr->lkey, (uintptr_t)src, 100);
	cr_assert_eq(ibv_wr_complete(qx), 0);
	cr_assert_eq(poll_one(scq, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(poll_one(cq2, &wc), 1);
	cr_assert_eq(wc.wr_id, 22);
	cr_assert_eq(wc.byte_len, 100);
	cr_assert_eq(wc.qp_num, tgt->qp_num);
	cr_assert_eq(ibv_poll_cq(cq1, 1, &wc), 0, "SRQ 1 was not named");
	cr_assert_eq(memcmp(dst2, src, 100), 0);
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_qp(tgt), 0);
	cr_assert_eq(ibv_destroy_srq(s1), 0);
	cr_assert_eq(ibv_destroy_srq(s2), 0);
	cr_assert_eq(ibv_close_xrcd(x), 0);
}
