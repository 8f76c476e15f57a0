// SPDX-License-Identifier: MIT
/*
 * RDMA netlink for uroce's devices (nldev.h): the kernel's rdma_nl_rcv_skb() and
 * rdma_nl_rcv_msg() (drivers/infiniband/core/netlink.c), netlink_ack() and netlink_dump()
 * (net/netlink/af_netlink.c), and the nldev handlers uroce serves (drivers/infiniband/core/
 * nldev.c; the resource commands are nldev_res.c's), with the attribute order of Linux 6.1's
 * answers for rxe.
 */
#include "verbs-shim/nldev.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/iface.h"
#include "verbs-shim/nldev_int.h"

void nldev_emit(struct nldev_answer *an, const void *buf, size_t len)
{
	if (!an->err)
		an->err = an->emit(an->arg, buf, len);
}

static void flush(struct nldev_answer *an)
{
	if (an->dgram_len)
		nldev_emit(an, an->dgram, an->dgram_len);
	an->dgram_len = 0;
}

/* A dump's message @b: into the datagram being filled, sending that one first when full. */
void nldev_dump_add(struct nldev_answer *an, const struct nlb *b)
{
	if (an->dgram_len + b->len > sizeof(an->dgram))
		flush(an);
	memcpy(an->dgram + an->dgram_len, b->buf, b->len);
	an->dgram_len += b->len;
}

/* netlink_dump()'s end: the data, then NLMSG_DONE with the dump's errno, a datagram of its own. */
int nldev_dump_done(struct nldev_answer *an, int err)
{
	uint8_t buf[NLMSG_HDRLEN + sizeof(int32_t)];
	struct nlb b = {buf, sizeof(buf), 0, 0, false};
	int32_t e = err;
	void *p;

	flush(an);
	nlb_start(&b, NLMSG_DONE, NLM_F_MULTI, an->req->nlmsg_seq, an->s->portid);
	p = nlb_room(&b, sizeof(e));
	if (p)
		memcpy(p, &e, sizeof(e));
	nlb_end(&b);
	nldev_emit(an, buf, b.len);
	return -EINTR; /* the dump answered for itself: no acknowledgment */
}

/*
 * netlink_ack(): NLMSG_ERROR with @err (0: an acknowledgment) for the message @h, followed by
 * the request's header (NLM_F_CAPPED: on success, with NETLINK_CAP_ACK, or when @whole is
 * false) or the whole request, then, with NETLINK_EXT_ACK, the message and the bad attribute's
 * offset (NLM_F_ACK_TLVS; no NLMSGERR_ATTR_POLICY).
 */
static void ack(struct nldev_answer *an, const struct nlmsghdr *h, int err, bool whole)
{
	const struct uroce_nldev_sock *s = an->s;
	bool capped = !err || s->cap_ack || !whole;
	size_t copy = capped ? NLMSG_HDRLEN : h->nlmsg_len;
	bool tlv_msg = s->ext_ack && an->ext.msg;
	bool tlv_offs = s->ext_ack && err && an->ext.bad_off;
	size_t size = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(int32_t) + copy);
	uint16_t flags = capped ? NLM_F_CAPPED : 0;
	struct nlb b;
	uint8_t *p;

	if (tlv_msg)
		size += NLA_ALIGN(NLA_HDRLEN + strlen(an->ext.msg) + 1);
	if (tlv_offs)
		size += NLA_ALIGN(NLA_HDRLEN + sizeof(uint32_t));
	if (tlv_msg || tlv_offs)
		flags |= NLM_F_ACK_TLVS;
	b = (struct nlb){malloc(size), size, 0, 0, false};
	if (!b.buf) {
		an->err = ENOMEM;
		return;
	}
	nlb_start(&b, NLMSG_ERROR, flags, h->nlmsg_seq, s->portid);
	p = nlb_room(&b, sizeof(int32_t) + copy);
	if (p) {
		int32_t e = err;

		memcpy(p, &e, sizeof(e));
		memcpy(p + sizeof(e), h, copy);
	}
	if (tlv_msg)
		nlb_put_str(&b, NLMSGERR_ATTR_MSG, an->ext.msg);
	if (tlv_offs)
		nlb_put_u32(&b, NLMSGERR_ATTR_OFFS, (uint32_t)an->ext.bad_off);
	nlb_end(&b);
	if (!(flags & NLM_F_ACK_TLVS)) {
		/* __nlmsg_put()'s length, not rounded up: the request's may not be */
		uint32_t n = (uint32_t)(NLMSG_HDRLEN + sizeof(int32_t) + copy);

		memcpy(b.buf, &n, sizeof(n));
	}
	nldev_emit(an, b.buf, b.len);
	free(b.buf);
}

