// SPDX-License-Identifier: MIT
/*
 * RDMA netlink for uroce's devices (verbs-shim/nldev.h), pure: request datagrams in, answer
 * datagrams out, checked byte for byte against what Linux 6.1 answered for rxe
 * (tests/discovery/rxe-reference.txt, section 5b: strace of `rdma link show`, `rdma dev show`
 * and ibv_devices), and against the kernel's rules for errors and malformed requests.
 */
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/nldev.h"

/* The answer's datagrams. */
#define MAX_DGRAMS 64
static struct {
	uint8_t *buf;
	size_t len;
} out[MAX_DGRAMS];
static int nout;

static int collect(void *arg, const void *dgram, size_t len)
{
	(void)arg;
	cr_assert_lt(nout, MAX_DGRAMS);
	out[nout].buf = malloc(len);
	memcpy(out[nout].buf, dgram, len);
	out[nout].len = len;
	nout++;
	return 0;
}

static struct uroce_sysview_dev devs[64];
static struct uroce_sysview sys = {devs, 1};
static uint64_t res[64][UROCE_RES_NUM];
static struct uroce_nldev_view view = {&sys, NULL, NULL, 0};
/* rdma's socket in the reference: NETLINK_CAP_ACK and NETLINK_EXT_ACK set. */
static struct uroce_nldev_sock sock = {(uint32_t)-991831471, true, true, false};
static struct uroce_nldev_counters cnt;

/* rxe0 on eth0 (ifindex 2) of the reference VM: uverbs0, active, GUID 5054:00ff:fe77:0002. */
static void setup(void)
{
	memset(devs, 0, sizeof(devs));
	memset(res, 0, sizeof(res));
	memset(&cnt, 0, sizeof(cnt));
	strcpy(devs[0].name, "rxe0");
	strcpy(devs[0].ifname, "eth0");
	devs[0].ifindex = 2;
	devs[0].index = 0;
	devs[0].ifflags = IFF_UP | IFF_RUNNING;
	devs[0].guid = htobe64(0x505400fffe770002ull);
	sys.ndevs = 1;
	view = (struct uroce_nldev_view){&sys, NULL, NULL, 0};
	sock = (struct uroce_nldev_sock){(uint32_t)-991831471, true, true, false};
	nout = 0;
}

/* Forget the answers so far. */
static void teardown(void)
{
	for (int i = 0; i < nout; i++)
		free(out[i].buf);
	nout = 0;
}

TestSuite(nldev, .init = setup, .fini = teardown);

static int answer(const void *req, size_t len)
{
	return uroce_nldev_answer(&view, &sock, req, len, collect, NULL, &cnt);
}

/* A request: header and attributes. */
struct req {
	uint8_t buf[512];
	size_t len;
};

static void req_start(struct req *r, uint16_t op, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr h = {NLMSG_HDRLEN, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op), flags, seq, 0};

	memcpy(r->buf, &h, sizeof(h));
	r->len = sizeof(h);
}

static void req_attr(struct req *r, uint16_t type, const void *data, size_t n)
{
	struct nlattr a = {(uint16_t)(NLA_HDRLEN + n), type};
	uint32_t len;

	memset(r->buf + r->len, 0, NLA_ALIGN(NLA_HDRLEN + n));
	memcpy(r->buf + r->len, &a, sizeof(a));
	memcpy(r->buf + r->len + NLA_HDRLEN, data, n);
	r->len += NLA_ALIGN(NLA_HDRLEN + n);
	len = (uint32_t)r->len;
	memcpy(r->buf, &len, sizeof(len));
}

static void req_u32(struct req *r, uint16_t type, uint32_t v)
{
	req_attr(r, type, &v, sizeof(v));
}

static struct nlmsghdr hdr_of(int dgram, size_t off)
{
	struct nlmsghdr h;

	cr_assert_lt(dgram, nout);
	cr_assert_leq(off + sizeof(h), out[dgram].len);
	memcpy(&h, out[dgram].buf + off, sizeof(h));
	return h;
}

/* The error of the NLMSG_ERROR in datagram @dgram, and its flags in *flags. */
static int error_of(int dgram, uint16_t *flags)
{
	struct nlmsghdr h = hdr_of(dgram, 0);
	int32_t e;

	cr_assert_eq(h.nlmsg_type, NLMSG_ERROR, "datagram %d is type %#x", dgram, h.nlmsg_type);
	memcpy(&e, out[dgram].buf + NLMSG_HDRLEN, sizeof(e));
	if (flags)
		*flags = h.nlmsg_flags;
	return e;
}

/* The attribute @type of the message at the start of datagram @dgram (NULL if absent); answers
 * hold attributes the request policy refuses (a FW_VERSION), so they are walked here. */
static const struct nlattr *attr_of(int dgram, uint16_t type)
{
	struct nlmsghdr h = hdr_of(dgram, 0);
	size_t off = NLMSG_HDRLEN;

	cr_assert_leq(h.nlmsg_len, out[dgram].len);
	while (off + NLA_HDRLEN <= h.nlmsg_len) {
		const struct nlattr *a = (const void *)(out[dgram].buf + off);

		cr_assert_geq(a->nla_len, NLA_HDRLEN);
		cr_assert_leq(off + a->nla_len, h.nlmsg_len);
		if (a->nla_type == type)
			return a;
		off += NLA_ALIGN(a->nla_len);
	}
	cr_assert_eq(off, h.nlmsg_len);
	return NULL;
}

