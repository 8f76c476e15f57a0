/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 as far as it is built (verbs-shim/rdmacm/cma.h): event channels with
 * a pollable, optionally non-blocking fd; ids of each port space, synchronous ones with a
 * channel of their own, migration; device lists; event names; binding (ports, EADDRINUSE,
 * EADDRNOTAVAIL, ENODEV) and address and route resolution, with events or synchronously;
 * rdma_set_option with the kernel's rules; multicast joins; rdma_notify; ECE; and the calls
 * not built (rsockets) failing with ENOSYS rather than pretending.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/host_address.h"

Test(rdmacm, channel_fd_is_pollable_and_nonblocking)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd p;
	struct rdma_cm_event *ev;

	cr_assert_not_null(ch);
	p = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 0), 0, "readable with no event");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(rdma_get_cm_event(NULL, &ev), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_ack_cm_event(NULL), -1);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, ids_of_each_port_space)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *other;
	struct rdma_cm_id *id;
	int ctx;

	cr_assert_eq(rdma_create_id(ch, &id, &ctx, RDMA_PS_TCP), 0);
	cr_assert_eq(id->channel, ch);
	cr_assert_eq(id->context, &ctx);
	cr_assert_eq(id->ps, RDMA_PS_TCP);
	cr_assert_eq(id->qp_type, IBV_QPT_RC);
	cr_assert_null(id->verbs);
	cr_assert_eq(rdma_get_src_port(id), 0);
	((struct sockaddr_in *)&id->route.addr.src_addr)->sin_family = AF_INET;
	((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port = htons(7471);
	cr_assert_eq(rdma_get_src_port(id), htons(7471));
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(id->qp_type, IBV_QPT_UD);
	/* Synchronous from here: a channel of its own. */
	cr_assert_eq(rdma_migrate_id(id, NULL), 0);
	cr_assert(id->channel && id->channel != ch);
	other = rdma_create_event_channel();
	cr_assert_eq(rdma_migrate_id(id, other), 0);
	cr_assert_eq(id->channel, other);
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_IB), 0);
	cr_assert_not_null(id->channel, "a synchronous id has a channel");
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x0999), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), -1);
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, devices_and_event_names)
{
	int n = -1;
	struct ibv_context **list = rdma_get_devices(&n);
	bool lo = false;

	cr_assert_not_null(list);
	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_not_null(list[i]);
		lo |= !strcmp(ibv_get_device_name(list[i]->device), "uroce_lo");
	}
	cr_assert_null(list[n]);
	cr_assert(lo, "no uroce_lo among the rdma_cm devices");
	rdma_free_devices(list);
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT),
			 "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	cr_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT");
}

Test(rdmacm, notify_without_connection)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	cr_assert_eq(rdma_notify(id, IBV_EVENT_COMM_EST), -1, "no connection");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_destroy_id(id), 0);
}

/* rsockets (verbs-shim/rdmacm/rsocket*.c) refuse bad input as rsocket(7) and the socket calls
 * do; the data path is tested with real programs (tests/rsocket.cmake). */
Test(rdmacm, rsockets_bad_input)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), v = 0;
	socklen_t len = sizeof(v);

	cr_assert_geq(s, 0, "a stream rsocket: %s", strerror(errno));
	cr_assert_eq(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(rsend(STDIN_FILENO, "x", 1, 0), -1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(riowrite(STDIN_FILENO, "x", 1, 0, 0), (size_t)-1);
	cr_assert_eq(errno, EBADF);
	cr_assert_eq(raccept(s, NULL, NULL), -1, "not listening");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rshutdown(s, 7), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rgetsockopt(s, SOL_SOCKET, SO_PEERCRED, &v, &len), -1);
	cr_assert_eq(errno, ENOPROTOOPT);
	cr_assert_eq(rgetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, &len), 0);
	cr_assert_eq(v, 64, "rdma-core's default inline size");
	cr_assert_eq(rclose(s), 0);
	cr_assert_eq(rclose(s), -1, "closed");
	cr_assert_eq(errno, EBADF);
}

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/* An IPv4 address of a uroce device other than uroce_lo (tests/support/host_address.h). */
static struct sockaddr_in host4(uint16_t port)
{
	struct sockaddr_in sin;

	cr_assert(host_address4(port, &sin),
		  "this test needs an interface besides lo with an IPv4 address");
	return sin;
}

/*
 * rdma_get_devices returns the contexts the ids use, the same ones on every call, and they stay
 * open after rdma_free_devices, as librdmacm's do (libfabric's verbs provider matches its
 * domain's context by pointer and uses it after freeing the list).
 */
