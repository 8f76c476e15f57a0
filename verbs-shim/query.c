// SPDX-License-Identifier: MIT
/* Device, port, GID and P_Key queries. */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "verbs-shim/abi_extra.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/port.h"

/* verbs.h makes ibv_query_port an inline wrapper; this file defines the exported fallback. */
#undef ibv_query_port

static void device_attr(struct uroce_context *ctx, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", UROCE_VERSION);
	attr->node_guid = ctx->dev->guid;
	attr->sys_image_guid = ctx->dev->guid;
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 0xfffff000; /* 4 KiB and up, as rxe */
	attr->vendor_id = UROCE_VENDOR_ID;
	attr->vendor_part_id = UROCE_VENDOR_PART_ID;
	attr->hw_ver = 0;
	attr->max_qp = UROCE_MAX_QP;
	attr->max_qp_wr = UROCE_MAX_QP_WR;
	attr->device_cap_flags = UROCE_DEVICE_CAP_FLAGS;
	attr->max_sge = UROCE_MAX_SGE;
	attr->max_sge_rd = UROCE_MAX_SGE;
	attr->max_cq = UROCE_MAX_CQ;
	attr->max_cqe = UROCE_MAX_CQE;
	attr->max_mr = UROCE_MAX_MR;
	attr->max_pd = UROCE_MAX_PD;
	attr->max_mw = UROCE_MAX_MW;
	attr->max_qp_rd_atom = UROCE_MAX_QP_RD_ATOM;
	attr->max_res_rd_atom = UROCE_MAX_RES_RD_ATOM;
	attr->max_qp_init_rd_atom = UROCE_MAX_QP_RD_ATOM;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_mcast_grp = UROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = UROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = UROCE_MAX_MCAST_GRP * UROCE_MAX_MCAST_QP_ATTACH;
	attr->max_ah = UROCE_MAX_AH;
	attr->max_srq = UROCE_MAX_SRQ;
	attr->max_srq_wr = UROCE_MAX_SRQ_WR;
	attr->max_srq_sge = UROCE_MAX_SRQ_SGE;
	attr->max_pkeys = UROCE_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = UROCE_LOCAL_CA_ACK_DELAY;
	attr->phys_port_cnt = 1;
}

UROCE_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	device_attr(to_uctx(context), attr);
	return 0;
}

int uroce_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if ((input && input->comp_mask) || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	device_attr(to_uctx(context), &full.orig_attr);
	/* Completion timestamps count nanoseconds (caps.h), over the full 64 bits. */
	full.completion_timestamp_mask = UINT64_MAX;
	full.hca_core_clock = UROCE_HCA_CORE_CLOCK_KHZ;
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	full.phys_port_cnt_ex = 1;
	/* Callers built against newer headers pass a larger struct: zero what uroce lacks. */
	memset(attr, 0, attr_size);
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	return 0;
}

int uroce_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		     size_t attr_len)
{
	struct ibv_port_attr full;

	if (port_num != UROCE_PORT_NUM)
		return EINVAL;
	uroce_port_attr(to_uctx(context)->dev, &full);
	/* rdma-core's __lib_query_port: never write more than the caller's struct. */
	if (attr_len < sizeof(full)) {
		memcpy(attr, &full, attr_len);
	} else {
		memset(attr, 0, attr_len);
		memcpy(attr, &full, sizeof(full));
	}
	return 0;
}

/*
 * The exported symbol takes the 48-byte legacy layout, which ends before port_cap_flags2
 * (ABI.md §2.4): old binaries pass a buffer that small.
 */
UROCE_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
				struct _compat_ibv_port_attr *port_attr)
{
	return uroce_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* 0, ENODATA (empty slot) or EINVAL (port, index); fills a full entry. */
static int gid_entry(struct uroce_context *ctx, uint32_t port_num, uint32_t index,
		     struct ibv_gid_entry *entry)
{
	int err;

	if (port_num != UROCE_PORT_NUM)
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	err = uroce_device_gid(ctx->dev, index, &entry->gid);
	if (err)
		return err;
	entry->gid_index = index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2; /* the public enum: RoCE v2 = 2 */
	entry->ndev_ifindex = ctx->dev->ifindex;
	return 0;
}

/* Callers built against newer headers may pass a larger entry; smaller ones are refused. */
static int copy_entry(void *dst, const struct ibv_gid_entry *src, size_t entry_size)
{
	if (entry_size < sizeof(*src))
		return EINVAL;
	memset(dst, 0, entry_size);
	memcpy(dst, src, sizeof(*src));
	return 0;
}

UROCE_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				   uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				   size_t entry_size)
{
	struct ibv_gid_entry e;
	int err;

	if (flags || entry_size < sizeof(e))
		return EINVAL;
	err = gid_entry(to_uctx(context), port_num, gid_index, &e);
	if (err)
		return err;
	return copy_entry(entry, &e, entry_size);
}

UROCE_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					  struct ibv_gid_entry *entries, size_t max_entries,
					  uint32_t flags, size_t entry_size)
{
	struct uroce_context *ctx = to_uctx(context);
	size_t n = 0;

	if (flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	for (uint32_t i = 0; i < UROCE_GID_TBL_LEN; i++) {
		struct ibv_gid_entry e;

		if (gid_entry(ctx, UROCE_PORT_NUM, i, &e))
			continue;
		/* More valid GIDs than room: the kernel's answer is EINVAL. */
		if (n == max_entries)
			return -EINVAL;
		copy_entry((char *)entries + n * entry_size, &e, entry_size);
		n++;
	}
	return n;
}

UROCE_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			       union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int err;

	if (index < 0) {
		errno = EINVAL;
		return -1;
	}
	err = gid_entry(to_uctx(context), port_num, index, &e);
	/* rdma-core keeps the old API: an empty slot is a success with the zero GID. */
	if (err == ENODATA) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (err) {
		errno = err;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

UROCE_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				    unsigned int index, enum ibv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int err = gid_entry(to_uctx(context), port_num, index, &e);

	if (err == ENODATA) {
		*type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1; /* as rdma-core answers for an empty slot */
		return 0;
	}
	if (err) {
		errno = err;
		return -1;
	}
	*type = IBV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

UROCE_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
				__be16 *pkey)
{
	(void)context;
	if (port_num != UROCE_PORT_NUM || index < 0 || index >= UROCE_PKEY_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(UROCE_DEFAULT_PKEY);
	return 0;
}

UROCE_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	for (int i = 0; i < UROCE_PKEY_TBL_LEN; i++) {
		__be16 entry;

		if (ibv_query_pkey(context, port_num, i, &entry))
			return -1;
		if (entry == pkey)
			return i;
	}
	errno = ENOENT;
	return -1;
}
