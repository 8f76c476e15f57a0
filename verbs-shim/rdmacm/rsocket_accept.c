// SPDX-License-Identifier: MIT
/*
 * rsockets: the passive side and the end of a connection -- rlisten, the accepting of
 * connection requests by the service thread (rsocket_svc.c, as rdma-core's listen service),
 * raccept, the CM events of a connection, rshutdown. The endpoint and the handshake's private
 * data are rsocket_conn.c's.
 */
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
	/*
	 * A disconnect leaves once the data before it is acknowledged (rdma-core's rshutdown
	 * posts it at once and waits afterwards). rdma-core's rpoll reports POLLHUP beside POLLIN
	 * when one CQ poll takes the last data and the disconnect, and rstream -T a takes any
	 * POLLHUP for a failure: sent together, as a burst of uroce's leaves, they would arrive
	 * together; a round trip apart, the peer has taken the data first.
	 */
	if (ctrl == RS_CTRL_DISCONNECT)
		ret = rs_process_cq(rs, false, rs_conn_all_sends_done);
	if (!ret && !rs_ctrl_avail(rs))
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
