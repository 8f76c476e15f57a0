// SPDX-License-Identifier: MIT
/* MADs on QP 1 (mad.h): framed as UD SEND Only to and from QP 1, handed to one handler. */
#include "verbs-shim/mad.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "cm/wire.h"
#include "verbs-shim/engine.h"

static _Atomic(uroce_mad_handler) handler;
static void *_Atomic handler_arg;
static atomic_uint next_psn; /* the GSI's send PSN: from 0, one per MAD (§4.1) */

int uroce_mad_set_handler(uroce_mad_handler fn, void *arg)
{
	int err = uroce_engine_start();

	if (err)
		return err;
	atomic_store(&handler_arg, arg);
	atomic_store(&handler, fn);
	return 0;
}

int uroce_mad_send(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos, uint8_t ttl,
		   const uint8_t mad[256])
{
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY,
			.pkey = 0xFFFF,
			.dqpn = ROCE_GSI_QPN,
			.psn = atomic_fetch_add(&next_psn, 1) & ROCE_PSN_MASK},
		.deth = {.qkey = CM_QP1_QKEY, .src_qpn = ROCE_GSI_QPN},
		.payload = mad,
		.payload_len = CM_MAD_LEN,
	};
	struct roce_ipudp f = {.tos = tos, .ttl = ttl};
	uint8_t buf[ROCE_BTH_LEN + ROCE_DETH_LEN + CM_MAD_LEN + ROCE_ICRC_LEN];
	size_t len = roce_encode(buf, sizeof(buf), &pkt);

	memcpy(f.sgid, sgid, 16);
	memcpy(f.dgid, dgid, 16);
	return uroce_engine_send(&f, buf, len);
}

bool uroce_mad_received(const struct roce_pkt *pkt, const struct roce_ipudp *ip)
{
	uroce_mad_handler fn = atomic_load(&handler);
	struct uroce_mad_rx rx = {.tos = ip->tos, .ttl = ip->ttl, .mad = pkt->payload};

	/* What a Linux GSI accepts (§4.1, §1.10): UD SEND Only, QP 1's Q_Key, one whole MAD. */
	if (!fn || pkt->bth.opcode != (ROCE_TR_UD | ROCE_OP_SEND_ONLY) ||
	    pkt->deth.qkey != CM_QP1_QKEY || pkt->payload_len < CM_MAD_LEN)
		return false;
	memcpy(rx.sgid, ip->sgid, 16);
	memcpy(rx.dgid, ip->dgid, 16);
	fn(atomic_load(&handler_arg), &rx);
	return true;
}
