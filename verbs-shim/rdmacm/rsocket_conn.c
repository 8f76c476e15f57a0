// SPDX-License-Identifier: MIT
/*
 * rsockets: a stream socket's endpoint (CQ, RC QP, buffers), the handshake's private data, and
 * the active side of its connection (rconnect). The passive side is rsocket_accept.c's.
 *
 * A stream socket owns a synchronous rdma_cm id (created without a channel): its calls wait for
 * their events on the id's own channel, whose fd is the socket's number. That fd is always
 * non-blocking here: a blocking socket waits in poll() on it (rs_cm_wait), a non-blocking one
 * gets EINPROGRESS and is driven on by the service thread or by rpoll (rs_do_connect is a
 * state machine that picks up where it stopped, as rdma-core's).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

int rs_set_nonblock_fd(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) ? errno : 0;
}

/* Page-aligned, zeroed memory for a registered buffer (rdma-core's forksafe_alloc). */
static void *rs_buf_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (posix_memalign(&p, (size_t)page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* The queue sizes within RS_QP_MIN_SIZE .. the device's max_qp_wr (rdma-core's rs_set_qp_size). */
static void rs_set_qp_size(struct rs *rs)
{
	struct ibv_device_attr a;
	uint32_t max = RS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->cm_id->verbs, &a) && (uint32_t)a.max_qp_wr < max)
		max = (uint32_t)a.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	else if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	else if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

/* A receive that takes one immediate: no buffer (the data is written straight to rbuf). */
static int rs_post_recv(struct rs *rs)
{
	struct ibv_recv_wr wr = {.wr_id = UINT64_C(1) << 63}, *bad;

	return ibv_post_recv(rs->cm_id->qp, &wr, &bad);
}

/*
 * Buffers and their registrations (rdma-core's rs_init_bufs): the send buffer with room for
 * RS_QP_CTRL_SIZE control SGEs after it, the target SGL and iomap table the peer writes, and
 * the receive buffer, whose first half the peer may fill at once (rs_wire_conn.data_buf) and
 * whose second half we hand over with our first credit update. 0 or an errno.
 */
static int rs_init_bufs(struct rs *rs)
{
	struct ibv_pd *pd = rs->cm_id->pd;
	size_t tlen;

	rs->rmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->rmsg));
	rs->sbuf = rs_buf_alloc(rs->sbuf_size + sizeof(struct rs_wire_sge) * RS_QP_CTRL_SIZE);
	tlen = sizeof(struct rs_wire_sge) * RS_SGL_SIZE +
	       sizeof(struct rs_wire_iomap) * rs->target_iomap_size;
	rs->target_list = rs_buf_alloc(tlen);
	rs->rbuf = rs_buf_alloc(rs->rbuf_size);
	if (!rs->rmsg || !rs->sbuf || !rs->target_list || !rs->rbuf)
		return ENOMEM;
	rs->smr = ibv_reg_mr(pd, rs->sbuf,
			     rs->sbuf_size + sizeof(struct rs_wire_sge) * RS_QP_CTRL_SIZE,
			     IBV_ACCESS_LOCAL_WRITE);
	rs->target_mr = ibv_reg_mr(pd, rs->target_list, tlen,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->rmr = ibv_reg_mr(pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->smr || !rs->target_mr || !rs->rmr)
		return errno ? errno : ENOMEM;
	rs->target_sgl = rs->target_list;
	if (rs->target_iomap_size)
		rs->target_iomap = (volatile struct rs_wire_iomap *)(rs->target_sgl + RS_SGL_SIZE);
	rs->sbuf_bytes_avail = rs->sbuf_size;
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	return 0;
}

/*
 * The endpoint (rdma-core's rs_create_ep): a CQ for both queues on a completion channel of its
 * own, an RC QP whose every send is signalled, the buffers, and rq_size receives posted.
 * 0 or an errno.
 */
int rs_create_ep(struct rs *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct ibv_qp_init_attr qa = {0};
	int err;

	rs_set_qp_size(rs);
	rs->cq_channel = ibv_create_comp_channel(id->verbs);
	if (!rs->cq_channel)
		return errno;
	err = rs_set_nonblock_fd(rs->cq_channel->fd, true);
	if (err)
		return err;
	rs->cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, rs, rs->cq_channel, 0);
	if (!rs->cq)
		return errno;
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(id, NULL, &qa))
		return errno;
	rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	err = rs_init_bufs(rs);
	for (int i = 0; !err && i < rs->rq_size; i++)
		err = rs_post_recv(rs);
	return err;
}

