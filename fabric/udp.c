/* SPDX-License-Identifier: MIT */
#include "fabric/udp.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
/* After netinet/in.h (libc-compat): IPV6_FLOWINFO and IPV6_FLOWINFO_SEND, which glibc lacks. */
#include <linux/errqueue.h>
#include <linux/in6.h>
#include <linux/sock_diag.h>
#include <linux/udp.h>
#include <string.h>
#include <unistd.h>

#include "fabric/nocancel.h"

/*
 * What the sockets send with when a unicast packet names no other TOS (traffic class) and TTL
 * (hop limit): the rdma_cm's path defaults. Such a packet leaves without the IP_TOS and IP_TTL
 * control messages, each of which lengthens the kernel's send path by about as much as both
 * (docs/PERFORMANCE.md).
 */
#define DEFAULT_TOS 0
#define DEFAULT_TTL 64

static int set_int(int fd, int level, int name, int value)
{
	return setsockopt(fd, level, name, &value, sizeof(value)) ? errno : 0;
}

/*
 * Ask for big buffers; without CAP_NET_ADMIN the kernel caps them at net.core.[rw]mem_max.
 * Returns the receive buffer granted.
 */
static uint32_t set_buffers(int fd)
{
	int granted = 0;
	socklen_t len = sizeof(granted);

	if (set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, UROCE_UDP_BUF))
		set_int(fd, SOL_SOCKET, SO_RCVBUF, UROCE_UDP_BUF);
	if (set_int(fd, SOL_SOCKET, SO_SNDBUFFORCE, UROCE_UDP_BUF))
		set_int(fd, SOL_SOCKET, SO_SNDBUF, UROCE_UDP_BUF);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &len) || granted < 0)
		granted = 0;
	return (uint32_t)granted;
}

static int set_options_v4(int fd)
{
	int err = set_int(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);

	if (!err)
		err = set_int(fd, IPPROTO_IP, IP_PKTINFO, 1);
	if (!err)
		err = set_int(fd, IPPROTO_IP, IP_TOS, DEFAULT_TOS);
	if (!err)
		err = set_int(fd, IPPROTO_IP, IP_TTL, DEFAULT_TTL);
	/* This host's members get multicast through the rendezvous (net.c), not a second copy. */
	if (!err)
		err = set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 0);
	return err;
}

static int set_options_v6(int fd)
{
	int err = set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);

	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_TCLASS, DEFAULT_TOS);
	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, DEFAULT_TTL);
	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_FLOWINFO_SEND, 1);
	/* PROTOCOL.md §1.4: rxe sends IPv6 with a zero UDP checksum. */
	if (!err)
		err = set_int(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
	if (!err)
		err = set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 0);
	return err;
}

int uroce_udp_open(struct uroce_udp *s, int family, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	socklen_t sslen;
	int err;

	s->fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	s->family = family;
	s->port = 0;
	if (s->fd < 0)
		return errno;
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		sslen = sizeof(*sin);
		err = set_options_v4(s->fd);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = in6addr_any;
		sslen = sizeof(*sin6);
		err = set_options_v6(s->fd);
	}
	if (err)
		goto fail;
	/*
	 * UDP GRO: the kernel may hand several datagrams of one flow in one receive (a UDP GSO
	 * train from a uroce peer arrives whole on loopback and veth), which the receiver cuts
	 * apart (uroce_udp_segments). A kernel without it (before 5.0) just sends them singly.
	 */
	set_int(s->fd, IPPROTO_UDP, UDP_GRO, 1);
	s->rcvbuf = set_buffers(s->fd);
	if (bind(s->fd, (struct sockaddr *)&ss, sslen) ||
	    getsockname(s->fd, (struct sockaddr *)&ss, &sslen)) {
		err = errno;
		goto fail;
	}
	s->port = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset in sockaddr_in6 */
	return 0;

fail:
	close(s->fd);
	s->fd = -1;
	return err;
}

