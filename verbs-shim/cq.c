// SPDX-License-Identifier: MIT
/* Completion queues: create (plain and extended), poll, arm, resize, destroy (cq.h). */
#include "verbs-shim/cq.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs-shim/async.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/ops.h"
#include "transport/wq.h"

/* The IBV_WC_EX_WITH_* fields uroce fills (no VLAN, flow tags or tag matching). */
#define SUPPORTED_WC_FLAGS                                                                         \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                             \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SUPPORTED_CREATE_FLAGS                                                                     \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Publish how many entries wait, after head or tail moved (cq->lock held). */
static void count_ready(struct uroce_cq *cq)
{
	atomic_store_explicit(&cq->ready, cq->head - cq->tail, memory_order_release);
}

/*
 * Whether the CQ may hold entries, without its lock: a poll finding it empty, most polls of a
 * busy-polling program, then takes no lock. An entry pushed meanwhile by another
 * thread is seen by the next poll, as it would be had that poll come a moment earlier.
 */
static bool maybe_ready(struct uroce_cq *cq)
{
	return atomic_load_explicit(&cq->ready, memory_order_acquire) != 0;
}

int uroce_cq_push(struct uroce_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct uroce_cqe *e;
	bool fire, report_overrun = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->head - cq->tail == cq->slots) {
		report_overrun = !cq->overrun && !(cq->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
		cq->overrun = true;
		pthread_mutex_unlock(&cq->lock);
		if (report_overrun)
			uroce_async_event(to_uctx(cq->cqx.context), IBV_EVENT_CQ_ERR, &cq->cqx);
		return ENOSPC;
	}
	e = &cq->ring[cq->head & cq->mask];
	e->wc = *wc;
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		e->completion_ts = now_ns(CLOCK_MONOTONIC);
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		e->wallclock_ns = now_ns(CLOCK_REALTIME);
	cq->head++;
	count_ready(cq);
	/* Solicited-only arming also fires for completions in error, as RNICs do. */
	fire = cq->notify == UROCE_CQ_NOTIFY_ANY || (cq->notify == UROCE_CQ_NOTIFY_SOLICITED &&
						     (solicited || wc->status != IBV_WC_SUCCESS));
	if (fire) {
		cq->notify = UROCE_CQ_NOTIFY_NONE;
		if (cq->channel)
			uroce_evq_push(&cq->channel->events, 0, &cq->cqx);
	}
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

unsigned int uroce_cq_drop_qp(struct uroce_cq *cq, uint32_t qp_num)
{
	unsigned int dropped;
	uint32_t kept;

	pthread_mutex_lock(&cq->lock);
	kept = cq->tail;
	for (uint32_t i = cq->tail; i != cq->head; i++) {
		const struct uroce_cqe *e = &cq->ring[i & cq->mask];

		if (e->wc.qp_num != qp_num)
			cq->ring[kept++ & cq->mask] = *e;
	}
	dropped = cq->head - kept;
	cq->head = kept;
	count_ready(cq);
	pthread_mutex_unlock(&cq->lock);
	return dropped;
}

/*
 * An empty poll receives on the polling thread, once the engine has handed it the sockets
 * (uroce_engine_poll): a busy-polling program then gets its completions without a wake-up of
 * another thread. Until then it gives the CPU away: completions come from the progress thread,
 * and where busy threads outnumber cores the scheduler would otherwise run it only when a time
 * slice ends, milliseconds later. A real HCA needs no CPU to make progress; a software one does.
 * Returns whether packets came (completions may have).
 */
static bool empty_poll(void)
{
	int n = uroce_engine_poll();

	if (n < 0)
		sched_yield();
	return n > 0;
}

static int take(struct uroce_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n = 0;

	pthread_mutex_lock(&cq->lock);
	while (n < num_entries && cq->tail != cq->head) {
		wc[n++] = cq->ring[cq->tail & cq->mask].wc;
		cq->tail++;
	}
	count_ready(cq);
	pthread_mutex_unlock(&cq->lock);
	return n;
}

int uroce_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct uroce_cq *cq = to_ucq(ibcq);
	int n = maybe_ready(cq) ? take(cq, num_entries, wc) : 0;

	if (!n && empty_poll())
		n = take(cq, num_entries, wc);
	return n;
}

int uroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct uroce_cq *cq = to_ucq(ibcq);

	uroce_engine_unpoll();
	pthread_mutex_lock(&cq->lock);
	/* Arming for any completion is the stronger request; solicited never weakens it. */
	if (!solicited_only)
		cq->notify = UROCE_CQ_NOTIFY_ANY;
	else if (cq->notify == UROCE_CQ_NOTIFY_NONE)
		cq->notify = UROCE_CQ_NOTIFY_SOLICITED;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/* --- the extended polling interface (struct ibv_cq_ex) --- */

static void set_current(struct uroce_cq *cq)
{
	cq->cur = &cq->ring[cq->tail & cq->mask];
	cq->cqx.status = cq->cur->wc.status;
	cq->cqx.wr_id = cq->cur->wc.wr_id;
}

/* Takes the CQ lock until end_poll, unless the CQ is empty (then end_poll is not called). */
static int cq_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct uroce_cq *cq = to_ucq_ex(cqx);
	bool polled;

	if (attr->comp_mask)
		return EINVAL;
	polled = !maybe_ready(cq);
	if (polled && !empty_poll())
		return ENOENT;
	pthread_mutex_lock(&cq->lock);
	if (cq->tail == cq->head && !polled) { /* another thread took them meanwhile */
		pthread_mutex_unlock(&cq->lock);
		if (!empty_poll())
			return ENOENT;
		pthread_mutex_lock(&cq->lock);
	}
	if (cq->tail == cq->head) {
		pthread_mutex_unlock(&cq->lock);
		return ENOENT;
	}
	set_current(cq);
	return 0;
}

static int cq_next_poll(struct ibv_cq_ex *cqx)
{
	struct uroce_cq *cq = to_ucq_ex(cqx);

	if (cq->cur) {
		cq->tail++;
		cq->cur = NULL;
	}
	if (cq->tail == cq->head)
		return ENOENT;
	set_current(cq);
	return 0;
}

static void cq_end_poll(struct ibv_cq_ex *cqx)
{
	struct uroce_cq *cq = to_ucq_ex(cqx);

	if (cq->cur) {
		cq->tail++;
		cq->cur = NULL;
	}
	count_ready(cq);
	pthread_mutex_unlock(&cq->lock);
}

static const struct ibv_wc *cur_wc(struct ibv_cq_ex *cqx)
{
	return &to_ucq_ex(cqx)->cur->wc;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->wc_flags;
}

static uint32_t read_slid(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->slid;
}

static uint8_t read_sl(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return cur_wc(cqx)->dlid_path_bits;
}

static uint64_t read_completion_ts(struct ibv_cq_ex *cqx)
{
	return to_ucq_ex(cqx)->cur->completion_ts;
}

static uint64_t read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	return to_ucq_ex(cqx)->cur->wallclock_ns;
}