/* ib_device_get_by_index(): the device whose index (uverbs number) is @index, or NULL. */
const struct uroce_sysview_dev *nldev_dev_by_index(const struct uroce_nldev_view *v, uint32_t index,
						   size_t *pos)
{
	for (int i = 0; i < v->sys->ndevs; i++)
		if (v->sys->devs[i].index == index) {
			if (pos)
				*pos = (size_t)i;
			return &v->sys->devs[i];
		}
	return NULL;
}

/* fill_nldev_handle() */
void nldev_fill_handle(struct nlb *b, const struct uroce_sysview_dev *d)
{
	nlb_put_u32(b, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	nlb_put_str(b, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
}

/*
 * fill_dev_info(): the handle, the last port, the device's capabilities (ibv_query_device's),
 * the firmware version (as ibv_query_device's fw_ver and sysfs' fw_ver: the kernel puts it when
 * the driver has one), node and system image GUIDs, node type CA, no adaptive moderation
 * (use_cq_dim), and the protocol of port 1: "roce".
 */
static void fill_dev_info(struct nlb *b, const struct uroce_sysview_dev *d)
{
	nldev_fill_handle(b, d);
	nlb_put_u32(b, RDMA_NLDEV_ATTR_PORT_INDEX, UROCE_PORT_NUM);
	nlb_put_u64(b, RDMA_NLDEV_ATTR_CAP_FLAGS, UROCE_DEVICE_CAP_FLAGS);
	if (UROCE_VERSION[0])
		nlb_put_str(b, RDMA_NLDEV_ATTR_FW_VERSION, UROCE_VERSION);
	nlb_put_u64(b, RDMA_NLDEV_ATTR_NODE_GUID, be64toh(d->guid));
	nlb_put_u64(b, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, be64toh(d->guid));
	nlb_put_u8(b, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA);
	nlb_put_u8(b, RDMA_NLDEV_ATTR_DEV_DIM, 0);
	nlb_put_str(b, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce");
}

/*
 * fill_port_info() of a RoCE port: the handle, the port, its state and physical state (as
 * ibv_query_port and sysfs give them, iface.h), and the netdev. CAP_FLAGS, SUBNET_PREFIX, LID,
 * SM_LID and LMC go to InfiniBand ports only (rdma_protocol_ib()).
 */
static void fill_port_info(struct nlb *b, const struct uroce_sysview_dev *d, uint32_t port)
{
	nldev_fill_handle(b, d);
	nlb_put_u32(b, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	nlb_put_u8(b, RDMA_NLDEV_ATTR_PORT_STATE, (uint8_t)uroce_iface_port_state(d->ifflags));
	nlb_put_u8(b, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, uroce_iface_phys_state(d->ifflags));
	if (d->ifindex) { /* 0: the interface went away while it was read */
		nlb_put_u32(b, RDMA_NLDEV_ATTR_NDEV_INDEX, d->ifindex);
		nlb_put_str(b, RDMA_NLDEV_ATTR_NDEV_NAME, d->ifname);
	}
}

/* The attributes of the request, liberally (nlmsg_parse_deprecated) or strictly; a refusal is
 * counted as malformed. */
int nldev_parse_req(struct nldev_answer *an, bool strict, const struct nlattr **tb)
{
	int err = uroce_nldev_parse(an->req, strict, tb, &an->ext);

	if (err || an->ext.msg)
		an->cnt->malformed++;
	return err;
}

/* nldev_get_doit() */
static int get_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	const struct uroce_sysview_dev *d;

	if (nldev_parse_req(an, false, tb) || !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
		return -EINVAL;
	d = nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), NULL);
	if (!d)
		return -EINVAL;
	REPLY(an, RDMA_NLDEV_CMD_GET, fill_dev_info(b, d));
	return 0;
}

/* nldev_get_dumpit(): every device; the request's attributes are not read. */
static int get_dump(struct nldev_answer *an)
{
	DUMP_EACH(an, RDMA_NLDEV_CMD_GET, fill_dev_info(b, d));
	return nldev_dump_done(an, 0);
}

/* nldev_port_get_doit(): the reply's type is RDMA_NLDEV_CMD_GET, as the kernel's is. */
static int port_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	const struct uroce_sysview_dev *d;
	uint32_t port;

	if (nldev_parse_req(an, false, tb) || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		return -EINVAL;
	d = nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), NULL);
	if (!d)
		return -EINVAL;
	port = nla_get_u32_(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (port != UROCE_PORT_NUM) /* rdma_is_port_valid() */
		return -EINVAL;
	REPLY(an, RDMA_NLDEV_CMD_GET, fill_port_info(b, d, port));
	return 0;
}

/* nldev_port_get_dumpit(): the ports of the device the request names; errors go in DONE. */
static int port_dump(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	const struct uroce_sysview_dev *dev;

	if (nldev_parse_req(an, false, tb) || !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
		return nldev_dump_done(an, -EINVAL);
	dev = nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), NULL);
	if (!dev)
		return nldev_dump_done(an, -EINVAL);
	{
		uint8_t buf[NLDEV_MSG_MAX];
		struct nlb b = {buf, sizeof(buf), 0, 0, false};

		nlb_start(&b, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET), NLM_F_MULTI,
			  an->req->nlmsg_seq, an->s->portid);
		fill_port_info(&b, dev, UROCE_PORT_NUM);
		nlb_end(&b);
		if (!b.full)
			nldev_dump_add(an, &b);
	}
	return nldev_dump_done(an, 0);
}