Test(rdmacm, devices_are_the_ids_contexts_and_stay_open)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = host4(0);
	struct ibv_context **first, **second;
	struct ibv_device_attr attr;
	struct rdma_cm_id *id;
	bool found = false;
	int n = 0, m = 0;

	first = rdma_get_devices(&n);
	cr_assert_not_null(first);
	rdma_free_devices(first);
	second = rdma_get_devices(&m);
	cr_assert_not_null(second);
	cr_assert_eq(n, m);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	for (int i = 0; i < m; i++) {
		found |= second[i] == id->verbs;
		cr_assert_eq(ibv_query_device(second[i], &attr), 0,
			     "a context of a freed list was closed");
	}
	cr_assert(found, "id->verbs is none of rdma_get_devices' contexts");
	rdma_free_devices(second);
	cr_assert_eq(ibv_query_device(id->verbs, &attr), 0);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, bind_ports_and_devices)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b, *c, *u;
	struct sockaddr_in sin = host4(0), any = {.sin_family = AF_INET, .sin_port = htons(7471)};
	struct sockaddr_in nowhere = {.sin_family = AF_INET}, lo = lo4(0);
	struct rdma_cm_id *l, *m;

	cr_assert_eq(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &u, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&sin), 0);
	cr_assert_neq(rdma_get_src_port(a), 0, "port 0 takes an ephemeral port");
	cr_assert_not_null(a->verbs);
	cr_assert_str_neq(ibv_get_device_name(a->verbs->device), "uroce_lo");
	cr_assert_eq(a->port_num, 1);
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&sin), -1, "bound twice");
	cr_assert_eq(errno, EINVAL);
	sin = host4(ntohs(rdma_get_src_port(a)));
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&sin), -1);
	cr_assert_eq(errno, EADDRINUSE);
	cr_assert_eq(rdma_bind_addr(u, (struct sockaddr *)&sin), 0, "another port space");
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&any), 0, "a wildcard");
	cr_assert_null(b->verbs, "a wildcard binds no device");
	any.sin_addr.s_addr = 0;
	sin = host4(7471);
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&sin), -1, "under the wildcard");
	cr_assert_eq(errno, EADDRNOTAVAIL, "the kernel's answer when a wildcard is involved");
	nowhere.sin_addr.s_addr = htonl(0xC6336401); /* 198.51.100.1, on no interface */
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&nowhere), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_eq(rdma_destroy_id(a), 0);
	sin = host4(0);
	cr_assert_eq(rdma_bind_addr(c, (struct sockaddr *)&sin), 0,
		     "a destroyed id's port is free");
	/* A loopback address is "any" to rdma_cm (cma_any_addr): no device, and a wildcard's
	 * conflicts. */
	cr_assert_eq(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &m, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(l, (struct sockaddr *)&lo), 0);
	cr_assert_null(l->verbs, "127.0.0.1 binds no device");
	lo = lo4(ntohs(rdma_get_src_port(l)));
	cr_assert_eq(rdma_bind_addr(m, (struct sockaddr *)&lo), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL, "the same loopback port: a wildcard is involved");
	rdma_destroy_id(l);
	rdma_destroy_id(m);
	rdma_destroy_id(b);
	rdma_destroy_id(c);
	rdma_destroy_id(u);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, resolve_addr_and_route_with_events)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = lo4(7471);
	union ibv_gid lo = {.raw = {[10] = 0xff, 0xff, 127, 0, 0, 1}};

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_route(id, 1000), -1, "no address yet");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->status, 0);
	cr_assert_eq(ev->id, id);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_str_eq(ibv_get_device_name(id->verbs->device), "uroce_lo");
	cr_assert_eq(rdma_get_dst_port(id), htons(7471));
	cr_assert_neq(rdma_get_src_port(id), 0);
	cr_assert_eq(rdma_resolve_route(id, 1000), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	cr_assert_eq(id->route.num_paths, 1);
	cr_assert_eq(memcmp(&id->route.path_rec->sgid, &lo, 16), 0);
	cr_assert_eq(memcmp(&id->route.path_rec->dgid, &lo, 16), 0);
	cr_assert_eq(id->route.path_rec->pkey, htons(0xFFFF));
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, synchronous_resolution)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = lo4(7471);
	struct sockaddr_in6 dst6 = {.sin6_family = AF_INET6, .sin6_port = htons(1)};

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_not_null(id->event, "the event of a synchronous call is in id->event");
	cr_assert_eq(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(rdma_resolve_route(id, 1000), 0);
	cr_assert_eq(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(rdma_destroy_id(id), 0);
	/* An IPv6 destination from an IPv4 source: refused at once. */
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	dst = lo4(0);
	cr_assert_eq(rdma_resolve_addr(id, (struct sockaddr *)&dst, (struct sockaddr *)&dst6, 10),
		     -1);
	cr_assert_eq(errno, EAFNOSUPPORT);
	cr_assert_eq(rdma_destroy_id(id), 0);
}

Test(rdmacm, getaddrinfo_passive_active_and_errors)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *res;
	struct sockaddr_in *sin;

	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	cr_assert_not_null(res->ai_src_addr, "a passive result is a source");
	cr_assert_null(res->ai_dst_addr);
	sin = (struct sockaddr_in *)res->ai_src_addr;
	cr_assert_eq(sin->sin_port, htons(7471));
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);
	hints.ai_flags = 0;
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	cr_assert_not_null(res->ai_dst_addr, "an active result is a destination");
	rdma_freeaddrinfo(res);
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1, "nothing to look up");
	cr_assert_eq(errno, EINVAL);
	hints.ai_flags = 0x100; /* librdmacm ignores flags it does not know */
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "1", &hints, &res), 0);
	rdma_freeaddrinfo(res);
	hints.ai_flags = RAI_NUMERICHOST;
	cr_assert_neq(rdma_getaddrinfo("not-a-number", "1", &hints, &res), 0);
	hints.ai_flags = 0;
	hints.ai_family = AF_UNIX;
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "1", &hints, &res), EAI_FAMILY);
}