/* No VLANs, flow tags or tag matching on uroce: these read as zero. */
static uint16_t read_cvlan(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint32_t read_flow_tag(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static void read_tm_info(struct ibv_cq_ex *cqx, struct ibv_wc_tm_info *tm_info)
{
	(void)cqx;
	memset(tm_info, 0, sizeof(*tm_info));
}

static struct uroce_cq *cq_create(struct ibv_context *context, int cqe, void *cq_context,
				  struct ibv_comp_channel *channel, int comp_vector,
				  uint64_t wc_flags, uint32_t flags)
{
	struct uroce_cq *cq;
	struct ibv_cq_ex *x;
	uint32_t ring;

	if (cqe < 1 || cqe > UROCE_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	ring = roce_ring_size((uint32_t)cqe);
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc(ring, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->slots = cqe;
	cq->mask = ring - 1;
	cq->wc_flags = wc_flags;
	cq->flags = flags;
	cq->channel = channel ? to_uchannel(channel) : NULL;
	pthread_mutex_init(&cq->lock, NULL);
	x = &cq->cqx;
	/* What rdma-core's verbs_init_cq sets up. */
	x->context = context;
	x->channel = channel;
	x->cq_context = cq_context;
	x->cqe = cqe;
	pthread_mutex_init(&x->mutex, NULL);
	pthread_cond_init(&x->cond, NULL);
	x->start_poll = cq_start_poll;
	x->next_poll = cq_next_poll;
	x->end_poll = cq_end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	x->read_byte_len = read_byte_len;
	x->read_imm_data = read_imm_data;
	x->read_qp_num = read_qp_num;
	x->read_src_qp = read_src_qp;
	x->read_wc_flags = read_wc_flags;
	x->read_slid = read_slid;
	x->read_sl = read_sl;
	x->read_dlid_path_bits = read_dlid_path_bits;
	x->read_completion_ts = read_completion_ts;
	x->read_cvlan = read_cvlan;
	x->read_flow_tag = read_flow_tag;
	x->read_tm_info = read_tm_info;
	x->read_completion_wallclock_ns = read_completion_wallclock_ns;
	if (channel) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	cq->res_tag = uroce_res_add(context, UROCE_RES_CQ);
	return cq;
}

UROCE_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					  struct ibv_comp_channel *channel, int comp_vector)
{
	struct uroce_cq *cq =
		cq_create(context, cqe, cq_context, channel, comp_vector, IBV_WC_STANDARD_FLAGS, 0);

	return cq ? ibv_cq_ex_to_cq(&cq->cqx) : NULL;
}

struct ibv_cq_ex *uroce_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	uint32_t flags = 0;
	struct uroce_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS)
		flags = attr->flags;
	if ((attr->wc_flags & ~(uint64_t)SUPPORTED_WC_FLAGS) || (flags & ~SUPPORTED_CREATE_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* A parent domain (MASK_PD) only hints at thread domains; uroce needs none. */
	cq = cq_create(context, attr->cqe, attr->cq_context, attr->channel, attr->comp_vector,
		       attr->wc_flags, flags);
	return cq ? &cq->cqx : NULL;
}

UROCE_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct uroce_cq *cq = to_ucq(ibcq);
	struct uroce_cqe *ring;
	uint32_t used, size;

	if (cqe < 1 || cqe > UROCE_MAX_CQE)
		return EINVAL;
	size = roce_ring_size((uint32_t)cqe);
	ring = calloc(size, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	pthread_mutex_lock(&cq->lock);
	used = cq->head - cq->tail;
	/* The completions already queued must fit (IBA 11.2.6.3). */
	if (used > (uint32_t)cqe) {
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < used; i++)
		ring[i] = cq->ring[(cq->tail + i) & cq->mask];
	free(cq->ring);
	cq->ring = ring;
	cq->slots = cqe;
	cq->mask = size - 1;
	cq->tail = 0;
	cq->head = used;
	count_ready(cq);
	cq->cqx.cqe = cqe;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

UROCE_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct uroce_cq *cq = to_ucq(ibcq);
	struct ibv_context *context = ibcq->context;

	if (atomic_load(&cq->usecnt))
		return EBUSY; /* QPs or SRQs still complete to it */
	/*
	 * rdma-core: events not yet read are dropped; destroy waits until every event the
	 * application read has been acknowledged (ibv_ack_cq_events, ibv_ack_async_event).
	 */
	if (cq->channel)
		uroce_evq_cancel(&cq->channel->events, &cq->cqx);
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	uroce_async_drain(to_uctx(context), ibcq, &ibcq->mutex, &ibcq->cond,
			  &ibcq->async_events_completed, &cq->async_events_reported);
	if (ibcq->channel) {
		pthread_mutex_lock(&context->mutex);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&context->mutex);
	}
	uroce_res_del(context, UROCE_RES_CQ, cq->res_tag);
	pthread_mutex_destroy(&cq->lock);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq->ring);
	free(cq);
	return 0;
}
