// SPDX-License-Identifier: MIT
/*
 * A request's attributes under the kernel's nldev_policy (drivers/infiniband/core/nldev.c,
 * Linux 6.1), validated as lib/nlattr.c's __nla_validate_parse() and validate_nla() do
 * (nldev.h uroce_nldev_parse).
 */
#include <errno.h>
#include <string.h>

#include "verbs-shim/nldev_int.h"

/* nldev_policy (6.1): each attribute's kind and length. No entry: NLA_UNSPEC. */
enum pol_kind {
	P_UNSPEC = 0,
	P_U8,
	P_U32,
	P_U64,
	P_S32,
	P_S64,
	P_NUL_STRING,
	P_NESTED,
	P_BINARY,
};

struct pol {
	uint8_t kind;
	uint16_t len;
};

/* clang-format off */
static const struct pol policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_CHARDEV]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_CHARDEV_ABI]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_CHARDEV_NAME]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_CHARDEV_TYPE]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE },
	[RDMA_NLDEV_ATTR_DEV_DIM]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_DEV_INDEX]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_DEV_NAME]		= { P_NUL_STRING, IB_DEVICE_NAME_MAX },
	[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_DEV_PROTOCOL]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_DRIVER]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE]	= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_STRING]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_DRIVER_S32]		= { P_S32, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_S64]		= { P_S64, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_U32]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_DRIVER_U64]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_FW_VERSION]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_LID]			= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_LINK_TYPE]		= { P_NUL_STRING, KERNEL_IFNAMSIZ },
	[RDMA_NLDEV_ATTR_LMC]			= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_NDEV_INDEX]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_NDEV_NAME]		= { P_NUL_STRING, KERNEL_IFNAMSIZ },
	[RDMA_NLDEV_ATTR_NODE_GUID]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_PORT_INDEX]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_PORT_PHYS_STATE]	= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_PORT_STATE]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_RES_CM_ID]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_CM_IDN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY]	= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_CQ]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_CQE]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_CQN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_CQ_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_CTX]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_CTXN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_CTX_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_DST_ADDR]		= { P_UNSPEC, KERNEL_SOCKADDR_STORAGE },
	[RDMA_NLDEV_ATTR_RES_IOVA]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_RES_KERN_NAME]		= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_RES_LKEY]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY]	= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_LQPN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_MR]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_MRLEN]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_RES_MRN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_MR_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE]	= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_RES_PD]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_PDN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_PD_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_PID]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_POLL_CTX]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_RES_PS]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_QP]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_QP_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_RAW]		= { P_BINARY, 0 },
	[RDMA_NLDEV_ATTR_RES_RKEY]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_RQPN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_RQ_PSN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_SQ_PSN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_SRC_ADDR]		= { P_UNSPEC, KERNEL_SOCKADDR_STORAGE },
	[RDMA_NLDEV_ATTR_RES_STATE]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_RES_SUMMARY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY]	= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR]= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME]= { P_NUL_STRING, RDMA_NLDEV_ATTR_EMPTY_STRING },
	[RDMA_NLDEV_ATTR_RES_TYPE]		= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY]= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_USECNT]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_RES_SRQ]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_RES_SRQN]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_RES_SRQ_ENTRY]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_MIN_RANGE]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_MAX_RANGE]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_SM_LID]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_SUBNET_PREFIX]		= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK]	= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_STAT_MODE]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_STAT_RES]		= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_STAT_COUNTER]		= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY]	= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ID]	= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS]	= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY]	= { P_NESTED, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME] = { P_NUL_STRING, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE] = { P_U64, 0 },
	[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID]	= { P_U64, 0 },
	[RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID]	= { P_U32, 0 },
	[RDMA_NLDEV_NET_NS_FD]			= { P_U32, 0 },
	[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]	= { P_U8, 0 },
	[RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK]	= { P_U8, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX]	= { P_U32, 0 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC] = { P_U8, 0 },
};
/* clang-format on */

