// SPDX-License-Identifier: MIT
/*
 * rsockets: the send and receive calls (rsend, rsendto, rsendmsg, rwrite, rwritev, rrecv,
 * rrecvfrom, rrecvmsg, rread, rreadv) of stream sockets, over the data path of rsocket_data.c,
 * and their hand-over to rsocket_dgram.c for datagram sockets.
 *
 * Errors as a socket user expects them (rsocket(7) leaves them to the socket calls): EAGAIN on
 * a non-blocking socket (also one still connecting), ENOTCONN before a connection, 0 from a
 * receive once the peer closed its side (its DISCONNECT or SHUTDOWN message) and the data
 * before it is read, EPIPE on a send after either side closed the connection, ECONNRESET when
 * the connection ended without the peer closing it (its host reported it gone, or the QP
 * failed). rdma-core gives ECONNRESET for every closed write side and 0 for a reset.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

/*
 * A stream socket still connecting steps on (rdma-core: the calls drive a non-blocking
 * connect); 0 once it may transfer, else -1 with errno EAGAIN (still connecting) or why it
 * failed.
 */
static int rs_start_io(struct rs *rs)
{
	if (rs->state < RS_RESOLVING_ADDR || rs->state > RS_ACCEPTING)
		return 0;
	if (!rs_do_connect(rs))
		return 0;
	if (errno == EINPROGRESS)
		errno = EAGAIN;
	return -1;
}

/* Why a stream socket cannot send (see the top of this file). */
int rs_send_error(const struct rs *rs)
{
	switch (rs->state) {
	case RS_CONNECTED:
		return EPIPE; /* our write side is shut down */
	case RS_DISCONNECTED:
		return rs->err == ECONNRESET ? ECONNRESET : EPIPE;
	case RS_ERROR:
		return rs->err ? rs->err : ECONNRESET;
	case RS_CONNECT_ERROR:
		return rs->err ? rs->err : ENOTCONN;
	default:
		return ENOTCONN;
	}
}

/* The total length of @iov, or -1 with errno EINVAL if it overflows ssize_t. */
static ssize_t rs_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - len)
			return rs_fail(EINVAL);
		len += iov[i].iov_len;
	}
	return (ssize_t)len;
}

/*
 * Send @iov on a connected stream socket (rdma-core's rsend and rsendv): in transfers of
 * rs_next_xfer's size, each no larger than the target entry allows. Bytes sent, or -1 with
 * errno when none were.
 */
static ssize_t rs_sendv(struct rs *rs, const struct iovec *iov, int iovcnt, int flags)
{
	struct rs_src src = {.iov = iov};
	uint32_t xfer;
	ssize_t total = rs_iov_len(iov, iovcnt);
	size_t left;
	int ret = 0;

	if (total < 0 || rs_start_io(rs))
		return -1;
	left = (size_t)total;
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_CONNECTED || !rs->writable) {
		ret = rs_fail(rs_send_error(rs));
		goto out;
	}
	while (src.iov < iov + iovcnt && !src.iov->iov_len)
		src.iov++;
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer) {
		ret = rs_wait_send(rs, flags);
		if (ret)
			break;
		xfer = rs_next_xfer(rs, left);
		if (xfer > rs->target_sgl[rs->target_sge].length)
			xfer = rs->target_sgl[rs->target_sge].length;
		ret = rs_send_chunk(rs, &src, xfer);
		if (ret) {
			ret = rs_fail(ret);
			break;
		}
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return ret && left == (size_t)total ? -1 : (ssize_t)((size_t)total - left);
}

/*
 * rsend: as send(2); flags MSG_DONTWAIT (others are ignored, as rdma-core). Bytes sent (on a
 * non-blocking socket possibly fewer than asked), or -1 with errno EBADF, EAGAIN, ENOTCONN,
 * EPIPE, ECONNRESET, ETIMEDOUT (the peer stopped answering) or EINTR.
 */
