/* SPDX-License-Identifier: MIT */
/*
 * verbs-shim devices, contexts and queries, through the system's <infiniband/verbs.h> (so the
 * inline wrappers and struct layouts are rdma-core's) against uroce's libibverbs.so.1.
 */
#include <criterion/criterion.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim/lo.h"

/* Not declared by verbs.h (rdma-core's uninstalled driver.h and sysfs.h). */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);

Test(shim_device, list_names_order_and_guid)
{
	int n = -1, lo = -1;
	struct ibv_device **list = ibv_get_device_list(&n);

	cr_assert_not_null(list);
	cr_assert_gt(n, 0);
	cr_assert_null(list[n]);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(strncmp(ibv_get_device_name(list[i]), "uroce_", 6), 0);
		cr_assert_eq(list[i]->node_type, IBV_NODE_CA);
		cr_assert_eq(list[i]->transport_type, IBV_TRANSPORT_IB);
		if (!strcmp(ibv_get_device_name(list[i]), LO_DEVICE))
			lo = i;
		for (int j = 0; j < i; j++)
			cr_assert_neq(ibv_get_device_index(list[i]), ibv_get_device_index(list[j]));
	}
	/* Loopback after the other interfaces. */
	cr_assert_eq(lo, n - 1, "uroce_lo at %d of %d", lo, n);
	/* lo has no MAC: EUI-64 of 02:00:00 + interface index, universal/local bit flipped. */
	unsigned int ifindex = if_nametoindex("lo");
	uint8_t want[8] = {0, 0, 0, 0xff, 0xfe, ifindex >> 16, ifindex >> 8, ifindex};
	__be64 guid = ibv_get_device_guid(list[lo]);

	cr_assert_arr_eq(&guid, want, 8);
	ibv_free_device_list(list);
}

Test(shim_device, same_device_object_on_every_scan)
{
	struct ibv_device **a = ibv_get_device_list(NULL), **b = ibv_get_device_list(NULL);

	cr_assert_eq(a[0], b[0]);
	ibv_free_device_list(a);
	ibv_free_device_list(b);
}