int uroce_udp_recv_ip_fields(const struct uroce_udp *s)
{
	int err;

	if (s->fd < 0)
		return 0;
	if (s->family == AF_INET) {
		err = set_int(s->fd, IPPROTO_IP, IP_RECVTOS, 1);
		if (!err)
			err = set_int(s->fd, IPPROTO_IP, IP_RECVTTL, 1);
		return err;
	}
	err = set_int(s->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
	if (!err)
		err = set_int(s->fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
	if (!err)
		err = set_int(s->fd, IPPROTO_IPV6, IPV6_FLOWINFO, 1);
	return err;
}

int uroce_udp_recverr(const struct uroce_udp *s)
{
	return s->family == AF_INET ? set_int(s->fd, IPPROTO_IP, IP_RECVERR, 1)
				    : set_int(s->fd, IPPROTO_IPV6, IPV6_RECVERR, 1);
}

int uroce_udp_take_error(const struct uroce_udp *s, uint8_t gid[16], int *err)
{
	union {
		struct cmsghdr align;
		/* The socket's other control messages (PKTINFO, TTL, ...) come along. */
		char buf[UROCE_UDP_CONTROL_LEN + CMSG_SPACE(sizeof(struct sock_extended_err) +
							    sizeof(struct sockaddr_in6))];
	} control;
	struct sockaddr_storage to;
	char data[64];
	struct iovec iov = {.iov_base = data, .iov_len = sizeof(data)};
	struct msghdr msg = {.msg_name = &to,
			     .msg_namelen = sizeof(to),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};

	if (nc_recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return 0;
	*err = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
			struct sock_extended_err ee;

			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			*err = (int)ee.ee_errno;
		}
	}
	memset(gid, 0, 16);
	if (to.ss_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &((struct sockaddr_in *)&to)->sin_addr, 4);
	} else {
		memcpy(gid, &((struct sockaddr_in6 *)&to)->sin6_addr, 16);
	}
	return 1;
}

void uroce_udp_close(struct uroce_udp *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Whether @gid is an address of this host: binding a socket to it succeeds. */
static bool is_local(int family, const uint8_t gid[16])
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool local;

	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, gid + 12, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, gid, 16);
		len = sizeof(*sin6);
	}
	local = fd < 0 || !bind(fd, (struct sockaddr *)&ss, len) || errno != EADDRNOTAVAIL;
	if (fd >= 0)
		close(fd);
	return local;
}

/* IPv6 link-local (fe80::/10): meaningful on one link only, so a send needs its interface. */
static bool is_link_local(const uint8_t gid[16])
{
	return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

/* Whether interface address @sa is @gid (IPv4-mapped for an IPv4 address). */
static bool addr_is(const struct sockaddr *sa, const uint8_t gid[16])
{
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, gid, 16);
	return sa->sa_family == AF_INET && roce_gid_is_v4(gid) &&
	       !memcmp(&((const struct sockaddr_in *)sa)->sin_addr, gid + 12, 4);
}

/*
 * The interface index of the local address @gid, or 0. Looked up once (getifaddrs) and
 * remembered: a process sends from few link-local or multicast sources.
 */
static unsigned int ifindex_of(const uint8_t gid[16])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		uint8_t gid[16];
		unsigned int ifindex;
	} cache[8];
	static unsigned int ncache;
	struct ifaddrs *ifs, *i;
	unsigned int idx = 0;

	pthread_mutex_lock(&lock);
	for (unsigned int k = 0; k < ncache; k++)
		if (!memcmp(cache[k].gid, gid, 16))
			idx = cache[k].ifindex;
	if (!idx && !getifaddrs(&ifs)) {
		for (i = ifs; i && !idx; i = i->ifa_next)
			if (i->ifa_addr && addr_is(i->ifa_addr, gid))
				idx = if_nametoindex(i->ifa_name);
		freeifaddrs(ifs);
		if (idx) {
			unsigned int k = ncache < 8 ? ncache++ : 0;

			memcpy(cache[k].gid, gid, 16);
			cache[k].ifindex = idx;
		}
	}
	pthread_mutex_unlock(&lock);
	return idx;
}

/* Append a control message of @len bytes at @msg's current control length. */
static void put_cmsg(struct msghdr *msg, int level, int type, const void *data, size_t len)
{
	struct cmsghdr *c = (struct cmsghdr *)((char *)msg->msg_control + msg->msg_controllen);

	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	msg->msg_controllen += CMSG_SPACE(len);
}

