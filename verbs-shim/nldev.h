/* SPDX-License-Identifier: MIT */
/*
 * RDMA netlink (NETLINK_RDMA) for uroce's devices, as the kernel's nldev answers it for an rxe
 * device on Linux 6.1 (drivers/infiniband/core/netlink.c and nldev.c; the bytes of its answers
 * are in tests/discovery/rxe-reference.txt, section 5b). Pure: a request datagram in, the
 * answer's datagrams out through a callback, no system calls; liburoce-preload.so
 * (preload/netlink.c) runs it behind an emulated NETLINK_RDMA socket, with the devices of
 * sysview.h, so that `rdma dev`, `rdma link`, rdma-core's device discovery, sysfs and the verbs
 * agree (ARCHITECTURE.md "The kernel's view").
 *
 * Served (the kernel's function in brackets):
 *   RDMA_NLDEV_CMD_GET          doit and dump (fill_dev_info)
 *   RDMA_NLDEV_CMD_PORT_GET     doit and dump (fill_port_info; RoCE: no LID, SM LID, LMC,
 *                               CAP_FLAGS, which the kernel sends for InfiniBand ports only)
 *   RDMA_NLDEV_CMD_RES_GET      doit and dump (fill_res_info: the objects of every process
 *                               the caller lists, struct uroce_nldev_view)
 *   RDMA_NLDEV_CMD_RES_QP_GET   doit and dump (res_get_common_doit/_dumpit with
 *                               fill_res_qp_entry: the caller's QPs, with their processes)
 *   RDMA_NLDEV_CMD_SYS_GET      doit (nldev_sys_get_doit)
 *   RDMA_NLDEV_CMD_GET_CHARDEV  doit: "uverbs" of a device, "rdma_cm" (nldev_get_chardev)
 * The kernel's other NLDEV commands answer EOPNOTSUPP (EPERM first for those the kernel keeps
 * to CAP_NET_ADMIN); a command the kernel has no handler for, and the other RDMA netlink
 * clients (iWARP port mapper, local services), EINVAL as the kernel's is_nl_valid() gives.
 */
#ifndef UROCE_VERBS_SHIM_NLDEV_H
#define UROCE_VERBS_SHIM_NLDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/resreg.h"
#include "verbs-shim/sysview.h"

/* What the answer takes from the socket that asked. */
struct uroce_nldev_sock {
	uint32_t portid; /* its port ID: nlmsg_pid of every answer */
	bool cap_ack;    /* NETLINK_CAP_ACK: errors carry the request's header only */
	bool ext_ack;    /* NETLINK_EXT_ACK: errors carry a message and the bad attribute */
	bool net_admin;  /* the opener had CAP_NET_ADMIN (the kernel's RDMA_NL_ADMIN_PERM) */
};

/* One QP of a process, on the device sys->devs[dev]. */
struct uroce_nldev_qp {
	size_t dev;
	uint32_t pid;
	struct uroce_res_qp qp;
};

/* The devices, as sysfs shows them, and what the processes of the registry (resreg.h) hold on
 * each. */
struct uroce_nldev_view {
	const struct uroce_sysview *sys;
	/* res[i]: the objects on sys->devs[i] (enum uroce_res), of all processes; NULL: none */
	const uint64_t (*res)[UROCE_RES_NUM];
	/* The QPs, by device (ascending dev), then by lqpn (ascending), as the kernel's restrack
	 * keeps them (an xarray indexed by QP number); nqps of them. */
	const struct uroce_nldev_qp *qps;
	size_t nqps;
};

/* Counters of one socket's requests (the caller's to keep). */
struct uroce_nldev_counters {
	uint64_t requests;    /* netlink messages taken */
	uint64_t malformed;   /* refused for their header or an attribute (EINVAL, ERANGE) */
	uint64_t unsupported; /* commands the kernel has and uroce does not serve (EOPNOTSUPP) */
};

/* One datagram of the answer, in order. Returns 0, or an errno value that ends the answer. */
typedef int (*uroce_nldev_emit_fn)(void *arg, const void *dgram, size_t len);

/*
 * Answer the datagram @req (@len bytes) sent to the kernel (port 0) on a NETLINK_RDMA socket,
 * as rdma_nl_rcv_skb() does: each netlink message in turn, its replies, then an acknowledgment
 * (NLMSG_ERROR) when it asks for one or fails, or the dump's NLMSG_DONE. Where the kernel
 * drops a datagram without a word -- shorter than a netlink header, or a header whose
 * nlmsg_len is below NLMSG_HDRLEN or beyond the datagram -- this answers NLMSG_ERROR EINVAL
 * and stops, so that a program waiting for the answer is not left hanging. Returns 0, ENOMEM,
 * or the error @emit returned.
 */
int uroce_nldev_answer(const struct uroce_nldev_view *v, const struct uroce_nldev_sock *s,
		       const void *req, size_t len, uroce_nldev_emit_fn emit, void *arg,
		       struct uroce_nldev_counters *cnt);

/* Why an attribute was refused, as the kernel's struct netlink_ext_ack says it. */
struct uroce_nldev_ext {
	const char *msg; /* NLMSGERR_ATTR_MSG, or NULL */
	size_t bad_off;  /* NLMSGERR_ATTR_OFFS: offset of the attribute in the message, or 0 */
};

/*
 * Parse the attributes of the netlink message @h (nlmsg_len bytes, all present) under the
 * kernel's nldev_policy: @strict as nlmsg_parse() (unknown, unsupported, wrongly sized or
 * trailing attributes refused), otherwise as nlmsg_parse_deprecated() (only too short ones).
 * tb[type] points at the last attribute of each type (RDMA_NLDEV_ATTR_MAX entries). Returns 0
 * or the kernel's negative errno (-EINVAL, -ERANGE), with @ext filled when not NULL.
 */
int uroce_nldev_parse(const struct nlmsghdr *h, bool strict, const struct nlattr **tb,
		      struct uroce_nldev_ext *ext);

/* The kernel's huge_encode_dev(MKDEV(major, minor)): RDMA_NLDEV_ATTR_CHARDEV. */
static inline uint64_t uroce_nldev_encode_dev(unsigned int major, unsigned int minor)
{
	return (minor & 0xffu) | ((uint64_t)(major & 0xfffu) << 8) |
	       ((uint64_t)(minor & ~0xffu) << 12);
}

#endif