/* The reference's reply to `rdma link show`'s RDMA_NLDEV_CMD_PORT_GET for rxe0/1 (80 bytes). */
static const uint8_t rxe_port_attrs[] = {
	0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x02, 0x00, 0x72,
	0x78, 0x65, 0x30, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x03, 0x00, 0x01, 0x00,
	0x00, 0x00, 0x05, 0x00, 0x0c, 0x00, 0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x0d,
	0x00, 0x05, 0x00, 0x00, 0x00, 0x08, 0x00, 0x32, 0x00, 0x02, 0x00, 0x00, 0x00,
	0x09, 0x00, 0x33, 0x00, 0x65, 0x74, 0x68, 0x30, 0x00, 0x00, 0x00, 0x00};

Test(nldev, port_get_doit_is_rxes_bytes)
{
	struct req r;
	struct nlmsghdr want = {80, 0x1401, 0, 1795777556, (uint32_t)-991831471};
	struct nlmsghdr ack = {36, NLMSG_ERROR, NLM_F_CAPPED, 1795777556, (uint32_t)-991831471};
	uint16_t flags;

	req_start(&r, RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_ACK, 1795777556);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	cr_assert_eq(r.len, 32);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	/* The kernel's reply to PORT_GET carries RDMA_NLDEV_CMD_GET's type (nldev_port_get_doit) */
	cr_assert_eq(out[0].len, 80);
	cr_assert_eq(memcmp(out[0].buf, &want, sizeof(want)), 0);
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN, rxe_port_attrs, sizeof(rxe_port_attrs)), 0);
	/* then the acknowledgment, capped: the request's header only */
	cr_assert_eq(out[1].len, 36);
	cr_assert_eq(memcmp(out[1].buf, &ack, sizeof(ack)), 0);
	cr_assert_eq(error_of(1, &flags), 0);
	cr_assert_eq(memcmp(out[1].buf + NLMSG_HDRLEN + 4, r.buf, NLMSG_HDRLEN), 0);
	cr_assert_eq(cnt.requests, 1);
	cr_assert_eq(cnt.malformed, 0);
}

/* The attributes of rxe0's RDMA_NLDEV_CMD_GET answer (108 bytes less the header), in pieces:
 * handle and port count; CAP_FLAGS (rxe's); GUIDs, node type, DIM, protocol. */
static const uint8_t rxe_dev_head[] = {0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00,
				       0x02, 0x00, 0x72, 0x78, 0x65, 0x30, 0x00, 0x00, 0x00, 0x00,
				       0x08, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00};
static const uint8_t rxe_dev_caps[] = {0x0c, 0x00, 0x04, 0x00, 0x76, 0x3c,
				       0x22, 0x01, 0x00, 0x00, 0x00, 0x00};
static const uint8_t rxe_dev_tail[] = {
	0x0c, 0x00, 0x06, 0x00, 0x02, 0x00, 0x77, 0xfe, 0xff, 0x00, 0x54, 0x50, 0x0c,
	0x00, 0x07, 0x00, 0x02, 0x00, 0x77, 0xfe, 0xff, 0x00, 0x54, 0x50, 0x05, 0x00,
	0x0e, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x54, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x09, 0x00, 0x43, 0x00, 0x72, 0x6f, 0x63, 0x65, 0x00, 0x00, 0x00, 0x00};

/* rxe's attributes, with uroce's capabilities and, after them, its firmware version. */
static size_t expected_dev_attrs(uint8_t *buf)
{
	uint64_t caps = UROCE_DEVICE_CAP_FLAGS;
	size_t n = 0, fw = strlen(UROCE_VERSION) + 1;
	struct nlattr a = {(uint16_t)(NLA_HDRLEN + fw), RDMA_NLDEV_ATTR_FW_VERSION};

	memcpy(buf, rxe_dev_head, sizeof(rxe_dev_head));
	n += sizeof(rxe_dev_head);
	memcpy(buf + n, rxe_dev_caps, 4);
	memcpy(buf + n + 4, &caps, sizeof(caps));
	n += sizeof(rxe_dev_caps);
	memset(buf + n, 0, NLA_ALIGN(NLA_HDRLEN + fw));
	memcpy(buf + n, &a, sizeof(a));
	memcpy(buf + n + NLA_HDRLEN, UROCE_VERSION, fw);
	n += NLA_ALIGN(NLA_HDRLEN + fw);
	memcpy(buf + n, rxe_dev_tail, sizeof(rxe_dev_tail));
	return n + sizeof(rxe_dev_tail);
}