/*
 * A datagram's message header and what it points to (out_msg). The control buffer comes last:
 * clang takes CMSG_SPACE for a variable size, which only a struct's last member may have.
 */
struct udp_out {
	struct sockaddr_storage to;
	struct iovec iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + 2 * CMSG_SPACE(sizeof(int)) +
			 CMSG_SPACE(sizeof(uint16_t))];
	} control;
};

/*
 * @msg for @len bytes at @roce (or, with @iov, gathered from @iov[0..@iovcnt)) from @f's source
 * to @f's destination at UDP port @dport, its name, payload and control messages in @o; @seg > 0
 * makes it a UDP GSO send of @seg-byte datagrams when @len is more than one.
 */
static void out_msg_iov(const struct uroce_udp *s, const struct roce_ipudp *f, uint16_t dport,
			const uint8_t *roce, size_t len, uint16_t seg, const struct iovec *iov,
			unsigned int iovcnt, struct udp_out *o, struct msghdr *msg)
{
	int tos = f->tos, ttl = f->ttl;
	bool mcast = roce_gid_is_multicast(f->dgid);
	/* Multicast has TTLs of its own (IP_MULTICAST_TTL): always said. */
	bool say_tos = tos != DEFAULT_TOS || mcast, say_ttl = ttl != DEFAULT_TTL || mcast;

	memset(o, 0, sizeof(*o));
	o->iov = (struct iovec){.iov_base = (void *)roce, .iov_len = len};
	*msg = (struct msghdr){
		.msg_name = &o->to,
		.msg_iov = iov ? (struct iovec *)iov : &o->iov,
		.msg_iovlen = iov ? iovcnt : 1,
		.msg_control = o->control.buf,
	};
	if (s->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&o->to;
		struct in_pktinfo pi = {0};

		sin->sin_family = AF_INET;
		sin->sin_port = htons(dport);
		memcpy(&sin->sin_addr, f->dgid + 12, 4);
		msg->msg_namelen = sizeof(*sin);
		memcpy(&pi.ipi_spec_dst, f->sgid + 12, 4);
		/* Multicast leaves through the source address's interface only. */
		if (mcast)
			pi.ipi_ifindex = (int)ifindex_of(f->sgid);
		put_cmsg(msg, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		if (say_tos)
			put_cmsg(msg, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
		if (say_ttl)
			put_cmsg(msg, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&o->to;
		struct in6_pktinfo pi = {0};

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(dport);
		sin6->sin6_flowinfo = htonl(f->flow_label & 0xFFFFF);
		memcpy(&sin6->sin6_addr, f->dgid, 16);
		msg->msg_namelen = sizeof(*sin6);
		memcpy(&pi.ipi6_addr, f->sgid, 16);
		/* A link-local or multicast destination: through the source address's interface. */
		if (is_link_local(f->dgid) || mcast) {
			sin6->sin6_scope_id = ifindex_of(f->sgid);
			pi.ipi6_ifindex = sin6->sin6_scope_id;
		}
		put_cmsg(msg, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
		if (say_tos)
			put_cmsg(msg, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
		if (say_ttl)
			put_cmsg(msg, IPPROTO_IPV6, IPV6_HOPLIMIT, &ttl, sizeof(ttl));
	}
	if (seg && len > seg)
		put_cmsg(msg, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg));
}

/* out_msg_iov of the @len bytes at @roce. */
static void out_msg(const struct uroce_udp *s, const struct roce_ipudp *f, uint16_t dport,
		    const uint8_t *roce, size_t len, uint16_t seg, struct udp_out *o,
		    struct msghdr *msg)
{
	out_msg_iov(s, f, dport, roce, len, seg, NULL, 0, o, msg);
}

/* A send's errno @err as the senders report it (udp.h). */
static int send_error(const struct uroce_udp *s, const struct roce_ipudp *f, int err)
{
	/*
	 * A source address that is not local fails the IPv4 route lookup (ENETUNREACH) or
	 * IPV6_PKTINFO (EINVAL); tell it from a destination without a route.
	 */
	if ((err == ENETUNREACH || err == EINVAL) && !is_local(s->family, f->sgid))
		return EADDRNOTAVAIL;
	return err;
}

/* One sendmsg of @len bytes; @seg as out_msg takes it. */
static int send_one(const struct uroce_udp *s, const struct roce_ipudp *f, const uint8_t *roce,
		    size_t len, uint16_t seg)
{
	struct udp_out o;
	struct msghdr msg;

	out_msg(s, f, f->dport, roce, len, seg, &o, &msg);
	if (nc_sendmsg(s->fd, &msg, MSG_NOSIGNAL) >= 0)
		return 0;
	return send_error(s, f, errno);
}

/* 0 if one GSO send may carry @len bytes as @seg-byte datagrams (udp.h), else EMSGSIZE. */
static int gso_check(size_t len, uint16_t seg)
{
	if (seg && len > seg && (len > UROCE_UDP_GSO_MAX || len > (size_t)seg * UROCE_UDP_GSO_SEGS))
		return EMSGSIZE;
	return 0;
}

int uroce_udp_join(const struct uroce_udp *s, const uint8_t group[16], unsigned int ifindex,
		   bool join)
{
	if (s->family == AF_INET) {
		struct ip_mreqn m = {.imr_ifindex = (int)ifindex};

		memcpy(&m.imr_multiaddr, group + 12, 4);
		return setsockopt(s->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
				  &m, sizeof(m))
			       ? errno
			       : 0;
	}
	struct ipv6_mreq m6 = {.ipv6mr_interface = ifindex};

	memcpy(&m6.ipv6mr_multiaddr, group, 16);
	return setsockopt(s->fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &m6,
			  sizeof(m6))
		       ? errno
		       : 0;
}

int uroce_udp_send(const struct uroce_udp *s, const struct roce_ipudp *f, const uint8_t *roce,
		   size_t len)
{
	return send_one(s, f, roce, len, 0);
}

int uroce_udp_send_gso(const struct uroce_udp *s, const struct roce_ipudp *f, const uint8_t *roce,
		       size_t len, uint16_t seg)
{
	int err = gso_check(len, seg);

	return err ? err : send_one(s, f, roce, len, seg);
}

unsigned int uroce_udp_send_batch(const struct uroce_udp *s, const struct roce_ipudp *f,
				  const struct uroce_udp_msg *m, unsigned int n, int *err)
{
	struct udp_out o[UROCE_UDP_BATCH];
	struct mmsghdr mm[UROCE_UDP_BATCH];
	unsigned int ok = 0, done = 0;

	*err = 0;
	if (n > UROCE_UDP_BATCH)
		n = UROCE_UDP_BATCH;
	/* The messages before the first the kernel would refuse go; that one reports. */
	for (; ok < n && !(*err = gso_check(m[ok].len, m[ok].seg)); ok++)
		out_msg_iov(s, f, m[ok].dport, m[ok].roce, m[ok].len, m[ok].seg, m[ok].iov,
			    m[ok].iovcnt, &o[ok], &mm[ok].msg_hdr);
	/*
	 * sendmmsg stops at the first message that fails and returns how many went before it,
	 * dropping that message's error (Linux's __sys_sendmmsg); sent again from there, the
	 * message fails again with its error, or goes.
	 */
	while (done < ok) {
		int r = nc_sendmmsg(s->fd, mm + done, ok - done, MSG_NOSIGNAL);

		if (r <= 0) {
			*err = r < 0 ? send_error(s, f, errno) : EAGAIN;
			return done;
		}
		done += (unsigned int)r;
	}
	return done;
}

int uroce_udp_rx_source(struct roce_ipudp *f, const struct uroce_udp *s, const void *name,
			size_t namelen)
{
	memset(f, 0, sizeof(*f));
	f->dport = s->port;
	if (s->family == AF_INET) {
		struct sockaddr_in sin;

		if (namelen < sizeof(sin))
			return EINVAL;
		memcpy(&sin, name, sizeof(sin));
		if (sin.sin_family != AF_INET)
			return EINVAL;
		roce_gid_from_v4(f->sgid, (const uint8_t *)&sin.sin_addr);
		f->sport = ntohs(sin.sin_port);
		f->ip_frag = ROCE_IPV4_DF;
	} else {
		struct sockaddr_in6 sin6;

		if (namelen < sizeof(sin6))
			return EINVAL;
		memcpy(&sin6, name, sizeof(sin6));
		if (sin6.sin6_family != AF_INET6)
			return EINVAL;
		memcpy(f->sgid, &sin6.sin6_addr, 16);
		f->sport = ntohs(sin6.sin6_port);
	}
	return 0;
}

ssize_t uroce_udp_recv(const struct uroce_udp *s, struct roce_ipudp *f, uint8_t *buf, size_t cap,
		       uint16_t *seg)
{
	union {
		struct cmsghdr align;
		char buf[UROCE_UDP_CONTROL_LEN];
	} control;
	struct sockaddr_storage from;
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	struct msghdr msg = {
		.msg_name = &from,
		.msg_namelen = sizeof(from),
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n = nc_recvmsg(s->fd, &msg, MSG_DONTWAIT);
	int err;

	if (n < 0)
		return -1;
	if (msg.msg_flags & MSG_TRUNC) {
		errno = EMSGSIZE;
		return -1;
	}
	err = uroce_udp_rx_source(f, s, &from, msg.msg_namelen);
	if (err) {
		errno = err;
		return -1;
	}
	*seg = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		uroce_udp_rx_cmsg(f, c, seg);
	return n;
}

/* The int (or, for IP_TOS, byte) value of a control message, or -1 if it is too short. */
static int cmsg_int(const struct cmsghdr *c, size_t size)
{
	int v = 0;
	uint8_t b;

	if (c->cmsg_len < CMSG_LEN(size))
		return -1;
	if (size == 1) {
		memcpy(&b, CMSG_DATA(c), 1);
		return b;
	}
	memcpy(&v, CMSG_DATA(c), sizeof(v));
	return v;
}

void uroce_udp_rx_cmsg(struct roce_ipudp *f, const struct cmsghdr *c, uint16_t *seg)
{
	int v;

	if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
		if ((v = cmsg_int(c, sizeof(int))) > 0 && v <= UINT16_MAX)
			*seg = (uint16_t)v;
		return;
	}
	if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
		struct in_pktinfo pi;

		if (c->cmsg_len >= CMSG_LEN(sizeof(pi))) {
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			roce_gid_from_v4(f->dgid, (const uint8_t *)&pi.ipi_addr);
		}
	} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
		if ((v = cmsg_int(c, 1)) >= 0)
			f->tos = (uint8_t)v;
	} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
		if ((v = cmsg_int(c, sizeof(int))) >= 0)
			f->ttl = (uint8_t)v;
	} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
		struct in6_pktinfo pi;

		if (c->cmsg_len >= CMSG_LEN(sizeof(pi))) {
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(f->dgid, &pi.ipi6_addr, 16);
		}
	} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
		if ((v = cmsg_int(c, sizeof(int))) >= 0)
			f->tos = (uint8_t)v;
	} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
		if ((v = cmsg_int(c, sizeof(int))) >= 0)
			f->ttl = (uint8_t)v;
	} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_FLOWINFO) {
		uint32_t fi;

		if (c->cmsg_len >= CMSG_LEN(sizeof(fi))) {
			memcpy(&fi, CMSG_DATA(c), sizeof(fi));
			f->flow_label = ntohl(fi) & 0xFFFFF;
		}
	}
}

uint64_t uroce_udp_drops(const struct uroce_udp *s)
{
	uint32_t info[SK_MEMINFO_VARS] = {0};
	socklen_t len = sizeof(info);

	if (getsockopt(s->fd, SOL_SOCKET, SO_MEMINFO, info, &len) || len <= SK_MEMINFO_DROPS * 4)
		return 0;
	return info[SK_MEMINFO_DROPS];
}

size_t uroce_udp_segment(size_t len, uint16_t seg, size_t off)
{
	if (!seg || seg >= len - off)
		return len - off;
	return seg;
}
