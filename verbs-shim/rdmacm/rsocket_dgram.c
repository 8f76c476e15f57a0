// SPDX-License-Identifier: MIT
/*
 * rsockets: datagram sockets (SOCK_DGRAM), by rdma-core's rules (librdmacm/rsocket.c ds_*,
 * udp_svc_*). A datagram socket is a UDP socket (its number, its address) and, per source
 * address it sends from, a UD QP on an rdma_cm id bound to that address and the socket's port.
 * - A destination whose QP is not known yet gets the datagram over UDP, after a
 *   struct ds_udp_hdr naming our QP (op RS_OP_DATA). Its service thread answers over UDP with
 *   its own QP (op RS_OP_CTRL), makes an address handle back to us, and hands the datagram to
 *   its own QP through that QP (a UD SEND to itself), so that every datagram is read from a
 *   QP. Once our service thread has the answer, datagrams go as UD SENDs (Q_Key
 *   RDMA_UDP_QKEY) after a struct ds_hdr saying whom they are from.
 * - rdma-core makes the address handle to itself without a GRH (the port's LID), which RoCE
 *   refuses (rxe's and uroce's ibv_create_ah: EINVAL), and so its datagram sockets fail on
 *   RoCE; here every address handle carries a GRH to the address's GID (IPv4-mapped), which
 *   changes nothing on the wire but lets the socket work.
 * A datagram's payload is at most RS_SNDLOWAT less the header (EMSGSIZE beyond, which
 * rdma-core does not check).
 *
 * Over 600 lines, not split: the QPs, the destinations and the UDP service all work on this
 * file's private structs (ds_qp, ds_dest, rs_dgram), which no other file needs.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

#define DS_UDP_TAG 0x55555555u /* wire */

/* wire: what a UD SEND carries before the datagram: who sent it. */
struct ds_hdr {
	uint8_t version; /* 4 or 6 */
	uint8_t length;  /* 8 or 24 */
	uint16_t port;   /* network order */
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};

/* wire: what a UDP datagram carries before the data: the sender's QP and address. */
struct ds_udp_hdr {
	uint32_t tag;                          /* DS_UDP_TAG, big-endian */
	uint8_t version, op, length, reserved; /* length 16 or 28 */
	uint32_t qpn;                          /* big-endian, low 24 bits */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;
};

union ds_addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct ds_qp {
	struct ds_qp *next;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *smr, *rmr;
	uint8_t *rbuf; /* rq_size slots of RS_SNDLOWAT, then the GRH every receive fills */
	struct ds_hdr hdr;
	union ds_addr src;
	struct ibv_ah *self_ah; /* to itself: the service's hand-over */
	bool armed;
};

struct ds_dest {
	struct ds_dest *next;
	union ds_addr addr;
	struct ds_qp *qp;
	struct ibv_ah *ah;
	uint32_t qpn;
};

struct ds_rmsg {
	struct ds_qp *qp;
	uint32_t offset, length;
};

struct rs_dgram {
	int epfd;
	bool ready; /* ds_init_ep done */
	struct ds_qp *qps;
	struct ds_dest *dests, *conn_dest;
	uint8_t *sbuf; /* sq_size slots of RS_SNDLOWAT */
	int *sfree, nfree;
	int rqe_avail;
	struct ds_rmsg *rmsg; /* a ring of rq_size + 1 */
	int head, tail;
};

#define DS_WR_RECV (UINT64_C(1) << 63)

