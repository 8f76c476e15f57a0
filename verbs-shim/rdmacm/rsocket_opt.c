// SPDX-License-Identifier: MIT
/*
 * rsockets: rsetsockopt and rgetsockopt, the options rdma-core's rsockets support (rsocket(7)):
 * SOL_SOCKET SO_REUSEADDR, SO_RCVBUF, SO_SNDBUF, SO_LINGER, SO_KEEPALIVE, SO_OOBINLINE,
 * SO_ERROR (get); IPPROTO_TCP TCP_NODELAY, TCP_MAXSEG, TCP_KEEPIDLE, TCP_KEEPCNT, TCP_KEEPINTVL;
 * IPPROTO_IPV6 IPV6_V6ONLY; SOL_RDMA RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE,
 * RDMA_ROUTE. Buffer sizes count once the endpoint is made (at connect or accept): set them
 * before. Any other option fails with ENOPROTOOPT, which setsockopt(2) gives (rdma-core gives
 * ENOTSUP). A datagram socket passes the socket levels to its UDP socket as well.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

/* The kernel's TCP keepalive time (rdma-core's default for SO_KEEPALIVE), in seconds. */
static unsigned int rs_default_keepalive(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");
	unsigned int t = 7200;

	if (f) {
		if (fscanf(f, "%u", &t) != 1 || !t)
			t = 7200;
		fclose(f);
	}
	return t;
}

/* SO_KEEPALIVE: the service thread sends a keepalive every keepalive_time seconds. */
static void rs_set_keepalive(struct rs *rs, bool on)
{
	if (on == rs->keepalive)
		return;
	if (on && !rs->keepalive_time)
		rs->keepalive_time = rs_default_keepalive();
	rs->keepalive_due = rs_now_ms() + (uint64_t)rs->keepalive_time * 1000;
	rs->keepalive = on;
	if (on && !rs->in_svc && rs->type == SOCK_STREAM)
		rs_svc_add(rs);
	rs_svc_kick();
}

static void rs_set_bit(uint64_t *opts, int optname, bool on)
{
	if (on)
		*opts |= UINT64_C(1) << optname;
	else
		*opts &= ~(UINT64_C(1) << optname);
}

static int rs_setsockopt_socket(struct rs *rs, int optname, const void *optval, socklen_t optlen)
{
	int v = *(const int *)optval;

	switch (optname) {
	case SO_REUSEADDR:
		/* uroce's rdma_cm takes it before the id is bound; after, it keeps the binding. */
		if (rs->type == SOCK_STREAM && rs->state == RS_IDLE &&
		    rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
				    (void *)optval, optlen))
			return -1;
		rs_set_bit(&rs->so_opts, optname, v);
		return 0;
	case SO_RCVBUF: /* as Linux: the buffer is twice what is asked */
		if ((rs->type == SOCK_STREAM && !rs->rbuf) || rs->type == SOCK_DGRAM)
			rs->rbuf_size = (uint32_t)v << 1;
		if (rs->rbuf_size < RS_SNDLOWAT << 1)
			rs->rbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_SNDBUF:
		if (!rs->sbuf)
			rs->sbuf_size = (uint32_t)v << 1;
		if (rs->sbuf_size < RS_SNDLOWAT << 1)
			rs->sbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_LINGER:
		if (optlen < sizeof(struct linger))
			return rs_fail(EINVAL);
		/* rdma-core keeps it inverted, so that the default (bit clear) lingers. */
		rs_set_bit(&rs->so_opts, optname, !((const struct linger *)optval)->l_onoff);
		return 0;
	case SO_KEEPALIVE:
		rs_set_keepalive(rs, v);
		rs_set_bit(&rs->so_opts, optname, v);
		return 0;
	case SO_OOBINLINE:
		rs_set_bit(&rs->so_opts, optname, v);
		return 0;
	default:
		return rs_fail(ENOPROTOOPT);
	}
}