Test(shim_device, context_layout)
{
	struct ibv_context *ctx = open_lo();
	struct verbs_context *vctx = verbs_get_ctx(ctx);

	cr_assert_eq(ctx->abi_compat, (void *)UINTPTR_MAX);
	cr_assert_not_null(vctx);
	cr_assert_eq(vctx->sz, sizeof(struct verbs_context));
	cr_assert_not_null(ctx->ops.poll_cq);
	cr_assert_not_null(ctx->ops.req_notify_cq);
	cr_assert_not_null(ctx->ops.post_send);
	cr_assert_not_null(ctx->ops.post_recv);
	cr_assert_not_null(ctx->ops.post_srq_recv);
	cr_assert_not_null(ctx->ops.alloc_mw);
	cr_assert_not_null(ctx->ops.bind_mw);
	cr_assert_not_null(ctx->ops.dealloc_mw);
	cr_assert_not_null(vctx->query_port);
	cr_assert_not_null(vctx->query_device_ex);
	cr_assert_not_null(vctx->create_cq_ex);
	cr_assert_not_null(vctx->create_qp_ex);
	cr_assert_gt(ctx->num_comp_vectors, 0);
	cr_assert_neq(fcntl(ctx->cmd_fd, F_GETFD), -1);
	cr_assert_neq(fcntl(ctx->async_fd, F_GETFD), -1);
	/* No async event pending: a non-blocking wait returns EAGAIN, poll sees nothing. */
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;

	cr_assert_eq(poll(&pfd, 1, 0), 0);
	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	cr_assert_eq(ibv_get_async_event(ctx, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	/* Unsupported extension ops answer EOPNOTSUPP through the inline wrappers. */
	errno = 0;
	cr_assert_null(ibv_alloc_td(ctx, &(struct ibv_td_init_attr){0}));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_eq(ibv_close_device(ctx), 0);
}

Test(shim_device, query_port)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_port_attr attr;

	memset(&attr, 0xa5, sizeof(attr));
	cr_assert_eq(ibv_query_port(ctx, 1, &attr), 0);
	cr_assert_eq(attr.state, IBV_PORT_ACTIVE);
	cr_assert_eq(attr.phys_state, 5);
	cr_assert_eq(attr.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(attr.lid, 0);
	cr_assert_eq(attr.max_mtu, IBV_MTU_4096);
	cr_assert_eq(attr.active_mtu, IBV_MTU_4096, "lo's 65536-byte MTU caps at 4096");
	cr_assert_eq(attr.gid_tbl_len, 16);
	cr_assert_eq(attr.pkey_tbl_len, 1);
	cr_assert_eq(attr.max_msg_sz, 1u << 31);
	cr_assert_eq(attr.port_cap_flags, IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS);
	cr_assert_eq(attr.port_cap_flags2, 0);
	cr_assert_eq(ibv_query_port(ctx, 2, &attr), EINVAL);
	ibv_close_device(ctx);
}

Test(shim_device, exported_query_port_writes_48_bytes)
{
	struct ibv_context *ctx = open_lo();
	uint8_t buf[64];

	memset(buf, 0xa5, sizeof(buf));
	/* The exported symbol, as binaries built before the inline wrapper call it. */
	cr_assert_eq((ibv_query_port)(ctx, 1, (struct _compat_ibv_port_attr *)buf), 0);
	cr_assert_eq(((struct ibv_port_attr *)buf)->state, IBV_PORT_ACTIVE);
	cr_assert_eq(((struct ibv_port_attr *)buf)->link_layer, IBV_LINK_LAYER_ETHERNET);
	for (size_t i = 48; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xa5, "byte %zu written", i);
	ibv_close_device(ctx);
}

Test(shim_device, query_device)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_device_attr attr;
	struct ibv_device_attr_ex ex;
	struct ibv_query_device_ex_input in = {.comp_mask = 1};

	cr_assert_eq(ibv_query_device(ctx, &attr), 0);
	cr_assert_eq(attr.vendor_id, 0xffffff);
	cr_assert_eq(attr.vendor_part_id, 0);
	cr_assert_eq(attr.phys_port_cnt, 1);
	cr_assert_eq(attr.atomic_cap, IBV_ATOMIC_HCA);
	cr_assert_gt(attr.max_qp_rd_atom, 0);
	cr_assert_gt(attr.max_qp, 0);
	cr_assert_eq(attr.node_guid, ibv_get_device_guid(ctx->device));
	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &ex), 0);
	cr_assert_eq(ex.orig_attr.vendor_id, 0xffffff);
	cr_assert_eq(ex.hca_core_clock, 1000000);
	cr_assert_eq(ex.completion_timestamp_mask, UINT64_MAX);
	cr_assert_eq(ex.phys_port_cnt_ex, 1);
	cr_assert_eq(ibv_query_device_ex(ctx, &in, &ex), EINVAL);
	ibv_close_device(ctx);
}