static socklen_t ds_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool ds_same(const union ds_addr *a, const struct sockaddr *b)
{
	if (a->sa.sa_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return a->in.sin_port == ((const struct sockaddr_in *)b)->sin_port &&
		       a->in.sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->in6.sin6_port == ((const struct sockaddr_in6 *)b)->sin6_port &&
	       !memcmp(&a->in6.sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

int ds_init(struct rs *rs, int domain)
{
	rs->dg = calloc(1, sizeof(*rs->dg));
	if (!rs->dg)
		return ENOMEM;
	rs->dg->epfd = -1;
	rs->index = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rs->index < 0)
		return errno;
	rs->dg->epfd = epoll_create1(EPOLL_CLOEXEC);
	return rs->dg->epfd < 0 ? errno : 0;
}

/* The sizes and send slots (rdma-core's ds_init_ep): a slot of RS_SNDLOWAT per WR. lock held */
static int ds_init_ep(struct rs *rs)
{
	struct rs_dgram *d = rs->dg;

	if (d->ready)
		return 0;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / RS_SNDLOWAT);
	rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / RS_SNDLOWAT);
	rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	d->sbuf = calloc(rs->sq_size, RS_SNDLOWAT);
	d->sfree = calloc(rs->sq_size, sizeof(*d->sfree));
	d->rmsg = calloc((size_t)rs->rq_size + 1, sizeof(*d->rmsg));
	if (!d->sbuf || !d->sfree || !d->rmsg)
		return ENOMEM;
	for (int i = 0; i < rs->sq_size; i++)
		d->sfree[d->nfree++] = i;
	d->rqe_avail = rs->rq_size;
	d->ready = true;
	return rs_svc_add(rs); /* the UDP socket: peers announcing their QP */
}

static int ds_post_recv(struct rs *rs, struct ds_qp *qp, uint32_t off)
{
	struct ibv_sge sge[2] = {
		{(uintptr_t)(qp->rbuf + rs->rbuf_size), sizeof(struct ibv_grh), qp->rmr->lkey},
		{(uintptr_t)(qp->rbuf + off), RS_SNDLOWAT, qp->rmr->lkey},
	};
	struct ibv_recv_wr wr = {.wr_id = DS_WR_RECV | off, .sg_list = sge, .num_sge = 2}, *bad;

	return ibv_post_recv(qp->id->qp, &wr, &bad);
}

/* An address handle to @addr from @qp's port, with a GRH (the top of this file). */
static struct ibv_ah *ds_make_ah(struct ds_qp *qp, const struct sockaddr *addr)
{
	union ibv_gid sgid = cma_gid(&qp->src.sa);
	struct ibv_ah_attr a = {.is_global = 1, .port_num = 1};
	int idx = cma_gid_index(qp->id->verbs, sgid.raw);

	if (idx < 0) {
		errno = EADDRNOTAVAIL;
		return NULL;
	}
	a.grh.dgid = cma_gid(addr);
	a.grh.sgid_index = (uint8_t)idx;
	a.grh.hop_limit = 64;
	return ibv_create_ah(qp->id->pd, &a);
}

static void ds_free_qp(struct rs *rs, struct ds_qp *qp)
{
	if (qp->id && qp->id->qp) {
		epoll_ctl(rs->dg->epfd, EPOLL_CTL_DEL, qp->ch->fd, NULL);
		rdma_destroy_qp(qp->id);
	}
	if (qp->self_ah)
		ibv_destroy_ah(qp->self_ah);
	if (qp->cq)
		ibv_destroy_cq(qp->cq);
	if (qp->ch)
		ibv_destroy_comp_channel(qp->ch);
	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rmr)
		ibv_dereg_mr(qp->rmr);
	free(qp->rbuf);
	if (qp->id)
		rdma_destroy_id(qp->id);
	free(qp);
}

/*
 * A UD QP for source address @src (rdma-core's ds_create_qp), first used to reach @to. lock
 * held. 0 or an errno.
 */
static int ds_create_qp(struct rs *rs, const union ds_addr *src, const struct sockaddr *to,
			struct ds_qp **out)
{
	struct ds_qp *qp = calloc(1, sizeof(*qp));
	struct ibv_qp_init_attr qa = {0};
	struct epoll_event ev = {.events = EPOLLIN};
	int err = 0;

