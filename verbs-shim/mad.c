// SPDX-License-Identifier: MIT
/* MADs on QP 1 (mad.h): sent through the engine, received ones handed to one handler. */
#include "verbs-shim/mad.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "cm/route.h"
#include "verbs-shim/engine.h"

static _Atomic(uroce_mad_handler) handler;
static void *_Atomic handler_arg;

int uroce_mad_set_handler(uroce_mad_handler fn, void *arg)
{
	int err = uroce_engine_start();

	if (err)
		return err;
	uroce_engine_set_mad(uroce_mad_received, uroce_mad_unreachable);
	/* Answers to MADs go back with the request's traffic class, as the kernel's CM does. */
	if (fn)
		uroce_net_want_ip_fields(uroce_engine_net());
	atomic_store(&handler_arg, arg);
	atomic_store(&handler, fn);
	return 0;
}

int uroce_mad_send(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos, uint8_t ttl,
		   const uint8_t mad[256])
{
	struct uroce_net *net = uroce_engine_net();

	return net ? uroce_net_send_mad(net, sgid, dgid, tos, ttl, mad) : errno;
}

int uroce_cm_service(enum uroce_service_op op, struct uroce_service *s)
{
	struct uroce_net *net = uroce_engine_net();

	return net ? uroce_net_service(net, op, s) : errno;
}

int uroce_cm_service_async(enum uroce_service_op op, const struct uroce_service *s,
			   uroce_service_done_fn fn, void *arg)
{
	struct uroce_net *net = uroce_engine_net();

	return net ? uroce_net_service_async(net, op, s, fn, arg) : errno;
}

void uroce_cm_conn_state(bool up, const struct uroce_cm_conn *c)
{
	struct uroce_net *net = uroce_engine_net();

	if (net)
		uroce_net_cm_conn(net, up, c);
}

int uroce_cm_comm_tag(uint32_t *tag)
{
	struct uroce_net *net = uroce_engine_net();

	if (!net)
		return errno;
	*tag = uroce_net_comm_tag(net);
	return 0;
}

static _Atomic(uroce_mad_unreachable_fn) unreachable_fn;
static void *_Atomic unreachable_arg;

int uroce_mad_set_unreachable_handler(uroce_mad_unreachable_fn fn, void *arg)
{
	int err = uroce_engine_start();

	if (err)
		return err;
	uroce_engine_set_mad(uroce_mad_received, uroce_mad_unreachable);
	atomic_store(&unreachable_arg, arg);
	atomic_store(&unreachable_fn, fn);
	return 0;
}

void uroce_mad_unreachable(void *arg, const uint8_t gid[16], int err)
{
	uroce_mad_unreachable_fn fn = atomic_load(&unreachable_fn);

	(void)arg;
	if (fn)
		fn(atomic_load(&unreachable_arg), gid, err);
}

bool uroce_mad_received(const struct roce_pkt *pkt, const struct roce_ipudp *ip)
{
	uroce_mad_handler fn = atomic_load(&handler);
	struct uroce_mad_rx rx = {.tos = ip->tos, .ttl = ip->ttl, .mad = pkt->payload};

	if (!fn || !cm_gsi_accepts(pkt))
		return false;
	memcpy(rx.sgid, ip->sgid, 16);
	memcpy(rx.dgid, ip->dgid, 16);
	fn(atomic_load(&handler_arg), &rx);
	return true;
}