void rs_free_endpoint(struct rs *rs)
{
	rs_free_iomaps(rs);
	if (rs->cm_id && rs->cm_id->qp)
		rdma_destroy_qp(rs->cm_id);
	if (rs->cq) {
		ibv_ack_cq_events(rs->cq, rs->cq_events);
		ibv_destroy_cq(rs->cq);
		rs->cq = NULL;
	}
	if (rs->cq_channel) {
		ibv_destroy_comp_channel(rs->cq_channel);
		rs->cq_channel = NULL;
	}
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	rs->smr = rs->target_mr = rs->rmr = NULL;
	free(rs->sbuf);
	free(rs->target_list);
	free(rs->rbuf);
	free(rs->rmsg);
	rs->sbuf = rs->rbuf = NULL;
	rs->target_list = NULL;
	rs->rmsg = NULL;
}

static bool rs_host_is_net(void)
{
	return htobe16(1) == 1;
}

/* Our half of the handshake (rdma-core's rs_format_conn_data). */
void rs_format_conn(const struct rs *rs, struct rs_wire_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RS_VERSION;
	c->flags = RS_CONN_FLAG_IOMAP | (rs_host_is_net() ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)rs_value_to_scale(rs->target_iomap_size, 8);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	c->target_sgl.length = htobe32(RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->target_mr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size >> 1);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

/*
 * The peer's half (rdma-core's rs_save_conn_data): where our credit updates go (its target
 * SGL, whose first entry we fill next: the peer's data_buf stands for entry 0), its iomap
 * table just after, the first half of its receive buffer as our first target, its credits.
 */
void rs_save_conn(struct rs *rs, const struct rs_wire_conn *c)
{
	rs->remote_sgl.addr = be64toh(c->target_sgl.addr);
	rs->remote_sgl.length = be32toh(c->target_sgl.length);
	rs->remote_sgl.key = be32toh(c->target_sgl.key);
	rs->remote_sge = 1;
	rs->peer_swap = !!(c->flags & RS_CONN_FLAG_NET) != rs_host_is_net();
	if (c->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr =
			rs->remote_sgl.addr + sizeof(struct rs_wire_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)rs_scale_to_value(c->target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(c->data_buf.addr);
	rs->target_sgl[0].length = be32toh(c->data_buf.length);
	rs->target_sgl[0].key = be32toh(c->data_buf.key);
	rs->sseq_comp = be16toh(c->credits);
}

void rs_set_connected(struct rs *rs)
{
	pthread_mutex_lock(&rs->lock);
	rs->state = RS_CONNECTED;
	rs->readable = rs->writable = true;
	pthread_mutex_unlock(&rs->lock);
}

/* Wait until the id's channel has an event (a blocking socket's connect). 0 or an errno. */
static int rs_cm_wait(struct rs *rs)
{
	struct pollfd p = {.fd = rs->cm_id->channel->fd, .events = POLLIN};

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return errno;
	return 0;
}

/*
 * One step of the connection set-up (rdma-core's rs_do_connect): address, route, endpoint and
 * REQ, then the REP. A step that must wait for an event returns EAGAIN when @nonblock, else
 * waits. 0 once connected, or an errno; a failure leaves RS_CONNECT_ERROR and rs.err. cm_lock
 * held.
 */
static int rs_connect_step(struct rs *rs, bool nonblock)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct rdma_conn_param param;
	struct rs_wire_conn creq;
	int err = 0;

	for (;;) {
		switch (rs->state) {
		case RS_IDLE:
		case RS_BOUND:
		resolve_addr:
			rs->state = RS_RESOLVING_ADDR;
			if (!rdma_resolve_addr(id, NULL, &id->route.addr.dst_addr,
					       1000 << rs->retries++))
				goto addr_done;
			break;
		case RS_RESOLVING_ADDR:
			if (cma_complete(id)) {
				if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
					goto resolve_addr;
				break;
			}
		addr_done:
			rs->retries = 0;
		resolve_route:
			rs->state = RS_RESOLVING_ROUTE;
			if (rs->route) {
				/* RDMA_ROUTE: the path given; uroce's rdma_cm takes it without an
				 * event, so the connection goes on at once. */
				int ret = rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
							  rs->route, rs->route_len);

				free(rs->route);
				rs->route = NULL;
				if (!ret)
					goto do_connect;
			} else if (!rdma_resolve_route(id, 1000 << rs->retries++)) {
				goto do_connect;
			}
			break;
		case RS_RESOLVING_ROUTE:
			if (cma_complete(id)) {
				if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
					goto resolve_route;
				break;
			}
		do_connect:
			err = rs_create_ep(rs);
			if (err)
				goto fail;
			rs_format_conn(rs, &creq);
			memset(&param, 0, sizeof(param));
			param.private_data = &creq;
			param.private_data_len = sizeof(creq);
			param.flow_control = 1;
			param.retry_count = 7;
			param.rnr_retry_count = 7;
			rs->retries = 0;
			rs->state = RS_CONNECTING;
			if (!rdma_connect(id, &param))
				goto connected;
			break;
		case RS_CONNECTING:
			if (cma_complete(id))
				break;
		connected:
			if (!id->event || id->event->param.conn.private_data_len < sizeof(creq) ||
			    ((const struct rs_wire_conn *)id->event->param.conn.private_data)
					    ->version != RS_VERSION) {
				err = ENOTSUP;
				goto fail;
			}
			rs_save_conn(rs, id->event->param.conn.private_data);
			rs_set_connected(rs);
			return 0;
		case RS_CONNECTED:
			return 0;
		case RS_CONNECT_ERROR:
		case RS_DISCONNECTED:
		case RS_ERROR:
			return ENOTCONN;
		default:
			return EINVAL;
		}
		/* The step's call failed: wait for its event, or give up. */
		err = errno;
		if (err != EAGAIN && err != EWOULDBLOCK)
			goto fail;
		if (nonblock)
			return EAGAIN;
		err = rs_cm_wait(rs);
		if (err)
			goto fail;
	}
fail:
	rs->state = RS_CONNECT_ERROR;
	rs->err = err;
	return err;
}

/*
 * Drive a connection being set up on (the application's calls and rpoll, the service thread
 * for a non-blocking socket): 0 once connected, else -1 with errno EINPROGRESS (@rs is
 * non-blocking and must wait) or why it failed.
 */
int rs_do_connect(struct rs *rs)
{
	bool nonblock = rs->fd_flags & O_NONBLOCK;
	int err;

	pthread_mutex_lock(&rs->cm_lock);
	err = rs_connect_step(rs, nonblock);
	pthread_mutex_unlock(&rs->cm_lock);
	if (!err) {
		if (!rs->in_svc)
			rs_svc_add(rs); /* its CM events: a DREQ from the peer */
		rs_poll_signal();
		return 0;
	}
	if (err == EAGAIN)
		return rs_fail(EINPROGRESS);
	rs_poll_signal();
	return rs_fail(err);
}

/*
 * rconnect: as connect(2). A stream socket resolves the address and route, sets up its endpoint
 * and connects (RC, the handshake's private data as rdma-core's); a blocking socket returns once
 * connected, a non-blocking one at once with EINPROGRESS (rpoll POLLOUT, then SO_ERROR, tells
 * the outcome). A datagram socket only fixes its destination. 0, or -1 with errno EBADF,
 * EINVAL (a bad address), EISCONN, EALREADY (a connect in progress), EINPROGRESS,
 * ECONNREFUSED (nobody listens: the peer's CM rejects), ETIMEDOUT, EHOSTUNREACH, ENOTSUP (the
 * peer speaks another rsocket version) or ENOMEM.
 */
UROCE_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rs *rs = rs_lookup(socket);

	if (!rs)
		return rs_fail(EBADF);
	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(struct sockaddr_in6) ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return rs_fail(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return ds_connect(rs, addr, addrlen);
	switch (rs->state) {
	case RS_IDLE:
	case RS_BOUND:
		break;
	case RS_CONNECTED:
		return rs_fail(EISCONN);
	case RS_RESOLVING_ADDR:
	case RS_RESOLVING_ROUTE:
	case RS_CONNECTING:
		return rs_fail(EALREADY);
	default:
		return rs_fail(EINVAL);
	}
	memcpy(&rs->cm_id->route.addr.dst_addr, addr, addrlen);
	if (rs_set_nonblock_fd(rs->cm_id->channel->fd, true))
		return -1;
	if (!rs_do_connect(rs))
		return 0;
	if (errno == EINPROGRESS && !rs->in_svc) {
		int save = errno;

		rs_svc_add(rs); /* the service drives it on as its events come */
		errno = save;
	}
	return -1;
}