/*
 * librdmacm's rules (rdma-core librdmacm/addrinfo.c): the port space sets the protocol and so
 * the QP type; without node and service the result is the hints', source included (pyverbs'
 * AddrInfo(src=...) makes a multicast group's address so).
 */
Test(rdmacm, getaddrinfo_from_hints_and_port_space)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_UDP}, *src,
			     *res;
	struct sockaddr_in *sin;

	cr_assert_eq(rdma_getaddrinfo("230.0.0.1", NULL, &hints, &src), 0);
	cr_assert_eq(src->ai_flags, RAI_PASSIVE);
	cr_assert_eq(src->ai_qp_type, IBV_QPT_UD, "RDMA_PS_UDP: datagrams, UD");
	cr_assert_eq(src->ai_port_space, RDMA_PS_UDP);
	hints = (struct rdma_addrinfo){.ai_src_addr = src->ai_src_addr,
				       .ai_src_len = src->ai_src_len};
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	cr_assert_null(res->ai_dst_addr);
	cr_assert_eq(res->ai_src_len, sizeof(*sin));
	sin = (struct sockaddr_in *)res->ai_src_addr;
	cr_assert_eq(sin->sin_addr.s_addr, htonl(0xe6000001));
	cr_assert_neq(res->ai_src_addr, src->ai_src_addr, "a copy");
	rdma_freeaddrinfo(res);
	/* An active result keeps the hints' source beside its destination. */
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	cr_assert_eq(res->ai_flags, 0);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC, "no hint: a stream, RC over RDMA_PS_TCP");
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	cr_assert_not_null(res->ai_dst_addr);
	cr_assert_eq(((struct sockaddr_in *)res->ai_src_addr)->sin_addr.s_addr, htonl(0xe6000001));
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(src);
}

/* An id resolved to 127.0.0.1 (port space @ps). */
static struct rdma_cm_id *resolved(enum rdma_port_space ps)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = lo4(7471);

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, ps), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(rdma_resolve_route(id, 1000), 0);
	return id;
}

/*
 * librdmacm's ucma_valid_param: RDMA READ and atomic resources above the device's maximum are
 * refused, but 255 (RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH) asks for that maximum.
 */
Test(rdmacm, rd_atomic_resources_as_librdmacm)
{
	struct rdma_cm_id *id = resolved(RDMA_PS_TCP);
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC};
	struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1};
	struct ibv_device_attr da;

	cr_assert_eq(ibv_query_device(id->verbs, &da), 0);
	cr_assert_lt(da.max_qp_rd_atom, 255);
	cr_assert_eq(rdma_create_qp(id, NULL, &qa), 0);
	p.responder_resources = (uint8_t)(da.max_qp_rd_atom + 1);
	cr_assert_eq(rdma_connect(id, &p), -1, "more responder resources than the device has");
	cr_assert_eq(errno, EINVAL);
	p.responder_resources = 1;
	p.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom + 1);
	cr_assert_eq(rdma_connect(id, &p), -1, "a deeper initiator than the device allows");
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_ep(id);
}

