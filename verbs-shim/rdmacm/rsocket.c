// SPDX-License-Identifier: MIT
/*
 * rsockets (rsocket(7)): the socket table and the calls on a socket as a whole -- rsocket,
 * rbind, rclose, rgetpeername, rgetsockname, rfcntl. The protocol is described in
 * rsocket_int.h; connections are in rsocket_conn.c, the data path in rsocket_data.c.
 *
 * A socket's number is a file descriptor of its own, as rdma-core's: a stream socket's is the
 * fd of its rdma_cm id's event channel, a datagram socket's that of its UDP socket. So it never
 * equals another open descriptor of the process, and rpoll can tell an rsocket from an
 * ordinary fd by the table alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

/*
 * The table: fd -> socket, in chunks allocated on first use and never freed, so that a lookup
 * takes no lock (an rsocket call on a socket another thread closes is the application's race,
 * as with close(2)).
 */
#define RS_CHUNK_BITS 12
#define RS_CHUNKS     256 /* fds below 1 << 20 */
static _Atomic(struct rs *) *rs_table[RS_CHUNKS];
static pthread_mutex_t rs_table_lock = PTHREAD_MUTEX_INITIALIZER;

struct rs *rs_lookup(int index)
{
	_Atomic(struct rs *) *chunk;

	if (index < 0 || index >= RS_CHUNKS << RS_CHUNK_BITS)
		return NULL;
	chunk = __atomic_load_n(&rs_table[index >> RS_CHUNK_BITS], __ATOMIC_ACQUIRE);
	if (!chunk)
		return NULL;
	return atomic_load(&chunk[index & ((1 << RS_CHUNK_BITS) - 1)]);
}

/* 0, or an errno: EMFILE (an fd beyond the table), ENOMEM. */
int rs_insert(struct rs *rs, int index)
{
	_Atomic(struct rs *) *chunk;

	if (index < 0 || index >= RS_CHUNKS << RS_CHUNK_BITS)
		return EMFILE;
	pthread_mutex_lock(&rs_table_lock);
	chunk = rs_table[index >> RS_CHUNK_BITS];
	if (!chunk) {
		chunk = calloc(1u << RS_CHUNK_BITS, sizeof(*chunk));
		if (!chunk) {
			pthread_mutex_unlock(&rs_table_lock);
			return ENOMEM;
		}
		__atomic_store_n(&rs_table[index >> RS_CHUNK_BITS], chunk, __ATOMIC_RELEASE);
	}
	atomic_store(&chunk[index & ((1 << RS_CHUNK_BITS) - 1)], rs);
	rs->index = index;
	pthread_mutex_unlock(&rs_table_lock);
	return 0;
}

void rs_remove(struct rs *rs)
{
	if (rs->index < 0)
		return;
	pthread_mutex_lock(&rs_table_lock);
	atomic_store(&rs_table[rs->index >> RS_CHUNK_BITS][rs->index & ((1 << RS_CHUNK_BITS) - 1)],
		     NULL);
	pthread_mutex_unlock(&rs_table_lock);
	rs->index = -1;
}

uint64_t rs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * rdma-core's compression of an iomap size into a byte: up to 2^(bits-1) as is, above it the
 * top bit set and the value shifted by @bits (rs_value_to_scale / rs_scale_to_value).
 */
int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

bool rs_nonblocking(const struct rs *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/*
 * A new socket; a listener's accepted sockets inherit its sizes (rdma-core's rs_alloc), others
 * get rdma-core's defaults. NULL if memory is short.
 */
struct rs *rs_alloc(const struct rs *inherit, int type)
{
	struct rs *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->index = -1;
	rs->accept_fd = -1;
	rs->accept_tail = &rs->accept_head;
	if (inherit) {
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->sq_inline = inherit->sq_inline;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->ctrl_max_seqno = inherit->ctrl_max_seqno;
		rs->target_iomap_size = inherit->target_iomap_size;
		rs->domain = inherit->domain;
		rs->so_opts = inherit->so_opts;
		rs->tcp_opts = inherit->tcp_opts;
		rs->keepalive_time = inherit->keepalive_time;
	} else {
		const struct rs_conf *c = rs_conf();

		rs->sbuf_size = c->wmem;
		rs->rbuf_size = c->mem;
		rs->sq_inline = c->inline_size;
		rs->sq_size = c->sq_size;
		rs->rq_size = c->rq_size;
		rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
		rs->target_iomap_size = type == SOCK_STREAM ? c->iomap_size : 0;
	}
	pthread_mutex_init(&rs->lock, NULL);
	pthread_mutex_init(&rs->wait_lock, NULL);
	pthread_mutex_init(&rs->cm_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	return rs;
}

/* Everything of @rs goes: its connection (the peer sees a DREQ if it was up), its number. */
void rs_free(struct rs *rs)
{
	if (rs->type == SOCK_DGRAM) {
		ds_free(rs);
	} else {
		/* Connections a listener accepted that nobody took. */
		while (rs->accept_head) {
			struct rs *child = rs->accept_head;

			rs->accept_head = child->accept_next;
			rs_svc_remove(child);
			rs_free(child);
		}
		if (rs->accept_fd >= 0)
			close(rs->accept_fd);
		rs_remove(rs);
		rs_free_endpoint(rs);
		if (rs->cm_id)
			rdma_destroy_id(rs->cm_id);
	}
	free(rs->route);
	pthread_mutex_destroy(&rs->lock);
	pthread_mutex_destroy(&rs->wait_lock);
	pthread_mutex_destroy(&rs->cm_lock);
	pthread_mutex_destroy(&rs->map_lock);
	free(rs);
}

/*
 * rsocket(7): AF_INET or AF_INET6, SOCK_STREAM (protocol 0 or IPPROTO_TCP) or SOCK_DGRAM (0 or
 * IPPROTO_UDP). The socket's number, or -1 with errno ENOTSUP (another domain, type or
 * protocol, as rdma-core; AF_IB is not offered: uroce's rdma_cm has no AF_IB addresses),
 * ENOMEM, EMFILE, or what creating the rdma_cm id or UDP socket gives.
 */
UROCE_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rs *rs;
	int err;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) ||
	    (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return rs_fail(ENOTSUP);
	rs = rs_alloc(NULL, type);
	if (!rs)
		return rs_fail(ENOMEM);
	rs->domain = domain;
	if (type == SOCK_STREAM) {
		if (rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP)) {
			err = errno;
			goto fail;
		}
		rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
		err = rs_insert(rs, rs->cm_id->channel->fd);
	} else {
		err = ds_init(rs, domain);
		if (!err)
			err = rs_insert(rs, rs->index);
	}
	if (err)
		goto fail;
	return rs->index;
fail:
	rs_free(rs);
	return rs_fail(err);
}