Test(nldev, get_dump_is_rxes_with_uroces_caps_and_fw)
{
	uint8_t want[256];
	size_t n = expected_dev_attrs(want);
	struct nlmsghdr h, done = {20, NLMSG_DONE, NLM_F_MULTI, 1795777556, 1069};
	struct req r;
	int32_t e = 0;

	sock.portid = 1069;
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 1795777556);
	cr_assert_eq(answer(r.buf, r.len), 0);
	/* the data, then NLMSG_DONE in a datagram of its own; no acknowledgment after a dump */
	cr_assert_eq(nout, 2);
	h = hdr_of(0, 0);
	cr_assert_eq(h.nlmsg_len, NLMSG_HDRLEN + n);
	cr_assert_eq(h.nlmsg_type, 0x1401);
	cr_assert_eq(h.nlmsg_flags, NLM_F_MULTI);
	cr_assert_eq(h.nlmsg_pid, 1069);
	cr_assert_eq(out[0].len, NLMSG_HDRLEN + n);
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN, want, n), 0);
	cr_assert_eq(out[1].len, 20);
	cr_assert_eq(memcmp(out[1].buf, &done, sizeof(done)), 0);
	cr_assert_eq(memcmp(out[1].buf + NLMSG_HDRLEN, &e, sizeof(e)), 0);
}

Test(nldev, get_doit_by_index_and_unknown_index)
{
	struct req r;

	strcpy(devs[1].name, "uroce_lo");
	devs[1].index = 1;
	devs[1].guid = htobe64(0x020000fffe000001ull);
	sys.ndevs = 2;
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_ACK, 5);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(hdr_of(0, 0).nlmsg_flags, 0);
	cr_assert_str_eq((const char *)attr_of(0, RDMA_NLDEV_ATTR_DEV_NAME) + NLA_HDRLEN,
			 "uroce_lo");
	cr_assert_eq(error_of(1, NULL), 0);

	/* ib_device_get_by_index() finds none: EINVAL, the whole request without CAP_ACK */
	teardown();
	sock.cap_ack = false;
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 6);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 7);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	uint16_t flags;
	cr_assert_eq(error_of(0, &flags), -EINVAL);
	cr_assert_eq(flags & NLM_F_CAPPED, 0);
	cr_assert_eq(out[0].len, NLMSG_HDRLEN + 4 + r.len);
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN + 4, r.buf, r.len), 0);
}

Test(nldev, port_dump_and_its_errors_in_done)
{
	struct req r;
	int32_t e;

	req_start(&r, RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_DUMP, 9);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type,
		     RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET));
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN, rxe_port_attrs, sizeof(rxe_port_attrs)), 0);
	cr_assert_eq(hdr_of(1, 0).nlmsg_type, NLMSG_DONE);

	/* nldev_port_get_dumpit() without a device: the dump ends with -EINVAL in its DONE */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_DUMP, 10);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type, NLMSG_DONE);
	memcpy(&e, out[0].buf + NLMSG_HDRLEN, sizeof(e));
	cr_assert_eq(e, -EINVAL);
}

Test(nldev, port_down_and_invalid_port)
{
	struct req r;
	const struct nlattr *a;

	devs[0].ifflags = IFF_UP; /* not running: DOWN, Disabled */
	req_start(&r, RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST, 1);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	a = attr_of(0, RDMA_NLDEV_ATTR_PORT_STATE);
	cr_assert_eq(((const uint8_t *)a)[NLA_HDRLEN], IBV_PORT_DOWN);
	a = attr_of(0, RDMA_NLDEV_ATTR_PORT_PHYS_STATE);
	cr_assert_eq(((const uint8_t *)a)[NLA_HDRLEN], 3);

	teardown();
	req_start(&r, RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST, 2);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 2);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
}

/* ibv_devices' RDMA_NLDEV_CMD_GET_CHARDEV in the reference: rxe's answer less its
 * UVERBS_DRIVER_ID (uroce has no kernel driver to bind a provider to). */
static const uint8_t rxe_chardev_attrs[] = {0x0c, 0x00, 0x48, 0x00, 0xc0, 0xe7, 0x00, 0x00, 0x00,
					    0x00, 0x00, 0x00, 0x0c, 0x00, 0x47, 0x00, 0x02, 0x00,
					    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x46,
					    0x00, 0x75, 0x76, 0x65, 0x72, 0x62, 0x73, 0x30, 0x00};

Test(nldev, get_chardev_uverbs_and_rdma_cm)
{
	struct req r;
	const struct nlattr *a;
	uint64_t v;

	/* as libibverbs sends it: no NLM_F_ACK */
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 1795777559);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 7);
	cr_assert_eq(r.len, 36);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type, 0x140f);
	cr_assert_eq(out[0].len, NLMSG_HDRLEN + sizeof(rxe_chardev_attrs));
	cr_assert_eq(
		memcmp(out[0].buf + NLMSG_HDRLEN, rxe_chardev_attrs, sizeof(rxe_chardev_attrs)), 0);

	/* librdmacm's: "rdma_cm" of no device, 10:124, ABI 4 */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 2);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "rdma_cm", 8);
	cr_assert_eq(answer(r.buf, r.len), 0);
	a = attr_of(0, RDMA_NLDEV_ATTR_CHARDEV);
	memcpy(&v, (const uint8_t *)a + NLA_HDRLEN, sizeof(v));
	cr_assert_eq(v, uroce_nldev_encode_dev(10, 124));
	cr_assert_eq(v, 0xa7c);
	a = attr_of(0, RDMA_NLDEV_ATTR_CHARDEV_ABI);
	memcpy(&v, (const uint8_t *)a + NLA_HDRLEN, sizeof(v));
	cr_assert_eq(v, 4);
	cr_assert_str_eq((const char *)attr_of(0, RDMA_NLDEV_ATTR_CHARDEV_NAME) + NLA_HDRLEN,
			 "rdma_cm");

	/* "uverbs" without a device, "umad" (not served), a port for uverbs */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 3);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 7);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EOPNOTSUPP);
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 4);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "umad", 5);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EOPNOTSUPP);
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 5);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 7);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
}

