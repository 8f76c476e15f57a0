// SPDX-License-Identifier: MIT
/*
 * Responder (qp.h): request packets are checked in the order of IBA 9.7.5.2 -- PSN, opcode
 * sequence, operation allowed, length, resources, R_Key -- then executed, completed and
 * acknowledged. Each check is a named step of the machine in roce_resp_recv(); a failed check
 * ends in the NAK (or, for UC and UD, the silent drop) the spec gives it.
 *
 * One state machine in one file, as rxe's resp.c: its steps read in the spec's order, and
 * splitting it would scatter one packet's path over several files.
 */
#include <string.h>

#include "transport/mw.h"
#include "transport/place.h"
#include "transport/qp_int.h"

enum resp_step {
	RESP_CHECK_PSN,
	RESP_CHECK_OP_SEQ,
	RESP_CHECK_OP_VALID,
	RESP_CHECK_LENGTH,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_RKEY,
	RESP_EXECUTE,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DONE,
	/* endings */
	RESP_DUPLICATE,
	RESP_OUT_OF_SEQ,
	RESP_RNR,
	RESP_ERR_INVALID_REQ, /* class C: NAK, QP to Error, QP_REQ_ERR */
	RESP_ERR_ACCESS,      /* class C: NAK, QP to Error, QP_ACCESS_ERR */
	RESP_ERR_LENGTH,      /* the receive WQE is too short: LOC_LEN_ERR and invalid request */
	RESP_ERR_RECV_PROT,   /* its lkey refuses: LOC_PROT_ERR and remote operational error */
	RESP_ERR_INVALIDATE,  /* SEND with invalidate of a key that cannot be: invalid request */
	RESP_DROP,            /* UC/UD: silently discarded */
};

/* What the machine carries from step to step for one packet. */
/* wc.sl of a UD receive: mlx5's L3 header types (complete_recv). */
#define ROCE_WC_SL_IPV6 1
#define ROCE_WC_SL_IPV4 2

struct resp_ctx {
	const struct roce_pkt *pkt;
	const struct roce_ipudp *ip;
	uint16_t flags; /* enum roce_op_flag of the opcode */
	uint8_t *host;  /* WRITE/atomic: where the payload or operand goes */
	uint64_t now;
};

static void queue_ack(struct roce_qp *qp, uint8_t syndrome, uint32_t psn, bool now)
{
	qp->resp.ack_pending = true;
	qp->resp.ack_syndrome = syndrome;
	qp->resp.ack_psn = psn;
	if (now)
		qp->resp.ack_deadline = 0;
}

static void complete_recv(struct roce_qp *qp, const struct resp_ctx *c, enum ibv_wc_status status,
			  uint32_t byte_len)
{
	const struct roce_pkt *pkt = c->pkt;
	struct ibv_wc wc = {
		.wr_id = qp->resp.wqe.wr_id,
		.status = status,
		.opcode = (c->flags & ROCE_OPF_WRITE) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.byte_len = byte_len,
		.qp_num = qp->qpn,
		.src_qp = qp->type == IBV_QPT_UD ? pkt->deth.src_qpn : qp->attr.dest_qp_num,
	};

	if (status == IBV_WC_SUCCESS && (c->flags & ROCE_OPF_IMM)) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = pkt->imm_be;
	}
	if (status == IBV_WC_SUCCESS && (c->flags & ROCE_OPF_INV)) {
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = pkt->ieth_rkey;
	}
	if (qp->type == IBV_QPT_UD) {
		wc.wc_flags |= IBV_WC_GRH;
		/*
		 * The L3 header type of a RoCE v2 frame in sl, as mlx5 reports it (its CQE's
		 * L3_Header_Type: 2 IPv4, 1 IPv6): UCX's UD transport reads it there to find the
		 * destination address in the GRH area (uct_ud_iface_check_grh) and drops an IPv4
		 * frame whose sl says otherwise. IBA gives RoCE no SL; nothing else reads it.
		 */
		wc.sl = c->ip && roce_ipudp_is_v4(c->ip) ? ROCE_WC_SL_IPV4 : ROCE_WC_SL_IPV6;
	}
	qp->resp.have_wqe = false;
	qp->env->complete(qp->ctx, true, &wc, pkt->bth.se);
}