Test(rdmacm, create_qp_with_default_pd_and_cqs)
{
	struct rdma_cm_id *a = resolved(RDMA_PS_TCP), *b = resolved(RDMA_PS_TCP),
			  *u = resolved(RDMA_PS_UDP);
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC};
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int mask;

	/* librdmacm's ucma_get_device: the device's PD comes with it, before any QP. */
	cr_assert_not_null(a->pd);
	cr_assert_eq(a->pd, u->pd, "one default PD per device");
	cr_assert_eq(rdma_create_qp(a, NULL, &qa), 0);
	cr_assert(a->qp && a->pd && a->send_cq && a->recv_cq);
	cr_assert(a->send_cq_channel && a->recv_cq_channel);
	cr_assert_eq(a->recv_cq->cq_context, a, "the CQ context is the id");
	cr_assert_eq(ibv_query_qp(a->qp, &attr, IBV_QP_STATE, &init), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_INIT);
	cr_assert_eq(rdma_create_qp(a, NULL, &qa), -1, "a second QP");
	cr_assert_eq(errno, EINVAL);
	qa.send_cq = qa.recv_cq = NULL;
	cr_assert_eq(rdma_create_qp(b, NULL, &qa), 0);
	cr_assert_eq(b->pd, a->pd, "one default PD per device");
	attr.qp_state = IBV_QPS_RTR;
	cr_assert_eq(rdma_init_qp_attr(a, &attr, &mask), -1, "RTR needs the connection");
	cr_assert_eq(errno, EINVAL);
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = qa.recv_cq = NULL;
	cr_assert_eq(rdma_create_qp(u, NULL, &qa), 0);
	cr_assert_eq(ibv_query_qp(u->qp, &attr, IBV_QP_STATE | IBV_QP_QKEY, &init), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_RTS, "a UD QP is ready at once");
	cr_assert_eq(attr.qkey, 0x01234567u, "rdma_cm's UD Q_Key");
	rdma_destroy_qp(a);
	cr_assert_null(a->qp);
	cr_assert_null(a->send_cq);
	rdma_destroy_ep(a);
	rdma_destroy_ep(b);
	rdma_destroy_ep(u);
}

