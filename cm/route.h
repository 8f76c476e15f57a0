/* SPDX-License-Identifier: MIT */
/*
 * What the process holding a host's RoCE port needs from a MAD to QP 1 (ARCHITECTURE.md "The
 * host's CM directory"): which process it is for, and the answer the host gives when no process
 * takes it, as a Linux CM answers (PROTOCOL.md §4.9, §4.10). Pure: no I/O.
 *
 * Every process of a host forms its local communication IDs with cm_comm_id(), putting a tag
 * of its own (the first QPN block the host's hub granted it) in the top CM_COMM_TAG_BITS bits.
 * A peer copies our ID into the Remote Communication ID of every message after the REQ (the
 * Request ID of a SIDR_REP), so those route by the tag; REQ and SIDR_REQ route by service ID.
 */
#ifndef UROCE_CM_ROUTE_H
#define UROCE_CM_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/wire.h"
#include "transport/wire.h"

#define CM_COMM_TAG_BITS 12

enum cm_route_kind {
	CM_ROUTE_NONE,    /* no CM message (another class, a bad header): not routed */
	CM_ROUTE_SERVICE, /* REQ, SIDR_REQ: to the listener of service_id at the destination */
	CM_ROUTE_COMM_ID, /* every other CM message: to the owner of comm_id's tag */
};

struct cm_route {
	enum cm_route_kind kind;
	uint16_t attr_id;    /* enum cm_attr */
	uint64_t service_id; /* CM_ROUTE_SERVICE */
	uint32_t comm_id;    /* CM_ROUTE_COMM_ID: the receiver's own ID */
};

/* Whether @pkt is what a Linux GSI takes (§4.1, §1.10): UD SEND Only, QP 1's Q_Key, a whole MAD. */
bool cm_gsi_accepts(const struct roce_pkt *pkt);

/* The MAD in the RoCE packet @roce (@len bytes, BTH to ICRC) if a GSI takes it, else NULL. */
const uint8_t *cm_gsi_mad(const uint8_t *roce, size_t len);

/* Where the MAD at @mad (@len bytes) goes. Never fails: a bad one is CM_ROUTE_NONE. */
struct cm_route cm_route_of(const uint8_t *mad, size_t len);

/* Local communication ID number @seq of the process tagged @tag (< 2^CM_COMM_TAG_BITS); never 0. */
uint32_t cm_comm_id(uint32_t tag, uint32_t seq);

/* The tag in @comm_id. */
static inline uint32_t cm_comm_tag(uint32_t comm_id)
{
	return comm_id >> (32 - CM_COMM_TAG_BITS);
}

/*
 * The answer a CM gives to the MAD at @mad (@len bytes) when nobody on the host takes it:
 * REQ -> REJ "invalid service ID" (reason 8, Local Comm ID copied from REQ bytes 4-7 as Linux
 * does, Remote = the REQ's, the REQ's TID); SIDR_REQ -> SIDR_REP "unsupported" (status 1);
 * DREQ -> DREP (a connection already gone). Writes @out and returns true, or returns false when
 * nothing is answered (any other message is dropped).
 */
bool cm_answer_unclaimed(const uint8_t *mad, size_t len, uint8_t out[CM_MAD_LEN]);

/*
 * A request refused before any connection state was made for it: for a REQ, a REJ with
 * @reason (as cm_answer_unclaimed's); for a SIDR_REQ, a SIDR_REP with @sidr_status. Writes
 * @out and returns true, or false for any other MAD.
 */
bool cm_refuse_request(const uint8_t *mad, size_t len, uint16_t reason, uint8_t sidr_status,
		       uint8_t out[CM_MAD_LEN]);

/*
 * The DREQ the host sends on behalf of a process that died with the connection @local_id
 * (its comm ID) to @remote_id established, the peer's QP being @remote_qpn, as the kernel
 * disconnects the connections of a killed process (TID: hi_tid 1, the comm ID, §4.9).
 */
void cm_dreq_for_dead(uint32_t local_id, uint32_t remote_id, uint32_t remote_qpn,
		      uint8_t out[CM_MAD_LEN]);

#endif