/* The resource slot of counter @i (res_cap is a power of two: the counters may wrap). */
static struct roce_resp_res *res_at(struct roce_qp *qp, uint32_t i)
{
	return &qp->resp.res[i & (qp->resp.res_cap - 1)];
}

/* Find the accepted READ/atomic a duplicate request repeats, or NULL (IBA 9.7.5.2.8). */
static uint32_t find_res(struct roce_qp *qp, uint32_t psn, bool *found)
{
	uint32_t n = qp->resp.res_slots;

	*found = false;
	for (uint32_t i = qp->resp.res_head; n && i != qp->resp.res_head - n; i--) {
		struct roce_resp_res *r = res_at(qp, i - 1);

		if (!r->type)
			break;
		if (roce_psn_cmp(psn, r->first_psn) >= 0 && roce_psn_cmp(psn, r->last_psn) <= 0) {
			*found = true;
			return i - 1;
		}
	}
	return 0;
}

/*
 * A request with a PSN already seen: SEND and WRITE are ACKed again, never re-executed; a READ
 * is answered again from the repeated PSN; an atomic gets its saved result (C9-103, 9.7.5.2.8).
 */
static void duplicate(struct roce_qp *qp, const struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;
	bool found;
	uint32_t i;

	qp->counters.rx_duplicate++;
	if (!(c->flags & (ROCE_OPF_READ | ROCE_OPF_ATOMIC))) {
		queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_ACK, ROCE_AETH_CREDIT_INVALID),
			  roce_psn_add(qp->resp.psn, ROCE_PSN_MASK), true);
		return;
	}
	i = find_res(qp, pkt->bth.psn, &found);
	if (!found)
		return; /* too old to answer: the requester's retry will time out */
	for (uint32_t k = i; k != qp->resp.res_head; k++) {
		struct roce_resp_res *r = res_at(qp, k);

		r->psn = r->first_psn;
		r->sent = 0;
		r->begun = false;
	}
	if (c->flags & ROCE_OPF_READ) {
		struct roce_resp_res *r = res_at(qp, i);
		uint32_t skip = ((pkt->bth.psn - r->first_psn) & ROCE_PSN_MASK) * qp->mtu;

		r->psn = pkt->bth.psn;
		r->sent = skip < r->len ? skip : r->len;
	}
	/*
	 * Answer again from @i -- unless an older request is still waiting for its answer (several
	 * duplicates handled before any answer left): moving res_tail forward would drop that one.
	 */
	if (qp->resp.res_head - i > qp->resp.res_head - qp->resp.res_tail)
		qp->resp.res_tail = i;
}

static enum resp_step check_psn(struct roce_qp *qp, struct resp_ctx *c)
{
	int32_t d = roce_psn_cmp(c->pkt->bth.psn, qp->resp.psn);

	if (qp->type == IBV_QPT_UD)
		return RESP_CHECK_OP_SEQ;
	if (qp->type == IBV_QPT_UC) {
		/*
		 * A PSN behind the expected one is a copy of a packet already taken: UC has no
		 * re-ACK to give, so it is dropped, never delivered twice.
		 */
		if (d < 0) {
			qp->counters.rx_duplicate++;
			return RESP_DROP;
		}
		/* IBA 9.8.3: a gap loses the message in progress; FIRST or ONLY starts anew. */
		if (d != 0 || qp->resp.state == ROCE_RESP_UC_DISCARD) {
			if (!(c->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY))) {
				qp->counters.rx_out_of_seq++;
				qp->resp.state = ROCE_RESP_UC_DISCARD;
				qp->resp.psn = roce_psn_add(c->pkt->bth.psn, 1);
				return RESP_DROP;
			}
			qp->resp.state = ROCE_RESP_IDLE;
			qp->resp.psn = c->pkt->bth.psn;
		}
		return RESP_CHECK_OP_SEQ;
	}
	if (d > 0)
		return RESP_OUT_OF_SEQ;
	if (d < 0)
		return RESP_DUPLICATE;
	qp->resp.seq_nak_sent = false;
	return RESP_CHECK_OP_SEQ;
}

/* C9-28..C9-31: MIDDLE and LAST continue the message in progress, nothing else may. */
static enum resp_step check_op_seq(struct roce_qp *qp, struct resp_ctx *c)
{
	bool cont = c->flags & (ROCE_OPF_MIDDLE | ROCE_OPF_LAST);
	bool ok;