	if (!qp)
		return ENOMEM;
	qp->src = *src;
	if (src->sa.sa_family == AF_INET) {
		qp->hdr = (struct ds_hdr){.version = 4, .length = 8, .port = src->in.sin_port};
		qp->hdr.addr.ipv4 = src->in.sin_addr.s_addr;
	} else {
		qp->hdr = (struct ds_hdr){.version = 6, .length = 24, .port = src->in6.sin6_port};
		qp->hdr.addr.ipv6.flowinfo = src->in6.sin6_flowinfo;
		memcpy(qp->hdr.addr.ipv6.addr, &src->in6.sin6_addr, 16);
	}
	if (rdma_create_id(NULL, &qp->id, qp, RDMA_PS_UDP) ||
	    rdma_bind_addr(qp->id, (struct sockaddr *)&src->sa))
		goto fail;
	/* A loopback address binds to no device (as a wildcard: cma_any_addr); resolving the
	 * destination gives it the one that reaches it, as the kernel's cma_bind_loopback. */
	if (!qp->id->verbs && rdma_resolve_addr(qp->id, NULL, (struct sockaddr *)to, 2000))
		goto fail;
	qp->rbuf = calloc(1, rs->rbuf_size + sizeof(struct ibv_grh));
	qp->ch = ibv_create_comp_channel(qp->id->verbs);
	if (!qp->rbuf || !qp->ch)
		goto fail;
	err = rs_set_nonblock_fd(qp->ch->fd, true);
	qp->cq =
		err ? NULL : ibv_create_cq(qp->id->verbs, rs->sq_size + rs->rq_size, qp, qp->ch, 0);
	qp->smr = ibv_reg_mr(qp->id->pd, rs->dg->sbuf, rs->sbuf_size, IBV_ACCESS_LOCAL_WRITE);
	qp->rmr = ibv_reg_mr(qp->id->pd, qp->rbuf, rs->rbuf_size + sizeof(struct ibv_grh),
			     IBV_ACCESS_LOCAL_WRITE);
	if (err || !qp->cq || !qp->smr || !qp->rmr)
		goto fail;
	qa.qp_context = qp;
	qa.send_cq = qa.recv_cq = qp->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(qp->id, NULL, &qa))
		goto fail;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	qp->self_ah = ds_make_ah(qp, &src->sa);
	ev.data.ptr = qp;
	if (!qp->self_ah || epoll_ctl(rs->dg->epfd, EPOLL_CTL_ADD, qp->ch->fd, &ev))
		goto fail;
	for (uint32_t i = 0; !err && i < rs->rq_size; i++)
		err = ds_post_recv(rs, qp, i * RS_SNDLOWAT);
	if (err)
		goto fail;
	/* Armed at once (rdma-core's rs_create_cq): a thread may already wait on the socket,
	 * before this QP existed (the service makes it when a peer first writes). */
	qp->armed = !ibv_req_notify_cq(qp->cq, 0);
	qp->next = rs->dg->qps;
	rs->dg->qps = qp;
	*out = qp;
	return 0;
fail:
	err = err ? err : errno ? errno : ENOMEM;
	ds_free_qp(rs, qp);
	return err;
}

/*
 * The address we send to @to from (rdma-core's ds_get_src_addr): the UDP socket's, or when that
 * is a wildcard or loopback, the one the kernel's routing picks, with the socket's port.
 */