Test(nldev, uverbs_numbers_follow_the_index)
{
	struct req r;
	uint64_t v;

	devs[0].index = 3;
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 1);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 7);
	cr_assert_eq(answer(r.buf, r.len), 0);
	memcpy(&v, (const uint8_t *)attr_of(0, RDMA_NLDEV_ATTR_CHARDEV) + NLA_HDRLEN, sizeof(v));
	cr_assert_eq(v, uroce_nldev_encode_dev(UROCE_UVERBS_MAJOR, UROCE_UVERBS_MINOR_BASE + 3));
	cr_assert_str_eq((const char *)attr_of(0, RDMA_NLDEV_ATTR_CHARDEV_NAME) + NLA_HDRLEN,
			 "uverbs3");
	/* a minor past 255 keeps its high bits above the major (new_encode_dev) */
	cr_assert_eq(uroce_nldev_encode_dev(231, 256 + 192), 0x10e7c0);
}

Test(nldev, sys_get)
{
	struct req r;

	req_start(&r, RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST | NLM_F_ACK, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(((const uint8_t *)attr_of(0, RDMA_NLDEV_SYS_ATTR_NETNS_MODE))[NLA_HDRLEN], 0);
	cr_assert_eq(((const uint8_t *)attr_of(0, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK))[NLA_HDRLEN],
		     1);
	cr_assert_eq(error_of(1, NULL), 0);

	/* a dump of a command without one: EINVAL (rdma_nl_rcv_msg) */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST | NLM_F_DUMP, 2);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
}

/* The summary entry @i (name, count) of a RES_GET message at the start of datagram @dgram. */
static void summary_entry(int dgram, int i, const char **name, uint64_t *curr)
{
	const struct nlattr *table = attr_of(dgram, RDMA_NLDEV_ATTR_RES_SUMMARY);
	const uint8_t *p = (const uint8_t *)table + NLA_HDRLEN;
	const uint8_t *end = (const uint8_t *)table + table->nla_len;

	for (int k = 0; p < end; k++) {
		const struct nlattr *e = (const void *)p;

		cr_assert_eq(e->nla_type, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
		if (k == i) {
			const struct nlattr *n = (const void *)(p + NLA_HDRLEN);
			const struct nlattr *c =
				(const void *)(p + NLA_HDRLEN + NLA_ALIGN(n->nla_len));

			cr_assert_eq(n->nla_type, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME);
			cr_assert_eq(c->nla_type, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR);
			*name = (const char *)n + NLA_HDRLEN;
			memcpy(curr, (const uint8_t *)c + NLA_HDRLEN, sizeof(*curr));
			return;
		}
		p += NLA_ALIGN(e->nla_len);
	}
	cr_assert_fail("no summary entry %d", i);
}

Test(nldev, res_get_summary_in_the_kernels_order)
{
	static const char *const names[] = {"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"};
	const char *name;
	uint64_t curr;
	struct req r;

	for (int i = 0; i < UROCE_RES_NUM; i++)
		res[0][i] = 10 + i;
	view.res = (const uint64_t(*)[UROCE_RES_NUM])res;
	req_start(&r, RDMA_NLDEV_CMD_RES_GET, NLM_F_REQUEST | NLM_F_DUMP, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type,
		     RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_GET));
	for (int i = 0; i < UROCE_RES_NUM; i++) {
		summary_entry(0, i, &name, &curr);
		cr_assert_str_eq(name, names[i]);
		cr_assert_eq(curr, 10u + i);
	}
	/* without counts: zeros */
	teardown();
	view.res = NULL;
	req_start(&r, RDMA_NLDEV_CMD_RES_GET, NLM_F_REQUEST, 2);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	summary_entry(0, 2, &name, &curr);
	cr_assert_eq(curr, 0);
}

Test(nldev, a_dump_fills_datagrams_of_goodsize)
{
	struct req r;
	int msgs = 0;

	for (int i = 0; i < 64; i++) {
		snprintf(devs[i].name, sizeof(devs[i].name), "uroce_veth%d", i);
		devs[i].index = (uint32_t)i;
	}
	sys.ndevs = 64;
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_gt(nout, 2);
	for (int d = 0; d < nout - 1; d++) {
		cr_assert_leq(out[d].len, 3776);
		for (size_t off = 0; off < out[d].len; msgs++) {
			struct nlmsghdr h = hdr_of(d, off);

			cr_assert_eq(h.nlmsg_flags, NLM_F_MULTI);
			off += NLMSG_ALIGN(h.nlmsg_len);
		}
	}
	cr_assert_eq(msgs, 64);
	cr_assert_eq(hdr_of(nout - 1, 0).nlmsg_type, NLMSG_DONE);
}

