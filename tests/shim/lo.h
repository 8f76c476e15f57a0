/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the verbs-shim unit tests: they use the device of the loopback interface, which
 * every machine has, with its IPv4 address 127.0.0.1 (GID ::ffff:127.0.0.1).
 */
#ifndef UROCE_TESTS_SHIM_LO_H
#define UROCE_TESTS_SHIM_LO_H

#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <string.h>

#define LO_DEVICE "uroce_lo"

/* Open the device called @name; fails the test if there is none or it does not open. */
static inline struct ibv_context *open_device_named(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	cr_assert_not_null(list);
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx, "no %s device, or it does not open", name);
	return ctx;
}

static inline struct ibv_context *open_lo(void)
{
	return open_device_named(LO_DEVICE);
}

static inline union ibv_gid lo_ipv4_gid(void)
{
	union ibv_gid gid = {.raw = {[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1}};

	return gid;
}

/* Index of ::ffff:127.0.0.1 in the GID table. */
static inline int lo_gid_index(struct ibv_context *ctx)
{
	union ibv_gid want = lo_ipv4_gid(), gid;

	for (int i = 0; i < 16; i++) {
		cr_assert_eq(ibv_query_gid(ctx, 1, i, &gid), 0);
		if (!memcmp(&gid, &want, sizeof(gid)))
			return i;
	}
	cr_assert_fail("::ffff:127.0.0.1 is not in the GID table of %s", LO_DEVICE);
	return -1;
}

/* An address vector to 127.0.0.1 from 127.0.0.1. */
static inline struct ibv_ah_attr lo_ah_attr(struct ibv_context *ctx)
{
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

	ah.grh.dgid = lo_ipv4_gid();
	ah.grh.sgid_index = lo_gid_index(ctx);
	ah.grh.hop_limit = 64;
	return ah;
}

/* An RC QP on @pd with both queues on @cq, four WRs and one SGE each; NULL with errno. */
static inline struct ibv_qp *lo_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &a);
}

/*
 * Take an RC (or XRC) @qp from RESET to RTS towards QP @dqpn on loopback, granting @access, with
 * the attributes perftest gives (for XRC, the kernel ignores those of the other half). PSNs 0,
 * MTU 1024. Returns 0 or the first failing ibv_modify_qp's error.
 */
static inline int lo_connect(struct ibv_context *ctx, struct ibv_qp *qp, uint32_t dqpn, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	int err;

	a.qp_access_flags = access;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr = lo_ah_attr(ctx);
	if (!err)
		err = ibv_modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (!err)
		err = ibv_modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC);
	return err;
}

#endif