Test(shim_device, gids)
{
	struct ibv_context *ctx = open_lo();
	int idx = lo_gid_index(ctx), empty = -1, type = -1, valid = 0;
	union ibv_gid want = lo_ipv4_gid(), gid;
	struct ibv_gid_entry entry;

	for (int i = 0; i < 16; i++) {
		struct ibv_gid_entry e;
		int ret = ibv_query_gid_ex(ctx, 1, i, &e, 0);

		cr_assert(ret == 0 || ret == ENODATA, "index %d: %d", i, ret);
		if (ret == ENODATA) {
			/* ibv_query_gid keeps the old API: an empty slot reads as zero. */
			memset(&gid, 0x5a, sizeof(gid));
			cr_assert_eq(ibv_query_gid(ctx, 1, i, &gid), 0);
			cr_assert_arr_eq(&gid, (uint8_t[16]){0}, 16);
			cr_assert_eq(ibv_query_gid_type(ctx, 1, i, &type), 0);
			cr_assert_eq(type, 0);
			if (empty < 0)
				empty = i;
		} else {
			valid++;
		}
	}
	cr_assert_geq(empty, 0, "the table of lo has empty slots");
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, idx, &entry, 0), 0);
	cr_assert_arr_eq(&entry.gid, &want, 16);
	cr_assert_eq(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_eq(entry.gid_index, (uint32_t)idx);
	cr_assert_eq(entry.port_num, 1);
	cr_assert_eq(entry.ndev_ifindex, if_nametoindex("lo"));
	cr_assert_eq(ibv_query_gid_type(ctx, 1, idx, &type), 0);
	cr_assert_eq(type, 1, "the sysfs enum: RoCE v2 = 1");
	/* Out of the table and bad ports. */
	cr_assert_eq(ibv_query_gid(ctx, 1, 16, &gid), -1);
	cr_assert_eq(ibv_query_gid(ctx, 2, 0, &gid), -1);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 16, &entry, 0), EINVAL);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, idx, &entry, 1), EINVAL);
	cr_assert_eq(ibv_query_gid_type(ctx, 1, 16, &type), -1);
	/* A caller with a larger entry gets zeros past the known fields, nothing past its size. */
	uint8_t big[sizeof(struct ibv_gid_entry) + 16];

	memset(big, 0xa5, sizeof(big));
	cr_assert_eq(_ibv_query_gid_ex(ctx, 1, idx, (struct ibv_gid_entry *)big, 0,
				       sizeof(struct ibv_gid_entry) + 8),
		     0);
	for (size_t i = sizeof(struct ibv_gid_entry); i < sizeof(big); i++)
		cr_assert_eq(big[i], i < sizeof(struct ibv_gid_entry) + 8 ? 0 : 0xa5);
	cr_assert_eq(_ibv_query_gid_ex(ctx, 1, idx, &entry, 0, sizeof(entry) - 4), EINVAL);
	/* The table: every valid GID once; too little room is EINVAL. */
	struct ibv_gid_entry table[16];

	cr_assert_eq(ibv_query_gid_table(ctx, table, 16, 0), valid);
	cr_assert_eq(table[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	if (valid > 1)
		cr_assert_eq(ibv_query_gid_table(ctx, table, 1, 0), -EINVAL);
	ibv_close_device(ctx);
}

Test(shim_device, pkeys)
{
	struct ibv_context *ctx = open_lo();
	__be16 pkey = 0;

	cr_assert_eq(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	cr_assert_eq(pkey, htobe16(0xffff));
	cr_assert_eq(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
	cr_assert_eq(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	cr_assert_eq(ibv_get_pkey_index(ctx, 1, htobe16(0x8001)), -1);
	ibv_close_device(ctx);
}

Test(shim_device, synthetic_sysfs)
{
	struct ibv_context *ctx = open_lo();
	const char *dir = ctx->device->ibdev_path;
	char buf[64];
	uint64_t g = be64toh(ibv_get_device_guid(ctx->device));
	char want[32];

	cr_assert_not_null(ibv_get_sysfs_path());
	cr_assert_gt(ibv_read_sysfs_file(dir, "board_id", buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48),
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
	cr_assert_gt(ibv_read_sysfs_file(dir, "node_guid", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, want);
	cr_assert_gt(ibv_read_sysfs_file(dir, "ports/1/state", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "4: ACTIVE");
	cr_assert_eq(ibv_read_sysfs_file(dir, "ports/1/pkeys/0", buf, sizeof(buf)), 6);
	cr_assert_str_eq(buf, "0xffff");
	errno = 0;
	cr_assert_eq(ibv_read_sysfs_file(dir, "no_such_file", buf, sizeof(buf)), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(ibv_read_sysfs_file(dir, "../mlx5_0/board_id", buf, sizeof(buf)), -1);
	cr_assert_eq(errno, EINVAL);
	ibv_close_device(ctx);
}

Test(shim_device, enum_strings_and_rates)
{
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
	cr_assert_str_eq(ibv_wc_status_str(1000), "unknown");
	cr_assert_str_eq(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	cr_assert_str_eq(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
	cr_assert_str_eq(ibv_event_type_str(IBV_EVENT_QP_LAST_WQE_REACHED), "last WQE reached");
	cr_assert_eq(ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
	cr_assert_eq(mult_to_ibv_rate(16), IBV_RATE_40_GBPS);
	cr_assert_eq(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	cr_assert_eq(mbps_to_ibv_rate(25781), IBV_RATE_25_GBPS);
	cr_assert_eq(ibv_rate_to_mult(IBV_RATE_25_GBPS), -1);
	cr_assert_eq(mult_to_ibv_rate(3), IBV_RATE_MAX);
	cr_assert_eq(ibv_fork_init(), 0);
	cr_assert_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}