Test(nldev, unknown_unserved_and_admin_commands)
{
	struct req r;

	/* op 8 has no handler, op past RDMA_NLDEV_NUM_OPS, another client: EINVAL */
	req_start(&r, 8, NLM_F_REQUEST, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	teardown();
	req_start(&r, RDMA_NLDEV_NUM_OPS + 5, NLM_F_REQUEST, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	teardown();
	req_start(&r, 0, NLM_F_REQUEST, 1);
	((struct nlmsghdr *)r.buf)->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_IWCM, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(cnt.unsupported, 0);

	/* the kernel has it, uroce does not serve it: EOPNOTSUPP, with a message */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_RES_CQ_GET, NLM_F_REQUEST | NLM_F_DUMP, 1);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	uint16_t flags;
	cr_assert_eq(error_of(0, &flags), -EOPNOTSUPP);
	cr_assert(flags & NLM_F_ACK_TLVS);
	cr_assert_eq(cnt.unsupported, 1);

	/* RDMA_NL_ADMIN_PERM: EPERM first without CAP_NET_ADMIN */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_NEWLINK, NLM_F_REQUEST, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EPERM);
	teardown();
	sock.net_admin = true;
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EOPNOTSUPP);
}

Test(nldev, non_requests_and_control_messages_are_only_acknowledged)
{
	struct req r;

	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_ACK, 1); /* no NLM_F_REQUEST */
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(error_of(0, NULL), 0);
	teardown();
	req_start(&r, 0, NLM_F_REQUEST | NLM_F_ACK, 1);
	((struct nlmsghdr *)r.buf)->nlmsg_type = NLMSG_NOOP;
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(error_of(0, NULL), 0);
	/* no NLM_F_ACK and no error: nothing at all */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET, 0, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 0);
}

Test(nldev, two_requests_in_one_datagram)
{
	uint8_t buf[64];
	struct req a, b;

	req_start(&a, RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST, 1);
	req_start(&b, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, 2);
	memcpy(buf, a.buf, a.len);
	memcpy(buf + a.len, b.buf, b.len);
	cr_assert_eq(answer(buf, a.len + b.len), 0);
	cr_assert_eq(nout, 3);
	cr_assert_eq(hdr_of(0, 0).nlmsg_seq, 1);
	cr_assert_eq(hdr_of(1, 0).nlmsg_seq, 2);
	cr_assert_eq(hdr_of(2, 0).nlmsg_type, NLMSG_DONE);
	cr_assert_eq(cnt.requests, 2);
}

Test(nldev, malformed_headers_are_answered_and_counted)
{
	struct req r;
	uint16_t flags;

	/* shorter than a header */
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 77);
	cr_assert_eq(answer(r.buf, 8), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(error_of(0, &flags), -EINVAL);
	cr_assert(flags & NLM_F_CAPPED);
	cr_assert_eq(cnt.malformed, 1);
	cr_assert_eq(cnt.requests, 0);
	/* nlmsg_len below the header */
	teardown();
	((struct nlmsghdr *)r.buf)->nlmsg_len = 12;
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(hdr_of(0, 0).nlmsg_seq, 77);
	cr_assert_eq(cnt.malformed, 2);
	/* nlmsg_len beyond the datagram (even without CAP_ACK only the header is copied) */
	teardown();
	sock.cap_ack = false;
	((struct nlmsghdr *)r.buf)->nlmsg_len = 4000;
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(out[0].len, NLMSG_HDRLEN + 4 + NLMSG_HDRLEN +
					 NLA_ALIGN(NLA_HDRLEN + sizeof("Invalid header length")));
	cr_assert_eq(cnt.malformed, 3);
	/* an empty datagram */
	teardown();
	cr_assert_eq(answer(NULL, 0), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(cnt.malformed, 4);
}

Test(nldev, bad_attributes_are_answered_and_counted)
{
	struct req r;
	uint16_t flags;
	const struct nlattr *m;
	uint32_t off;

	/* DEV_INDEX with two bytes: too short for NLA_U32 (ERANGE), which the doit makes EINVAL;
	 * NETLINK_EXT_ACK brings the message and the offset of the attribute */
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_ACK, 1);
	req_attr(&r, RDMA_NLDEV_ATTR_DEV_INDEX, "\0\0", 2);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(error_of(0, &flags), -EINVAL);
	cr_assert_eq(flags, NLM_F_CAPPED | NLM_F_ACK_TLVS);
	m = (const void *)(out[0].buf + NLMSG_HDRLEN + 4 + NLMSG_HDRLEN);
	cr_assert_eq(m->nla_type, NLMSGERR_ATTR_MSG);
	cr_assert_str_eq((const char *)m + NLA_HDRLEN, "Attribute failed policy validation");
	m = (const void *)((const uint8_t *)m + NLA_ALIGN(m->nla_len));
	cr_assert_eq(m->nla_type, NLMSGERR_ATTR_OFFS);
	memcpy(&off, (const uint8_t *)m + NLA_HDRLEN, sizeof(off));
	cr_assert_eq(off, NLMSG_HDRLEN);
	cr_assert_eq(cnt.malformed, 1);

	/* an attribute running past the message: parsing stops there (the leftover is reported),
	 * so DEV_INDEX is missing */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 2);
	req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	((struct nlattr *)(r.buf + NLMSG_HDRLEN))->nla_len = 200;
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(cnt.malformed, 2);

	/* strict parsing (SYS_GET): an unknown attribute type is refused, its error as is */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST, 3);
	req_u32(&r, 999, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	/* a u8 of four bytes: liberal parsing takes it, strict refuses it */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST, 4);
	req_u32(&r, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	/* a string without its NUL */
	teardown();
	req_start(&r, RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 5);
	req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 6);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(error_of(0, NULL), -EINVAL);
	cr_assert_eq(cnt.malformed, 5);
}

