/* SPDX-License-Identifier: MIT */
/* verbs-shim protection domains, memory regions and address handles. */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim/lo.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static long page;

static void setup(void)
{
	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(pd);
	page = sysconf(_SC_PAGESIZE);
}

static void teardown(void)
{
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

TestSuite(shim_mr, .init = setup, .fini = teardown);

Test(shim_mr, register_and_keys)
{
	char *buf = malloc(8192);
	struct ibv_mr *a, *b;

	a = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	b = ibv_reg_mr(pd, buf + 4096, 4096, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(a->addr, buf);
	cr_assert_eq(a->length, 4096);
	cr_assert_eq(a->pd, pd);
	cr_assert_eq(a->context, ctx);
	cr_assert_eq(a->lkey, a->rkey);
	cr_assert_neq(a->lkey, b->lkey);
	cr_assert_neq(a->lkey >> 8, b->lkey >> 8, "different MRs have different indexes");
	/* The PD is in use while MRs are on it. */
	cr_assert_eq(ibv_dealloc_pd(pd), EBUSY);
	cr_assert_eq(ibv_dereg_mr(a), 0);
	cr_assert_eq(ibv_dereg_mr(b), 0);
	free(buf);
}

Test(shim_mr, access_flags)
{
	char *buf = malloc(4096);
	struct ibv_mr *mr;
	volatile int access;

	/* Not constants, so ibv_reg_mr goes through ibv_reg_mr_iova2 as perftest's do. */
	access = IBV_ACCESS_REMOTE_WRITE;
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, 4096, access));
	cr_assert_eq(errno, EINVAL, "remote write needs local write");
	access = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ;
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, 4096, access));
	cr_assert_eq(errno, EINVAL, "remote atomic needs local write");
	errno = 0;
	cr_assert_null(ibv_reg_mr_iova2(pd, buf, 4096, (uintptr_t)buf, 1 << 15));
	cr_assert_eq(errno, EINVAL, "unknown access bit");
	errno = 0;
	cr_assert_null(ibv_reg_mr_iova2(pd, buf, 4096, (uintptr_t)buf, IBV_ACCESS_ON_DEMAND));
	cr_assert_eq(errno, EOPNOTSUPP);
	/* Optional bits (relaxed ordering) are ignored, not refused. */
	mr = ibv_reg_mr_iova2(pd, buf, 4096, (uintptr_t)buf,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_RELAXED_ORDERING);
	cr_assert_not_null(mr);
	cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_REMOTE_WRITE),
		     IBV_REREG_MR_ERR_CMD);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
		     0);
	cr_assert_eq(ibv_rereg_mr(mr, 1 << 10, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	free(buf);
}

Test(shim_mr, unmapped_range_is_efault)
{
	char *map =
		mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(munmap(map + page, page), 0);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, map, 3 * page, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, map + page - 8, 16, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT, "one byte into the hole is enough");
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT);
	/* The mapped pages on each side register; registering did not fault anything in. */
	mr = ibv_reg_mr(pd, map + 2 * page, page, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	ibv_dereg_mr(mr);
	munmap(map, page);
	munmap(map + 2 * page, page);
}

/* An RC QP writing 4 KiB pieces into a peer's region, four at a time, until one fails. */
struct writer {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *src;
	uint64_t addr; /* the peer's region: 16 pages */
	uint32_t rkey;
	atomic_int done; /* WRITEs completed successfully */
	enum ibv_wc_status end;
};

static void *write_until_refused(void *arg)
{
	struct writer *w = arg;
	struct ibv_sge sge = {
		.addr = (uintptr_t)w->src->addr, .length = 4096, .lkey = w->src->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma.rkey = w->rkey},
			   *bad;
	struct ibv_wc wc;
	int out = 0;

	for (unsigned int i = 0;; i++) {
		while (out < 4) {
			wr.wr.rdma.remote_addr = w->addr + (i++ % 16) * 4096;
			if (ibv_post_send(w->qp, &wr, &bad))
				return NULL;
			out++;
		}
		if (ibv_poll_cq(w->cq, 1, &wc) == 1) {
			out--;
			if (wc.status != IBV_WC_SUCCESS) {
				w->end = wc.status;
				return NULL;
			}
			atomic_fetch_add(&w->done, 1);
		}
	}
}

