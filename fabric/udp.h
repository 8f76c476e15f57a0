/* SPDX-License-Identifier: MIT */
/*
 * The UDP sockets that carry RoCEv2: one per address family, bound to the wildcard address, on
 * the RoCEv2 port (the hub) or an ephemeral one (every process sends from one of those).
 *
 * Options (set at open but the IP header values, see uroce_udp_recv_ip_fields):
 * - IP_PMTUDISC_DO / IPV6_PMTUDISC_DO: never fragment. For IPv4 an unconnected socket with DF
 *   makes the kernel write IP ID 0, which the ICRC covers (PROTOCOL.md §2.1, ARCHITECTURE.md
 *   "The data path"); a frame too big for the path fails with EMSGSIZE.
 * - IP_PKTINFO (IPV6_RECVPKTINFO): each datagram reports its destination address, which the
 *   ICRC covers.
 * - IPV6_FLOWINFO_SEND: the flow label is sent.
 * - UDP_NO_CHECK6_RX: RoCE stacks send IPv6 with a zero UDP checksum (PROTOCOL.md §1.4).
 * - Buffers of UROCE_UDP_BUF bytes (SO_RCVBUFFORCE when permitted, else up to the sysctl limit).
 * - UDP_GRO: a receive may hold several datagrams of one flow back to back, each of the size
 *   the UDP_GRO control message gives but the last; uroce_udp_segment() cuts them apart.
 * - SOCK_CLOEXEC, and SOCK_NONBLOCK: a full send buffer is EAGAIN, a lost packet.
 */
#ifndef UROCE_FABRIC_UDP_H
#define UROCE_FABRIC_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/types.h>

#include "transport/ipudp.h"

#define UROCE_UDP_BUF (8u << 20)

/* Room for the control messages the options above produce on one datagram. */
#define UROCE_UDP_CONTROL_LEN 256
/* The most one receive returns: datagrams coalesced by UDP GRO (a UDP packet's limit). */
#define UROCE_UDP_RECV_MAX 65535u

struct uroce_udp {
	int fd;          /* -1: not open */
	int family;      /* AF_INET or AF_INET6 */
	uint16_t port;   /* the bound port */
	uint32_t rcvbuf; /* the receive buffer the kernel granted (SO_RCVBUF: twice the payload) */
};

/*
 * Have the kernel queue the ICMP errors of what @s sends (IP_RECVERR / IPV6_RECVERR), to be
 * taken with uroce_udp_take_error; a send may then fail once with such an error (the socket's
 * pending one), and should be repeated. 0 or the errno of setsockopt.
 */
int uroce_udp_recverr(const struct uroce_udp *s);

/*
 * Have each datagram @s receives report its IP header's traffic class and hop limit (and IPv6
 * flow label): IP_RECVTOS, IP_RECVTTL (IPV6_RECVTCLASS, IPV6_RECVHOPLIMIT, IPV6_FLOWINFO).
 * Without them those fields of a received roce_ipudp stay 0. The ICRC masks them (PROTOCOL.md
 * §2.1); a UD GRH, a capture and a CM answer need them, and they cost every receive two more
 * control messages (docs/PERFORMANCE.md), so a socket asks for
 * them only when one of those is in use (net.h: uroce_net_want_ip_fields). Returns 0 (also for
 * a socket not open) or the errno of setsockopt.
 */
int uroce_udp_recv_ip_fields(const struct uroce_udp *s);

/*
 * Take one ICMP error queued on @s: 1 with the destination of the datagram that drew it in
 * @gid and the error in *@err (ECONNREFUSED: port unreachable; EHOSTUNREACH, ENETUNREACH, ...);
 * 0 when none is queued.
 */
int uroce_udp_take_error(const struct uroce_udp *s, uint8_t gid[16], int *err);

/*
 * Open a socket of @family (AF_INET, or AF_INET6 with IPV6_V6ONLY) bound to the wildcard address
 * and @port (0: an ephemeral port). Returns 0, or the errno of the call that failed:
 * EAFNOSUPPORT or EADDRNOTAVAIL (no IPv6 on this host), EADDRINUSE, EACCES, EMFILE, ...
 */
int uroce_udp_open(struct uroce_udp *s, int family, uint16_t port);

/* Close @s (a closed one is a no-op). */
void uroce_udp_close(struct uroce_udp *s);

/*
 * Send @roce (@len bytes) to @f's dgid and dport, from @f's sgid (IP_PKTINFO / IPV6_PKTINFO)
 * with @f's tos and ttl (and flow label for IPv6). @f's family must be @s's. Returns 0, or
 * EADDRNOTAVAIL (sgid is not an address of this host), EMSGSIZE, EAGAIN, ENOBUFS,
 * ECONNREFUSED (an earlier datagram drew an ICMP port unreachable), ENETUNREACH, ...
 */
int uroce_udp_send(const struct uroce_udp *s, const struct roce_ipudp *f, const uint8_t *roce,
		   size_t len);

