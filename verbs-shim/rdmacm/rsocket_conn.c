// SPDX-License-Identifier: MIT
/*
 * rsockets: a stream socket's endpoint (CQ, RC QP, buffers) and its connection -- rconnect,
 * rlisten, the accepting of connection requests (by the service thread, rsocket_svc.c, as
 * rdma-core's listen service does), raccept, rshutdown and the CM events of a connection.
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
static int rs_create_ep(struct rs *rs)
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
static void rs_format_conn(const struct rs *rs, struct rs_wire_conn *c)
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
static void rs_save_conn(struct rs *rs, const struct rs_wire_conn *c)
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

static void rs_set_connected(struct rs *rs)
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

/*
 * rlisten: as listen(2) on a bound stream socket; the service thread accepts requests from
 * then on and queues the established connections for raccept. 0, or -1 with errno EBADF,
 * EINVAL (not bound, or a datagram socket), EMFILE, ENOMEM, or rdma_listen's.
 */
UROCE_EXPORT int rlisten(int socket, int backlog)
{
	struct rs *rs = rs_lookup(socket);
	int err;

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type != SOCK_STREAM)
		return rs_fail(EOPNOTSUPP);
	if (rs->state == RS_LISTENING)
		return 0;
	if (rs->state != RS_BOUND)
		return rs_fail(EINVAL);
	if (rdma_listen(rs->cm_id, backlog))
		return -1;
	rs->accept_fd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
	if (rs->accept_fd < 0)
		return -1;
	err = rs_set_nonblock_fd(rs->cm_id->channel->fd, true);
	if (err)
		return rs_fail(err);
	rs->state = RS_LISTENING;
	err = rs_svc_add(rs);
	return err ? rs_fail(err) : 0;
}

/* A connection of @l's is up: queue it for raccept. */
static void rs_accept_ready(struct rs *l, struct rs *child)
{
	uint64_t one = 1;

	pthread_mutex_lock(&l->lock);
	child->accept_next = NULL;
	*l->accept_tail = child;
	l->accept_tail = &child->accept_next;
	(void)!write(l->accept_fd, &one, sizeof(one));
	pthread_mutex_unlock(&l->lock);
	rs_poll_signal();
}

/*
 * The service thread: a listener's channel is readable. Each connection request gets a socket
 * of its own (the listener's sizes), an id on a channel of its own, an endpoint, and our
 * answer (rdma-core's rs_accept); one with another version, or that cannot be served, is
 * rejected. Returns 0 when no request waits.
 */
int rs_do_accept(struct rs *l)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param param;
	struct rs_wire_conn creq, crep;
	struct rdma_cm_id *id;
	struct rs *child;
	int err;

	while (!rdma_get_cm_event(l->cm_id->channel, &ev)) {
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		param = ev->param.conn;
		memset(&creq, 0, sizeof(creq));
		if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(creq))
			memcpy(&creq, ev->param.conn.private_data, sizeof(creq));
		rdma_ack_cm_event(ev);
		child = rs_alloc(l, SOCK_STREAM);
		if (!child || creq.version != RS_VERSION || rdma_migrate_id(id, NULL)) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			free(child);
			continue;
		}
		child->cm_id = id;
		id->context = child;
		err = rs_set_nonblock_fd(id->channel->fd, true);
		if (!err)
			err = rs_create_ep(child);
		if (!err)
			err = rs_insert(child, id->channel->fd);
		if (err)
			goto refuse;
		rs_save_conn(child, &creq);
		rs_format_conn(child, &crep);
		param.private_data = &crep;
		param.private_data_len = sizeof(crep);
		child->listener = l;
		child->state = RS_ACCEPTING;
		if (!rdma_accept(id, &param)) {
			rs_set_connected(child);
			rs_accept_ready(l, child);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			goto refuse;
		}
		if (rs_svc_add_locked(child)) /* its ESTABLISHED, then its DREQ */
			goto refuse;
		continue;
	refuse:
		rdma_reject(id, NULL, 0);
		rs_free(child);
	}
	return 0;
}

/*
 * The service thread: an event on a socket's own channel. An accepted connection's
 * ESTABLISHED queues it for raccept (another outcome drops it); a non-blocking connect steps
 * on; on a connection, DISCONNECTED (the peer's DREQ, or its death reported by its host)
 * ends it: what the CQ holds is taken first, so that a DISCONNECT message the peer sent before
 * is seen, and if none was, the peer reset the connection. Its QP goes to the error state so
 * that threads waiting for completions wake.
 */
