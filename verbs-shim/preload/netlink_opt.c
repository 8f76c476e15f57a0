// SPDX-License-Identifier: MIT
/*
 * The socket options of the emulated NETLINK_RDMA sockets (netlink.c): SOL_NETLINK's as
 * net/netlink/af_netlink.c's netlink_setsockopt and netlink_getsockopt keep them, SOL_SOCKET's
 * on the program's own end of the socket pair.
 */
#include <errno.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/preload/netlink_int.h"
#include "verbs-shim/preload/real.h"

/* netlink_setsockopt() */
static int nl_setsockopt(struct nlsock *s, int name, const void *val, socklen_t len)
{
	int v = 0;
	bool *flag;

	if (len >= sizeof(int) && val)
		memcpy(&v, val, sizeof(v));
	switch (name) {
	case NETLINK_ADD_MEMBERSHIP:
	case NETLINK_DROP_MEMBERSHIP:
		if (!s->net_admin)
			return EPERM;
		if (v <= 0 || v > NL_GROUPS)
			return EINVAL;
		if (name == NETLINK_ADD_MEMBERSHIP)
			s->groups |= 1u << (v - 1);
		else
			s->groups &= ~(1u << (v - 1));
		return 0;
	case NETLINK_LISTEN_ALL_NSID:
		return s->net_admin ? 0 : EPERM;
	case NETLINK_PKTINFO:
		flag = &s->pktinfo;
		break;
	case NETLINK_BROADCAST_ERROR:
		flag = &s->bcast_err;
		break;
	case NETLINK_NO_ENOBUFS:
		flag = &s->no_enobufs;
		break;
	case NETLINK_CAP_ACK:
		flag = &s->cap_ack;
		break;
	case NETLINK_EXT_ACK:
		flag = &s->ext_ack;
		break;
	case NETLINK_GET_STRICT_CHK:
		flag = &s->strict_chk;
		break;
	default:
		return ENOPROTOOPT;
	}
	*flag = v != 0;
	return 0;
}

/*
 * SOL_SOCKET options are the socket's; SO_RCVBUF, which bounds what the kernel queues for a
 * netlink socket, bounds the other end's sending here (an AF_UNIX datagram queue counts against
 * its sender).
 */
static COLD int emu_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct nlsock *s;
	int err;

	if (level == SOL_SOCKET) {
		int peer_opt = name == SO_RCVBUF ? SO_SNDBUF : SO_SNDBUFFORCE;

		err = REAL(setsockopt)(fd, level, name, val, len);
		if (err || (name != SO_RCVBUF && name != SO_RCVBUFFORCE))
			return err;
		pthread_mutex_lock(&nl_lock);
		s = nl_sock_of(fd);
		if (s)
			err = REAL(setsockopt)(s->peer, SOL_SOCKET, peer_opt, val, len);
		pthread_mutex_unlock(&nl_lock);
		return 0; /* the program's own socket took it */
	}
	if (level != SOL_NETLINK)
		return nl_fail(ENOPROTOOPT);
	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	err = s ? nl_setsockopt(s, name, val, len) : EBADF;
	pthread_mutex_unlock(&nl_lock);
	return err ? nl_fail(err) : 0;
}

UROCE_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (nl_pass(fd))
		return REAL(setsockopt)(fd, level, name, val, len);
	return emu_setsockopt(fd, level, name, val, len);
}

/* netlink_getsockopt(): an int flag, or the joined groups' bitmap. */
static int nl_getsockopt(const struct nlsock *s, int name, void *val, socklen_t *len)
{
	int v;

	switch (name) {
	case NETLINK_LIST_MEMBERSHIPS: {
		uint32_t g = s->groups;
		socklen_t n = *len < sizeof(g) ? *len : sizeof(g);

		memcpy(val, &g, n & ~(socklen_t)3);
		*len = sizeof(g);
		return 0;
	}
	case NETLINK_PKTINFO:
		v = s->pktinfo;
		break;
	case NETLINK_BROADCAST_ERROR:
		v = s->bcast_err;
		break;
	case NETLINK_NO_ENOBUFS:
		v = s->no_enobufs;
		break;
	case NETLINK_CAP_ACK:
		v = s->cap_ack;
		break;
	case NETLINK_EXT_ACK:
		v = s->ext_ack;
		break;
	case NETLINK_GET_STRICT_CHK:
		v = s->strict_chk;
		break;
	default:
		return ENOPROTOOPT;
	}
	if (*len < sizeof(int))
		return EINVAL;
	*len = sizeof(int);
	memcpy(val, &v, sizeof(v));
	return 0;
}

/*
 * SOL_NETLINK options from the socket's flags; SO_TYPE, SO_PROTOCOL and SO_DOMAIN as a netlink
 * socket's (sock_getsockopt); every other SOL_SOCKET option from the program's own end.
 */
static COLD int emu_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct nlsock *s;
	int err = 0, v = -1;

	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (!s)
		err = EBADF;
	else if (level == SOL_NETLINK)
		err = nl_getsockopt(s, name, val, len);
	else if (level != SOL_SOCKET)
		err = ENOPROTOOPT;
	else if (name == SO_TYPE)
		v = s->type;
	else if (name == SO_PROTOCOL)
		v = NETLINK_RDMA;
	else if (name == SO_DOMAIN)
		v = AF_NETLINK;
	pthread_mutex_unlock(&nl_lock);
	if (err)
		return nl_fail(err);
	if (level == SOL_SOCKET && v < 0)
		return REAL(getsockopt)(fd, level, name, val, len);
	if (level == SOL_SOCKET) {
		if (*len < sizeof(int))
			return nl_fail(EINVAL);
		memcpy(val, &v, sizeof(v));
		*len = sizeof(int);
	}
	return 0;
}

UROCE_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if (nl_pass(fd))
		return REAL(getsockopt)(fd, level, name, val, len);
	return emu_getsockopt(fd, level, name, val, len);
}
