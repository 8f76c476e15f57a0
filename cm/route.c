// SPDX-License-Identifier: MIT
/* Routing of CM MADs on a host and the host's answers for nobody's MADs (route.h). */
#include "cm/route.h"

#include <string.h>

/* The MAD header's attribute ID: bytes 16..17 (IBA 13.4.2). */
#define ATTR_ID_OFF 16

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64_at(const uint8_t *p)
{
	return (uint64_t)be32_at(p) << 32 | be32_at(p + 4);
}

bool cm_gsi_accepts(const struct roce_pkt *pkt)
{
	return pkt->bth.opcode == (ROCE_TR_UD | ROCE_OP_SEND_ONLY) &&
	       pkt->deth.qkey == CM_QP1_QKEY && pkt->payload_len >= CM_MAD_LEN;
}

const uint8_t *cm_gsi_mad(const uint8_t *roce, size_t len)
{
	struct roce_pkt pkt;

	if (roce_decode(roce, len, &pkt) != ROCE_OK || !cm_gsi_accepts(&pkt))
		return NULL;
	return pkt.payload;
}

struct cm_route cm_route_of(const uint8_t *mad, size_t len)
{
	struct cm_route r = {.kind = CM_ROUTE_NONE};
	const uint8_t *data = mad + CM_MAD_HDR_LEN;

	if (len < CM_MAD_LEN || mad[0] != 1 || mad[1] != CM_MGMT_CLASS || mad[2] != CM_CLASS_VER ||
	    mad[3] != CM_METHOD_SEND)
		return r;
	r.attr_id = (uint16_t)(mad[ATTR_ID_OFF] << 8 | mad[ATTR_ID_OFF + 1]);
	switch (r.attr_id) {
	case CM_ATTR_REQ:
	case CM_ATTR_SIDR_REQ: /* Service ID, D8 of both (Tables 99, 118) */
		r.kind = CM_ROUTE_SERVICE;
		r.service_id = be64_at(data + 8);
		return r;
	case CM_ATTR_SIDR_REP: /* Request ID, D0 (Table 119): the requester's comm ID */
		r.kind = CM_ROUTE_COMM_ID;
		r.comm_id = be32_at(data);
		return r;
	case CM_ATTR_MRA:
	case CM_ATTR_REJ:
	case CM_ATTR_REP:
	case CM_ATTR_RTU:
	case CM_ATTR_DREQ:
	case CM_ATTR_DREP:
	case CM_ATTR_LAP:
	case CM_ATTR_APR: /* Remote Communication ID, D4 (Tables 103-116) */
		r.kind = CM_ROUTE_COMM_ID;
		r.comm_id = be32_at(data + 4);
		return r;
	default:
		return r;
	}
}

uint32_t cm_comm_id(uint32_t tag, uint32_t seq)
{
	const uint32_t low = (1u << (32 - CM_COMM_TAG_BITS)) - 1;

	seq &= low;
	/* 0 means "none" in a Remote Comm ID (a REJ of a REQ nobody took): skip it. */
	if (!tag && !seq)
		seq = 1;
	return tag << (32 - CM_COMM_TAG_BITS) | seq;
}

/* A REJ of the REQ @in (its MAD @mad) for @reason, or a SIDR_REP of @status, into @m. */
static bool refusal(const uint8_t *mad, const struct cm_msg *in, uint16_t reason, uint8_t status,
		    struct cm_msg *m)
{
	if (in->hdr.attr_id == CM_ATTR_REQ) { /* §4.10 step 2 */
		m->hdr = cm_hdr(CM_ATTR_REJ, in->hdr.tid);
		m->u.rej.local_comm_id = be32_at(mad + CM_MAD_HDR_LEN + 4);
		m->u.rej.remote_comm_id = in->u.req.local_comm_id;
		m->u.rej.message = CM_MSG_REQ;
		m->u.rej.reason = reason;
		return true;
	}
	if (in->hdr.attr_id == CM_ATTR_SIDR_REQ) { /* §4.9 SIDR_REQ */
		m->hdr = cm_hdr(CM_ATTR_SIDR_REP, in->hdr.tid);
		m->u.sidr_rep.request_id = in->u.sidr_req.request_id;
		m->u.sidr_rep.status = status;
		m->u.sidr_rep.service_id = in->u.sidr_req.service_id;
		return true;
	}
	return false;
}

bool cm_refuse_request(const uint8_t *mad, size_t len, uint16_t reason, uint8_t sidr_status,
		       uint8_t out[CM_MAD_LEN])
{
	struct cm_msg in, m;

	memset(&m, 0, sizeof(m));
	return cm_decode(mad, len, &in) == CM_OK && refusal(mad, &in, reason, sidr_status, &m) &&
	       cm_encode(&m, out) == CM_MAD_LEN;
}

bool cm_answer_unclaimed(const uint8_t *mad, size_t len, uint8_t out[CM_MAD_LEN])
{
	struct cm_msg in, m;

	if (cm_decode(mad, len, &in) != CM_OK)
		return false;
	memset(&m, 0, sizeof(m));
	if (in.hdr.attr_id == CM_ATTR_DREQ) { /* §4.9 DREQ: "answered with a DREP directly" */
		m.hdr = cm_hdr(CM_ATTR_DREP, in.hdr.tid);
		m.u.drep.local_comm_id = in.u.dreq.remote_comm_id;
		m.u.drep.remote_comm_id = in.u.dreq.local_comm_id;
	} else if (!refusal(mad, &in, CM_REJ_INVALID_SERVICE_ID, CM_SIDR_UNSUPPORTED, &m)) {
		return false;
	}
	return cm_encode(&m, out) == CM_MAD_LEN;
}

void cm_dreq_for_dead(uint32_t local_id, uint32_t remote_id, uint32_t remote_qpn,
		      uint8_t out[CM_MAD_LEN])
{
	struct cm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_DREQ, (uint64_t)1 << 32 | local_id);
	m.u.dreq.local_comm_id = local_id;
	m.u.dreq.remote_comm_id = remote_id;
	m.u.dreq.remote_qpn = remote_qpn & 0xFFFFFF;
	cm_encode(&m, out);
}
