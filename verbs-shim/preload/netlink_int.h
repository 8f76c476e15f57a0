/* SPDX-License-Identifier: MIT */
/*
 * What the files of liburoce-preload.so's RDMA netlink share (netlink.c: the sockets, their
 * table and control calls; netlink_opt.c: the socket options; netlink_io.c: sending, the
 * answers, receiving): an emulated socket, the table of the descriptors that refer to one, and
 * the way through for every other.
 */
#ifndef UROCE_PRELOAD_NETLINK_INT_H
#define UROCE_PRELOAD_NETLINK_INT_H

#include <linux/netlink.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "verbs-shim/nldev.h"

/* Out of the way of the calls that pass through. */
#define COLD __attribute__((noinline, cold))

/* The groups a NETLINK_RDMA socket may join: netlink_kernel_create() gives a protocol with
 * fewer than 32 at least 32. */
#define NL_GROUPS 32

/* One emulated socket. */
struct nlsock {
	int peer;       /* the other end: answers are written into it */
	dev_t peer_dev; /* what it is, to tell it from a descriptor reusing its number */
	ino_t peer_ino; /* once the program has closed it */
	dev_t self_dev; /* the same of the program's end */
	ino_t self_ino;
	int type;                /* SOCK_RAW or SOCK_DGRAM, for SO_TYPE */
	bool bound;              /* netlink_sock.bound */
	uint32_t portid;         /* its port ID, once bound */
	uint32_t dst_portid;     /* connect()'s, 0: the kernel */
	uint32_t groups;         /* joined groups (bit n-1: group n) */
	bool net_admin;          /* the opener had CAP_NET_ADMIN */
	bool cap_ack, ext_ack;   /* NETLINK_CAP_ACK, NETLINK_EXT_ACK */
	bool strict_chk;         /* NETLINK_GET_STRICT_CHK (no RDMA command reads it) */
	bool pktinfo, bcast_err; /* NETLINK_PKTINFO, NETLINK_BROADCAST_ERROR */
	bool no_enobufs;         /* NETLINK_NO_ENOBUFS */
	bool overrun;            /* an answer did not fit: the next receive fails with ENOBUFS */
	int refs;                /* descriptors referring to it */
	struct uroce_nldev_counters cnt;
};

/* Slots in use, guarded by nl_lock; 0 makes every call pass through. */
extern int nl_nopen;
extern pthread_mutex_t nl_lock;

/* The slot of @fd in the table, or -1, without the lock. */
int nl_slot_of(int fd);

/* Under the lock: the socket of @fd, or NULL. */
struct nlsock *nl_sock_of(int fd);

/* True if @fd is an emulated socket (for a call to emulate); see netlink.c. */
bool nl_emulated(int fd);

/* No emulated socket is open: one load and one comparison. */
static inline bool nl_none_open(void)
{
	return __builtin_expect(!__atomic_load_n(&nl_nopen, __ATOMIC_ACQUIRE), 1);
}

/* True if the call on @fd goes to the C library: always while no emulated socket is open (the
 * rest is kept out of line, COLD, so that the way through carries none of its frame). */
static inline bool nl_pass(int fd)
{
	return nl_none_open() || !nl_emulated(fd);
}

/* Under the lock: netlink_autobind() of @s. */
void nl_autobind(struct nlsock *s);

/* errno = @err; -1. */
int nl_fail(int err);

/* move_addr_to_user(): as much of @nl as fits in @addr (*@len bytes), and its full length. */
void nl_give_addr(const struct sockaddr_nl *nl, struct sockaddr *addr, socklen_t *len);

#endif
