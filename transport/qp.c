// SPDX-License-Identifier: MIT
/* The queue-pair core (qp.h): state changes, timers, and the order packets leave in. */
#include "transport/qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/qp_int.h"

void roce_qp_init(struct roce_qp *qp, enum ibv_qp_type type, uint32_t qpn, bool sq_sig_all,
		  struct roce_wq *sq, const struct roce_qp_env *env, void *ctx)
{
	memset(qp, 0, sizeof(*qp));
	qp->resp.res = &qp->resp.res_one;
	qp->resp.res_cap = 1;
	qp->env = env;
	qp->ctx = ctx;
	qp->type = type;
	qp->qpn = qpn;
	qp->sq_sig_all = sq_sig_all;
	qp->sq = sq;
	qp->state = IBV_QPS_RESET;
	qp->mtu = 256;
	qp->window = ROCE_WINDOW_MAX;
}

void roce_qp_fini(struct roce_qp *qp)
{
	if (qp->resp.res != &qp->resp.res_one)
		free(qp->resp.res);
	qp->resp.res = NULL;
}

uint64_t roce_ack_timeout_ns(uint8_t timeout)
{
	/* 4.096 us * 2^timeout; 0 disables the timer. Values above 31 are cut to 31. */
	if (!timeout)
		return 0;
	return 4096ull << (timeout > 31 ? 31 : timeout);
}

uint64_t roce_rnr_timer_ns(uint8_t code)
{
	/* IBA table 45 (9.7.5.2.8), in units of 10 ns. */
	static const uint32_t tens_ns[32] = {
		65536000, 1000,    2000,    3000,     4000,     6000,     8000,     12000,
		16000,    24000,   32000,   48000,    64000,    96000,    128000,   192000,
		256000,   384000,  512000,  768000,   1024000,  1536000,  2048000,  3072000,
		4096000,  6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
	};
	return (uint64_t)tens_ns[code & 31] * 10;
}

static uint32_t mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 256u;
}

/* Forget every protocol state (RESET, IBA 10.3.1): the owner emptied the queues. */
static void reset(struct roce_qp *qp)
{
	struct roce_resp_res *res = qp->resp.res;
	uint32_t cap = qp->resp.res_cap;

	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	if (res != &qp->resp.res_one) /* res_one was zeroed with resp */
		memset(res, 0, cap * sizeof(*res));
	qp->resp.res = res;
	qp->resp.res_cap = cap;
	qp->req.wqe = qp->sq->tail;
}

/*
 * Room for res_slots responder resources. It is set on the way to RTR (IBA 11.2.4.2), while
 * the responder holds none, so the slots start empty. Without memory for more, the QP keeps
 * the slots it has: the requests past them are refused as past max_dest_rd_atomic would be.
 */
static void size_res(struct roce_qp *qp)
{
	uint32_t cap = roce_ring_size(qp->resp.res_slots); /* a ring as struct roce_wq's */
	struct roce_resp_res *res;

	if (cap <= qp->resp.res_cap)
		return;
	res = calloc(cap, sizeof(*res));
	if (!res) {
		qp->resp.res_slots = qp->resp.res_cap;
		return;
	}
	if (qp->resp.res != &qp->resp.res_one)
		free(qp->resp.res);
	qp->resp.res = res;
	qp->resp.res_cap = cap;
}

void roce_qp_set_window_bytes(struct roce_qp *qp, uint32_t bytes)
{
	uint32_t pkts = bytes ? bytes / qp->mtu : ROCE_WINDOW_MAX;

	qp->window_bytes = bytes;
	qp->window = pkts < ROCE_WINDOW_MIN   ? ROCE_WINDOW_MIN
		     : pkts > ROCE_WINDOW_MAX ? ROCE_WINDOW_MAX
					      : pkts;
}

