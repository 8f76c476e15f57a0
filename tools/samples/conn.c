// SPDX-License-Identifier: MIT
/* uroce-sample's rdma_cm connection (conn.h): set-up, events and teardown. */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/samples/conn.h"

/* How long any one step may take before the scenario gives up. */
#define EVENT_WAIT_MS   10000
#define RESOLVE_WAIT_MS 2000

enum { PAGE = 4096 };

int sample_fail(const char *what, const char *msg)
{
	fprintf(stderr, "uroce-sample: %s: %s\n", what, msg);
	return -1;
}

static int sys_fail(const char *what)
{
	return sample_fail(what, strerror(errno));
}

int sample_next_event(struct sample_conn *c, struct sample_event *ev)
{
	struct pollfd p = {.fd = c->ch->fd, .events = POLLIN};
	struct rdma_cm_event *e;

	/* The channel's descriptor blocks; poll bounds the wait. */
	if (poll(&p, 1, EVENT_WAIT_MS) != 1)
		return sample_fail("rdma_get_cm_event", "no event within 10 s");
	if (rdma_get_cm_event(c->ch, &e))
		return sys_fail("rdma_get_cm_event");
	memset(ev, 0, sizeof(*ev));
	ev->type = e->event;
	ev->status = e->status;
	ev->id = e->id;
	if (e->param.conn.private_data) {
		ev->priv_len = e->param.conn.private_data_len;
		memcpy(ev->priv, e->param.conn.private_data, ev->priv_len);
	}
	rdma_ack_cm_event(e);
	return 0;
}

int sample_expect(struct sample_conn *c, enum rdma_cm_event_type want, struct sample_event *ev)
{
	char msg[160];

	if (sample_next_event(c, ev))
		return -1;
	if (ev->type == want)
		return 0;
	snprintf(msg, sizeof(msg), "%s (status %d) instead of %s", rdma_event_str(ev->type),
		 ev->status, rdma_event_str(want));
	return sample_fail("rdma_cm", msg);
}

/* The numeric address ADDR:PORT (IPv4 or IPv6) in @ai (freeaddrinfo). */
static int parse_addr(const char *addr, const char *port, struct addrinfo **ai)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	int err = getaddrinfo(addr, port, &hints, ai);

	return err ? sample_fail(addr, gai_strerror(err)) : 0;
}

static int open_channel(struct sample_conn *c, struct rdma_cm_id **id)
{
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		return sys_fail("rdma_create_event_channel");
	if (rdma_create_id(c->ch, id, c, RDMA_PS_TCP))
		return sys_fail("rdma_create_id");
	return 0;
}

int sample_listen(struct sample_conn *c, const char *addr, const char *port)
{
	struct sample_event ev;
	struct addrinfo *ai;
	int err;

	if (parse_addr(addr, port, &ai))
		return -1;
	err = open_channel(c, &c->listener);
	if (!err && rdma_bind_addr(c->listener, ai->ai_addr))
		err = sys_fail("rdma_bind_addr");
	freeaddrinfo(ai);
	if (!err && rdma_listen(c->listener, 1))
		err = sys_fail("rdma_listen");
	if (!err)
		err = sample_expect(c, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	if (!err)
		c->id = ev.id;
	return err;
}

int sample_resolve(struct sample_conn *c, const char *addr, const char *port)
{
	struct sample_event ev;
	struct addrinfo *ai;
	int err;

	if (parse_addr(addr, port, &ai))
		return -1;
	err = open_channel(c, &c->id);
	if (!err && rdma_resolve_addr(c->id, NULL, ai->ai_addr, RESOLVE_WAIT_MS))
		err = sys_fail("rdma_resolve_addr");
	freeaddrinfo(ai);
	if (!err)
		err = sample_expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, &ev);
	if (!err && rdma_resolve_route(c->id, RESOLVE_WAIT_MS))
		err = sys_fail("rdma_resolve_route");
	if (!err)
		err = sample_expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev);
	return err;
}

int sample_setup_mem(struct sample_conn *c, size_t len)
{
	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		return sys_fail("ibv_alloc_pd");
	c->cq = ibv_create_cq(c->id->verbs, 16, NULL, NULL, 0);
	if (!c->cq)
		return sys_fail("ibv_create_cq");
	/*
	 * Page-aligned, so that the atomics' 8-byte targets are aligned (IBA 9.4.5); C11's
	 * aligned_alloc wants a size that is a multiple of the alignment.
	 */
	c->buf = aligned_alloc(PAGE, (len + PAGE - 1) / PAGE * PAGE);
	if (!c->buf)
		return sys_fail("aligned_alloc");
	memset(c->buf, 0, len);
	c->len = len;
	c->mr = ibv_reg_mr(c->pd, c->buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	return c->mr ? 0 : sys_fail("ibv_reg_mr");
}

int sample_setup(struct sample_conn *c, size_t len)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};

	if (sample_setup_mem(c, len))
		return -1;
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa))
		return sys_fail("rdma_create_qp");
	c->qp = c->id->qp;
	return 0;
}

/* One outstanding READ or atomic each way, and retries as rping asks (7: RNR forever). */
static void conn_param(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

int sample_accept(struct sample_conn *c)
{
	struct sample_remote r = {
		.addr = htobe64((uintptr_t)c->buf),
		.rkey = htobe32(c->mr->rkey),
		.len = htobe32((uint32_t)c->len),
	};
	struct rdma_conn_param p;
	struct sample_event ev;

	conn_param(&p);
	if (c->own_qp)
		p.qp_num = c->qp->qp_num;
	p.private_data = &r;
	p.private_data_len = sizeof(r);
	if (rdma_accept(c->id, &p))
		return sys_fail("rdma_accept");
	return sample_expect(c, RDMA_CM_EVENT_ESTABLISHED, &ev);
}

int sample_connect(struct sample_conn *c)
{
	struct rdma_conn_param p;
	struct sample_event ev;
	struct sample_remote r;

	conn_param(&p);
	if (rdma_connect(c->id, &p))
		return sys_fail("rdma_connect");
	if (sample_expect(c, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return -1;
	if (ev.priv_len < sizeof(r))
		return sample_fail("rdma_connect", "the server announced no buffer");
	memcpy(&r, ev.priv, sizeof(r));
	c->peer.addr = be64toh(r.addr);
	c->peer.rkey = be32toh(r.rkey);
	c->peer.len = be32toh(r.len);
	return 0;
}

int sample_disconnect(struct sample_conn *c)
{
	struct sample_event ev;

	if (rdma_disconnect(c->id))
		return sys_fail("rdma_disconnect");
	return sample_expect(c, RDMA_CM_EVENT_DISCONNECTED, &ev);
}

int sample_await_disconnect(struct sample_conn *c)
{
	struct sample_event ev;

	if (sample_expect(c, RDMA_CM_EVENT_DISCONNECTED, &ev))
		return -1;
	/* The DREP to the peer's DREQ (rdma_cm: the passive side disconnects too). */
	rdma_disconnect(c->id);
	return 0;
}

void sample_close(struct sample_conn *c)
{
	if (c->own_qp)
		ibv_destroy_qp(c->qp);
	else if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->listener)
		rdma_destroy_id(c->listener);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	memset(c, 0, sizeof(*c));
}
