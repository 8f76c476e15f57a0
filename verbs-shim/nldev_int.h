/* SPDX-License-Identifier: MIT */
/*
 * What the files of the nldev module share (nldev.h): the kernel's limits its policy and answers
 * use, and the builder of netlink messages (nlmsg_put(), nla_put() and their kin of
 * include/net/netlink.h), writing into a caller's buffer.
 */
#ifndef UROCE_VERBS_SHIM_NLDEV_INT_H
#define UROCE_VERBS_SHIM_NLDEV_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "verbs-shim/nldev.h"

/* The kernel's limits the policy and the answers use (include/rdma/ib_verbs.h, rdma_netlink.h,
 * linux/if.h, linux/socket.h). */
#define IB_DEVICE_NAME_MAX                64
#define RDMA_NLDEV_ATTR_EMPTY_STRING      1
#define RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE 32
#define KERNEL_IFNAMSIZ                   16
#define KERNEL_SOCKADDR_STORAGE           128
#define RDMA_USER_CM_ABI_VERSION          4 /* rdma_user_cm.h: ucma's CHARDEV_ABI */
/* NLMSG_GOODSIZE on x86_64 (4 KiB pages less struct skb_shared_info): what one datagram of a
 * dump holds at least (netlink_dump's allocation). */
#define NLDEV_GOODSIZE 3776
/* Room for one device's, port's or chardev's message (names of IB_DEVICE_NAME_MAX at most). */
#define NLDEV_MSG_MAX 1024

/* A netlink message under construction in @buf (@cap bytes); @full once something did not fit. */
struct nlb {
	uint8_t *buf;
	size_t cap, len;
	size_t start; /* offset of the open message's header */
	bool full;
};

static inline void *nlb_room(struct nlb *b, size_t n)
{
	size_t total = NLMSG_ALIGN(n);
	void *p;

	if (b->full || b->cap - b->len < total) {
		b->full = true;
		return NULL;
	}
	p = b->buf + b->len;
	memset(p, 0, total);
	b->len += total;
	return p;
}

/* nlmsg_put(): a header with no payload yet. */
static inline void nlb_start(struct nlb *b, uint16_t type, uint16_t flags, uint32_t seq,
			     uint32_t pid)
{
	struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN,
			     .nlmsg_type = type,
			     .nlmsg_flags = flags,
			     .nlmsg_seq = seq,
			     .nlmsg_pid = pid};
	void *p;

	b->start = b->len;
	p = nlb_room(b, sizeof(h));
	if (p)
		memcpy(p, &h, sizeof(h));
}

/* nlmsg_end(): the message's length is what was put since msg_start. */
static inline void nlb_end(struct nlb *b)
{
	uint32_t len = (uint32_t)(b->len - b->start);

	if (!b->full)
		memcpy(b->buf + b->start, &len, sizeof(len));
}

/* nla_put(): one attribute, padded to NLA_ALIGNTO. */
static inline void nlb_put(struct nlb *b, uint16_t type, const void *data, size_t n)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type};
	uint8_t *p = nlb_room(b, NLA_HDRLEN + n);

	if (!p)
		return;
	memcpy(p, &a, sizeof(a));
	if (n)
		memcpy(p + NLA_HDRLEN, data, n);
}

static inline void nlb_put_u8(struct nlb *b, uint16_t type, uint8_t v)
{
	nlb_put(b, type, &v, sizeof(v));
}

static inline void nlb_put_u32(struct nlb *b, uint16_t type, uint32_t v)
{
	nlb_put(b, type, &v, sizeof(v));
}

/* nla_put_u64_64bit(): no RDMA_NLDEV_ATTR_PAD before it where unaligned access is cheap
 * (nla_need_padding_for_64bit(): x86_64 and arm64, as the reference's bytes show). */
static inline void nlb_put_u64(struct nlb *b, uint16_t type, uint64_t v)
{
	nlb_put(b, type, &v, sizeof(v));
}

static inline void nlb_put_str(struct nlb *b, uint16_t type, const char *s)
{
	nlb_put(b, type, s, strlen(s) + 1);
}

/* nla_nest_start_noflag() / nla_nest_end(): the nest's length is set at its end. */
static inline size_t nlb_nest_start(struct nlb *b, uint16_t type)
{
	size_t off = b->len;

	nlb_put(b, type, NULL, 0);
	return off;
}

static inline void nlb_nest_end(struct nlb *b, size_t off)
{
	uint16_t len = (uint16_t)(b->len - off);

	if (!b->full)
		memcpy(b->buf + off, &len, sizeof(len));
}

static inline uint32_t nla_get_u32_(const struct nlattr *a)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

#endif