static int ds_src_addr(struct rs *rs, const struct sockaddr *to, union ds_addr *src)
{
	socklen_t len = sizeof(*src);
	in_port_t port;
	int s, err = 0;

	if (getsockname(rs->index, &src->sa, &len))
		return errno;
	if (!cma_any_addr(&src->sa))
		return 0;
	port = src->in.sin_port; /* the same place in sockaddr_in6 */
	s = socket(to->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errno;
	len = sizeof(*src);
	if (connect(s, to, ds_len(to)) || getsockname(s, &src->sa, &len))
		err = errno;
	close(s);
	src->in.sin_port = port;
	return err;
}

/* The destination entry of @to, made with its source's QP if new. lock held. */
static int ds_get_dest(struct rs *rs, const struct sockaddr *to, struct ds_dest **out)
{
	struct rs_dgram *d = rs->dg;
	union ds_addr src;
	struct ds_dest *dest;
	struct ds_qp *qp;
	int err;

	for (dest = d->dests; dest; dest = dest->next)
		if (ds_same(&dest->addr, to)) {
			*out = dest;
			return 0;
		}
	err = ds_src_addr(rs, to, &src);
	if (err)
		return err;
	for (qp = d->qps; qp; qp = qp->next)
		if (ds_same(&qp->src, &src.sa))
			break;
	if (!qp && (err = ds_create_qp(rs, &src, to, &qp)))
		return err;
	dest = calloc(1, sizeof(*dest));
	if (!dest)
		return ENOMEM;
	memcpy(&dest->addr, to, ds_len(to));
	dest->qp = qp;
	dest->next = d->dests;
	d->dests = dest;
	*out = dest;
	return 0;
}

/* Over UDP, after the header naming @dest's QP (rdma-core's ds_sendv_udp). */
static ssize_t ds_send_udp(struct rs *rs, struct ds_dest *dest, const void *buf, size_t len,
			   uint8_t op)
{
	struct ds_udp_hdr h = {.tag = htobe32(DS_UDP_TAG), .op = op};
	struct iovec iov[2];
	struct msghdr m = {.msg_name = &dest->addr,
			   .msg_namelen = ds_len(&dest->addr.sa),
			   .msg_iov = iov,
			   .msg_iovlen = len ? 2 : 1};
	ssize_t n;

	h.version = dest->qp->hdr.version;
	h.qpn = htobe32(dest->qp->id->qp->qp_num & 0xFFFFFF);
	if (h.version == 4) {
		h.length = 16;
		h.addr.ipv4 = dest->qp->hdr.addr.ipv4;
	} else {
		h.length = 28;
		memcpy(h.addr.ipv6, dest->qp->hdr.addr.ipv6.addr, 16);
	}
	iov[0] = (struct iovec){&h, h.length};
	iov[1] = (struct iovec){(void *)buf, len};
	n = sendmsg(rs->index, &m, 0);
	return n < 0 ? -1 : n - h.length;
}

/* Post a UD SEND of @len bytes after @hdr, from @qp to @ah/@qpn. lock held. 0 or an errno. */
static int ds_post_send(struct rs *rs, struct ds_qp *qp, struct ibv_ah *ah, uint32_t qpn,
			const struct ds_hdr *hdr, const void *buf, size_t len)
{
	struct rs_dgram *d = rs->dg;
	int slot = d->sfree[--d->nfree];
	uint8_t *msg = d->sbuf + (size_t)slot * RS_SNDLOWAT;
	struct ibv_sge sge = {(uintptr_t)msg, (uint32_t)(hdr->length + len), qp->smr->lkey};
	struct ibv_send_wr wr = {.wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;
	int err;

	memcpy(msg, hdr, hdr->length);
	memcpy(msg + hdr->length, buf, len);
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	err = ibv_post_send(qp->id->qp, &wr, &bad);
	if (err)
		d->sfree[d->nfree++] = slot;
	return err;
}

/* A datagram's header is valid (rdma-core's ds_valid_recv). */
static bool ds_valid(const struct ds_qp *qp, uint32_t off, uint32_t byte_len)
{
	const struct ds_hdr *h = (const struct ds_hdr *)(qp->rbuf + off);

	return byte_len >= sizeof(struct ibv_grh) + 8 &&
	       ((h->version == 4 && h->length == 8) || (h->version == 6 && h->length == 24)) &&
	       byte_len - sizeof(struct ibv_grh) >= h->length;
}

/*
 * Take the completions of every QP (rdma-core's ds_poll_cqs): a datagram received is queued
 * while there is room in the ring, else dropped (its receive posted again), as UDP drops when
 * its buffer is full. lock held.
 */
static void ds_poll(struct rs *rs)
{
	struct rs_dgram *d = rs->dg;
	struct ibv_wc wc;

	for (struct ds_qp *qp = d->qps; qp; qp = qp->next)
		while (ibv_poll_cq(qp->cq, 1, &wc) > 0) {
			uint32_t off = (uint32_t)wc.wr_id;

			if (!(wc.wr_id & DS_WR_RECV)) {
				d->sfree[d->nfree++] = (int)wc.wr_id;
				continue;
			}
			if (d->rqe_avail && wc.status == IBV_WC_SUCCESS &&
			    ds_valid(qp, off, wc.byte_len)) {
				d->rqe_avail--;
				d->rmsg[d->tail] = (struct ds_rmsg){
					qp, off, wc.byte_len - (uint32_t)sizeof(struct ibv_grh)};
				if (++d->tail == rs->rq_size + 1)
					d->tail = 0;
			} else if (wc.status != IBV_WC_WR_FLUSH_ERR) {
				ds_post_recv(rs, qp, off);
			}
		}
}

/* Arm every QP's CQ (then poll again: a completion may precede the arm). lock held. */
static void ds_arm(struct rs *rs)
{
	for (struct ds_qp *qp = rs->dg->qps; qp; qp = qp->next)
		if (!qp->armed && !ibv_req_notify_cq(qp->cq, 0))
			qp->armed = true;
}

void ds_consume_event(struct rs *rs)
{
	struct epoll_event ev[8];
	struct ibv_cq *cq;
	void *ctx;
	int n = epoll_wait(rs->dg->epfd, ev, 8, 0);

	for (int i = 0; i < n; i++) {
		struct ds_qp *qp = ev[i].data.ptr;

		if (!ibv_get_cq_event(qp->ch, &cq, &ctx)) {
			ibv_ack_cq_events(cq, 1);
			qp->armed = false;
		}
	}
}

/* Wait (lock dropped) until @test holds or, @nonblock, EWOULDBLOCK. lock held. */
static int ds_wait(struct rs *rs, bool nonblock, bool (*test)(struct rs *rs))
{
	for (;;) {
		struct epoll_event ev;

		ds_poll(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return rs_fail(EWOULDBLOCK);
		ds_arm(rs);
		ds_poll(rs);
		if (test(rs))
			return 0;
		pthread_mutex_unlock(&rs->lock);
		if (epoll_wait(rs->dg->epfd, &ev, 1, -1) < 0 && errno == EINTR) {
			pthread_mutex_lock(&rs->lock);
			return -1;
		}
		pthread_mutex_lock(&rs->lock);
		ds_consume_event(rs);
	}
}

static bool ds_can_send(struct rs *rs)
{
	return rs->dg->nfree > 0;
}

static bool ds_have_data(struct rs *rs)
{
	return rs->dg->head != rs->dg->tail;
}

static bool ds_all_sent(struct rs *rs)
{
	return rs->dg->nfree == rs->sq_size;
}

int ds_bind(struct rs *rs, const struct sockaddr *addr, socklen_t len)
{
	int err;

	pthread_mutex_lock(&rs->lock);
	err = ds_init_ep(rs);
	pthread_mutex_unlock(&rs->lock);
	if (err)
		return rs_fail(err);
	return bind(rs->index, addr, len);
}

int ds_connect(struct rs *rs, const struct sockaddr *addr, socklen_t len)
{
	int err;

	pthread_mutex_lock(&rs->lock);
	err = ds_init_ep(rs);
	if (!err && connect(rs->index, addr, len))
		err = errno;
	if (!err)
		err = ds_get_dest(rs, addr, &rs->dg->conn_dest);
	pthread_mutex_unlock(&rs->lock);
	return err ? rs_fail(err) : 0;
}

/*
 * rsendto / rsend of a datagram socket (rdma-core's rsendto, dsend): to @to, or the connected
 * destination. The bytes sent, or -1 with errno EDESTADDRREQ, EMSGSIZE, EAGAIN, or the UDP
 * socket's and the verbs' errors.
 */
ssize_t ds_sendto(struct rs *rs, const void *buf, size_t len, int flags, const struct sockaddr *to,
		  socklen_t tolen)
{
	struct rs_dgram *d = rs->dg;
	struct ds_dest *dest;
	ssize_t ret;
	int err;

	if (to && (tolen < sizeof(struct sockaddr_in) ||
		   (to->sa_family != AF_INET && to->sa_family != AF_INET6)))
		return rs_fail(EINVAL);
	pthread_mutex_lock(&rs->lock);
	err = ds_init_ep(rs);
	if (!err && to && (!d->conn_dest || !ds_same(&d->conn_dest->addr, to)))
		err = ds_get_dest(rs, to, &d->conn_dest);
	if (!err && !d->conn_dest)
		err = EDESTADDRREQ;
	if (!err && len > (size_t)(RS_SNDLOWAT - d->conn_dest->qp->hdr.length))
		err = EMSGSIZE;
	if (err) {
		pthread_mutex_unlock(&rs->lock);
		return rs_fail(err);
	}
	dest = d->conn_dest;
	if (!dest->ah) {
		ret = ds_send_udp(rs, dest, buf, len, RS_OP_DATA);
	} else if (!ds_can_send(rs) && ds_wait(rs, rs_nonblocking(rs, flags), ds_can_send)) {
		ret = -1;
	} else {
		err = ds_post_send(rs, dest->qp, dest->ah, dest->qpn, &dest->qp->hdr, buf, len);
		ret = err ? rs_fail(err) : (ssize_t)len;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* The sender's address from a datagram's header into @from (rdma-core's ds_set_src). */
static void ds_set_src(const struct ds_hdr *h, struct sockaddr *from, socklen_t *fromlen)
{
	union ds_addr a;
	socklen_t full;

	memset(&a, 0, sizeof(a));
	if (h->version == 4) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = h->port;
		a.in.sin_addr.s_addr = h->addr.ipv4;
	} else {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = h->port;
		a.in6.sin6_flowinfo = h->addr.ipv6.flowinfo;
		memcpy(&a.in6.sin6_addr, h->addr.ipv6.addr, 16);
	}
	full = ds_len(&a.sa);
	memcpy(from, &a, *fromlen < full ? *fromlen : full);
	*fromlen = full;
}

/*
 * rrecvfrom / rrecv of a datagram socket: the next datagram (truncated to @len; MSG_PEEK
 * leaves it), its sender in @from. Bytes, or -1 with errno EAGAIN, EINTR.
 */
ssize_t ds_recvfrom(struct rs *rs, void *buf, size_t len, int flags, struct sockaddr *from,
		    socklen_t *fromlen)
{
	struct rs_dgram *d = rs->dg;
	struct ds_rmsg *m;
	const struct ds_hdr *h;
	int err;

	pthread_mutex_lock(&rs->lock);
	err = ds_init_ep(rs);
	if (err) {
		pthread_mutex_unlock(&rs->lock);
		return rs_fail(err);
	}
	if (!ds_have_data(rs) && ds_wait(rs, rs_nonblocking(rs, flags), ds_have_data)) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	m = &d->rmsg[d->head];
	h = (const struct ds_hdr *)(m->qp->rbuf + m->offset);
	if (len > m->length - h->length)
		len = m->length - h->length;
	memcpy(buf, (const uint8_t *)h + h->length, len);
	if (from && fromlen)
		ds_set_src(h, from, fromlen);
	if (!(flags & MSG_PEEK)) {
		ds_post_recv(rs, m->qp, m->offset);
		if (++d->head == rs->rq_size + 1)
			d->head = 0;
		d->rqe_avail++;
	}
	pthread_mutex_unlock(&rs->lock);
	return (ssize_t)len;
}

int ds_poll_events(struct rs *rs, short events, bool arm)
{
	short rev = 0;

	pthread_mutex_lock(&rs->lock);
	if (rs->dg->ready) {
		if (arm)
			ds_arm(rs);
		ds_poll(rs);
	}
	if ((events & POLLIN) && ds_have_data(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && (!rs->dg->ready || ds_can_send(rs)))
		rev |= POLLOUT;
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

int ds_wait_fd(struct rs *rs)
{
	return rs->dg->epfd;
}

/*
 * The service thread: the UDP socket is readable (rdma-core's udp_svc_process_rs). A peer that
 * sends DATA is answered with our QP (CTRL) and its datagram handed to our QP; for DATA and
 * CTRL alike, the address handle to the peer's QP is made (again if its QP changed).
 */
void ds_svc_input(struct rs *rs)
{
	uint8_t buf[RS_SNDLOWAT];
	const struct ds_udp_hdr *h = (const struct ds_udp_hdr *)buf;
	union ds_addr from;
	socklen_t flen = sizeof(from);
	ssize_t n = recvfrom(rs->index, buf, sizeof(buf), MSG_DONTWAIT, &from.sa, &flen);
	struct ds_dest *dest;
	uint32_t qpn;

	if (n < 16 || be32toh(h->tag) != DS_UDP_TAG ||
	    !((h->version == 4 && from.sa.sa_family == AF_INET && h->length == 16) ||
	      (h->version == 6 && from.sa.sa_family == AF_INET6 && h->length == 28)) ||
	    n < h->length)
		return;
	qpn = be32toh(h->qpn) & 0xFFFFFF;
	pthread_mutex_lock(&rs->lock);
	if (ds_init_ep(rs) || ds_get_dest(rs, &from.sa, &dest))
		goto out;
	if (h->op == RS_OP_DATA)
		ds_send_udp(rs, dest, NULL, 0, RS_OP_CTRL);
	if (!dest->ah || dest->qpn != qpn) {
		if (dest->ah)
			ibv_destroy_ah(dest->ah);
		dest->ah = ds_make_ah(dest->qp, &from.sa);
		dest->qpn = qpn;
	}
	if (h->op == RS_OP_DATA && (ds_can_send(rs) || !ds_wait(rs, false, ds_can_send))) {
		struct ds_hdr src;

		if (from.sa.sa_family == AF_INET) {
			src = (struct ds_hdr){.version = 4, .length = 8, .port = from.in.sin_port};
			src.addr.ipv4 = from.in.sin_addr.s_addr;
		} else {
			src = (struct ds_hdr){
				.version = 6, .length = 24, .port = from.in6.sin6_port};
			src.addr.ipv6.flowinfo = from.in6.sin6_flowinfo;
			memcpy(src.addr.ipv6.addr, &from.in6.sin6_addr, 16);
		}
		if ((size_t)(n - h->length) <= (size_t)(RS_SNDLOWAT - src.length))
			ds_post_send(rs, dest->qp, dest->qp->self_ah, dest->qp->id->qp->qp_num,
				     &src, buf + h->length, (size_t)(n - h->length));
	}
out:
	pthread_mutex_unlock(&rs->lock);
	rs_poll_signal();
}

/* rshutdown / rclose of a datagram socket: the sends posted complete (rdma-core's ds_shutdown). */
int ds_shutdown(struct rs *rs)
{
	pthread_mutex_lock(&rs->lock);
	if (rs->dg && rs->dg->ready)
		ds_wait(rs, false, ds_all_sent);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

void ds_free(struct rs *rs)
{
	struct rs_dgram *d = rs->dg;
	int fd = rs->index;

	rs_remove(rs);
	if (d) {
		while (d->dests) {
			struct ds_dest *dest = d->dests;

			d->dests = dest->next;
			if (dest->ah)
				ibv_destroy_ah(dest->ah);
			free(dest);
		}
		while (d->qps) {
			struct ds_qp *qp = d->qps;

			d->qps = qp->next;
			ds_free_qp(rs, qp);
		}
		if (d->epfd >= 0)
			close(d->epfd);
		free(d->sbuf);
		free(d->sfree);
		free(d->rmsg);
		free(d);
	}
	if (fd >= 0)
		close(fd);
}
