/* SPDX-License-Identifier: MIT */
/*
 * What the engine's files (engine.c, engine_tx.c, engine_rx.c, engine_held.c) share; the rest
 * of the shim uses engine.h.
 */
#ifndef UROCE_VERBS_SHIM_ENGINE_INT_H
#define UROCE_VERBS_SHIM_ENGINE_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "fabric/net.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/objects.h"

/* The process's endpoint (engine.c), opened on first use; NULL until then or if it failed. */
extern struct uroce_net *uroce_engine_ep;
/* uroce_engine_ep is open and ours: polling threads read this flag, not the once-guard. */
extern atomic_bool uroce_engine_ready;

/* Packets dropped before reaching a QP, by reason (engine_rx.c), for uroce_engine_stats. */
struct uroce_engine_drops {
	atomic_uint_least64_t malformed;   /* roce_decode refused it */
	atomic_uint_least64_t bad_icrc;    /* no IPv4 ID makes the ICRC match */
	atomic_uint_least64_t no_qp;       /* DestQP not (or no longer) a QP of this process */
	atomic_uint_least64_t unsupported; /* to QP 1 but no MAD, or no CM to take it */
};
extern struct uroce_engine_drops uroce_engine_drops;

/* What the modules above the engine plugged in (uroce_engine_set_mad, _set_mcast); NULL: none. */
struct uroce_engine_upcalls {
	_Atomic(uroce_engine_mad_fn) mad_received;
	_Atomic(uroce_engine_unreachable_fn) mad_unreachable;
	_Atomic(uroce_engine_members_fn) mcast_members;
	_Atomic(uroce_engine_detach_fn) mcast_detach_all;
};
extern struct uroce_engine_upcalls uroce_engine_up;

/*
 * Send everything @qp's core has ready, in trains per destination (uroce_net_send_train), one
 * packet at a time if this thread has no train buffer, then arm the QP's timer for the core's
 * next deadline (engine_tx.c). A packet that cannot be sent is lost, which the transport
 * recovers from (net.h). qp->lock held.
 */
void uroce_engine_drain(struct uroce_qp *qp, uint64_t now);

/* qp->timer.fire: the core's deadline @now has come; handle it and drain (engine_tx.c). */
void uroce_engine_on_timer(struct uroce_timer *t, uint64_t now);

/*
 * The fabric's receive callbacks (struct uroce_net_ops, engine_rx.c), on the receiving thread:
 * a datagram's packet, the datagram's end, the batch's end, an ICMP error for a MAD sent.
 */
void uroce_engine_on_recv(void *arg, const struct uroce_rx *rx);
void uroce_engine_on_recv_end(void *arg);
/* struct uroce_net_ops steer: the QP's plan (transport/qp.h: roce_qp_steer), QP kept locked. */
bool uroce_engine_on_steer(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
			   struct roce_steer *plan);
void uroce_engine_on_batch_end(void *arg);
void uroce_engine_on_unreachable(void *arg, const uint8_t gid[16], int err);

/*
 * The fabric's polling_ended callback, and what a polling or waiting thread does first: send
 * what every QP holds (engine_held.c). No lock held.
 */
void uroce_engine_flush_held(void *arg);

#endif
