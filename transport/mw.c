// SPDX-License-Identifier: MIT
/* Memory window rules (mw.h): rxe's rxe_mw.c, by the IBA requirement each check implements. */
#include "transport/mw.h"

/* The access bits a window may grant (rxe's RXE_ACCESS_SUPPORTED_MW, less ODP and FLUSH). */
#define MW_ACCESS                                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED)

void roce_mw_init(struct roce_mw *mw, enum ibv_mw_type type, uint32_t rkey, uint32_t pd)
{
	*mw = (struct roce_mw){
		.type = type,
		/* A type 1 window is valid from the start; it grants nothing until bound. */
		.state = type == IBV_MW_TYPE_2 ? ROCE_MW_FREE : ROCE_MW_VALID,
		.rkey = rkey,
		.pd = pd,
	};
}

/* [@addr, @addr + @len) lies in [@base, @base + @size), without overflow. */
static bool holds(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	return addr >= base && len <= size && addr - base <= size - len;
}

/* The checks of rxe_check_bind_mw, in its order. */
static bool may_bind(const struct roce_mw *mw, const struct roce_send_wqe *wqe, uint32_t qp_pd,
		     const struct roce_mw_region *mr)
{
	uint64_t length = wqe->wr.bind.length;
	int access = wqe->wr.bind.access;

	if (wqe->wr.bind.mw_rkey != mw->rkey || mw->state == ROCE_MW_INVALID)
		return false;
	if (access & ~MW_ACCESS)
		return false;
	if (mw->type == IBV_MW_TYPE_1) {
		/* A type 1 window is rebound in place; o10-36.2.2: never zero-based. */
		if (mw->state != ROCE_MW_VALID || (access & IBV_ACCESS_ZERO_BASED))
			return false;
	} else {
		/* o10-37.2.30: only a free type 2 window binds; C10-72: the QP's PD is its PD;
		 * o10-37.2.40: a type 2 window is not invalidated by a bind of length 0. */
		if (mw->state != ROCE_MW_FREE || qp_pd != mw->pd || !mr || !length)
			return false;
	}
	if (!mr)
		return !length;
	/* The region: of the window's PD, not zero-based, C10-73: bindable, C10-74: locally
	 * writable if the window is remotely writable, C10-75: holding the window. */
	if (mr->pd != mw->pd || (mr->access & IBV_ACCESS_ZERO_BASED) ||
	    !(mr->access & IBV_ACCESS_MW_BIND))
		return false;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	return holds(mr->iova, mr->length, wqe->wr.bind.addr, length);
}

enum ibv_wc_status roce_mw_bind(struct roce_mw *mw, const struct roce_send_wqe *wqe, uint32_t qpn,
				uint32_t qp_pd, const struct roce_mw_region *mr,
				uint32_t *old_mr_key)
{
	if (!may_bind(mw, wqe, qp_pd, mr))
		return IBV_WC_MW_BIND_ERR;
	*old_mr_key = mw->mr_key;
	/* IBA 10.6.7.2.1: the consumer owns the key byte; the rest names the window. */
	mw->rkey = (mw->rkey & ~0xFFu) | (wqe->wr.bind.rkey & 0xFFu);
	mw->state = ROCE_MW_VALID;
	mw->access = wqe->wr.bind.access;
	mw->addr = wqe->wr.bind.addr;
	mw->length = wqe->wr.bind.length;
	mw->mr_key = mw->length ? mr->lkey : 0;
	/* A type 2 window serves the QP that bound it only (IBA 10.6.7.2.2). */
	mw->qpn = mw->type == IBV_MW_TYPE_2 ? qpn : 0;
	return IBV_WC_SUCCESS;
}

/* Unbind: the window grants nothing; the region it left goes to *@old_mr_key. */
static void unbind(struct roce_mw *mw, enum roce_mw_state state, uint32_t *old_mr_key)
{
	*old_mr_key = mw->mr_key;
	mw->state = state;
	mw->mr_key = 0;
	mw->qpn = 0;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
}

bool roce_mw_invalidate(struct roce_mw *mw, uint32_t rkey, uint32_t qp_pd, uint32_t *old_mr_key)
{
	/* rxe_check_invalidate_mw; o10-37.2.26: a type 1 window is not invalidated. */
	if (rkey != mw->rkey || mw->type != IBV_MW_TYPE_2 || mw->state != ROCE_MW_VALID ||
	    mw->pd != qp_pd)
		return false;
	unbind(mw, ROCE_MW_FREE, old_mr_key);
	return true;
}

enum roce_mem_err roce_mw_check(const struct roce_mw *mw, uint32_t rkey, uint32_t qpn,
				uint32_t qp_pd, uint64_t addr, uint64_t len, int access,
				uint32_t *mr_key, uint64_t *mr_addr)
{
	/* A zero-based window is addressed by offset (IBA 10.6.7.2.1). */
	uint64_t base = (mw->access & IBV_ACCESS_ZERO_BASED) ? 0 : mw->addr;

	if (rkey != mw->rkey || mw->state != ROCE_MW_VALID || mw->pd != qp_pd || !mw->length ||
	    (mw->type == IBV_MW_TYPE_2 && mw->qpn != qpn))
		return ROCE_MEM_KEY;
	if ((mw->access & access) != access)
		return ROCE_MEM_ACCESS;
	if (!holds(base, mw->length, addr, len))
		return ROCE_MEM_BOUNDS;
	*mr_key = mw->mr_key;
	*mr_addr = mw->addr + (addr - base);
	return ROCE_MEM_OK;
}

void roce_mw_dealloc(struct roce_mw *mw, uint32_t *old_mr_key)
{
	unbind(mw, ROCE_MW_INVALID, old_mr_key);
}