static int rs_setsockopt_tcp(struct rs *rs, int optname, const void *optval)
{
	int v = *(const int *)optval;

	switch (optname) {
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
		return 0; /* rdma-core: meaningless over a reliable connection */
	case TCP_KEEPIDLE:
		if (v <= 0)
			return rs_fail(EINVAL);
		rs->keepalive_time = (unsigned int)v;
		rs->keepalive_due = rs_now_ms() + (uint64_t)v * 1000;
		rs_svc_kick();
		return 0;
	case TCP_NODELAY: /* every rsend leaves at once anyway */
		rs_set_bit(&rs->tcp_opts, optname, v);
		return 0;
	case TCP_MAXSEG:
		return 0;
	default:
		return rs_fail(ENOPROTOOPT);
	}
}

static int rs_setsockopt_rdma(struct rs *rs, int optname, const void *optval, socklen_t optlen)
{
	uint32_t v = *(const uint32_t *)optval;

	if (rs->state >= RS_RESOLVING_ADDR) /* the endpoint is made already */
		return rs_fail(EINVAL);
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)(v < RS_QP_MAX_SIZE ? v : RS_QP_MAX_SIZE);
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)(v < RS_QP_MAX_SIZE ? v : RS_QP_MAX_SIZE);
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)(v < RS_QP_MAX_SIZE ? v : RS_QP_MAX_SIZE);
		return 0;
	case RDMA_IOMAPSIZE: /* rounded to what the handshake's byte can say */
		rs->target_iomap_size =
			(uint16_t)rs_scale_to_value((uint8_t)rs_value_to_scale((int)v, 8), 8);
		return 0;
	case RDMA_ROUTE: {
		void *r = malloc(optlen);

		if (!r)
			return rs_fail(ENOMEM);
		memcpy(r, optval, optlen);
		free(rs->route);
		rs->route = r;
		rs->route_len = optlen;
		return 0;
	}
	default:
		return rs_fail(ENOPROTOOPT);
	}
}

/*
 * rsetsockopt: 0, or -1 with errno EBADF, EINVAL (a NULL or short value; SOL_RDMA options once
 * connecting), ENOPROTOOPT (an option not listed above), ENOMEM, or what the datagram socket's
 * UDP socket or the rdma_cm gives.
 */
UROCE_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			     socklen_t optlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (!optval || optlen < sizeof(int))
		return rs_fail(EINVAL);
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    setsockopt(rs->index, level, optname, optval, optlen))
		return -1;
	switch (level) {
	case SOL_SOCKET:
		return rs_setsockopt_socket(rs, optname, optval, optlen);
	case IPPROTO_TCP:
		return rs_setsockopt_tcp(rs, optname, optval);
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return rs_fail(ENOPROTOOPT);
		if (rs->type == SOCK_STREAM &&
		    rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				    (void *)optval, optlen))
			return -1;
		rs_set_bit(&rs->ipv6_opts, optname, *(const int *)optval);
		return 0;
	case SOL_RDMA:
		return rs_setsockopt_rdma(rs, optname, optval, optlen);
	default:
		return rs->type == SOCK_DGRAM ? 0 : rs_fail(ENOPROTOOPT);
	}
}