Test(rdmacm, create_ep_passive_and_active)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP}, *res;
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC};
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct sockaddr_in host = host4(0);
	char at[INET_ADDRSTRLEN];
	struct rdma_cm_id *id;

	/* On a device's address: a passive id bound to 127.0.0.1 has no device for its SRQ. */
	inet_ntop(AF_INET, &host.sin_addr, at, sizeof(at));
	cr_assert_eq(rdma_getaddrinfo(at, "7472", &hints, &res), 0);
	cr_assert_eq(rdma_create_ep(&id, res, NULL, NULL), 0);
	cr_assert_eq(rdma_get_src_port(id), htons(7472));
	cr_assert_null(id->qp);
	cr_assert_eq(rdma_create_srq(id, NULL, &sa), 0);
	cr_assert_not_null(id->srq);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
	hints.ai_flags = 0;
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "7472", &hints, &res), 0);
	cr_assert_eq(rdma_create_ep(&id, res, NULL, &qa), 0);
	cr_assert_not_null(id->qp);
	cr_assert_eq(id->route.num_paths, 1);
	cr_assert_eq(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

static int set_int(struct rdma_cm_id *id, int name, int v)
{
	return rdma_set_option(id, RDMA_OPTION_ID, name, &v, sizeof(v));
}

Test(rdmacm, options_with_the_kernels_rules)
{
	struct rdma_cm_id *a, *b, *u, *v6;
	struct sockaddr_in sin = host4(7480),
			   any = {.sin_family = AF_INET, .sin_port = htons(7481)};
	struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_port = htons(7481)};
	struct sockaddr_in dst = lo4(7482);
	uint8_t tos = 0x60, timeout = 20;

	cr_assert_eq(rdma_create_id(NULL, &a, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(NULL, &b, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(NULL, &u, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_create_id(NULL, &v6, NULL, RDMA_PS_TCP), 0);
	/* Lengths, levels and names. */
	cr_assert_eq(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(set_int(a, 99, 1), -1);
	cr_assert_eq(errno, ENOSYS);
	cr_assert_eq(rdma_set_option(a, 7, RDMA_OPTION_ID_TOS, &tos, 1), -1);
	cr_assert_eq(errno, ENOSYS);
	cr_assert_eq(rdma_set_option(u, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, 1),
		     -1, "ACK timeout of a UD id");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, 1),
		     0);
	/* REUSEADDR: two ids share a port until one listens. */
	cr_assert_eq(set_int(a, RDMA_OPTION_ID_REUSEADDR, 1), 0);
	cr_assert_eq(set_int(b, RDMA_OPTION_ID_REUSEADDR, 1), 0);
	cr_assert_eq(rdma_bind_addr(a, (struct sockaddr *)&sin), 0);
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&sin), 0);
	cr_assert_eq(rdma_listen(a, 1), -1);
	cr_assert_eq(errno, EADDRINUSE);
	cr_assert_eq(set_int(a, RDMA_OPTION_ID_REUSEADDR, 0), -1, "off only before binding");
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_id(b);
	cr_assert_eq(rdma_listen(a, 1), 0);
	/* AFONLY: IPv4 ids are; an IPv6 wildcard meets IPv4 ones unless it is too. */
	cr_assert_eq(rdma_bind_addr(u, (struct sockaddr *)&any), 0);
	any6.sin6_family = AF_INET6;
	cr_assert_eq(rdma_create_id(NULL, &b, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(set_int(b, RDMA_OPTION_ID_AFONLY, 0), 0);
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&any6), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL);
	cr_assert_eq(set_int(b, RDMA_OPTION_ID_AFONLY, 1), 0);
	cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&any6), 0);
	rdma_destroy_id(b);
	/* TOS: in the path, and AFONLY no longer once resolved. */
	cr_assert_eq(rdma_set_option(v6, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0);
	cr_assert_eq(rdma_resolve_addr(v6, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(set_int(v6, RDMA_OPTION_ID_AFONLY, 1), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_resolve_route(v6, 1000), 0);
	cr_assert_eq(v6->route.path_rec->traffic_class, 0x60);
	rdma_destroy_id(a);
	rdma_destroy_id(u);
	rdma_destroy_id(v6);
}

/* RDMA_OPTION_IB_PATH: a bidirectional primary path becomes the route of a resolved id. */
Test(rdmacm, option_ib_path)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = lo4(7483);
	struct ibv_path_data d[2] = {
		{.flags = IBV_PATH_FLAG_ALTERNATE},
		{.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL}};

	d[1].path.mtu = IBV_MTU_2048 | 2 << 6;
	d[1].path.tclass = 0x20;
	d[1].path.flowlabel_hoplimit = htonl(0x12345u << 8 | 7);
	d[1].path.pkey = htons(0xFFFF);
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, d, sizeof(d)), -1,
		     "no address yet");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, d, sizeof(d) - 1),
		     -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, d, sizeof(d[0])), -1,
		     "no bidirectional primary path");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, d, sizeof(d)), 0);
	cr_assert_eq(id->route.num_paths, 1);
	cr_assert_eq(id->route.path_rec->mtu, IBV_MTU_2048);
	cr_assert_eq(id->route.path_rec->mtu_selector, 2);
	cr_assert_eq(id->route.path_rec->traffic_class, 0x20);
	cr_assert_eq(id->route.path_rec->hop_limit, 7);
	cr_assert_eq(ntohl(id->route.path_rec->flow_label), 0x12345u);
	cr_assert_eq(rdma_resolve_route(id, 1000), -1, "the route is resolved already");
	rdma_destroy_id(id);
}

/* RDMA_OPTION_IB_PATH reports ROUTE_RESOLVED on the id's channel, as the kernel's ucma does. */
Test(rdmacm, option_ib_path_event)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = lo4(7484);
	struct ibv_path_data d = {.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
					   IBV_PATH_FLAG_BIDIRECTIONAL};

	d.path.mtu = IBV_MTU_1024 | 2 << 6;
	d.path.pkey = htons(0xFFFF);
	cr_assert_not_null(ch);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	cr_assert_eq(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &d, sizeof(d)), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(ev->status, 0);
	cr_assert_eq(ev->id, id);
	rdma_ack_cm_event(ev);
	cr_assert_eq(id->route.path_rec->mtu, IBV_MTU_1024);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* Multicast joins as the kernel makes them on RoCEv2 (rdmacm/mcast.c). */