void roce_qp_modify(struct roce_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state old = qp->state;

	if (mask & IBV_QP_PATH_MTU) {
		qp->mtu = mtu_bytes(attr->path_mtu);
		roce_qp_set_window_bytes(qp, qp->window_bytes);
	}
	if (mask & IBV_QP_AV)
		qp->attr.ah_attr = attr->ah_attr;
	if (mask & IBV_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	if (mask & IBV_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT) {
		qp->attr.retry_cnt = attr->retry_cnt;
		qp->comp.retry_left = attr->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		qp->attr.rnr_retry = attr->rnr_retry;
		qp->comp.rnr_left = attr->rnr_retry;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
		qp->resp.res_slots = attr->max_dest_rd_atomic > ROCE_MAX_RD_ATOMIC
					     ? ROCE_MAX_RD_ATOMIC
					     : attr->max_dest_rd_atomic;
		size_res(qp);
	}
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn & ROCE_PSN_MASK;
		qp->resp.psn = qp->attr.rq_psn;
	}
	if (mask & IBV_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn & ROCE_PSN_MASK;
		qp->req.psn = qp->attr.sq_psn;
		/* The half-window AckReq (requester.c) counts from the first PSN: PSNs compare
		 * only within half the 24-bit space (roce_psn_cmp), so not from 0. */
		qp->req.ackreq_psn = qp->attr.sq_psn;
		qp->req.psn_end = qp->attr.sq_psn;
		qp->comp.psn = qp->attr.sq_psn;
	}
	if (!(mask & IBV_QP_STATE))
		return;
	qp->state = attr->qp_state;
	qp->attr.qp_state = attr->qp_state;
	switch (qp->state) {
	case IBV_QPS_RESET:
		reset(qp);
		break;
	case IBV_QPS_SQD:
		qp->req.drained_event = false;
		break;
	case IBV_QPS_RTS:
		if (old == IBV_QPS_SQD && qp->req.state == ROCE_REQ_DRAINED)
			qp->req.state = ROCE_REQ_IDLE;
		if (old == IBV_QPS_SQE) {
			/* The owner flushed the send queue: start afresh after it. */
			qp->req.state = ROCE_REQ_IDLE;
			qp->req.wqe = qp->sq->tail;
			qp->req.offset = 0;
		}
		break;
	case IBV_QPS_ERR:
		qp->req.state = ROCE_REQ_ERROR;
		qp->comp.state = ROCE_COMP_ERROR;
		if (qp->resp.have_wqe) {
			struct ibv_wc wc = {
				.wr_id = qp->resp.wqe.wr_id,
				.status = IBV_WC_WR_FLUSH_ERR,
				.qp_num = qp->qpn,
			};
			qp->resp.have_wqe = false;
			qp->env->complete(qp->ctx, true, &wc, false);
		}
		qp->resp.state = ROCE_RESP_ERROR;
		break;
	default:
		break;
	}
}

void roce_qp_fatal(struct roce_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	qp->req.state = ROCE_REQ_ERROR;
	qp->comp.state = ROCE_COMP_ERROR;
	qp->env->to_error(qp->ctx);
}

void roce_qp_sq_error(struct roce_qp *qp)
{
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	qp->state = IBV_QPS_SQE;
	qp->attr.qp_state = IBV_QPS_SQE;
	qp->req.state = ROCE_REQ_ERROR;
	qp->env->sq_error(qp->ctx);
}

/* States in which the QP takes packets (IBA 10.3.1: receiving starts at RTR). */
static bool receiving(const struct roce_qp *qp)
{
	switch (qp->state) {
	case IBV_QPS_RTR:
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
		return true;
	default:
		return false;
	}
}

void roce_qp_read_pkt(struct roce_qp *qp, const struct roce_pkt *pkt, const struct roce_ipudp *ip,
		      uint64_t now)
{
	uint8_t transport = roce_opcode_transport(pkt->bth.opcode);
	bool ok;

	if (!receiving(qp)) {
		qp->counters.rx_state++;
		return;
	}
	/* An XRC initiator only sends requests, an XRC target only receives them (IBA 9.2.7). */
	ok = transport == roce_qp_tr(qp);
	if (qp->type == IBV_QPT_XRC_SEND)
		ok = ok && (pkt->info->flags & ROCE_OPF_RESPONSE);
	else if (qp->type == IBV_QPT_XRC_RECV)
		ok = ok && !(pkt->info->flags & ROCE_OPF_RESPONSE);
	if (!ok) {
		qp->counters.rx_transport++;
		return;
	}
	/* IBA 11.6.3: the first packet a QP in RTR receives raises Communication Established. */
	if (qp->state == IBV_QPS_RTR && !qp->resp.comm_est && qp->type != IBV_QPT_UD) {
		qp->resp.comm_est = true;
		qp->env->event(qp->ctx, IBV_EVENT_COMM_EST);
	}
	if (pkt->info->flags & ROCE_OPF_RESPONSE)
		roce_comp_recv(qp, pkt, now);
	else
		roce_resp_recv(qp, pkt, ip, now);
}

bool roce_qp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		   struct roce_steer *plan)
{
	if (!receiving(qp) || (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC))
		return false;
	if ((bth[0] & 0x1F) == ROCE_OP_READ_RESP_MIDDLE)
		return qp->type == IBV_QPT_RC && roce_comp_steer(qp, bth, seg, total, plan);
	return roce_resp_steer(qp, bth, seg, total, plan);
}

uint32_t roce_steer_begin(const struct roce_qp *qp, uint8_t opcode, uint32_t psn, uint16_t seg,
			  size_t total, uint32_t left, struct roce_steer *plan)
{
	uint32_t count;

	if (seg != ROCE_BTH_LEN + qp->mtu + ROCE_ICRC_LEN || !left)
		return 0;
	count = (uint32_t)(total / seg);
	if (count > (left - 1) / qp->mtu)
		count = (left - 1) / qp->mtu;
	if (count > ROCE_STEER_MAX)
		count = ROCE_STEER_MAX;
	*plan = (struct roce_steer){
		.qpn = qp->qpn,
		.psn = psn,
		.pmtu = qp->mtu,
		.hdr_len = ROCE_BTH_LEN,
		.opcode = opcode,
		.count = (uint8_t)count,
	};
	return count;
}

