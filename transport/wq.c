// SPDX-License-Identifier: MIT
/* Work queue rings (wq.h). */
#include "transport/wq.h"

#include <errno.h>
#include <stdlib.h>

#include "transport/wr_opcode.h"

uint32_t roce_ring_size(uint32_t n)
{
	uint32_t size = 1;

	if (n > UINT32_C(1) << 31)
		return 0;
	while (size < n)
		size <<= 1;
	return size;
}

int roce_wq_init(struct roce_wq *wq, uint32_t slots, size_t stride)
{
	uint32_t ring = roce_ring_size(slots);

	stride = (stride + 7) & ~(size_t)7;
	wq->buf = ring ? calloc(ring, stride) : NULL;
	if (!wq->buf)
		return ENOMEM;
	wq->slots = slots;
	wq->mask = ring - 1;
	wq->stride = stride;
	wq->head = 0;
	wq->tail = 0;
	return 0;
}

void roce_wq_free(struct roce_wq *wq)
{
	free(wq->buf);
	wq->buf = NULL;
}

void roce_wqe_set_bind(struct roce_send_wqe *wqe, uint32_t mw_rkey, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	wqe->wr.bind.mw_rkey = mw_rkey;
	wqe->wr.bind.rkey = rkey;
	wqe->wr.bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	wqe->wr.bind.addr = info->addr;
	wqe->wr.bind.length = info->length;
	wqe->wr.bind.access = (int)info->mw_access_flags;
}

enum ibv_wc_opcode roce_wc_opcode(enum ibv_wr_opcode opcode)
{
	const struct roce_wr_info *w = roce_wr_info(opcode);

	return w ? w->wc_opcode : IBV_WC_SEND;
}

size_t roce_send_wqe_size(uint32_t max_sge, uint32_t max_inline)
{
	size_t gather = (size_t)max_sge * sizeof(struct ibv_sge);

	return sizeof(struct roce_send_wqe) + (gather > max_inline ? gather : max_inline);
}

size_t roce_recv_wqe_size(uint32_t max_sge)
{
	return sizeof(struct roce_recv_wqe) + (size_t)max_sge * sizeof(struct ibv_sge);
}

int roce_wq_post_recv(struct roce_wq *wq, uint32_t max_sge, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad, unsigned *posted)
{
	for (; wr; wr = wr->next) {
		struct roce_recv_wqe *wqe;
		int err = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
			err = EINVAL;
		else if (roce_wq_used(wq) == wq->slots)
			err = ENOMEM;
		if (err) {
			*bad = wr;
			return err;
		}
		wqe = roce_wq_slot(wq, wq->head);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->length = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			wqe->sge[i] = wr->sg_list[i];
			wqe->length += wr->sg_list[i].length;
		}
		wq->head++;
		++*posted;
	}
	return 0;
}