void rs_cm_event(struct rs *rs)
{
	struct rdma_cm_event *ev;
	bool ended = false;

	if (rs->state >= RS_RESOLVING_ADDR && rs->state <= RS_CONNECTING) {
		rs_do_connect(rs);
		return;
	}
	pthread_mutex_lock(&rs->cm_lock);
	/* The last event of the synchronous id (its connect's) is done with. */
	if (rs->cm_id->event)
		rdma_ack_cm_event(rs->cm_id->event);
	while (!rdma_get_cm_event(rs->cm_id->channel, &ev)) {
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;

		rdma_ack_cm_event(ev);
		if (rs->state == RS_ACCEPTING) {
			if (type == RDMA_CM_EVENT_ESTABLISHED && !status) {
				rs_set_connected(rs);
				rs_accept_ready(rs->listener, rs);
			} else {
				rs->state = RS_CONNECT_ERROR; /* the service drops it */
				rs->err = ECONNABORTED;
			}
		} else if (type == RDMA_CM_EVENT_DISCONNECTED ||
			   type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			ended = true;
		}
	}
	pthread_mutex_unlock(&rs->cm_lock);
	if (!ended)
		return;
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RS_CONNECTED && rs->cq)
		rs_poll_cq(rs);
	if (rs->state == RS_CONNECTED) {
		rs->state = RS_DISCONNECTED;
		rs->readable = rs->writable = false;
		rs->err = ECONNRESET;
	}
	pthread_mutex_unlock(&rs->lock);
	rs_qp_error(rs);
	rs_poll_signal();
}

/* The QP to the error state: its receives flush, and a CQ event wakes whoever waits. */
void rs_qp_error(struct rs *rs)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (rs->cm_id && rs->cm_id->qp) {
		if (rs->cq)
			ibv_req_notify_cq(rs->cq, 0);
		ibv_modify_qp(rs->cm_id->qp, &a, IBV_QP_STATE);
	}
}

/*
 * raccept: the next established connection of a listening socket, its peer's address in
 * @addr (as accept(2)). The new socket's number, or -1 with errno EBADF, EINVAL (not
 * listening), EAGAIN (non-blocking, none yet) or EINTR.
 */
UROCE_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rs *rs = rs_lookup(socket), *child;
	struct pollfd p;
	uint64_t v;

	if (!rs)
		return rs_fail(EBADF);
	if (rs->type != SOCK_STREAM || rs->state != RS_LISTENING)
		return rs_fail(EINVAL);
	for (;;) {
		pthread_mutex_lock(&rs->lock);
		child = rs->accept_head;
		if (child) {
			rs->accept_head = child->accept_next;
			if (!rs->accept_head)
				rs->accept_tail = &rs->accept_head;
			child->listener = NULL;
			(void)!read(rs->accept_fd, &v, sizeof(v));
		}
		pthread_mutex_unlock(&rs->lock);
		if (child)
			break;
		if (rs->fd_flags & O_NONBLOCK)
			return rs_fail(EAGAIN);
		p = (struct pollfd){.fd = rs->accept_fd, .events = POLLIN};
		if (poll(&p, 1, -1) < 0 && errno == EINTR)
			return -1;
	}
	if (addr && addrlen)
		rgetpeername(child->index, addr, addrlen);
	return child->index;
}

/*
 * rshutdown (rdma-core's graceful disconnect): SHUT_WR sends SHUTDOWN (DISCONNECT if the read
 * side is closed already), SHUT_RD closes the read side (and sends DISCONNECT if the write side
 * is closed), SHUT_RDWR sends DISCONNECT; then our sends complete, and once both sides are
 * closed the QP goes to the error state. It blocks, as rdma-core's, whatever O_NONBLOCK says.
 * 0, or -1 with errno EBADF, EINVAL (a bad @how), ENOTCONN (not connected), or the
 * completion wait's.
 */
UROCE_EXPORT int rshutdown(int socket, int how)
{
	struct rs *rs = rs_lookup(socket);
	uint32_t ctrl;
	int ret = 0;

	if (!rs)
		return rs_fail(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return rs_fail(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return ds_shutdown(rs);
	if (rs->keepalive) {
		rs->keepalive = false;
		rs_svc_kick();
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_CONNECTED) {
		ret = rs->state == RS_DISCONNECTED ? 0 : rs_fail(ENOTCONN);
		goto out;
	}
	if (how == SHUT_RDWR) {
		ctrl = RS_CTRL_DISCONNECT;
		rs->readable = rs->writable = false;
	} else if (how == SHUT_WR) {
		rs->writable = false;
		ctrl = rs->readable ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->readable = false;
		if (rs->writable)
			goto out;
		ctrl = RS_CTRL_DISCONNECT;
	}
	if (!rs_ctrl_avail(rs))
		ret = rs_process_cq(rs, false, rs_conn_can_send_ctrl);
	if (!ret && rs->state == RS_CONNECTED && rs_ctrl_avail(rs)) {
		rs->ctrl_seqno++;
		ret = rs_post_msg(rs, rs_msg(RS_OP_CTRL, ctrl));
		if (ret)
			ret = rs_fail(ret);
	}
	if (rs->state == RS_CONNECTED)
		rs_process_cq(rs, false, rs_conn_all_sends_done);
out:
	pthread_mutex_unlock(&rs->lock);
	if (rs->state == RS_DISCONNECTED)
		rs_qp_error(rs);
	rs_poll_signal();
	return ret;
}