Test(nldev, parse_liberal_and_strict)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct uroce_nldev_ext ext;
	struct req r;
	uint64_t big = 1;

	req_start(&r, RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 1);
	req_attr(&r, RDMA_NLDEV_ATTR_DEV_INDEX, &big, sizeof(big)); /* longer than a u32 */
	req_attr(&r, RDMA_NLDEV_ATTR_CAP_FLAGS, &big, sizeof(big)); /* no policy entry */
	cr_assert_eq(uroce_nldev_parse((const void *)r.buf, false, tb, &ext), 0);
	cr_assert_not_null(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	cr_assert_not_null(tb[RDMA_NLDEV_ATTR_CAP_FLAGS]);
	cr_assert_null(ext.msg);
	cr_assert_eq(uroce_nldev_parse((const void *)r.buf, true, tb, &ext), -EINVAL);
	cr_assert_str_eq(ext.msg, "invalid attribute length");
	cr_assert_eq(ext.bad_off, NLMSG_HDRLEN);
}

/* Whatever the bytes, an answer and no crash (run under ASan in the asan tree). */
Test(nldev, random_requests_never_crash)
{
	uint8_t buf[300];
	unsigned int seed = 12345;

	sys.ndevs = 1;
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof(buf));
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rand_r(&seed);
		if (len >= NLMSG_HDRLEN && (i & 1)) {
			/* plausible headers, so that the handlers run on random attributes */
			h->nlmsg_len = (uint32_t)(NLMSG_HDRLEN +
						  (size_t)rand_r(&seed) % (len - NLMSG_HDRLEN + 1));
			h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
							 rand_r(&seed) % (RDMA_NLDEV_NUM_OPS + 1));
			h->nlmsg_flags |= NLM_F_REQUEST;
		}
		sock.cap_ack = i & 2;
		sock.ext_ack = i & 4;
		cr_assert_eq(answer(buf, len), 0);
		teardown();
	}
	cr_assert_gt(cnt.malformed, 0);
}

/*
 * RDMA_NLDEV_CMD_RES_QP_GET. The QP of the reference's `rdma res show qp` ("link rxe0/1 lqpn
 * 17 rqpn 0 type RC state INIT rq-psn 0 sq-psn 0 path-mig-state MIGRATED pdn 1 pid 908") as
 * Linux 6.1's fill_res_qp_entry() and fill_res_qp_entry_query() put it: port, LQPN, PDN, PID,
 * RQPN, RQ_PSN, SQ_PSN, PATH_MIG_STATE, TYPE, STATE (a nest of 84 bytes in a dump).
 */
static const uint8_t rxe_rc_qp_entry[] = {
	0x08, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, /* PORT_INDEX 1 */
	0x08, 0x00, 0x15, 0x00, 0x11, 0x00, 0x00, 0x00, /* RES_LQPN 17 */
	0x08, 0x00, 0x3c, 0x00, 0x01, 0x00, 0x00, 0x00, /* RES_PDN 1 */
	0x08, 0x00, 0x1c, 0x00, 0x8c, 0x03, 0x00, 0x00, /* RES_PID 908 */
	0x08, 0x00, 0x16, 0x00, 0x00, 0x00, 0x00, 0x00, /* RES_RQPN 0 */
	0x08, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, /* RES_RQ_PSN 0 */
	0x08, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, /* RES_SQ_PSN 0 */
	0x05, 0x00, 0x19, 0x00, 0x00, 0x00, 0x00, 0x00, /* RES_PATH_MIG_STATE MIGRATED */
	0x05, 0x00, 0x1a, 0x00, 0x02, 0x00, 0x00, 0x00, /* RES_TYPE RC */
	0x05, 0x00, 0x1b, 0x00, 0x01, 0x00, 0x00, 0x00, /* RES_STATE INIT */
};

static struct uroce_nldev_qp qps[256];

/* rxe0 (index 0) with the reference's RC QP 17 of pid 908, a UD QP 18 in RTS and an XRC target
 * 19 never given a port (no PD); uroce_veth1 (index 1) with QP 40. */
static void some_qps(void)
{
	strcpy(devs[1].name, "uroce_veth1");
	devs[1].index = 1;
	sys.ndevs = 2;
	qps[0] = (struct uroce_nldev_qp){0,
					 908,
					 {.lqpn = 17,
					  .pdn = 1,
					  .has_pd = true,
					  .port = 1,
					  .type = IBV_QPT_RC,
					  .state = IBV_QPS_INIT}};
	qps[1] = (struct uroce_nldev_qp){0,
					 909,
					 {.lqpn = 18,
					  .rqpn = 5,
					  .rq_psn = 6,
					  .sq_psn = 0x123,
					  .pdn = 2,
					  .has_pd = true,
					  .port = 1,
					  .type = IBV_QPT_UD,
					  .state = IBV_QPS_RTS}};
	qps[2] = (struct uroce_nldev_qp){0,
					 909,
					 {.lqpn = 19,
					  .type = IBV_QPT_XRC_RECV,
					  .state = IBV_QPS_RESET,
					  .mig = IBV_MIG_ARMED}};
	qps[3] = (struct uroce_nldev_qp){1,
					 910,
					 {.lqpn = 40,
					  .pdn = 3,
					  .has_pd = true,
					  .port = 1,
					  .type = IBV_QPT_UC,
					  .state = IBV_QPS_RTR}};
	view.qps = qps;
	view.nqps = 4;
}