/*
 * IBA 10.6.3.1: once ibv_dereg_mr returns, the region is no longer accessible. While a peer
 * streams WRITEs into it, the region is deregistered and at once unmapped: a WRITE that found
 * the MR before the deregistration but lands after it would fault. The peer's next WRITE is
 * refused with a remote access error.
 */
Test(shim_mr, no_write_lands_after_dereg_mr_returns, .timeout = 60)
{
	for (int trial = 0; trial < 20; trial++) {
		struct ibv_cq *cq_t = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		struct ibv_cq *cq_w = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		struct ibv_qp *target = lo_rc_qp(pd, cq_t), *qp = lo_rc_qp(pd, cq_w);
		char *dst = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		static char src[4096];
		struct writer w = {.qp = qp, .cq = cq_w};
		struct ibv_mr *mr;
		pthread_t t;

		cr_assert(cq_t && cq_w && target && qp && dst != MAP_FAILED);
		mr = ibv_reg_mr(pd, dst, 16 * 4096,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		w.src = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
		cr_assert(mr && w.src);
		w.addr = (uintptr_t)dst;
		w.rkey = mr->rkey;
		cr_assert_eq(lo_connect(ctx, target, qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
		cr_assert_eq(lo_connect(ctx, qp, target->qp_num, 0), 0);
		cr_assert_eq(pthread_create(&t, NULL, write_until_refused, &w), 0);
		/* Each trial deregisters at another point of the stream. */
		while (atomic_load(&w.done) < 20 + trial * 7)
			sched_yield();
		cr_assert_eq(ibv_dereg_mr(mr), 0);
		cr_assert_eq(munmap(dst, 16 * 4096), 0);
		cr_assert_eq(pthread_join(t, NULL), 0);
		cr_assert_eq(w.end, IBV_WC_REM_ACCESS_ERR, "%s", ibv_wc_status_str(w.end));
		cr_assert_eq(ibv_destroy_qp(qp), 0);
		cr_assert_eq(ibv_destroy_qp(target), 0);
		cr_assert_eq(ibv_dereg_mr(w.src), 0);
		cr_assert_eq(ibv_destroy_cq(cq_w), 0);
		cr_assert_eq(ibv_destroy_cq(cq_t), 0);
	}
}

Test(shim_mr, address_handles)
{
	struct ibv_ah_attr attr = lo_ah_attr(ctx);
	struct ibv_ah *ah = ibv_create_ah(pd, &attr);

	cr_assert_not_null(ah);
	cr_assert_eq(ah->pd, pd);
	cr_assert_eq(ah->context, ctx);
	attr.is_global = 0;
	errno = 0;
	cr_assert_null(ibv_create_ah(pd, &attr), "RoCE needs a GRH");
	cr_assert_eq(errno, EINVAL);
	attr.is_global = 1;
	attr.grh.sgid_index = 16;
	cr_assert_null(ibv_create_ah(pd, &attr));
	attr.grh.sgid_index = lo_gid_index(ctx);
	attr.port_num = 2;
	cr_assert_null(ibv_create_ah(pd, &attr));
	cr_assert_eq(ibv_destroy_ah(ah), 0);
}

Test(shim_mr, ah_from_received_ipv4_header)
{
	/* A UD receive over IPv4: the IP header sits in the last 20 bytes of the 40-byte GRH. */
	uint8_t grh[40] = {0};
	uint8_t ip4[20] = {0x45, 0x02, 0,   60, 0, 0, 0x40, 0, 64, 17,
			   0,    0,    127, 0,  0, 1, 127,  0, 0,  1};
	struct ibv_wc wc = {.wc_flags = IBV_WC_GRH, .slid = 0, .sl = 0};
	struct ibv_ah_attr attr;
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += ip4[i] << 8 | ip4[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip4[10] = ~sum >> 8;
	ip4[11] = ~sum & 0xff;
	memcpy(grh + 20, ip4, 20);
	cr_assert_eq(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)grh, &attr), 0);
	cr_assert_eq(attr.is_global, 1);
	cr_assert_eq(attr.grh.sgid_index, lo_gid_index(ctx));
	union ibv_gid peer = lo_ipv4_gid();

	cr_assert_arr_eq(&attr.grh.dgid, &peer, 16);
	cr_assert_eq(attr.grh.hop_limit, 64);
	cr_assert_eq(attr.grh.traffic_class, 2);
	struct ibv_ah *ah = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)grh, 1);

	cr_assert_not_null(ah);
	ibv_destroy_ah(ah);
}