	switch (qp->resp.state) {
	case ROCE_RESP_IN_SEND:
		ok = cont && (c->flags & ROCE_OPF_SEND);
		break;
	case ROCE_RESP_IN_WRITE:
		ok = cont && (c->flags & ROCE_OPF_WRITE);
		break;
	default:
		ok = !cont;
		break;
	}
	if (ok)
		return RESP_CHECK_OP_VALID;
	if (qp->type == IBV_QPT_UC) {
		/* UC: a message cut short by a lost LAST; a FIRST/ONLY starts the next one. */
		if (!cont) {
			qp->resp.state = ROCE_RESP_IDLE;
			return RESP_CHECK_OP_VALID;
		}
		qp->resp.state = ROCE_RESP_UC_DISCARD;
		return RESP_DROP;
	}
	return qp->type == IBV_QPT_UD ? RESP_DROP : RESP_ERR_INVALID_REQ;
}

/* The QP must allow the operation (qp_access_flags, IBA 9.7.5.2.3) and support it. */
static enum resp_step check_op_valid(struct roce_qp *qp, struct resp_ctx *c)
{
	int need = 0;

	/*
	 * XRC (IBA A14): the XRCETH picks the target's SRQ, whose PD guards memory and whose
	 * queue and CQ receive; one outside the QP's XRC domain is refused like a foreign key.
	 */
	if (qp->type == IBV_QPT_XRC_RECV && !qp->env->xrc_srq(qp->ctx, c->pkt->xrc_srqn))
		return RESP_ERR_ACCESS;
	if (c->flags & ROCE_OPF_WRITE)
		need = IBV_ACCESS_REMOTE_WRITE;
	else if (c->flags & ROCE_OPF_READ)
		need = IBV_ACCESS_REMOTE_READ;
	else if (c->flags & ROCE_OPF_ATOMIC)
		need = IBV_ACCESS_REMOTE_ATOMIC;
	if (need && !(qp->attr.qp_access_flags & need))
		return roce_qp_reliable(qp) ? RESP_ERR_INVALID_REQ : RESP_DROP;
	if (qp->type == IBV_QPT_UD && c->pkt->deth.qkey != qp->attr.qkey) {
		qp->counters.rx_qkey++; /* IBA 10.2.5: Q_Key mismatch drops */
		return RESP_DROP;
	}
	return RESP_CHECK_LENGTH;
}

static enum resp_step check_length(struct roce_qp *qp, struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;

	if (qp->type == IBV_QPT_UD)
		return pkt->payload_len <= qp->mtu ? RESP_CHECK_RESOURCE : RESP_DROP;
	if (!roce_payload_fits_pmtu(pkt, qp->mtu))
		return roce_qp_reliable(qp) ? RESP_ERR_INVALID_REQ : RESP_DROP;
	if ((c->flags & ROCE_OPF_ATOMIC) && (pkt->atomic.va & 7))
		return RESP_ERR_INVALID_REQ; /* IBA 9.4.5: atomics are 8-byte aligned */
	if ((c->flags & ROCE_OPF_WRITE) && (c->flags & (ROCE_OPF_MIDDLE | ROCE_OPF_LAST))) {
		bool last = c->flags & ROCE_OPF_LAST;

		/* The message must carry exactly the length its RETH announced (IBA 9.7.5.2). */
		if (pkt->payload_len > qp->resp.write_left ||
		    (last && pkt->payload_len != qp->resp.write_left))
			return roce_qp_reliable(qp) ? RESP_ERR_INVALID_REQ : RESP_DROP;
	}
	if ((c->flags & ROCE_OPF_WRITE) && (c->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY))) {
		bool only = c->flags & ROCE_OPF_ONLY;

		if ((only && pkt->payload_len != pkt->reth.len) ||
		    (!only && pkt->reth.len <= pkt->payload_len))
			return roce_qp_reliable(qp) ? RESP_ERR_INVALID_REQ : RESP_DROP;
	}
	return RESP_CHECK_RESOURCE;
}

static enum resp_step check_resource(struct roce_qp *qp, struct resp_ctx *c)
{
	bool needs_wqe =
		(c->flags & ROCE_OPF_SEND) ||
		((c->flags & ROCE_OPF_IMM) && (c->flags & (ROCE_OPF_LAST | ROCE_OPF_ONLY)));