/* The entries of the RES_QP table of the message at @off of datagram @dgram, into @e (their
 * payloads); returns how many. */
static int qp_entries(int dgram, size_t off, const uint8_t **e, uint16_t *len, int max)
{
	struct nlmsghdr h = hdr_of(dgram, off);
	size_t a = off + NLMSG_HDRLEN;
	int n = 0;

	while (a + NLA_HDRLEN <= off + h.nlmsg_len) {
		const struct nlattr *t = (const void *)(out[dgram].buf + a);

		if (t->nla_type == RDMA_NLDEV_ATTR_RES_QP) {
			size_t p = a + NLA_HDRLEN;

			cr_assert_eq(a + t->nla_len, off + h.nlmsg_len,
				     "the table ends the message");
			while (p < a + t->nla_len) {
				const struct nlattr *q = (const void *)(out[dgram].buf + p);

				cr_assert_eq(q->nla_type, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
				cr_assert_lt(n, max);
				e[n] = out[dgram].buf + p + NLA_HDRLEN;
				len[n++] = (uint16_t)(q->nla_len - NLA_HDRLEN);
				p += NLA_ALIGN(q->nla_len);
			}
			return n;
		}
		a += NLA_ALIGN(t->nla_len);
	}
	cr_assert_fail("no RES_QP table");
	return 0;
}

/* The u32 or u8 attribute @type of an entry (@len bytes at @e), or -1 if absent. */
static int64_t entry_attr(const uint8_t *e, uint16_t len, uint16_t type)
{
	for (size_t p = 0; p + NLA_HDRLEN <= len;) {
		struct nlattr a;
		uint32_t v = 0;

		memcpy(&a, e + p, sizeof(a));
		if (a.nla_type == type) {
			memcpy(&v, e + p + NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
			return v;
		}
		p += NLA_ALIGN(a.nla_len);
	}
	return -1;
}

/* A RES_QP_GET request for device @index, with @port unless 0, and @lqpn unless 0. */
static void res_qp_req(struct req *r, uint16_t flags, uint32_t index, uint32_t port, uint32_t lqpn)
{
	req_start(r, RDMA_NLDEV_CMD_RES_QP_GET, flags, 7);
	req_u32(r, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	if (port)
		req_u32(r, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	if (lqpn)
		req_u32(r, RDMA_NLDEV_ATTR_RES_LQPN, lqpn);
}

Test(nldev, res_qp_dump_lists_a_devices_qps_as_the_kernel)
{
	const uint8_t *e[8];
	uint16_t len[8];
	struct req r;

	some_qps();
	/* iproute2's request: a dump with an acknowledgment asked, for one device */
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 0, 0, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type,
		     RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET));
	cr_assert_eq(hdr_of(0, 0).nlmsg_flags, NLM_F_MULTI);
	cr_assert_eq(hdr_of(0, 0).nlmsg_len, out[0].len);
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN, rxe_dev_head, 20), 0, "the handle first");
	cr_assert_eq(qp_entries(0, 0, e, len, 8), 3, "rxe0's three QPs, not uroce_veth1's");
	cr_assert_eq(len[0], sizeof(rxe_rc_qp_entry));
	cr_assert_eq(memcmp(e[0], rxe_rc_qp_entry, sizeof(rxe_rc_qp_entry)), 0);
	/* UD: no remote QP, receive PSN or migration state */
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_LQPN), 18);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_SQ_PSN), 0x123);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_RQPN), -1);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_RQ_PSN), -1);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE), -1);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_TYPE), IBV_QPT_UD);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_STATE), IBV_QPS_RTS);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_PID), 909);
	/* XRC target before any port: no port, no PD; its migration state */
	cr_assert_eq(entry_attr(e[2], len[2], RDMA_NLDEV_ATTR_PORT_INDEX), -1);
	cr_assert_eq(entry_attr(e[2], len[2], RDMA_NLDEV_ATTR_RES_PDN), -1);
	cr_assert_eq(entry_attr(e[2], len[2], RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE), IBV_MIG_ARMED);
	cr_assert_eq(entry_attr(e[2], len[2], RDMA_NLDEV_ATTR_RES_TYPE), IBV_QPT_XRC_RECV);
	/* the dump ends alone, unacknowledged */
	cr_assert_eq(hdr_of(1, 0).nlmsg_type, NLMSG_DONE);
	cr_assert_eq(out[1].len, NLMSG_HDRLEN + 4);

	/* uroce_veth1's: its handle, its one QP */
	teardown();
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 1, 0, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(qp_entries(0, 0, e, len, 8), 1);
	cr_assert_eq(entry_attr(e[0], len[0], RDMA_NLDEV_ATTR_RES_LQPN), 40);
	cr_assert_eq(entry_attr(e[0], len[0], RDMA_NLDEV_ATTR_RES_PID), 910);
}