Test(rdmacm, multicast_join_and_leave)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *tcp;
	struct rdma_cm_event *ev;
	struct sockaddr_in src = host4(0), group = {.sin_family = AF_INET}, other = group;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	union ibv_gid mgid = {.raw = {[10] = 0xff, 0xff, 239, 1, 2, 3}};
	int ctx;

	group.sin_addr.s_addr = htonl(0xEF010203); /* 239.1.2.3 */
	other.sin_addr.s_addr = htonl(0xEF010204);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_create_id(ch, &tcp, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_join_multicast(id, (struct sockaddr *)&group, &ctx), -1, "not bound");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&src), 0);
	cr_assert_eq(rdma_bind_addr(tcp, (struct sockaddr *)&src), 0);
	cr_assert_eq(rdma_join_multicast(tcp, (struct sockaddr *)&group, &ctx), -1, "not UD");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_join_multicast(id, (struct sockaddr *)&src, &ctx), -1, "no group");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_create_qp(id, NULL, &qa), 0);
	cr_assert_eq(rdma_join_multicast(id, (struct sockaddr *)&group, &ctx), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	cr_assert_eq(ev->status, 0);
	cr_assert_eq(ev->param.ud.qp_num, 0xFFFFFF);
	cr_assert_eq(ev->param.ud.qkey, 0x01234567);
	cr_assert_eq(ev->param.ud.private_data, &ctx);
	cr_assert(ev->param.ud.ah_attr.is_global);
	cr_assert_eq(memcmp(&ev->param.ud.ah_attr.grh.dgid, &mgid, 16), 0);
	cr_assert_eq(ev->param.ud.ah_attr.grh.hop_limit, 64);
	rdma_ack_cm_event(ev);
	/* Taking the event attached the QP: detaching succeeds once, then finds nothing. */
	cr_assert_eq(rdma_leave_multicast(id, (struct sockaddr *)&other), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL);
	cr_assert_eq(rdma_leave_multicast(id, (struct sockaddr *)&group), 0);
	cr_assert_neq(ibv_detach_mcast(id->qp, &mgid, 0), 0, "left: no longer attached");
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(tcp);
	rdma_destroy_event_channel(ch);
}

/* The next event on @ch, which must be @type. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
	cr_assert_eq(ev->event, type, "%s, not %s", rdma_event_str(ev->event),
		     rdma_event_str(type));
	return ev;
}

/* A client id resolved to @at (address and route), reporting on @ch. */
static struct rdma_cm_id *resolved_to(struct rdma_event_channel *ch, struct sockaddr_in *at)
{
	struct rdma_cm_id *id;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)at, 1000), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	cr_assert_eq(rdma_resolve_route(id, 1000), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return id;
}

/* A listener at @at reporting on @ch. */
static struct rdma_cm_id *listener_at(struct rdma_event_channel *ch, struct sockaddr_in *at,
				      int backlog)
{
	struct rdma_cm_id *l;

	cr_assert_eq(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(l, (struct sockaddr *)at), 0);
	cr_assert_eq(rdma_listen(l, backlog), 0);
	return l;
}

/* @id connects (no QP of its own: a QP number given). */
static void connect_without_qp(struct rdma_cm_id *id)
{
	struct rdma_conn_param cp = {
		.qp_num = 0x123, .responder_resources = 1, .initiator_depth = 1};

	cr_assert_eq(rdma_connect(id, &cp), 0);
}

/*
 * rdma_notify(COMM_EST): a passive side whose RTU has not come (the active side holds it back:
 * no QP, CONNECT_RESPONSE, no rdma_establish yet) is established by it, as the kernel's
 * ib_cm_notify does; once established, EISCONN.
 */
Test(rdmacm, notify_comm_est_establishes_the_passive_side)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in at = lo4(7490);
	struct rdma_cm_id *listener = listener_at(ch, &at, 1), *client = resolved_to(ch, &at),
			  *child;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {
		.qp_num = 0x456, .responder_resources = 1, .initiator_depth = 1};

	connect_without_qp(client);
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	rdma_ack_cm_event(ev);
	cr_assert_eq(rdma_notify(child, IBV_EVENT_COMM_EST), -1, "no REP sent yet");
	cr_assert_eq(errno, EINVAL);
	cp.qp_num = 0x456;
	cr_assert_eq(rdma_accept(child, &cp), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	cr_assert_eq(rdma_notify(child, IBV_EVENT_SQ_DRAINED), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_notify(child, IBV_EVENT_COMM_EST), 0);
	ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev->id, child);
	rdma_ack_cm_event(ev);
	cr_assert_eq(rdma_notify(child, IBV_EVENT_COMM_EST), -1);
	cr_assert_eq(errno, EISCONN);
	/* The late RTU changes nothing on the passive side. */
	cr_assert_eq(rdma_establish(client), 0);
	rdma_destroy_id(client);
	rdma_destroy_id(child);
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
}

/*
 * ECE as librdmacm has it: each side's vendor ID and options travel in its REQ or REP and are
 * read back by the other with rdma_get_remote_ece; rdma_reject_ece rejects with reason 35.
 */