	if (c->flags & (ROCE_OPF_READ | ROCE_OPF_ATOMIC)) {
		/*
		 * More never answered than max_dest_rd_atomic (IBA 9.7.5.2): invalid request.
		 * Replays of answered ones do not count: a requester that sent a new request
		 * past its depth has their answers (accept() drops such replays).
		 */
		if (qp->resp.res_head - qp->resp.res_fresh >= qp->resp.res_slots)
			return RESP_ERR_INVALID_REQ;
		return RESP_CHECK_RKEY;
	}
	if (needs_wqe && !qp->resp.have_wqe) {
		if (!qp->env->recv_take(qp->ctx, &qp->resp.wqe)) {
			if (roce_qp_reliable(qp))
				return RESP_RNR;
			qp->counters.rx_no_recv++;
			if (qp->type == IBV_QPT_UC)
				qp->resp.state = ROCE_RESP_UC_DISCARD;
			return RESP_DROP;
		}
		qp->resp.have_wqe = true;
	}
	/* A message starts at the start of its WQE, also one a lost UC message began (9.8.3). */
	if (c->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY))
		qp->resp.recv_off = 0;
	return RESP_CHECK_RKEY;
}

static enum resp_step check_rkey(struct roce_qp *qp, struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;
	enum roce_mem_err err = ROCE_MEM_OK;
	uint64_t va;
	uint32_t len, key;
	int access;

	if (c->flags & ROCE_OPF_ATOMIC) {
		va = pkt->atomic.va, len = 8, key = pkt->atomic.rkey;
		access = IBV_ACCESS_REMOTE_ATOMIC;
	} else if (c->flags & ROCE_OPF_READ) {
		va = pkt->reth.va, len = pkt->reth.len, key = pkt->reth.rkey;
		access = IBV_ACCESS_REMOTE_READ;
	} else if ((c->flags & ROCE_OPF_WRITE) && (c->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY))) {
		va = pkt->reth.va, len = pkt->reth.len, key = pkt->reth.rkey;
		access = IBV_ACCESS_REMOTE_WRITE;
	} else if (c->flags & ROCE_OPF_WRITE) {
		va = qp->resp.write_va, len = pkt->payload_len, key = qp->resp.write_rkey;
		access = IBV_ACCESS_REMOTE_WRITE;
	} else {
		return RESP_EXECUTE;
	}
	/* IBA 9.7.5.2: a zero-length RDMA request checks no R_Key. */
	if (!len) {
		c->host = NULL;
		return RESP_EXECUTE;
	}
	c->host = qp->env->mem(qp->ctx, key, true, va, len, access, &err);
	if (!c->host)
		return roce_qp_reliable(qp) ? RESP_ERR_ACCESS : RESP_DROP;
	return RESP_EXECUTE;
}

/* The GRH area of a UD receive: the IPv6 header, or the IPv4 header in its last 20 bytes. */
static void make_grh(uint8_t grh[ROCE_GRH_LEN], const struct roce_ipudp *ip, size_t udp_len)
{
	uint8_t hdr[ROCE_IPV6_HDR_LEN + ROCE_UDP_HDR_LEN];

	memset(grh, 0, ROCE_GRH_LEN);
	if (!roce_ipudp_write(hdr, ip, NULL, udp_len, ROCE_UDP_CSUM_ZERO))
		return;
	if (roce_ipudp_is_v4(ip))
		memcpy(grh + ROCE_GRH_LEN - ROCE_IPV4_HDR_LEN, hdr, ROCE_IPV4_HDR_LEN);
	else
		memcpy(grh, hdr, ROCE_IPV6_HDR_LEN);
}