/*
 * nldev_sys_get_doit(): the namespace mode and copy-on-fork. uroce's devices are those of the
 * interfaces of the asking process's network namespace, as the kernel's are in exclusive mode
 * (ib_devices_shared_netns false: a device lives in one namespace); copy-on-fork is what
 * ibv_is_fork_initialized() says (IBV_FORK_UNNEEDED: nothing is pinned, a child's writes copy).
 */
static int sys_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	int err = nldev_parse_req(an, true, tb);

	if (err)
		return err;
	REPLY(an, RDMA_NLDEV_CMD_SYS_GET, {
		nlb_put_u8(b, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0);
		nlb_put_u8(b, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
	});
	return 0;
}

/*
 * nldev_get_chardev() with ib_get_client_nl_info(): the character device of a client. "uverbs"
 * of a device, without a port (ib_uverbs_get_nl_info(): EINVAL with one): uverbsN, 231:192+N,
 * the driver's ABI, as /sys/class/infiniband_verbs/uverbsN holds them. No
 * RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: uroce has no kernel driver for a provider to bind to
 * (ops.uverbs_no_driver_id_binding). "rdma_cm" of no device (ucma_get_global_nl_info()):
 * /dev/infiniband/rdma_cm. Any other client, or one asked of the wrong kind of target, is
 * EOPNOTSUPP, as a client without the callback or not loaded (umad: not served).
 */
static int chardev_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	const struct uroce_sysview_dev *d = NULL;
	char client[RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE];
	const struct nlattr *t;
	unsigned int major, minor;
	uint64_t abi;
	char name[32];
	bool has_port;
	size_t n;

	if (nldev_parse_req(an, true, tb) || !tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE])
		return -EINVAL;
	/* nla_strscpy() */
	t = tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE];
	n = t->nla_len - NLA_HDRLEN;
	if (n > sizeof(client) - 1)
		n = sizeof(client) - 1;
	memcpy(client, (const uint8_t *)t + NLA_HDRLEN, n);
	client[n] = '\0';
	has_port = tb[RDMA_NLDEV_ATTR_PORT_INDEX] != NULL;
	if (tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
		d = nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), NULL);
		if (!d)
			return -EINVAL;
		if (has_port && nla_get_u32_(tb[RDMA_NLDEV_ATTR_PORT_INDEX]) != UROCE_PORT_NUM)
			return -EINVAL;
	} else if (has_port) {
		return -EINVAL;
	}
	if (d && !strcmp(client, "uverbs")) {
		if (has_port)
			return -EINVAL;
		major = UROCE_UVERBS_MAJOR;
		minor = UROCE_UVERBS_MINOR_BASE + d->index;
		abi = UROCE_UVERBS_DEV_ABI;
		snprintf(name, sizeof(name), "uverbs%u", d->index);
	} else if (!d && !strcmp(client, "rdma_cm")) {
		major = UROCE_RDMA_CM_MAJOR;
		minor = UROCE_RDMA_CM_MINOR;
		abi = RDMA_USER_CM_ABI_VERSION;
		snprintf(name, sizeof(name), "rdma_cm");
	} else {
		return -EOPNOTSUPP;
	}
	REPLY(an, RDMA_NLDEV_CMD_GET_CHARDEV, {
		nlb_put_u64(b, RDMA_NLDEV_ATTR_CHARDEV, uroce_nldev_encode_dev(major, minor));
		nlb_put_u64(b, RDMA_NLDEV_ATTR_CHARDEV_ABI, abi);
		nlb_put_str(b, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
	});
	return 0;
}

/* nldev_cb_table (6.1): which commands have a doit and a dump in the kernel, which need
 * CAP_NET_ADMIN, and uroce's handlers (NULL: not served). */
struct cmd {
	bool doit, dump, admin;
	int (*do_fn)(struct nldev_answer *);
	int (*dump_fn)(struct nldev_answer *);
};