Test(rdmacm, ece_both_ways_and_rejection)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in at = lo4(7491);
	struct rdma_cm_id *listener = listener_at(ch, &at, 1), *client, *child;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {
		.qp_num = 0x456, .responder_resources = 1, .initiator_depth = 1};
	struct ibv_ece mine = {.vendor_id = 0x15b3, .options = 0x1},
		       theirs = {.vendor_id = 0x15b3, .options = 0x3}, got;

	for (int round = 0; round < 2; round++) {
		client = resolved_to(ch, &at);
		cr_assert_eq(rdma_set_local_ece(client, &(struct ibv_ece){.options = 1}), -1,
			     "vendor ID 0");
		cr_assert_eq(errno, EINVAL);
		cr_assert_eq(rdma_set_local_ece(client, &mine), 0);
		connect_without_qp(client);
		ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		child = ev->id;
		rdma_ack_cm_event(ev);
		cr_assert_eq(rdma_get_remote_ece(child, &got), 0);
		cr_assert_eq(got.vendor_id, mine.vendor_id);
		cr_assert_eq(got.options, mine.options);
		if (round == 1) {
			cr_assert_eq(rdma_reject_ece(child, NULL, 0), 0);
			ev = expect(ch, RDMA_CM_EVENT_REJECTED);
			cr_assert_eq(ev->status, 35, "vendor option not supported: %d", ev->status);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(child);
			rdma_destroy_id(client);
			break;
		}
		cr_assert_eq(rdma_set_local_ece(child, &theirs), 0);
		cr_assert_eq(rdma_accept(child, &cp), 0);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
		cr_assert_eq(rdma_get_remote_ece(client, &got), 0);
		cr_assert_eq(got.vendor_id, theirs.vendor_id);
		cr_assert_eq(got.options, theirs.options);
		cr_assert_eq(rdma_establish(client), 0);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
		cr_assert_eq(rdma_disconnect(client), 0);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		rdma_destroy_id(client);
		rdma_destroy_id(child);
	}
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
}

/*
 * The listen backlog as ucma has it: requests the application has not taken yet, beyond it,
 * are refused (REJ 28); a listener destroyed with requests not taken refuses them too.
 */
Test(rdmacm, backlog_and_listener_destroyed_with_requests)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in at = lo4(7492);
	struct rdma_cm_id *listener = listener_at(ch, &at, 2), *c[4];
	struct rdma_cm_event *ev;
	int requests = 0, rejected = 0;

	for (int i = 0; i < 4; i++)
		c[i] = resolved_to(ch, &at);
	for (int i = 0; i < 3; i++)
		connect_without_qp(c[i]);
	usleep(200000); /* all three handled before any request is taken */
	while (requests + rejected < 3) {
		cr_assert_eq(rdma_get_cm_event(ch, &ev), 0);
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			requests++;
		} else {
			cr_assert_eq(ev->event, RDMA_CM_EVENT_REJECTED, "%s",
				     rdma_event_str(ev->event));
			cr_assert_eq(ev->id, c[2], "the third, beyond the backlog of 2");
			cr_assert_eq(ev->status, 28);
			rejected++;
		}
		rdma_ack_cm_event(ev);
	}
	cr_assert_eq(rejected, 1, "two requests waiting, a third refused");
	/* Taken: room again. A fourth request waits; the listener goes before it is taken. */
	connect_without_qp(c[3]);
	usleep(200000);
	rdma_destroy_id(listener);
	ev = expect(ch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->id, c[3]);
	rdma_ack_cm_event(ev);
	for (int i = 0; i < 4; i++)
		rdma_destroy_id(c[i]);
	rdma_destroy_event_channel(ch);
}

/*
 * A resolution that binds its id does not wait for the hub (addr.c): many are out at once, and
 * each gets its ADDR_RESOLVED with a port of its own; an id destroyed before its answer gets no
 * event; the port of a destroyed id is free to a bind made after the destroy (the UNBIND is not
 * waited for, but goes to the hub before that BIND).
 */