static uint64_t atomic_execute(const struct roce_pkt *pkt, uint8_t *host)
{
	uint64_t orig, val;

	/* The word is in the responder's host order; the application may race with it. */
	if (((uintptr_t)host & 7) == 0) {
		uint64_t *p = (uint64_t *)host;

		if (pkt->bth.opcode % 32 == ROCE_OP_CMP_SWAP) {
			orig = pkt->atomic.compare;
			__atomic_compare_exchange_n(p, &orig, pkt->atomic.swap_add, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			return orig;
		}
		return __atomic_fetch_add(p, pkt->atomic.swap_add, __ATOMIC_SEQ_CST);
	}
	memcpy(&orig, host, 8);
	if (pkt->bth.opcode % 32 == ROCE_OP_CMP_SWAP)
		val = orig == pkt->atomic.compare ? pkt->atomic.swap_add : orig;
	else
		val = orig + pkt->atomic.swap_add;
	memcpy(host, &val, 8);
	return orig;
}

/* Write @len bytes at byte @off of the receive WQE; the ending if its scatter list refuses. */
static enum resp_step place(struct roce_qp *qp, uint32_t off, const uint8_t *data, uint32_t len)
{
	switch (roce_sgl_copy(qp, qp->resp.wqe.sge, qp->resp.wqe.num_sge, off, (uint8_t *)data, len,
			      true)) {
	case ROCE_MEM_OK:
		return RESP_COMPLETE;
	case ROCE_MEM_SHORT:
		return RESP_ERR_LENGTH;
	default:
		/*
		 * A key of the WQE refuses its entry (no such region, another PD's, or a range
		 * the region does not hold, as after ibv_rereg_mr moved it): a malformed receive
		 * WQE, as rxe's copy_data failing other than by running out of entries.
		 */
		return RESP_ERR_RECV_PROT;
	}
}

static enum resp_step execute(struct roce_qp *qp, struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;
	enum resp_step step;

	if (c->flags & ROCE_OPF_SEND) {
		uint32_t off = qp->resp.recv_off;
		uint32_t len = pkt->payload_len;

		if (qp->type == IBV_QPT_UD) {
			uint8_t grh[ROCE_GRH_LEN];

			if (qp->resp.wqe.length < ROCE_GRH_LEN + len)
				return RESP_ERR_LENGTH;
			/* The UDP payload: headers, payload, pad and ICRC. */
			make_grh(grh, c->ip,
				 (size_t)pkt->info->hdr_len + len + roce_pad_len(len) +
					 ROCE_ICRC_LEN);
			step = place(qp, 0, grh, ROCE_GRH_LEN);
			if (step != RESP_COMPLETE)
				return step;
			off = ROCE_GRH_LEN;
		}
		if (len > qp->resp.wqe.length - off)
			return RESP_ERR_LENGTH;
		if (len && (step = place(qp, off, pkt->payload, len)) != RESP_COMPLETE)
			return step;
		qp->resp.recv_off = off + len;
		/*
		 * The last packet of a SEND with invalidate: the key is invalidated once its data
		 * is in place, before the receive completes (rxe's execute). A repeat of the
		 * packet is a duplicate, ACKed and never executed again. Only a window can be
		 * invalidated (requester.c, run_local).
		 */
		if ((c->flags & ROCE_OPF_INV) && (!roce_key_is_mw(pkt->ieth_rkey) ||
						  !qp->env->invalidate_mw(qp->ctx, pkt->ieth_rkey)))
			return RESP_ERR_INVALIDATE;
	} else if (c->flags & ROCE_OPF_WRITE) {
		if (c->flags & (ROCE_OPF_FIRST | ROCE_OPF_ONLY)) {
			qp->resp.write_va = pkt->reth.va;
			qp->resp.write_rkey = pkt->reth.rkey;
			qp->resp.write_left = pkt->reth.len;
			qp->resp.write_len = pkt->reth.len;
		}
		/* A payload received straight into place (roce_qp_steer) is there already. */
		if (pkt->payload_len && pkt->payload != c->host)
			roce_place(c->host, pkt->payload, pkt->payload_len);
		qp->resp.write_va += pkt->payload_len;
		qp->resp.write_left -= pkt->payload_len;
	} else {
		struct roce_resp_res *r = res_at(qp, qp->resp.res_head);

		/* The slot may hold a replay not yet sent (check_resource): it is not needed. */
		if (qp->resp.res_head - qp->resp.res_tail >= qp->resp.res_slots)
			qp->resp.res_tail = qp->resp.res_head - qp->resp.res_slots + 1;
		memset(r, 0, sizeof(*r));
		r->type = pkt->bth.opcode & 0x1F;
		r->srqn = pkt->xrc_srqn;
		r->first_psn = pkt->bth.psn;
		r->psn = pkt->bth.psn;
		if (c->flags & ROCE_OPF_READ) {
			r->va = pkt->reth.va;
			r->rkey = pkt->reth.rkey;
			r->len = pkt->reth.len;
			r->last_psn = roce_psn_add(pkt->bth.psn, roce_npkts(r->len, qp->mtu) - 1);
		} else {
			r->last_psn = pkt->bth.psn;
			r->orig = atomic_execute(pkt, c->host);
		}
		qp->resp.res_head++;
	}
	return RESP_COMPLETE;
}

static enum resp_step complete(struct roce_qp *qp, struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;
	bool ends = c->flags & (ROCE_OPF_LAST | ROCE_OPF_ONLY);

	if (c->flags & (ROCE_OPF_READ | ROCE_OPF_ATOMIC)) {
		struct roce_resp_res *r = res_at(qp, qp->resp.res_head - 1);

		qp->resp.psn = roce_psn_add(r->last_psn, 1);
		qp->resp.msn = (qp->resp.msn + 1) & ROCE_PSN_MASK;
		/* The responses acknowledge everything before: drop an older pending ACK. */
		if (qp->resp.ack_pending && roce_aeth_class(qp->resp.ack_syndrome) == ROCE_AETH_ACK)
			qp->resp.ack_pending = false;
		return RESP_DONE;
	}
	qp->resp.psn = roce_psn_add(pkt->bth.psn, 1);
	if (!ends) {
		qp->resp.state =
			(c->flags & ROCE_OPF_SEND) ? ROCE_RESP_IN_SEND : ROCE_RESP_IN_WRITE;
		return RESP_ACKNOWLEDGE;
	}
	qp->resp.state = ROCE_RESP_IDLE;
	qp->resp.msn = (qp->resp.msn + 1) & ROCE_PSN_MASK;
	if (c->flags & ROCE_OPF_SEND)
		complete_recv(qp, c, IBV_WC_SUCCESS, qp->resp.recv_off);
	else if (c->flags & ROCE_OPF_IMM)
		complete_recv(qp, c, IBV_WC_SUCCESS, qp->resp.write_len);
	return RESP_ACKNOWLEDGE;
}

static void acknowledge(struct roce_qp *qp, const struct resp_ctx *c)
{
	const struct roce_pkt *pkt = c->pkt;

	if (!roce_qp_reliable(qp))
		return;
	/* Coalesce: one pending ACK names the newest PSN; AckReq sends it now (IBA 9.7.5.2.9). */
	queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_ACK, ROCE_AETH_CREDIT_INVALID), pkt->bth.psn,
		  pkt->bth.ack_req);
	if (!pkt->bth.ack_req && !qp->resp.ack_deadline)
		qp->resp.ack_deadline = c->now + ROCE_ACK_DELAY_NS;
}