/* nla_attr_len[] and nla_attr_minlen[] of lib/nlattr.c: the exact size of a fixed-size kind. */
static size_t fixed_len(uint8_t kind)
{
	switch (kind) {
	case P_U8:
		return 1;
	case P_U32:
	case P_S32:
		return 4;
	case P_U64:
	case P_S64:
		return 8;
	default:
		return 0;
	}
}

#define POLICY_MSG "Attribute failed policy validation"

/* lib/nlattr.c validate_nla() for one attribute @a (@alen bytes of payload). */
static int validate(const struct nlattr *a, size_t alen, const uint8_t *data, bool strict,
		    const char **msg)
{
	const struct pol *pt = &policy[a->nla_type & NLA_TYPE_MASK];
	size_t fixed = fixed_len(pt->kind);
	bool nested_flag = a->nla_type & NLA_F_NESTED;

	if (strict && fixed && alen != fixed) {
		*msg = "invalid attribute length";
		return -EINVAL;
	}
	if (strict && pt->kind == P_NESTED && !nested_flag) {
		*msg = "NLA_F_NESTED is missing";
		return -EINVAL;
	}
	if (strict && pt->kind != P_NESTED && pt->kind != P_UNSPEC && nested_flag) {
		*msg = "NLA_F_NESTED not expected";
		return -EINVAL;
	}
	switch (pt->kind) {
	case P_UNSPEC:
		if (strict) {
			*msg = "Unsupported attribute";
			return -EINVAL;
		}
		if (alen < pt->len)
			goto out_err;
		return 0;
	case P_NUL_STRING: {
		size_t minlen = pt->len && alen > pt->len + 1u ? pt->len + 1u : alen;

		if (!minlen || !memchr(data, '\0', minlen)) {
			*msg = POLICY_MSG;
			return -EINVAL;
		}
		if (pt->len && alen - (data[alen - 1] == '\0') > pt->len)
			goto out_err;
		return 0;
	}
	case P_NESTED:
		if (alen && alen < NLA_HDRLEN)
			goto out_err;
		return 0;
	case P_BINARY:
		if (pt->len && alen > pt->len)
			goto out_err;
		return 0;
	default:
		if (alen < fixed)
			goto out_err;
		return 0;
	}
out_err:
	*msg = POLICY_MSG;
	return -ERANGE;
}

int uroce_nldev_parse(const struct nlmsghdr *h, bool strict, const struct nlattr **tb,
		      struct uroce_nldev_ext *ext)
{
	const uint8_t *base = (const uint8_t *)h;
	size_t off = NLMSG_HDRLEN, end = h->nlmsg_len;
	struct uroce_nldev_ext e = {0};
	int err = 0;

	memset(tb, 0, sizeof(*tb) * RDMA_NLDEV_ATTR_MAX);
	if (end < off)
		end = off;
	/* nla_for_each_attr: an attribute is taken while its header and length fit. */
	while (end - off >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)(base + off);
		uint16_t type = a->nla_type & NLA_TYPE_MASK;

		if (a->nla_len < NLA_HDRLEN || a->nla_len > end - off)
			break;
		if (type == 0 || type >= RDMA_NLDEV_ATTR_MAX) {
			if (strict) {
				e = (struct uroce_nldev_ext){"Unknown attribute type", off};
				err = -EINVAL;
				goto out;
			}
		} else {
			err = validate(a, a->nla_len - NLA_HDRLEN, base + off + NLA_HDRLEN, strict,
				       &e.msg);
			if (err) {
				e.bad_off = off;
				goto out;
			}
			tb[type] = a;
		}
		off += NLA_ALIGN(a->nla_len);
	}
	if (off < end) {
		/* __nla_validate_parse: leftover bytes are an error only when strict, but the
		 * message stays in either case. */
		e.msg = "bytes leftover after parsing attributes";
		if (strict)
			err = -EINVAL;
	}
out:
	if (ext)
		*ext = e;
	return err;
}
