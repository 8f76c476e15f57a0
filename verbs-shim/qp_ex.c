// SPDX-License-Identifier: MIT
/* ibv_wr_* for uroce QPs (qp_ex.h). */
#include "verbs-shim/qp_ex.h"

#include <errno.h>
#include <string.h>

#include "verbs-shim/engine.h"
#include "verbs-shim/sq.h"

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);

	pthread_mutex_lock(&qp->lock);
	qp->wr_head = qp->sq.head;
	qp->wr_err = uroce_sq_state_check(qp);
}

/* The WQE the last wr_<opcode> started, or NULL (and an error) if there is none. */
static struct roce_send_wqe *current_wqe(struct uroce_qp *qp)
{
	if (qp->wr_err)
		return NULL;
	if (qp->wr_head == qp->sq.head) {
		qp->wr_err = EINVAL; /* a setter before any operation */
		return NULL;
	}
	return roce_wq_slot(&qp->sq, qp->wr_head - 1);
}

/* Start a WQE of OPCODE from the QP's wr_id and wr_flags. */
static struct roce_send_wqe *new_wqe(struct uroce_qp *qp, enum ibv_wr_opcode opcode)
{
	struct roce_send_wqe *wqe;

	if (qp->wr_err)
		return NULL;
	if (qp->wr_head - qp->sq.tail == qp->sq.slots) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	wqe = roce_wq_slot(&qp->sq, qp->wr_head++);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = qp->qpx.wr_id;
	wqe->send_flags = qp->qpx.wr_flags;
	wqe->signaled = qp->sq_sig_all || (qp->qpx.wr_flags & IBV_SEND_SIGNALED);
	wqe->opcode = opcode;
	return wqe;
}

static void wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
		    uint64_t remote_addr, __be32 imm)
{
	struct roce_send_wqe *wqe = new_wqe(to_uqp_ex(qpx), opcode);

	if (!wqe)
		return;
	wqe->wr.rdma.rkey = rkey;
	wqe->wr.rdma.remote_addr = remote_addr;
	wqe->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			      __be32 imm_data)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode, uint32_t rkey,
		      uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct roce_send_wqe *wqe = new_wqe(to_uqp_ex(qpx), opcode);

	if (!wqe)
		return;
	wqe->wr.atomic.rkey = rkey;
	wqe->wr.atomic.remote_addr = remote_addr;
	wqe->wr.atomic.compare_add = compare_add;
	wqe->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare, uint64_t swap)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				uint64_t add)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	new_wqe(to_uqp_ex(qpx), IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct roce_send_wqe *wqe = new_wqe(to_uqp_ex(qpx), IBV_WR_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = imm_data;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *bind_info)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	struct roce_send_wqe *wqe = new_wqe(qp, IBV_WR_BIND_MW);

	if (!wqe)
		return;
	if (!mw || !bind_info) {
		qp->wr_err = EINVAL;
		return;
	}
	/* As rxe's provider: the window is named by its current key, which this leaves alone. */
	roce_wqe_set_bind(wqe, mw->rkey, rkey, bind_info);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct roce_send_wqe *wqe = new_wqe(to_uqp_ex(qpx), IBV_WR_LOCAL_INV);

	if (wqe)
		wqe->inv_rkey = invalidate_rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct roce_send_wqe *wqe = new_wqe(to_uqp_ex(qpx), IBV_WR_SEND_WITH_INV);

	if (wqe)
		wqe->inv_rkey = invalidate_rkey;
}

/* Operations uroce does not implement: the batch fails with EOPNOTSUPP at wr_complete. */
static void unsupported(struct ibv_qp_ex *qpx)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);

	if (!qp->wr_err)
		qp->wr_err = EOPNOTSUPP;
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	unsupported(qpx);
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			    const void *atomic_wr)
{
	(void)rkey;
	(void)remote_addr;
	(void)atomic_wr;
	unsupported(qpx);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	struct roce_send_wqe *wqe = current_wqe(qp);

	if (!wqe)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_XRC_SEND) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->xrc_remote_srqn = remote_srqn;
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	struct roce_send_wqe *wqe = current_wqe(qp);

	if (!wqe)
		return;
	if (!ah || ah->context != qpx->qp_base.context) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->ud.has_ah = true;
	wqe->ud.ah_attr = to_uah(ah)->attr;
	wqe->ud.remote_qpn = remote_qpn;
	wqe->ud.remote_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	struct roce_send_wqe *wqe = current_wqe(qp);
	uint64_t length = 0;

	if (!wqe)
		return;
	if (num_sge > qp->attr.cap.max_send_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	for (size_t i = 0; i < num_sge; i++)
		length += sg_list[i].length;
	if (num_sge) /* no SGE: sg_list may be NULL */
		memcpy(roce_send_wqe_sge(wqe), sg_list, num_sge * sizeof(*sg_list));
	wqe->num_sge = num_sge;
	wqe->is_inline = false;
	wqe->length = length > UINT32_MAX ? UINT32_MAX : length;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	struct roce_send_wqe *wqe = current_wqe(qp);
	size_t length = 0;

	if (!wqe)
		return;
	for (size_t i = 0; i < num_buf; i++)
		length += buf_list[i].length;
	if (length > qp->attr.cap.max_inline_data) {
		qp->wr_err = EINVAL;
		return;
	}
	/* Copied now: the buffers are the caller's again when the call returns. */
	for (size_t i = 0, off = 0; i < num_buf; off += buf_list[i].length, i++)
		if (buf_list[i].length) /* an empty buffer may name no memory */
			memcpy(wqe->data + off, buf_list[i].addr, buf_list[i].length);
	wqe->num_sge = 0;
	wqe->is_inline = true;
	wqe->length = length;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(qpx, 1, &buf);
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct uroce_qp *qp = to_uqp_ex(qpx);
	uint32_t built = qp->wr_head - qp->sq.head;
	int err = qp->wr_err;

	for (uint32_t i = 0; i < built && !err; i++)
		err = uroce_sq_check_wqe(qp, roce_wq_slot(&qp->sq, qp->sq.head + i));
	if (!err && built) {
		qp->sq.head = qp->wr_head;
		uroce_sq_posted(qp);
		uroce_qp_posted(qp, built);
	}
	pthread_mutex_unlock(&qp->lock);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	pthread_mutex_unlock(&to_uqp_ex(qpx)->lock);
}

void uroce_qp_ex_init(struct uroce_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
}