UROCE_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct rs *rs = rs_lookup(socket);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type == SOCK_DGRAM)
		return ds_sendto(rs, buf, len, flags, NULL, 0);
	return rs_sendv(rs, &iov, 1, flags);
}

/*
 * rsendto: rsend for a stream socket, which takes no address (EISCONN if one is given, as
 * rdma-core); a datagram socket sends to @dest_addr. Errors as rsend's.
 */
UROCE_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type == SOCK_DGRAM)
		return ds_sendto(rs, buf, len, flags, dest_addr, addrlen);
	if (dest_addr || addrlen)
		return rs_fail(EISCONN);
	return rsend(socket, buf, len, flags);
}

/*
 * rsendmsg: msg_iov sent in order on a stream socket; a datagram socket takes one buffer
 * (ENOTSUP for more); control data is refused with ENOTSUP (as rdma-core). Errors as rsend's,
 * and EINVAL for a NULL message.
 */
UROCE_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (!msg || (msg->msg_iovlen && !msg->msg_iov))
		return rs_fail(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_fail(ENOTSUP);
	if (rs->type == SOCK_DGRAM) {
		if (msg->msg_iovlen != 1)
			return rs_fail(ENOTSUP);
		return ds_sendto(rs, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags,
				 msg->msg_name, msg->msg_namelen);
	}
	return rs_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

/* rwrite: rsend with no flags. */
UROCE_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

/* rwritev: the buffers of @iov sent in order, as writev(2). Errors as rsend's, and EINVAL. */
UROCE_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};

	if (iovcnt < 0)
		return rs_fail(EINVAL);
	return rsendmsg(socket, &m, 0);
}

/*
 * Copy up to @len bytes of the data received into @iov (a cursor), consuming them unless
 * @peek. Returns the bytes copied. lock held.
 */
static size_t rs_copy_out(struct rs *rs, struct rs_src *dst, size_t len, bool peek)
{
	int head = rs->rmsg_head;
	uint32_t off = rs->rbuf_offset;
	size_t done = 0;

	while (done < len && head != rs->rmsg_tail) {
		uint32_t n = rs->rmsg[head].len, chunk;

		if (n > len - done)
			n = (uint32_t)(len - done);
		for (uint32_t k = 0; k < n; k += chunk) {
			size_t room = dst->iov->iov_len - dst->off;

			chunk = n - k;
			if (chunk > rs->rbuf_size - off)
				chunk = rs->rbuf_size - off;
			if (chunk > room)
				chunk = (uint32_t)room;
			memcpy((uint8_t *)dst->iov->iov_base + dst->off, rs->rbuf + off, chunk);
			dst->off += chunk;
			if (dst->off == dst->iov->iov_len) {
				dst->iov++;
				dst->off = 0;
			}
			off += chunk;
			if (off == rs->rbuf_size)
				off = 0;
		}
		done += n;
		if (peek) {
			if (n == rs->rmsg[head].len && ++head == rs->rq_size + 1)
				head = 0;
			continue;
		}
		rs->rbuf_bytes_avail += n;
		rs->rbuf_offset = off;
		if (n < rs->rmsg[head].len) {
			rs->rmsg[head].len -= n;
		} else {
			rs->rseq_no++;
			if (++head == rs->rq_size + 1)
				head = 0;
			rs->rmsg_head = head;
		}
	}
	return done;
}

/*
 * Receive into @iov on a stream socket (rdma-core's rrecv): what has arrived, at least one
 * byte unless the peer closed (0) or MSG_DONTWAIT / O_NONBLOCK (EAGAIN); MSG_PEEK leaves it
 * there, MSG_WAITALL waits for all of @iov while the connection is readable (with MSG_PEEK, as
 * Linux's TCP: until that much is there to peek, at most the receive buffer). Data that came
 * before a close is read first.
 */