/* clang-format off */
static const struct cmd cmds[RDMA_NLDEV_NUM_OPS] = {
	[RDMA_NLDEV_CMD_GET]		 = { true, true, false, get_doit, get_dump },
	[RDMA_NLDEV_CMD_SET]		 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_NEWLINK]	 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_DELLINK]	 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_PORT_GET]	 = { true, true, false, port_doit, port_dump },
	[RDMA_NLDEV_CMD_SYS_GET]	 = { true, false, false, sys_doit, NULL },
	[RDMA_NLDEV_CMD_SYS_SET]	 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_GET]	 = { true, true, false, nldev_res_doit, nldev_res_dump },
	[RDMA_NLDEV_CMD_RES_QP_GET]	 = { true, true, false, nldev_res_qp_doit, nldev_res_qp_dump },
	[RDMA_NLDEV_CMD_RES_CM_ID_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_CQ_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_MR_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_PD_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_GET_CHARDEV]	 = { true, false, false, chardev_doit, NULL },
	[RDMA_NLDEV_CMD_STAT_SET]	 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_STAT_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_STAT_DEL]	 = { true, false, true, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_QP_GET_RAW]	 = { true, true, true, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_CQ_GET_RAW]	 = { true, true, true, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_MR_GET_RAW]	 = { true, true, true, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_CTX_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_RES_SRQ_GET]	 = { true, true, false, NULL, NULL },
	[RDMA_NLDEV_CMD_STAT_GET_STATUS] = { true, false, false, NULL, NULL },
};
/* clang-format on */

#define NOT_SERVED_MSG "uroce does not serve this RDMA netlink command (docs/UNSUPPORTED.md)"

/* rdma_nl_rcv_msg() for one request; -EINTR when a dump has answered for itself. */
static int rcv_msg(struct nldev_answer *an)
{
	const struct nlmsghdr *h = an->req;
	unsigned int client = RDMA_NL_GET_CLIENT(h->nlmsg_type);
	unsigned int op = RDMA_NL_GET_OP(h->nlmsg_type);
	const struct cmd *c;

	/* is_nl_valid(): only the NLDEV client is served, and only its commands with handlers. */
	if (client != RDMA_NL_NLDEV || op >= RDMA_NLDEV_NUM_OPS)
		return -EINVAL;
	c = &cmds[op];
	if (!c->doit && !c->dump)
		return -EINVAL;
	if (c->admin && !an->s->net_admin)
		return -EPERM;
	if (h->nlmsg_flags & NLM_F_DUMP) {
		if (!c->dump)
			return -EINVAL;
		if (c->dump_fn)
			return c->dump_fn(an);
	} else if (c->do_fn) {
		return c->do_fn(an);
	}
	an->cnt->unsupported++;
	an->ext.msg = NOT_SERVED_MSG;
	return -EOPNOTSUPP;
}

/* A header the kernel would drop unanswered: NLMSG_ERROR EINVAL for the @n bytes there are. */
static void refuse_header(struct nldev_answer *an, const void *p, size_t n)
{
	struct nlmsghdr h = {0};

	if (n)
		memcpy(&h, p, n < sizeof(h) ? n : sizeof(h));
	an->cnt->malformed++;
	an->ext = (struct uroce_nldev_ext){"Invalid header length", 0};
	ack(an, &h, -EINVAL, false);
}

int uroce_nldev_answer(const struct uroce_nldev_view *v, const struct uroce_nldev_sock *s,
		       const void *req, size_t len, uroce_nldev_emit_fn emit_fn, void *arg,
		       struct uroce_nldev_counters *cnt)
{
	struct nldev_answer *an = malloc(sizeof(*an));
	const uint8_t *p = req;
	int ret;

	if (!an)
		return ENOMEM;
	*an = (struct nldev_answer){.v = v, .s = s, .cnt = cnt, .emit = emit_fn, .arg = arg};
	if (len < NLMSG_HDRLEN)
		refuse_header(an, p, len);
	/* rdma_nl_rcv_skb(): each message of the datagram in turn. */
	while (len >= NLMSG_HDRLEN && !an->err) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)p;
		size_t msglen;
		int err = 0;

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len) {
			refuse_header(an, p, len);
			break;
		}
		cnt->requests++;
		an->req = h;
		an->ext = (struct uroce_nldev_ext){0};
		/* Only requests are taken (RDMA_NL_LS aside, whose messages go to rcv_msg's
		 * refusal anyway); control messages are skipped. */
		if (((h->nlmsg_flags & NLM_F_REQUEST) ||
		     RDMA_NL_GET_CLIENT(h->nlmsg_type) == RDMA_NL_LS) &&
		    h->nlmsg_type >= NLMSG_MIN_TYPE)
			err = rcv_msg(an);
		if (err != -EINTR && ((h->nlmsg_flags & NLM_F_ACK) || err))
			ack(an, h, err, true);
		msglen = NLMSG_ALIGN(h->nlmsg_len);
		if (msglen > len)
			msglen = len;
		p += msglen;
		len -= msglen;
	}
	ret = an->err;
	free(an);
	return ret;
}