/* Class C errors (IBA 9.9.3.1.3): NAK the packet, raise the event, fail the QP. */
static void fatal_nak(struct roce_qp *qp, const struct resp_ctx *c, enum roce_nak_code code,
		      enum ibv_event_type event)
{
	queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_NAK, code), c->pkt->bth.psn, true);
	qp->resp.state = ROCE_RESP_ERROR;
	qp->env->event(qp->ctx, event);
	roce_qp_fatal(qp);
}

bool roce_resp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		     struct roce_steer *plan)
{
	uint8_t opcode = (uint8_t)(roce_qp_tr(qp) | ROCE_OP_WRITE_MIDDLE);
	enum roce_mem_err err = ROCE_MEM_OK;
	uint32_t count;

	/* The MIDDLE packets the responder expects next, into the WRITE's target. */
	if (qp->resp.state != ROCE_RESP_IN_WRITE || bth[0] != opcode ||
	    roce_get24(bth + 9) != qp->resp.psn)
		return false;
	count = roce_steer_begin(qp, opcode, qp->resp.psn, seg, total, qp->resp.write_left, plan);
	if (!count)
		return false;
	/* The check check_rkey makes of each of these packets, for all of them at once. */
	plan->at = qp->env->mem(qp->ctx, qp->resp.write_rkey, true, qp->resp.write_va,
				(uint64_t)count * qp->mtu, IBV_ACCESS_REMOTE_WRITE, &err);
	return plan->at;
}

