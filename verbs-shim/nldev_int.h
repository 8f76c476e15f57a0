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

/* The answer being written: the request it is for, the datagram being filled, the output. */
struct nldev_answer {
	const struct uroce_nldev_view *v;
	const struct uroce_nldev_sock *s;
	struct uroce_nldev_counters *cnt;
	uroce_nldev_emit_fn emit;
	void *arg;
	int err; /* the first error of emit or of an allocation; ends the answer */
	const struct nlmsghdr *req;
	struct uroce_nldev_ext ext;
	uint8_t dgram[NLDEV_GOODSIZE];
	size_t dgram_len;
};

/* One datagram of the answer to its receiver, unless an earlier one failed. */
void nldev_emit(struct nldev_answer *an, const void *buf, size_t len);

/* A dump's message @b: into the datagram being filled, sending that one first when full. */
void nldev_dump_add(struct nldev_answer *an, const struct nlb *b);

/* netlink_dump()'s end: the data, then NLMSG_DONE with the dump's errno @err, a datagram of its
 * own. Returns -EINTR: the dump answered for itself (no acknowledgment). */
int nldev_dump_done(struct nldev_answer *an, int err);

/* The request's attributes, liberally (nlmsg_parse_deprecated) or @strict; a refusal is counted
 * as malformed. Returns 0 or the kernel's negative errno. */
int nldev_parse_req(struct nldev_answer *an, bool strict, const struct nlattr **tb);

/* ib_device_get_by_index(): the device whose index (uverbs number) is @index, its position in
 * *pos when @pos is not NULL; NULL if none. */
const struct uroce_sysview_dev *nldev_dev_by_index(const struct uroce_nldev_view *v, uint32_t index,
						   size_t *pos);

/* fill_nldev_handle(): the device's index and name. */
void nldev_fill_handle(struct nlb *b, const struct uroce_sysview_dev *d);

/* The resource commands (nldev_res.c): RES_GET's summaries and RES_QP_GET's QPs. */
int nldev_res_doit(struct nldev_answer *an);
int nldev_res_dump(struct nldev_answer *an);
int nldev_res_qp_doit(struct nldev_answer *an);
int nldev_res_qp_dump(struct nldev_answer *an);

/* rdma_nl_unicast() of a doit's one message, built by @fill into a datagram of its own. */
#define REPLY(an, cmd, fill_call)                                                                  \
	do {                                                                                       \
		uint8_t buf_[NLDEV_MSG_MAX];                                                       \
		struct nlb b_ = {buf_, sizeof(buf_), 0, 0, false};                                 \
		struct nlb *b = &b_;                                                               \
		nlb_start(b, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), 0, (an)->req->nlmsg_seq,        \
			  (an)->s->portid);                                                        \
		fill_call;                                                                         \
		nlb_end(b);                                                                        \
		if (b->full)                                                                       \
			return -EMSGSIZE;                                                          \
		nldev_emit(an, buf_, b->len);                                                      \
	} while (0)

/* A dump's message for each device, built by @fill. */
#define DUMP_EACH(an, cmd, fill_call)                                                              \
	do {                                                                                       \
		for (int i_ = 0; i_ < (an)->v->sys->ndevs; i_++) {                                 \
			const struct uroce_sysview_dev *d = &(an)->v->sys->devs[i_];               \
			size_t pos = (size_t)i_;                                                   \
			uint8_t buf_[NLDEV_MSG_MAX];                                               \
			struct nlb b_ = {buf_, sizeof(buf_), 0, 0, false};                         \
			struct nlb *b = &b_;                                                       \
			(void)d;                                                                   \
			(void)pos;                                                                 \
			nlb_start(b, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), NLM_F_MULTI,            \
				  (an)->req->nlmsg_seq, (an)->s->portid);                          \
			fill_call;                                                                 \
			nlb_end(b);                                                                \
			if (!b->full)                                                              \
				nldev_dump_add(an, b);                                             \
		}                                                                                  \
	} while (0)

#endif
