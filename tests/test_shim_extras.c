/* SPDX-License-Identifier: MIT */
/*
 * uroce's public extras (include/uroce/uroce.h): the version, the capture file with %p
 * expanded, and the statistics -- zeros before the engine starts, then the packets of an RDMA
 * WRITE between two QPs of this process, the queue pairs' counters included while they live.
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/lo.h"
#include "uroce/uroce.h"

static char pcap[64];

/* Before the library's constructors: the engine reads UROCE_PCAP when it starts. */
__attribute__((constructor)) static void set_capture(void)
{
	snprintf(pcap, sizeof(pcap), "/tmp/uroce-extras-%d.pcap", (int)getpid());
	setenv("UROCE_PCAP", "/tmp/uroce-extras-%p.pcap", 1);
}

Test(shim_extras, version_capture_and_stats, .timeout = 30)
{
	static char src[4096], dst[4096];
	struct uroce_stats st, before;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *ms, *md;
	struct ibv_wc wc;
	struct stat sb;
	int n = 0;

	cr_assert_str_eq(uroce_version(), UROCE_TEST_VERSION);
	/* Found at run time too, as a program that also runs on rdma-core would look for it. */
	cr_assert_eq(dlsym(RTLD_DEFAULT, "uroce_get_stats"), (void *)uroce_get_stats);
	cr_assert_eq(uroce_get_stats(NULL, sizeof(st)), EINVAL);
	cr_assert_eq(uroce_get_stats(&st, 0), EINVAL);
	cr_assert_null(uroce_capture_path(), "no capture before the engine starts");
	memset(&before, 0xff, sizeof(before));
	cr_assert_eq(uroce_get_stats(&before, sizeof(before)), 0);
	cr_assert_eq(before.tx_packets, 0);
	cr_assert_eq(before.rx_packets, 0);

	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	cr_assert(pd && cq);
	a = lo_rc_qp(pd, cq);
	b = lo_rc_qp(pd, cq);
	cr_assert(a && b, "ibv_create_qp: %s", strerror(errno));
	ms = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	md = ibv_reg_mr(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert(ms && md);
	cr_assert_eq(lo_connect(ctx, a, b->qp_num, 0), 0);
	cr_assert_eq(lo_connect(ctx, b, a->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_str_eq(uroce_capture_path(), pcap);

	memset(src, 0x5a, sizeof(src));
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = sizeof(src), .lkey = ms->lkey};
	struct ibv_send_wr wr = {.wr_id = 1,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = (uintptr_t)dst, .rkey = md->rkey}},
			   *bad;
	cr_assert_eq(ibv_post_send(a, &wr, &bad), 0);
	for (int i = 0; i < 2000000 && n == 0; i++)
		n = ibv_poll_cq(cq, 1, &wc);
	cr_assert_eq(n, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(memcmp(src, dst, sizeof(src)), 0);

	/* 4 KiB at the default 1024-byte path MTU: four WRITE packets and at least one ACK. */
	cr_assert_eq(uroce_get_stats(&st, sizeof(st)), 0);
	cr_assert_geq(st.tx_packets, 5, "%llu sent", (unsigned long long)st.tx_packets);
	cr_assert_geq(st.rx_packets, 5, "%llu received", (unsigned long long)st.rx_packets);
	cr_assert_eq(st.rx_bad_icrc + st.rx_malformed, 0);
	cr_assert_eq(st.retransmits + st.timeouts, 0);

	/* A caller compiled with fewer fields gets only those. */
	memset(&before, 0xee, sizeof(before));
	cr_assert_eq(uroce_get_stats(&before, sizeof(before.tx_packets)), 0);
	cr_assert_geq(before.tx_packets, 5);
	cr_assert_eq(before.rx_packets, 0xeeeeeeeeeeeeeeeeull);

	cr_assert_eq(stat(pcap, &sb), 0, "%s: %s", pcap, strerror(errno));
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(ms);
	ibv_dereg_mr(md);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	unlink(pcap);
}