static ssize_t rs_recvv(struct rs *rs, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t total = rs_iov_len(iov, iovcnt);
	struct rs_src dst = {.iov = iov};
	size_t done = 0;
	int ret = 0;
	/* A peek copies from the first byte each time: it waits for all of them first. */
	bool peek_all = (flags & (MSG_PEEK | MSG_WAITALL)) == (MSG_PEEK | MSG_WAITALL);

	if (total < 0 || rs_start_io(rs))
		return -1;
	if (rs->state < RS_RESOLVING_ADDR || rs->state == RS_CONNECT_ERROR)
		return rs_fail(rs->state == RS_CONNECT_ERROR && rs->err ? rs->err : ENOTCONN);
	while (dst.iov < iov + iovcnt && !dst.iov->iov_len)
		dst.iov++;
	if (!total)
		return 0;
	pthread_mutex_lock(&rs->lock);
	/* No more than the receive buffer holds: the peer sends no more until some is read. */
	rs->peek_want = (size_t)total < rs->rbuf_size ? (size_t)total : rs->rbuf_size;
	do {
		if (peek_all ? rs_rdata_bytes(rs) < rs->peek_want : !rs_have_rdata(rs)) {
			ret = rs_get_comp(rs, rs_nonblocking(rs, flags),
					  peek_all ? rs_conn_have_peek : rs_conn_have_rdata);
			/* (a non-blocking MSG_WAITALL peek takes what is there) */
			if (ret && !(peek_all && rs_have_rdata(rs)))
				break;
			if (!rs_have_rdata(rs)) {
				/* closed: 0 after a close by the peer, an error after a reset */
				if (rs->state != RS_CONNECTED && rs->err)
					ret = rs_fail(rs->err == ETIMEDOUT ? ETIMEDOUT
									   : ECONNRESET);
				break;
			}
		}
		done += rs_copy_out(rs, &dst, (size_t)total - done, flags & MSG_PEEK);
	} while (done < (size_t)total && (flags & MSG_WAITALL) && !(flags & MSG_PEEK) &&
		 rs->state == RS_CONNECTED && rs->readable);
	if (done)
		rs_update_credits(rs);
	pthread_mutex_unlock(&rs->lock);
	return ret && !done ? -1 : (ssize_t)done;
}

/*
 * rrecv: as recv(2); flags MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL. Bytes received, 0 once the peer
 * closed (or the read side was shut down), or -1 with errno EBADF, EAGAIN, ENOTCONN,
 * ECONNRESET, ETIMEDOUT or EINTR.
 */
UROCE_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct rs *rs = rs_lookup(socket);
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type == SOCK_DGRAM)
		return ds_recvfrom(rs, buf, len, flags, NULL, NULL);
	return rs_recvv(rs, &iov, 1, flags);
}

/* rrecvfrom: rrecv, and the sender's address: the peer's for a stream socket. */
UROCE_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket);
	ssize_t ret;

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type == SOCK_DGRAM)
		return ds_recvfrom(rs, buf, len, flags, src_addr, addrlen);
	ret = rrecv(socket, buf, len, flags);
	if (ret > 0 && src_addr && addrlen)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

/*
 * rrecvmsg: into every buffer of msg_iov (rdma-core fills the first only); the flags are the
 * @flags argument's (rdma-core reads msg_flags). Control data: ENOTSUP. Errors as rrecv's, and
 * EINVAL for a NULL message.
 */
UROCE_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (!msg || (msg->msg_iovlen && !msg->msg_iov))
		return rs_fail(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rs_fail(ENOTSUP);
	msg->msg_flags = 0;
	if (rs->type == SOCK_DGRAM) {
		if (msg->msg_iovlen != 1)
			return rs_fail(ENOTSUP);
		return ds_recvfrom(rs, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags,
				   msg->msg_name, msg->msg_name ? &msg->msg_namelen : NULL);
	}
	return rs_recvv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

/* rread: rrecv with no flags. */
UROCE_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

/* rreadv: into the buffers of @iov in order, as readv(2). Errors as rrecv's, and EINVAL. */
UROCE_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};

	if (iovcnt < 0)
		return rs_fail(EINVAL);
	return rrecvmsg(socket, &m, 0);
}