void roce_resp_recv(struct roce_qp *qp, const struct roce_pkt *pkt, const struct roce_ipudp *ip,
		    uint64_t now)
{
	struct resp_ctx c = {
		.pkt = pkt,
		.ip = ip,
		.flags = pkt->info->flags,
		.now = now,
	};
	enum resp_step step = RESP_CHECK_PSN;

	if (qp->resp.state == ROCE_RESP_ERROR)
		return;
	for (;;) {
		switch (step) {
		case RESP_CHECK_PSN:
			step = check_psn(qp, &c);
			break;
		case RESP_CHECK_OP_SEQ:
			step = check_op_seq(qp, &c);
			break;
		case RESP_CHECK_OP_VALID:
			step = check_op_valid(qp, &c);
			break;
		case RESP_CHECK_LENGTH:
			step = check_length(qp, &c);
			break;
		case RESP_CHECK_RESOURCE:
			step = check_resource(qp, &c);
			break;
		case RESP_CHECK_RKEY:
			step = check_rkey(qp, &c);
			break;
		case RESP_EXECUTE:
			step = execute(qp, &c);
			break;
		case RESP_COMPLETE:
			step = complete(qp, &c);
			break;
		case RESP_ACKNOWLEDGE:
			acknowledge(qp, &c);
			return;
		case RESP_DONE:
			return;
		case RESP_DUPLICATE:
			duplicate(qp, &c);
			return;
		case RESP_OUT_OF_SEQ:
			/* IBA 9.7.5.2.2: one sequence NAK per gap, naming the expected PSN. */
			qp->counters.rx_out_of_seq++;
			if (!qp->resp.seq_nak_sent) {
				qp->resp.seq_nak_sent = true;
				qp->counters.seq_naks_sent++;
				queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_PSN_SEQ),
					  qp->resp.psn, true);
			}
			return;
		case RESP_RNR:
			/* IBA 9.7.5.2.8: no receive WQE; the requester retries this PSN. */
			qp->counters.rnr_naks_sent++;
			queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_RNR_NAK, qp->attr.min_rnr_timer),
				  pkt->bth.psn, true);
			return;
		case RESP_ERR_LENGTH:
			complete_recv(qp, &c, IBV_WC_LOC_LEN_ERR, 0);
			if (roce_qp_reliable(qp))
				fatal_nak(qp, &c, ROCE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
			else
				roce_qp_fatal(qp);
			return;
		case RESP_ERR_RECV_PROT:
			/*
			 * PROTOCOL.md 3.6: a malformed receive WQE NAKs with a remote operational
			 * error; the responder's own completion names the cause, as hardware does.
			 * A completion error raises no affiliated event (IBA 11.6.3).
			 */
			complete_recv(qp, &c, IBV_WC_LOC_PROT_ERR, 0);
			if (roce_qp_reliable(qp)) {
				queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_REMOTE_OP),
					  pkt->bth.psn, true);
				qp->resp.state = ROCE_RESP_ERROR;
			}
			roce_qp_fatal(qp);
			return;
		case RESP_ERR_INVALIDATE:
			/*
			 * Class J (rxe's RESPST_ERR_INVALIDATE_RKEY): the receive completes with a
			 * remote invalid request error and the QP fails; its completion reports it,
			 * so no affiliated event (IBA 11.6.3). The requester is told by an invalid
			 * request NAK (rxe acknowledges the SEND and lets the requester's next
			 * request go unanswered: the NAK fails it at once with the status IBA
			 * gives).
			 */
			complete_recv(qp, &c, IBV_WC_REM_INV_REQ_ERR, 0);
			queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_INVALID_REQ),
				  pkt->bth.psn, true);
			qp->resp.state = ROCE_RESP_ERROR;
			roce_qp_fatal(qp);
			return;
		case RESP_ERR_INVALID_REQ:
			fatal_nak(qp, &c, ROCE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
			return;
		case RESP_ERR_ACCESS:
			fatal_nak(qp, &c, ROCE_NAK_REMOTE_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
			return;
		case RESP_DROP:
			return;
		}
	}
}

bool roce_resp_has_output(const struct roce_qp *qp)
{
	return (qp->resp.ack_pending && !qp->resp.ack_deadline) ||
	       qp->resp.res_tail != qp->resp.res_head;
}