Test(nldev, res_qp_dump_port_filter_errors_and_no_qps)
{
	const uint8_t *e[8];
	uint16_t len[8];
	struct req r;
	int32_t err;

	some_qps();
	/* port 1: the QPs of port 1 only (the XRC target has none yet) */
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 0, 1, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(qp_entries(0, 0, e, len, 8), 2);
	cr_assert_eq(entry_attr(e[1], len[1], RDMA_NLDEV_ATTR_RES_LQPN), 18);
	/* errors in NLMSG_DONE: an invalid port, an unknown device, no device */
	for (int c = 0; c < 3; c++) {
		teardown();
		if (c == 0)
			res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 0, 2, 0);
		else if (c == 1)
			res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 7, 0, 0);
		else
			req_start(&r, RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_REQUEST | NLM_F_DUMP, 7);
		cr_assert_eq(answer(r.buf, r.len), 0);
		cr_assert_eq(nout, 1);
		cr_assert_eq(hdr_of(0, 0).nlmsg_type, NLMSG_DONE);
		memcpy(&err, out[0].buf + NLMSG_HDRLEN, sizeof(err));
		cr_assert_eq(err, -EINVAL, "case %d", c);
	}
	/* a device without QPs: NLMSG_DONE alone */
	teardown();
	view.nqps = 0;
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 0, 0, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 1);
	cr_assert_eq(hdr_of(0, 0).nlmsg_type, NLMSG_DONE);
	memcpy(&err, out[0].buf + NLMSG_HDRLEN, sizeof(err));
	cr_assert_eq(err, 0);
	cr_assert_eq(cnt.unsupported, 0);
}

Test(nldev, res_qp_dump_continues_in_datagrams_of_goodsize)
{
	const uint8_t *e[64];
	uint16_t len[64];
	uint32_t next = 100;
	struct req r;
	int total = 0;

	for (int i = 0; i < 200; i++)
		qps[i] = (struct uroce_nldev_qp){0,
						 1000 + (uint32_t)i,
						 {.lqpn = 100 + (uint32_t)i,
						  .has_pd = true,
						  .port = 1,
						  .type = IBV_QPT_RC,
						  .state = IBV_QPS_RTS}};
	view.qps = qps;
	view.nqps = 200;
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_DUMP, 0, 0, 0);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_gt(nout, 3);
	for (int d = 0; d < nout - 1; d++) {
		int n;

		cr_assert_leq(out[d].len, 3776);
		cr_assert_eq(hdr_of(d, 0).nlmsg_len, out[d].len, "one message a datagram");
		cr_assert_eq(memcmp(out[d].buf + NLMSG_HDRLEN, rxe_dev_head, 8), 0);
		n = qp_entries(d, 0, e, len, 64);
		cr_assert_gt(n, 0);
		for (int k = 0; k < n; k++)
			cr_assert_eq(entry_attr(e[k], len[k], RDMA_NLDEV_ATTR_RES_LQPN), next++);
		total += n;
	}
	cr_assert_eq(total, 200, "every QP once, in order");
	cr_assert_eq(hdr_of(nout - 1, 0).nlmsg_type, NLMSG_DONE);
}

Test(nldev, res_qp_doit_one_qp_flat_and_the_kernels_errors)
{
	struct nlmsghdr want = {(uint32_t)(NLMSG_HDRLEN + 20 + sizeof(rxe_rc_qp_entry)),
				RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), 0, 7,
				(uint32_t)-991831471};
	static const struct {
		uint32_t index, port, lqpn;
		bool no_index;
		int err;
	} bad[] = {
		{0, 1, 0, false, -EINVAL},  /* no LQPN */
		{0, 1, 17, true, -EINVAL},  /* no device */
		{9, 1, 17, false, -EINVAL}, /* an unknown device */
		{0, 0, 17, false, -EINVAL}, /* no port: a QP is a port's object */
		{0, 2, 17, false, -EINVAL}, /* an invalid port */
		{0, 1, 99, false, -ENOENT}, /* no such QP */
		{0, 1, 40, false, -ENOENT}, /* another device's */
		{0, 1, 19, false, -EAGAIN}, /* a QP without that port */
	};
	struct req r;

	some_qps();
	res_qp_req(&r, NLM_F_REQUEST | NLM_F_ACK, 0, 1, 17);
	cr_assert_eq(answer(r.buf, r.len), 0);
	cr_assert_eq(nout, 2);
	cr_assert_eq(out[0].len, want.nlmsg_len);
	cr_assert_eq(memcmp(out[0].buf, &want, sizeof(want)), 0);
	cr_assert_eq(memcmp(out[0].buf + NLMSG_HDRLEN, rxe_dev_head, 20), 0);
	cr_assert_eq(
		memcmp(out[0].buf + NLMSG_HDRLEN + 20, rxe_rc_qp_entry, sizeof(rxe_rc_qp_entry)), 0,
		"the entry's attributes, not nested");
	cr_assert_eq(error_of(1, NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		teardown();
		if (bad[i].no_index) {
			req_start(&r, RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_REQUEST, 7);
			req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, bad[i].port);
			req_u32(&r, RDMA_NLDEV_ATTR_RES_LQPN, bad[i].lqpn);
		} else {
			res_qp_req(&r, NLM_F_REQUEST, bad[i].index, bad[i].port, bad[i].lqpn);
		}
		cr_assert_eq(answer(r.buf, r.len), 0);
		cr_assert_eq(nout, 1);
		cr_assert_eq(error_of(0, NULL), bad[i].err, "case %zu", i);
	}
}