size_t roce_qp_write_pkt(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now)
{
	return roce_qp_write_pkt_gap(qp, buf, dest, now, NULL);
}

size_t roce_qp_write_pkt_gap(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now,
			     struct roce_pkt_gap *gap)
{
	size_t len;

	if (gap)
		gap->len = 0;
	/*
	 * Responses first, the plain ACK included: they answer what already arrived (READ
	 * responses must precede any ACK of a later PSN, or the requester would take the READ
	 * for lost), and an RNIC acknowledges a request before its application can answer it.
	 * Programs count on that order: the send completion of a request comes before the
	 * receive of the reply to it (perftest 4.5's latency tests with -e wait for both on one
	 * completion channel, one after the other, and hang when the reply comes first).
	 */
	if (qp->state == IBV_QPS_ERR)
		return roce_resp_has_output(qp) ? roce_resp_write(qp, buf, dest) : 0;
	if (!receiving(qp))
		return 0;
	len = roce_resp_write(qp, buf, dest);
	if (len)
		return len;
	if (qp->state == IBV_QPS_RTR)
		return 0;
	return roce_req_write(qp, buf, dest, now, gap);
}

bool roce_qp_nak_due(const struct roce_qp *qp)
{
	return qp->resp.ack_pending && roce_aeth_class(qp->resp.ack_syndrome) != ROCE_AETH_ACK;
}

void roce_qp_ack_now(struct roce_qp *qp)
{
	/* As roce_qp_handle_expiry: a QP in RESET or Error sends no held ACK. */
	if (qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR)
		qp->resp.ack_deadline = 0;
}

uint64_t roce_qp_expiry(const struct roce_qp *qp)
{
	uint64_t t = UINT64_MAX;

	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR)
		return t;
	if (qp->comp.state == ROCE_COMP_WAIT_ACK && qp->comp.deadline && qp->comp.deadline < t)
		t = qp->comp.deadline;
	if (qp->req.state == ROCE_REQ_WAIT_RNR && qp->req.rnr_deadline < t)
		t = qp->req.rnr_deadline;
	if (qp->resp.ack_pending && qp->resp.ack_deadline && qp->resp.ack_deadline < t)
		t = qp->resp.ack_deadline;
	return t;
}

void roce_qp_handle_expiry(struct roce_qp *qp, uint64_t now)
{
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_ERR)
		return;
	if (qp->resp.ack_pending && qp->resp.ack_deadline && qp->resp.ack_deadline <= now)
		qp->resp.ack_deadline = 0; /* due: the next write_pkt sends it */
	if (qp->req.state == ROCE_REQ_WAIT_RNR && qp->req.rnr_deadline <= now)
		qp->req.state = ROCE_REQ_SEND;
	if (qp->comp.state == ROCE_COMP_WAIT_ACK && qp->comp.deadline && qp->comp.deadline <= now)
		roce_comp_timeout(qp, now);
}

size_t roce_pkt_finish(uint8_t *buf, struct roce_pkt *pkt, size_t hdr_len)
{
	size_t pad = roce_pad_len(pkt->payload_len);
	size_t end = hdr_len + pkt->payload_len;

	roce_encode_hdrs(buf, hdr_len, pkt);
	memset(buf + end, 0, pad + ROCE_ICRC_LEN);
	return end + pad + ROCE_ICRC_LEN;
}

const uint8_t *roce_sgl_ref(struct roce_qp *qp, const struct ibv_sge *sge, uint32_t nsge,
			    uint32_t offset, uint32_t len)
{
	enum roce_mem_err err;
	uint32_t i = 0;

	while (i < nsge && offset >= sge[i].length)
		offset -= sge[i++].length;
	if (i == nsge || len > sge[i].length - offset)
		return NULL;
	return qp->env->mem(qp->ctx, sge[i].lkey, false, sge[i].addr + offset, len, 0, &err);
}

enum roce_mem_err roce_sgl_copy(struct roce_qp *qp, const struct ibv_sge *sge, uint32_t nsge,
				uint32_t offset, uint8_t *buf, uint32_t len, bool to_sgl)
{
	int access = to_sgl ? IBV_ACCESS_LOCAL_WRITE : 0;
	uint32_t i = 0;

	while (i < nsge && offset >= sge[i].length)
		offset -= sge[i++].length;
	while (len) {
		enum roce_mem_err err = ROCE_MEM_BOUNDS;
		uint32_t n;
		uint8_t *p;

		if (i == nsge)
			return ROCE_MEM_SHORT;
		n = sge[i].length - offset;
		if (n > len)
			n = len;
		p = qp->env->mem(qp->ctx, sge[i].lkey, false, sge[i].addr + offset, n, access,
				 &err);
		if (!p)
			return err;
		/* A payload received straight into place (roce_qp_steer) is there already. */
		if (to_sgl && p != buf)
			memcpy(p, buf, n);
		else
			memcpy(buf, p, n);
		buf += n;
		len -= n;
		offset = 0;
		i++;
	}
	return ROCE_MEM_OK;
}
