/* SPDX-License-Identifier: MIT */
/*
 * MADs on QP 1 (PROTOCOL.md §4.1): what the IB CM sends and receives, as UD SEND Only packets
 * to and from QP 1 with Q_Key 0x80010000, P_Key 0xFFFF, one 256-byte MAD each. This is part of
 * uroce's private interface between its libibverbs.so.1, which runs the engine, and its
 * librdmacm.so.1 (version node UROCE_PRIVATE_1: a program that mixes either with rdma-core's
 * fails to load instead of misbehaving).
 *
 * The process holding the host's RoCE port routes each MAD for QP 1 to the process it is for
 * (fabric/rdv.h, "The host's CM directory"): REQs to the listener of their service ID, the rest
 * by the tag in their communication ID, which the CM forms with cm_comm_id(uroce_cm_comm_tag()).
 */
#ifndef UROCE_VERBS_SHIM_MAD_H
#define UROCE_VERBS_SHIM_MAD_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/net.h"
#include "transport/ipudp.h"
#include "transport/wire.h"
#include "verbs-shim/export.h"

/* A MAD received on QP 1. */
struct uroce_mad_rx {
	uint8_t sgid[16], dgid[16]; /* the packet's IP source and destination, as GIDs */
	uint8_t tos, ttl;
	const uint8_t *mad; /* 256 bytes, valid during the handler only */
};

typedef void (*uroce_mad_handler)(void *arg, const struct uroce_mad_rx *rx);

/*
 * Have @fn (NULL: none) called with each MAD the process receives on QP 1, on the engine's
 * receiving thread, never concurrently with itself; starts the engine if it is not running.
 * Returns 0 or the errno of starting the engine.
 */
UROCE_EXPORT int uroce_mad_set_handler(uroce_mad_handler fn, void *arg);

/*
 * Send the 256-byte @mad to QP 1 at @dgid from @sgid (an address of this host) with @tos and
 * @ttl. Returns 0, or an errno: that of starting the engine or uroce_net_send's (the MAD is
 * lost, as on a wire; the CM retries).
 */
UROCE_EXPORT int uroce_mad_send(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
				uint8_t ttl, const uint8_t mad[256]);

/*
 * @op on the rdma_cm address @s in the host's CM directory (uroce_net_service), starting the
 * engine if needed. Returns 0, an errno of uroce_net_service, or that of starting the engine.
 */
UROCE_EXPORT int uroce_cm_service(enum uroce_service_op op, struct uroce_service *s);

/*
 * uroce_cm_service without waiting (uroce_net_service_async): @fn, if not NULL, gets the answer
 * on the engine's thread. Returns 0, or an errno of uroce_net_service_async or of starting the
 * engine (then @fn is not called).
 */
UROCE_EXPORT int uroce_cm_service_async(enum uroce_service_op op, const struct uroce_service *s,
					uroce_service_done_fn fn, void *arg);

/*
 * @c is established (@up) or no longer is: the host disconnects it if this process dies
 * (uroce_net_cm_conn). Never waits; an engine that cannot start is ignored (nothing to tell).
 */
UROCE_EXPORT void uroce_cm_conn_state(bool up, const struct uroce_cm_conn *c);

/*
 * Set *@tag to this process's communication ID tag (uroce_net_comm_tag), starting the engine if
 * needed. Returns 0 or the errno of starting the engine.
 */
UROCE_EXPORT int uroce_cm_comm_tag(uint32_t *tag);

typedef void (*uroce_mad_unreachable_fn)(void *arg, const uint8_t gid[16], int err);

/*
 * Have @fn (NULL: none) called when the network answers a MAD this process sent to @gid with
 * an ICMP error @err (ECONNREFUSED: no RoCE port open there; fabric/net.h ops->unreachable),
 * on the engine's progress thread. Starts the engine if it is not running. Returns 0 or the
 * errno of starting the engine.
 */
UROCE_EXPORT int uroce_mad_set_unreachable_handler(uroce_mad_unreachable_fn fn, void *arg);

/* For the engine (uroce_engine_set_mad): an ICMP error for a MAD sent (@arg unused). */
void uroce_mad_unreachable(void *arg, const uint8_t gid[16], int err);

/*
 * For the engine (uroce_engine_set_mad): a packet to QP 1 came. Hands its MAD to the handler and
 * returns true, or false if there is no handler or the packet is no MAD a GSI accepts.
 */
bool uroce_mad_received(const struct roce_pkt *pkt, const struct roce_ipudp *ip);

#endif
