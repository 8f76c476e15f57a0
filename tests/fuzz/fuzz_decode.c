/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for roce_decode(). Any input must either be refused with
 * a named error, or decode to a packet whose parts add up to the input,
 * which roce_encode() turns back into exactly as many bytes, which decode
 * to the same fields. Any other outcome aborts.
 *
 * Inputs are the RoCEv2 part of a UDP payload (BTH through ICRC); seeds are
 * made from tests/vectors by make_seeds.c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *why, const struct roce_pkt *pkt)
{
	fprintf(stderr, "fuzz_decode: %s (opcode %#x, %s)\n", why, pkt->bth.opcode,
		pkt->info && pkt->info->name ? pkt->info->name : "?");
	abort();
}

static bool same_bth(const struct roce_bth *a, const struct roce_bth *b)
{
	return a->opcode == b->opcode && a->se == b->se && a->mig == b->mig && a->pad == b->pad &&
	       a->tver == b->tver && a->pkey == b->pkey && a->fecn == b->fecn &&
	       a->becn == b->becn && a->resv6 == b->resv6 && a->dqpn == b->dqpn &&
	       a->ack_req == b->ack_req && a->resv7 == b->resv7 && a->psn == b->psn;
}

/* Every decoded field but the ICRC and where the payload lies. */
static bool same_fields(const struct roce_pkt *a, const struct roce_pkt *b)
{
	return same_bth(&a->bth, &b->bth) && a->info == b->info && a->hdrs == b->hdrs &&
	       a->xrc_srqn == b->xrc_srqn && a->rd_eecn == b->rd_eecn &&
	       a->deth.qkey == b->deth.qkey && a->deth.src_qpn == b->deth.src_qpn &&
	       a->reth.va == b->reth.va && a->reth.rkey == b->reth.rkey &&
	       a->reth.len == b->reth.len && a->atomic.va == b->atomic.va &&
	       a->atomic.rkey == b->atomic.rkey && a->atomic.swap_add == b->atomic.swap_add &&
	       a->atomic.compare == b->atomic.compare && a->aeth.syndrome == b->aeth.syndrome &&
	       a->aeth.msn == b->aeth.msn && a->atomic_orig == b->atomic_orig &&
	       a->imm_be == b->imm_be && a->ieth_rkey == b->ieth_rkey && a->feth == b->feth &&
	       a->payload_len == b->payload_len && !memcmp(a->payload, b->payload, a->payload_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pkt pkt;
	enum roce_decode_err err = roce_decode(data, size, &pkt);
	if (err != ROCE_OK) {
		if ((unsigned)err >= ROCE_ERR__COUNT ||
		    !strcmp(roce_decode_strerror(err), "unknown"))
			abort();
		return 0;
	}

	/* The parts add up to the input. */
	const struct roce_opcode_info *info = roce_opcode(pkt.bth.opcode);
	if (pkt.info != info || !info->name || pkt.payload != data + info->hdr_len)
		fail("opcode info or payload position", &pkt);
	if ((size_t)info->hdr_len + pkt.payload_len + pkt.bth.pad + ROCE_ICRC_LEN != size ||
	    size % 4 || pkt.payload_len > ROCE_MAX_PMTU)
		fail("lengths", &pkt);
	if (pkt.bth.tver || !pkt.bth.dqpn || (pkt.bth.pkey & 0x7FFF) != 0x7FFF)
		fail("accepted a bad BTH", &pkt);
	roce_payload_fits_pmtu(&pkt, ROCE_MAX_PMTU);

	/* Encode into a buffer of exactly the input's size (ASan sees any overrun). */
	uint8_t *out = malloc(size);
	if (!out)
		abort();
	if (roce_encode(out, size - 1, &pkt) != 0)
		fail("encoded into too small a buffer", &pkt);
	if (roce_encode(out, size, &pkt) != size)
		fail("encoded length", &pkt);
	if (memcmp(out, data, info->hdr_len) &&
	    !(info->hdrs &
	      (ROCE_HDR_XRCETH | ROCE_HDR_RDETH | ROCE_HDR_DETH | ROCE_HDR_FETH | ROCE_HDR_CNP)))
		fail("headers without reserved bits differ", &pkt);

	struct roce_pkt again;
	if (roce_decode(out, size, &again) != ROCE_OK)
		fail("re-decode refused", &pkt);
	if (!same_fields(&pkt, &again) || again.icrc != 0)
		fail("round trip changed a field", &pkt);
	free(out);
	return 0;
}