/*
 * rbind: as bind(2) through rdma_bind_addr (the port is reserved in the host's rdma_cm
 * directory) for a stream socket, the UDP socket's bind for a datagram one. 0, or -1 with
 * errno EBADF (no such rsocket), EINVAL (a bad address or already bound), EADDRINUSE, or
 * rdma_bind_addr's.
 */
UROCE_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return rs_fail(EBADF);
	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    (addr->sa_family == AF_INET6 && addrlen < sizeof(struct sockaddr_in6)))
		return rs_fail(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return ds_bind(rs, addr, addrlen);
	if (rs->state != RS_IDLE)
		return rs_fail(EINVAL);
	ret = rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr);
	if (!ret)
		rs->state = RS_BOUND;
	return ret;
}

/*
 * rclose: a connected stream socket first shuts down (rshutdown SHUT_RDWR: the peer is sent
 * DISCONNECT and our sends complete), then its connection and number go. 0, or -1 with errno
 * EBADF. (rdma-core returns EBADF itself rather than -1 for an unknown socket; uroce follows
 * close(2).)
 */
UROCE_EXPORT int rclose(int socket)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type == SOCK_STREAM) {
		if (rs->state == RS_CONNECTED)
			rshutdown(socket, SHUT_RDWR);
		rs_svc_remove(rs);
	} else {
		ds_shutdown(rs);
		rs_svc_remove(rs);
	}
	rs_free(rs);
	return 0;
}

/* Copy @src to @dst as getsockname(2) does: truncated to *@len, *@len its full size. */
static void rs_copy_addr(struct sockaddr *dst, const struct sockaddr *src, socklen_t *len)
{
	socklen_t full = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_in);

	memcpy(dst, src, *len < full ? *len : full);
	*len = full;
}

/* rgetpeername: 0, or -1 with errno EBADF, EFAULT (NULL), ENOTCONN (stream, not connected). */
UROCE_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (!addr || !addrlen)
		return rs_fail(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->index, addr, addrlen);
	if (rs->state < RS_RESOLVING_ADDR || rs->state == RS_LISTENING)
		return rs_fail(ENOTCONN);
	rs_copy_addr(addr, rdma_get_peer_addr(rs->cm_id), addrlen);
	return 0;
}

/* rgetsockname: 0, or -1 with errno EBADF or EFAULT (NULL). */
UROCE_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);
	struct sockaddr *local;

	if (!rs)
		return rs_fail(EBADF);
	if (!addrlen || (!addr && *addrlen))
		return rs_fail(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->index, addr, addrlen);
	local = rdma_get_local_addr(rs->cm_id);
	if (!local->sa_family)
		local->sa_family = (sa_family_t)rs->domain;
	if (!addr) { /* librspreload asks for the length alone (transpose_socket) */
		*addrlen = local->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							: sizeof(struct sockaddr_in);
		return 0;
	}
	rs_copy_addr(addr, local, addrlen);
	return 0;
}

/*
 * rfcntl: F_GETFL, and F_SETFL, of which O_NONBLOCK counts (the other flags are kept and
 * given back). The flags, 0, or -1 with errno EBADF, or ENOTSUP for another command (as
 * rdma-core).
 */
UROCE_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rs *rs = rs_lookup(socket);
	va_list ap;
	int arg;

	if (!rs)
		return rs_fail(EBADF);
	switch (cmd) {
	case F_GETFL:
		return rs->fd_flags;
	case F_SETFL:
		va_start(ap, cmd);
		arg = va_arg(ap, int);
		va_end(ap);
		pthread_mutex_lock(&rs->lock);
		rs->fd_flags = arg & ~O_ACCMODE;
		pthread_mutex_unlock(&rs->lock);
		return 0;
	default:
		return rs_fail(ENOTSUP);
	}
}