/* RDMA_ROUTE, read: the route's path records as struct ibv_path_data (rs_convert_sa_path). */
static int rs_get_route(struct rs *rs, void *optval, socklen_t *optlen)
{
	struct ibv_path_data d;
	socklen_t len = 0;

	if (rs->route) {
		if (*optlen < rs->route_len)
			return rs_fail(EINVAL);
		memcpy(optval, rs->route, rs->route_len);
		*optlen = rs->route_len;
		return 0;
	}
	if (*optlen < sizeof(d) || !rs->cm_id)
		return rs_fail(EINVAL);
	for (int i = 0; i < rs->cm_id->route.num_paths && len + sizeof(d) <= *optlen; i++) {
		const struct ibv_sa_path_rec *p = &rs->cm_id->route.path_rec[i];
		uint32_t fl = be32toh(p->flow_label) << 8;

		memset(&d, 0, sizeof(d));
		d.path.dgid = p->dgid;
		d.path.sgid = p->sgid;
		d.path.dlid = p->dlid;
		d.path.slid = p->slid;
		d.path.flowlabel_hoplimit = htobe32(fl | p->hop_limit);
		d.path.tclass = p->traffic_class;
		d.path.reversible_numpath = (uint8_t)(p->reversible << 7 | 1);
		d.path.pkey = p->pkey;
		d.path.qosclass_sl = htobe16(p->sl);
		d.path.mtu = (uint8_t)(p->mtu | 2 << 6); /* "exactly" */
		d.path.rate = (uint8_t)(p->rate | 2 << 6);
		d.path.packetlifetime = (uint8_t)(p->packet_life_time | 2 << 6);
		d.flags = (uint32_t)p->preference;
		memcpy((uint8_t *)optval + len, &d, sizeof(d));
		len += sizeof(d);
	}
	*optlen = len;
	return 0;
}

/* The int value @v into @optval. */
static int rs_put_int(void *optval, socklen_t *optlen, int v)
{
	*(int *)optval = v;
	*optlen = sizeof(int);
	return 0;
}

/*
 * rgetsockopt: 0, or -1 with errno EBADF, EINVAL (NULL, or too short a buffer), ENOPROTOOPT.
 * SO_ERROR gives the socket's pending error (a failed non-blocking connect's) and clears it.
 */
UROCE_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rs *rs = rs_lookup(socket);
	int e;

	if (!rs)
		return rs_fail(EBADF);
	if (!optval || !optlen || *optlen < sizeof(int))
		return rs_fail(EINVAL);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return rs_put_int(optval, optlen,
					  !!(rs->so_opts & (UINT64_C(1) << optname)));
		case SO_RCVBUF:
			return rs_put_int(optval, optlen, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return rs_put_int(optval, optlen, (int)rs->sbuf_size);
		case SO_TYPE:
			return rs_put_int(optval, optlen, rs->type);
		case SO_LINGER:
			if (*optlen < sizeof(struct linger))
				return rs_fail(EINVAL);
			((struct linger *)optval)->l_onoff =
				!(rs->so_opts & (UINT64_C(1) << SO_LINGER));
			((struct linger *)optval)->l_linger = 0;
			*optlen = sizeof(struct linger);
			return 0;
		case SO_ERROR:
			pthread_mutex_lock(&rs->lock);
			e = rs->state == RS_CONNECT_ERROR || rs->state == RS_ERROR ? rs->err : 0;
			if (rs->state != RS_DISCONNECTED)
				rs->err = 0;
			pthread_mutex_unlock(&rs->lock);
			return rs_put_int(optval, optlen, e);
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return rs_put_int(optval, optlen, 1);
		case TCP_KEEPIDLE:
			return rs_put_int(optval, optlen, (int)rs->keepalive_time);
		case TCP_NODELAY:
			return rs_put_int(optval, optlen,
					  !!(rs->tcp_opts & (UINT64_C(1) << TCP_NODELAY)));
		case TCP_MAXSEG: /* the path MTU once routed */
			return rs_put_int(optval, optlen,
					  rs->cm_id && rs->cm_id->route.num_paths
						  ? 1 << (7 + rs->cm_id->route.path_rec->mtu)
						  : 2048);
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			return rs_put_int(optval, optlen,
					  !!(rs->ipv6_opts & (UINT64_C(1) << IPV6_V6ONLY)));
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			return rs_put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return rs_put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return rs_put_int(optval, optlen, rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return rs_put_int(optval, optlen, rs->target_iomap_size);
		case RDMA_ROUTE:
			return rs_get_route(rs, optval, optlen);
		}
		break;
	}
	return rs_fail(ENOPROTOOPT);
}
