// SPDX-License-Identifier: MIT
/* Memory windows (mw.h): allocation, the type 1 bind verb, and the transport core's calls. */
#include "verbs-shim/mw.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/mr.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/table.h"

static struct uroce_table mw_table = UROCE_TABLE_INIT(UROCE_MAX_MW);
/* Every window's state, and the regions' window counts (mw.h). */
static pthread_mutex_t mw_lock = PTHREAD_MUTEX_INITIALIZER;

/* The window R_Key @rkey names, whatever its key byte, or NULL. Under mw_lock. */
static struct uroce_mw *find(uint32_t rkey)
{
	return roce_key_is_mw(rkey) ? uroce_table_peek(&mw_table, roce_mw_index(rkey)) : NULL;
}

/* The window leaves the region it was bound to (if any) for @mr. Under mw_lock. */
static void rebound(struct uroce_mw *mw, struct uroce_mr *mr)
{
	if (mw->region)
		atomic_fetch_sub(&mw->region->windows, 1);
	mw->region = mr;
	if (mr)
		atomic_fetch_add(&mr->windows, 1);
}

/* The PD guarding @qp's memory: an XRC target's is that of the SRQ the request names. */
static uint32_t pd_of(const struct uroce_qp *qp, bool *ok)
{
	const struct uroce_pd *pd = qp->xrc_cur ? qp->xrc_cur->pd : qp->pd;

	*ok = pd;
	return pd ? pd->pd.handle : 0;
}

struct ibv_mw *uroce_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct uroce_mw *mw;
	uint32_t index;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = uroce_table_insert(&mw_table, NULL, &index); /* shown once complete */
	if (err) {
		free(mw);
		errno = err == ENOSPC ? ENOMEM : err;
		return NULL;
	}
	mw->index = index;
	roce_mw_init(&mw->core, type, roce_mw_key(index, uroce_key_byte()), ibpd->handle);
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.rkey = mw->core.rkey;
	mw->mw.handle = index;
	mw->mw.type = type;
	atomic_fetch_add(&to_upd(ibpd)->usecnt, 1);
	uroce_table_show(&mw_table, index, mw);
	return &mw->mw;
}

int uroce_dealloc_mw(struct ibv_mw *ibmw)
{
	struct uroce_mw *mw = to_umw(ibmw);
	uint32_t old;

	/* Out of the table, then the lock: an access that found it before holds the lock while
	 * it uses it, and none finds it after. */
	uroce_table_remove(&mw_table, mw->index);
	pthread_mutex_lock(&mw_lock);
	roce_mw_dealloc(&mw->core, &old);
	rebound(mw, NULL);
	pthread_mutex_unlock(&mw_lock);
	atomic_fetch_sub(&to_upd(ibmw->pd)->usecnt, 1);
	free(mw);
	return 0;
}

int uroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int err;

	/* verbs.h checked the type, the region's PD and a range without a region; rxe's
	 * provider refuses a zero-based type 1 window at once (o10-36.2.2). */
	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = uroce_post_send(qp, &wr, &bad);
	/* As rxe's provider: the window's key is the new one at once; on an error completion
	 * the application takes the old one back (ibv_bind_mw(3)). */
	if (!err)
		mw->rkey = wr.bind_mw.rkey;
	return err;
}

enum roce_mem_err uroce_mw_resolve(struct uroce_qp *qp, uint32_t rkey, uint64_t addr, uint64_t len,
				   int access, uint32_t *mr_key, uint64_t *mr_addr)
{
	enum roce_mem_err err = ROCE_MEM_KEY;
	struct uroce_mw *mw;
	bool ok;
	uint32_t pd = pd_of(qp, &ok);

	pthread_mutex_lock(&mw_lock);
	mw = find(rkey);
	if (mw && ok)
		err = roce_mw_check(&mw->core, rkey, qp->qpx.qp_base.qp_num, pd, addr, len, access,
				    mr_key, mr_addr);
	pthread_mutex_unlock(&mw_lock);
	return err;
}

enum ibv_wc_status uroce_mw_bind(struct uroce_qp *qp, const struct roce_send_wqe *wqe)
{
	enum ibv_wc_status st = IBV_WC_MW_BIND_ERR;
	struct uroce_mr *mr = wqe->wr.bind.length ? uroce_mr_lookup(wqe->wr.bind.mr_lkey) : NULL;
	struct roce_mw_region region;
	struct uroce_mw *mw;
	uint32_t old;
	bool ok;
	uint32_t pd = pd_of(qp, &ok);

	if (mr)
		region = (struct roce_mw_region){
			.lkey = mr->mr.lkey,
			.pd = mr->pd->pd.handle,
			.iova = mr->iova,
			.length = mr->mr.length,
			.access = mr->access,
		};
	pthread_mutex_lock(&mw_lock);
	mw = find(wqe->wr.bind.mw_rkey);
	if (mw && ok && (mr || !wqe->wr.bind.length))
		st = roce_mw_bind(&mw->core, wqe, qp->qpx.qp_base.qp_num, pd, mr ? &region : NULL,
				  &old);
	if (st == IBV_WC_SUCCESS)
		rebound(mw, mw->core.mr_key ? mr : NULL);
	pthread_mutex_unlock(&mw_lock);
	return st;
}

bool uroce_mw_invalidate(struct uroce_qp *qp, uint32_t rkey)
{
	struct uroce_mw *mw;
	uint32_t old;
	bool ok, done = false;
	uint32_t pd = pd_of(qp, &ok);

	pthread_mutex_lock(&mw_lock);
	mw = find(rkey);
	if (mw && ok && roce_mw_invalidate(&mw->core, rkey, pd, &old)) {
		rebound(mw, NULL);
		done = true;
	}
	pthread_mutex_unlock(&mw_lock);
	return done;
}