/* The oldest unanswered request has had its whole answer. */
static void answered(struct roce_qp *qp)
{
	qp->resp.res_tail++;
	if ((int32_t)(qp->resp.res_tail - qp->resp.res_fresh) > 0)
		qp->resp.res_fresh = qp->resp.res_tail;
}

/* The next READ response or atomic ACK of the oldest unanswered request. */
static size_t answer(struct roce_qp *qp, uint8_t *buf)
{
	struct roce_resp_res *r = res_at(qp, qp->resp.res_tail);
	struct roce_pkt pkt = {0};
	const struct roce_opcode_info *info;

	pkt.bth.pkey = ROCE_DEFAULT_PKEY;
	pkt.bth.dqpn = qp->attr.dest_qp_num;
	pkt.bth.psn = r->psn;
	pkt.aeth.syndrome = roce_aeth_syndrome(ROCE_AETH_ACK, ROCE_AETH_CREDIT_INVALID);
	pkt.aeth.msn = qp->resp.msn;
	if (r->type != ROCE_OP_READ_REQUEST) {
		pkt.bth.opcode = roce_qp_tr(qp) | ROCE_OP_ATOMIC_ACK;
		pkt.atomic_orig = r->orig;
		answered(qp);
		return roce_pkt_finish(buf, &pkt, roce_opcode(pkt.bth.opcode)->hdr_len);
	}
	uint32_t left = r->len - r->sent;
	uint32_t n = left > qp->mtu ? qp->mtu : left;
	bool first = !r->begun; /* a restarted READ is a new response stream (9.7.5.2.8) */
	bool last = n == left;

	pkt.bth.opcode = roce_qp_tr(qp) | (first && last ? ROCE_OP_READ_RESP_ONLY
					   : first       ? ROCE_OP_READ_RESP_FIRST
					   : last        ? ROCE_OP_READ_RESP_LAST
							 : ROCE_OP_READ_RESP_MIDDLE);
	info = roce_opcode(pkt.bth.opcode);
	if (n) {
		enum roce_mem_err err = ROCE_MEM_KEY;
		uint8_t *src = NULL;

		if (qp->type != IBV_QPT_XRC_RECV || qp->env->xrc_srq(qp->ctx, r->srqn))
			src = qp->env->mem(qp->ctx, r->rkey, true, r->va + r->sent, n,
					   IBV_ACCESS_REMOTE_READ, &err);
		if (!src) {
			/* The region went away after the request was accepted. */
			qp->resp.res_tail = qp->resp.res_head;
			qp->resp.res_fresh = qp->resp.res_head;
			queue_ack(qp, roce_aeth_syndrome(ROCE_AETH_NAK, ROCE_NAK_REMOTE_ACCESS),
				  r->psn, true);
			qp->resp.state = ROCE_RESP_ERROR;
			qp->env->event(qp->ctx, IBV_EVENT_QP_ACCESS_ERR);
			roce_qp_fatal(qp);
			return 0;
		}
		memcpy(buf + info->hdr_len, src, n);
	}
	pkt.payload_len = n;
	r->begun = true;
	r->sent += n;
	r->psn = roce_psn_add(r->psn, 1);
	if (last)
		answered(qp);
	return roce_pkt_finish(buf, &pkt, info->hdr_len);
}

size_t roce_resp_write(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest)
{
	struct roce_pkt pkt = {0};

	dest->ah = &qp->attr.ah_attr;
	if (qp->resp.res_tail != qp->resp.res_head && qp->state != IBV_QPS_ERR) {
		size_t len = answer(qp, buf);

		if (len)
			return len;
	}
	if (!qp->resp.ack_pending || qp->resp.ack_deadline)
		return 0;
	qp->resp.ack_pending = false;
	pkt.bth.opcode = roce_qp_tr(qp) | ROCE_OP_ACK;
	pkt.bth.pkey = ROCE_DEFAULT_PKEY;
	pkt.bth.dqpn = qp->attr.dest_qp_num;
	pkt.bth.psn = qp->resp.ack_psn;
	pkt.aeth.syndrome = qp->resp.ack_syndrome;
	pkt.aeth.msn = qp->resp.msn;
	return roce_pkt_finish(buf, &pkt, roce_opcode(pkt.bth.opcode)->hdr_len);
}