/*
 * Join (or leave) the multicast @group (a GID of @s's family) on interface @ifindex. With
 * IP_MULTICAST_ALL (Linux's default) every socket of the host bound to the port a group's
 * datagrams go to receives them once one socket has joined. Returns 0 or setsockopt's errno
 * (ENODEV: no such interface; EADDRNOTAVAIL: not a member, or no multicast there).
 */
int uroce_udp_join(const struct uroce_udp *s, const uint8_t group[16], unsigned int ifindex,
		   bool join);

/* The most one GSO send may carry: bytes of UDP payload, and datagrams (UDP_MAX_SEGMENTS). */
#define UROCE_UDP_GSO_MAX  65000u
#define UROCE_UDP_GSO_SEGS 64u

/* Whether a GSO send of @k datagrams, @bytes in all, has room for one more of @len bytes. */
static inline bool uroce_udp_gso_room(unsigned int k, size_t bytes, size_t len)
{
	return k < UROCE_UDP_GSO_SEGS && bytes + len <= UROCE_UDP_GSO_MAX;
}

/*
 * Send the datagrams laid out back to back in @roce (@len bytes): each @seg bytes but the last,
 * which may be shorter, as one UDP GSO send (UDP_SEGMENT); a single datagram is a plain send.
 * The kernel (or the NIC) cuts them apart. For IPv4 with DF from this unconnected socket it
 * numbers their IP IDs 0, 1, 2, ... (inet_gso_segment), which ICRCs must follow. Returns as
 * uroce_udp_send(), or EMSGSIZE for more than UROCE_UDP_GSO_MAX bytes or UROCE_UDP_GSO_SEGS
 * datagrams; EIO or EINVAL if the kernel cannot do UDP GSO on this path.
 */
int uroce_udp_send_gso(const struct uroce_udp *s, const struct roce_ipudp *f, const uint8_t *roce,
		       size_t len, uint16_t seg);

/*
 * One message of uroce_udp_send_batch: @len bytes at @roce to UDP port @dport, as
 * uroce_udp_send_gso sends them with @seg (0: one datagram). With @iov, the @len bytes are
 * gathered from @iov[0..@iovcnt) instead (@roce unused), in at most UROCE_UDP_IOV pieces.
 */
struct uroce_udp_msg {
	const uint8_t *roce;
	size_t len;
	uint16_t seg;
	uint16_t dport;
	const struct iovec *iov;
	unsigned int iovcnt;
};

/* The most pieces of one message (the kernel's UIO_MAXIOV). */
#define UROCE_UDP_IOV 1024u

/* The most messages uroce_udp_send_batch takes. */
#define UROCE_UDP_BATCH 16u

/*
 * Send the messages @m[0..n) (n at most UROCE_UDP_BATCH) from @f's source to @f's destination
 * address, each to its own port (@f's dport unused), in one system call (sendmmsg; another
 * only after a message that failed): a GSO run and a datagram of another length, such as an
 * ACK and the reply behind it, cost one call instead of two. Returns how many were sent: all @n,
 * with *@err 0, or those before the first that failed, with *@err its error as
 * uroce_udp_send_gso's.
 */
unsigned int uroce_udp_send_batch(const struct uroce_udp *s, const struct roce_ipudp *f,
				  const struct uroce_udp_msg *m, unsigned int n, int *err);

/*
 * Receive from @s without waiting, outside the progress thread (which must not be receiving on
 * @s): the UDP payload into @buf (@cap bytes; UROCE_UDP_RECV_MAX holds anything), and @f as the
 * progress thread would describe it; *@seg is the UDP GRO segment size when several datagrams
 * came in one (0: one). Returns the bytes received, or -1 with errno EAGAIN (nothing queued),
 * EMSGSIZE (longer than @cap: discarded), EINVAL (an address not of @s's family) or recvmsg's.
 */
ssize_t uroce_udp_recv(const struct uroce_udp *s, struct roce_ipudp *f, uint8_t *buf, size_t cap,
		       uint16_t *seg);

/*
 * The length of the datagram at byte @off of a receive of @len bytes whose UDP GRO segment size
 * is @seg (0: a single datagram): @seg, or what is left for the last one.
 */
size_t uroce_udp_segment(size_t len, uint16_t seg, size_t off);

/*
 * Start the description @f of a datagram received on @s from @name (a sockaddr of @s's family,
 * @namelen bytes): source address and port, destination port; ip_id 0 and, for IPv4, ip_frag DF
 * (net.h). Returns 0, or EINVAL if @name is not an address of @s's family.
 */
int uroce_udp_rx_source(struct roce_ipudp *f, const struct uroce_udp *s, const void *name,
			size_t namelen);

/*
 * Apply one control message of a received buffer to @f (destination address, tos, ttl, flow
 * label), or to *@seg (the UDP GRO segment size). Others are ignored.
 */
void uroce_udp_rx_cmsg(struct roce_ipudp *f, const struct cmsghdr *c, uint16_t *seg);

/*
 * Datagrams the kernel dropped on @s because its receive buffer was full (SO_MEMINFO: the
 * SO_RXQ_OVFL control message did not arrive with io_uring receives on Linux 6.18 here).
 */
uint64_t uroce_udp_drops(const struct uroce_udp *s);

#endif