Test(rdmacm, resolutions_overlap_and_ports_come_back)
{
	enum { N = 64 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id[N], *gone, *b;
	struct sockaddr_in dst = lo4(7471), sin;
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	uint16_t port[N];
	bool got[N] = {false};

	for (int i = 0; i < N; i++) {
		cr_assert_eq(rdma_create_id(ch, &id[i], NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_resolve_addr(id[i], NULL, (struct sockaddr *)&dst, 1000), 0);
	}
	cr_assert_eq(rdma_create_id(ch, &gone, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(gone, NULL, (struct sockaddr *)&dst, 1000), 0);
	cr_assert_eq(rdma_destroy_id(gone), 0);
	for (int n = 0; n < N; n++) {
		struct rdma_cm_event *ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		int i = 0;

		while (i < N && id[i] != ev->id)
			i++;
		cr_assert_lt(i, N, "an event for an id not made here");
		cr_assert_not(got[i], "two events for id %d", i);
		got[i] = true;
		port[i] = ntohs(rdma_get_src_port(id[i]));
		cr_assert_neq(port[i], 0);
		for (int k = 0; k < N; k++)
			cr_assert(k == i || !got[k] || port[k] != port[i],
				  "ids %d and %d share port %u", k, i, port[i]);
		rdma_ack_cm_event(ev);
	}
	cr_assert_eq(poll(&pfd, 1, 200), 0, "no event for the id destroyed while resolving");
	for (int i = 0; i < N; i++)
		cr_assert_eq(rdma_destroy_id(id[i]), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP), 0);
		sin = lo4(port[i]);
		cr_assert_eq(rdma_bind_addr(b, (struct sockaddr *)&sin), 0,
			     "port %u of a destroyed id: %s", port[i], strerror(errno));
		cr_assert_eq(rdma_destroy_id(b), 0);
	}
	rdma_destroy_event_channel(ch);
}

/* Whether @ch's fd polls readable now. */
static bool readable(struct rdma_event_channel *ch)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* @n ids on @ch with their addresses resolved (their events taken): route resolution next. */
static void addr_resolved(struct rdma_event_channel *ch, struct rdma_cm_id **id, int n)
{
	struct sockaddr_in dst = lo4(7471);

	for (int i = 0; i < n; i++) {
		cr_assert_eq(rdma_create_id(ch, &id[i], NULL, RDMA_PS_TCP), 0);
		cr_assert_eq(rdma_resolve_addr(id[i], NULL, (struct sockaddr *)&dst, 1000), 0);
	}
	for (int i = 0; i < n; i++)
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
}

/*
 * The channel's fd is readable exactly while events wait (channel.c counts the queue's
 * emptiness, not its events): through a burst taken one by one, blocking or not, and when
 * destroying ids drops the events not taken. Route resolution queues its event before it
 * returns.
 */
Test(rdmacm, channel_fd_is_readable_exactly_while_events_wait)
{
	enum { N = 3 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id[3 * N];
	struct rdma_cm_event *ev;

	addr_resolved(ch, id, 3 * N);
	cr_assert_not(readable(ch), "every event taken");
	for (int i = 0; i < N; i++)
		cr_assert_eq(rdma_resolve_route(id[i], 1000), 0);
	for (int i = 0; i < N; i++) {
		cr_assert(readable(ch), "%d of %d events wait", N - i, N);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	}
	cr_assert_not(readable(ch), "the last event taken");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	for (int i = N; i < 2 * N; i++) {
		cr_assert_eq(rdma_resolve_route(id[i], 1000), 0);
		cr_assert(readable(ch));
		cr_assert_eq(rdma_get_cm_event(ch, &ev), 0, "non-blocking, one waits");
		rdma_ack_cm_event(ev);
		cr_assert_eq(rdma_get_cm_event(ch, &ev), -1, "non-blocking, none waits");
		cr_assert_eq(errno, EAGAIN);
	}
	for (int i = 2 * N; i < 3 * N; i++)
		cr_assert_eq(rdma_resolve_route(id[i], 1000), 0);
	for (int i = 2 * N; i < 3 * N; i++) {
		cr_assert(readable(ch), "the events of %d ids wait", 3 * N - i);
		cr_assert_eq(rdma_destroy_id(id[i]), 0);
	}
	cr_assert_not(readable(ch), "the ids' events went with them");
	for (int i = 0; i < 2 * N; i++)
		cr_assert_eq(rdma_destroy_id(id[i]), 0);
	rdma_destroy_event_channel(ch);
}

static void *get_event(void *ch)
{
	struct rdma_cm_event *ev;

	rdma_get_cm_event(ch, &ev);
	return ch;
}

/*
 * rdma_get_cm_event on a channel another thread has just destroyed (rping 44's CM thread at
 * the end of every run) waits for ever, as a thread already blocked in the kernel's read does,
 * rather than fail (rping would exit 255 after a complete run); the memory it reads is kept
 * (channel.c), and the wait can be cancelled.
 */
Test(rdmacm, event_on_a_just_destroyed_channel_waits)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct timespec pause = {.tv_nsec = 100 * 1000 * 1000};
	pthread_t t;
	void *ret;

	cr_assert_not_null(ch);
	rdma_destroy_event_channel(ch);
	cr_assert_eq(pthread_create(&t, NULL, get_event, ch), 0);
	nanosleep(&pause, NULL);
	cr_assert_eq(pthread_tryjoin_np(t, &ret), EBUSY, "the call returned");
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
}
