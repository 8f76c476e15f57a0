/* SPDX-License-Identifier: MIT */
/*
 * Forwarding: the hub receives every datagram for the host's RoCE port and passes those for
 * another process's QPN block to it as a frame on its connection; a process hands the frames
 * it gets back to its endpoint (uroce_rdv_ops.forwarded). Routing by QPN block, and the
 * multicast datagrams a process sends, shown to the host's other members.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/rdv_int.h"
#include "transport/wire.h"

/* The header of a datagram @rx handed on as a record of @type. */
static struct rdv_frame frame_of(enum rdv_type type, const struct uroce_rx *rx)
{
	struct rdv_frame f = {
		.hdr = rdv_header(type),
		.sport = rx->ip.sport,
		.dport = rx->ip.dport,
		.tos = rx->ip.tos,
		.ttl = rx->ip.ttl,
		.flags = rx->host_sent ? RDV_FRAME_LOCAL : 0,
		.flow_label = rx->ip.flow_label,
	};

	memcpy(f.sgid, rx->ip.sgid, 16);
	memcpy(f.dgid, rx->ip.dgid, 16);
	return f;
}

void rdv_forward(struct uroce_rdv *r, struct conn *c, const struct uroce_rx *rx)
{
	struct rdv_frame f = frame_of(RDV_FRAME, rx);
	struct iovec iov[2] = {
		{.iov_base = &f, .iov_len = sizeof(f)},
		{.iov_base = (void *)rx->roce, .iov_len = rx->len},
	};

	if (c->dead)
		return;
	/* Never wait: a process that does not read its socket loses datagrams, as on a wire. */
	if (rdv_send_record(c->fd, iov, 2, false))
		atomic_fetch_add(&r->forward_lost, 1);
	else
		atomic_fetch_add(&r->forwarded, 1);
}

uint16_t uroce_rdv_block_port(const struct uroce_rdv *r, uint32_t block, bool v6)
{
	uint32_t ports;

	if (block >= UROCE_QPN_BLOCKS)
		return 0;
	ports = atomic_load_explicit(&r->ports[block], memory_order_relaxed);
	return (uint16_t)(v6 ? ports >> 16 : ports & 0xFFFF);
}

uint16_t uroce_rdv_direct_port(const struct uroce_rdv *r, uint32_t qpn, bool v6)
{
	if (qpn == ROCE_GSI_QPN || qpn == ROCE_MCAST_QPN || qpn > ROCE_MCAST_QPN)
		return 0;
	return uroce_rdv_block_port(r, uroce_qpn_block(qpn), v6);
}

enum uroce_rdv_route uroce_rdv_route(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	/* DestQP: BTH bytes 5..7 (PROTOCOL.md §1.5). */
	uint32_t qpn = (uint32_t)rx->roce[5] << 16 | (uint32_t)rx->roce[6] << 8 | rx->roce[7];
	uint32_t block = uroce_qpn_block(qpn);

	if (qpn == ROCE_GSI_QPN)
		return r->hub ? rdv_cm_route(r, rx) : UROCE_RDV_DELIVER;
	if (qpn == ROCE_MCAST_QPN) {
		for (struct conn *c = r->hub ? r->conns : NULL; c; c = c->next)
			if (c->token)
				rdv_forward(r, c, rx);
		return UROCE_RDV_DELIVER;
	}
	if (r->owner[block] == r->token)
		return UROCE_RDV_DELIVER;
	if (r->hub && r->route[block]) {
		rdv_forward(r, r->route[block], rx);
		return UROCE_RDV_FORWARDED;
	}
	return UROCE_RDV_UNKNOWN;
}

bool uroce_rdv_owns(const struct uroce_rdv *r, uint32_t qpn)
{
	return qpn != ROCE_GSI_QPN && qpn != ROCE_MCAST_QPN &&
	       r->owner[uroce_qpn_block(qpn)] == r->token;
}

void uroce_rdv_mcast_sent(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	struct rdv_frame f = frame_of(RDV_MCAST, rx);
	struct iovec iov[2] = {
		{.iov_base = &f, .iov_len = sizeof(f)},
		{.iov_base = (void *)rx->roce, .iov_len = rx->len},
	};
	uint64_t sent = 0, lost = 0;

	/*
	 * Sent before the caller's send returns, so before its completion (rdv.h). As
	 * rdv_forward(): never wait; a full socket loses it, as a switch would. A connection
	 * found dead but not yet dropped takes it in vain (MSG_NOSIGNAL: EPIPE).
	 */
	pthread_mutex_lock(&r->fwd_lock);
	if (r->hub) {
		f.hdr.type = RDV_FRAME;
		for (struct conn *c = r->conns; c; c = c->next) {
			if (!c->token)
				continue;
			if (rdv_send_record(c->fd, iov, 2, false))
				lost++;
			else
				sent++;
		}
	} else if (!r->up || rdv_send_record(r->up->fd, iov, 2, false)) {
		lost++;
	}
	pthread_mutex_unlock(&r->fwd_lock);
	atomic_fetch_add(&r->forwarded, sent);
	atomic_fetch_add(&r->forward_lost, lost);
}

/* The datagram in r->buf (@n bytes, struct rdv_frame first) as a struct uroce_rx. */
struct uroce_rx rdv_rx_of_frame(struct uroce_rdv *r, size_t n)
{
	const struct rdv_frame *f = (const struct rdv_frame *)r->buf;
	struct uroce_rx rx = {.now = uroce_now()};

	rx.ip.sport = f->sport;
	rx.ip.dport = f->dport;
	rx.ip.tos = f->tos;
	rx.ip.ttl = f->ttl;
	rx.ip.flow_label = f->flow_label;
	memcpy(rx.ip.sgid, f->sgid, 16);
	memcpy(rx.ip.dgid, f->dgid, 16);
	rx.ip.ip_frag = roce_ipudp_is_v4(&rx.ip) ? ROCE_IPV4_DF : 0;
	rx.roce = r->buf + sizeof(*f);
	rx.len = n - sizeof(*f);
	rx.host_sent = f->flags & RDV_FRAME_LOCAL;
	return rx;
}

void rdv_process_frame(struct uroce_rdv *r, size_t n)
{
	struct uroce_rx rx = rdv_rx_of_frame(r, n);

	r->ops->forwarded(r->arg, &rx);
}

uint64_t uroce_rdv_forwarded(const struct uroce_rdv *r)
{
	return atomic_load(&r->forwarded);
}

uint64_t uroce_rdv_forward_lost(const struct uroce_rdv *r)
{
	return atomic_load(&r->forward_lost);
}
