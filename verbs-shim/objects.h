/* SPDX-License-Identifier: MIT */
/*
 * Layouts of uroce's verbs objects. Each embeds the rdma-core struct first, so the pointer an
 * application holds is the uroce object (ABI.md §2.2, §2.3): contexts are struct verbs_context,
 * QPs struct ibv_qp_ex, CQs struct ibv_cq_ex.
 *
 * Locks, outermost first (ARCHITECTURE.md "Locks"): device registry, QP (or SRQ), CQ, event
 * queue, then the rdma-core mutex of an object (ibv_cq.mutex, ibv_qp.mutex, ...), which only
 * counts reported and acknowledged events, as in rdma-core. A device's lock is a leaf: taken
 * inside a QP's lock for each packet's path (path_of), it never has another inside it.
 */
#ifndef UROCE_VERBS_SHIM_OBJECTS_H
#define UROCE_VERBS_SHIM_OBJECTS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fabric/net.h"
#include "transport/container.h"
#include "transport/mw.h"
#include "transport/qp.h"
#include "verbs-shim/device.h"
#include "verbs-shim/evq.h"
#include "verbs-shim/export.h"
#include "verbs-shim/resreg.h"
#include "transport/wq.h"

struct uroce_context {
	struct verbs_context vctx; /* first; applications hold &vctx.context */
	struct uroce_device *dev;
	struct uroce_evq async; /* behind context.async_fd */
	bool port_events;       /* registered for port events (port_events.h) */
	uint32_t res_tag;       /* its count in the registry (uroce_res_add) */
};

struct uroce_pd {
	struct ibv_pd pd;
	atomic_uint usecnt; /* MRs, QPs, SRQs and AHs on it */
	uint32_t res_tag;   /* its count in the registry (uroce_res_add) */
};

struct uroce_mr {
	struct ibv_mr mr;
	struct uroce_pd *pd;
	uint64_t iova;       /* address the peer names byte 0 with (0 for ZERO_BASED) */
	int access;          /* IBV_ACCESS_* without the optional bits */
	uint32_t index;      /* in the MR table; lkey == rkey == index << 8 | key byte */
	uint32_t res_tag;    /* its count in the registry (uroce_res_add) */
	atomic_uint windows; /* memory windows bound to it (under the windows' lock, mw.h) */
};

struct uroce_mw {
	struct ibv_mw mw;
	uint32_t index;          /* in the MW table: the window number of its R_Key */
	struct roce_mw core;     /* its state, under the windows' lock (mw.h) */
	struct uroce_mr *region; /* the region it is bound to, likewise */
};

struct uroce_channel {
	struct ibv_comp_channel channel; /* channel.fd is events.fd */
	struct uroce_evq events;
};

struct uroce_cqe {
	struct ibv_wc wc;
	uint64_t completion_ts; /* CLOCK_MONOTONIC ns, if the CQ asked for timestamps */
	uint64_t wallclock_ns;  /* CLOCK_REALTIME ns, likewise */
};

enum uroce_cq_notify {
	UROCE_CQ_NOTIFY_NONE,
	UROCE_CQ_NOTIFY_ANY,
	UROCE_CQ_NOTIFY_SOLICITED,
};

struct uroce_cq {
	struct ibv_cq_ex cqx; /* first; ibv_cq_ex_to_cq() is a cast */
	pthread_mutex_t lock; /* ring, notify; held from start_poll to end_poll */
	struct uroce_cqe *ring;
	uint32_t slots;    /* capacity: cqe */
	uint32_t mask;     /* entries in the ring - 1: a power of two, as in struct roce_wq */
	uint32_t head;     /* entries produced (free-running) */
	uint32_t tail;     /* entries consumed (free-running) */
	atomic_uint ready; /* head - tail, stored under lock: an empty poll reads it without */
	enum uroce_cq_notify notify;
	bool overrun;
	uint64_t wc_flags;     /* IBV_WC_EX_WITH_* asked for at creation */
	uint32_t flags;        /* IBV_CREATE_CQ_ATTR_* */
	struct uroce_cqe *cur; /* the entry start_poll/next_poll stand on */
	struct uroce_channel *channel;
	atomic_uint usecnt; /* QPs and SRQs using it */
	/* events handed to the application, under cqx.mutex (compared with *_events_completed) */
	uint32_t comp_events_reported;
	uint32_t async_events_reported;
	uint32_t res_tag; /* its count in the registry (uroce_res_add) */
};

struct uroce_ah {
	struct ibv_ah ah;
	struct uroce_pd *pd;
	struct ibv_ah_attr attr;
};

struct uroce_xrc_domain;

struct uroce_srq {
	struct ibv_srq srq;
	struct uroce_pd *pd;
	uint32_t srqn;                /* ibv_get_srq_num: its index in the SRQ table */
	struct uroce_xrc_domain *xrc; /* XRC SRQ: its domain, and the CQ receives go to */
	struct uroce_cq *cq;
	pthread_mutex_t lock; /* rq, limit */
	struct roce_wq rq;
	uint32_t max_sge;
	uint32_t limit;                 /* srq_limit: 0 = not armed */
	atomic_uint usecnt;             /* QPs using it */
	uint32_t async_events_reported; /* under srq.mutex */
	uint32_t res_tag;               /* its count in the registry (uroce_res_add) */
};

struct uroce_qp {
	struct ibv_qp_ex qpx; /* first; ibv_qp_to_qp_ex() returns &qpx */
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *send_cq;
	struct uroce_cq *recv_cq;
	struct uroce_srq *srq;
	struct uroce_xrc_domain *xrc; /* XRC_RECV: its domain (no PD, CQs or queues of its own) */
	struct uroce_srq *xrc_cur;    /* XRC_RECV, under lock: the SRQ the current request names */
	pthread_mutex_t lock;         /* attr, sq, rq, wr_* building */
	/*
	 * The current attributes (attr.qp_state and cur_qp_state mirror qpx.qp_base.state; all
	 * three change only through uroce_qp_set_state): what the data path
	 * reads: ah_attr (destination GID, source GID index, hop limit, traffic class, flow
	 * label), dest_qp_num, rq_psn/sq_psn, path_mtu, qkey, timeout, retry_cnt, rnr_retry,
	 * min_rnr_timer, max_rd_atomic, max_dest_rd_atomic, qp_access_flags.
	 */
	struct ibv_qp_attr attr;
	bool sq_sig_all;
	uint64_t send_ops_flags; /* IBV_QP_EX_WITH_*, for the wr_* interface */
	struct roce_wq sq;       /* struct roce_send_wqe slots */
	struct roce_wq rq;       /* struct roce_recv_wqe slots (unused with an SRQ) */
	/* wr_start ... wr_complete: WQEs built since wr_start, and the first error seen */
	uint32_t wr_head;
	int wr_err;
	struct roce_qp core;      /* the transport's state of this QP, under lock */
	struct uroce_timer timer; /* fires at the core's next deadline */
	bool timer_armed;         /* under lock: the timer is armed for timer_deadline */
	uint64_t timer_deadline;
	uint32_t posts_held; /* under lock: posts whose packets wait for a flush (engine_held.c) */
	uint64_t last_post;  /* under lock: uroce_now() of the latest post (engine_held.c) */
	atomic_bool
		drain_due; /* set under lock: packets came in since the last drain (engine_rx.c) */
	uint32_t async_events_reported; /* under qpx.qp_base.mutex */
	struct uroce_resreg_qp reg;     /* its count and record in the registry, under lock */
};

static inline struct uroce_context *to_uctx(struct ibv_context *ctx)
{
	return uroce_container_of(ctx, struct uroce_context, vctx.context);
}

static inline struct uroce_pd *to_upd(struct ibv_pd *pd)
{
	return uroce_container_of(pd, struct uroce_pd, pd);
}

static inline struct uroce_mr *to_umr(struct ibv_mr *mr)
{
	return uroce_container_of(mr, struct uroce_mr, mr);
}

static inline struct uroce_mw *to_umw(struct ibv_mw *mw)
{
	return uroce_container_of(mw, struct uroce_mw, mw);
}

static inline struct uroce_channel *to_uchannel(struct ibv_comp_channel *channel)
{
	return uroce_container_of(channel, struct uroce_channel, channel);
}

static inline struct uroce_cq *to_ucq(struct ibv_cq *cq)
{
	return uroce_container_of((struct ibv_cq_ex *)cq, struct uroce_cq, cqx);
}

static inline struct uroce_cq *to_ucq_ex(struct ibv_cq_ex *cq)
{
	return uroce_container_of(cq, struct uroce_cq, cqx);
}

static inline struct uroce_ah *to_uah(struct ibv_ah *ah)
{
	return uroce_container_of(ah, struct uroce_ah, ah);
}

static inline struct uroce_srq *to_usrq(struct ibv_srq *srq)
{
	return uroce_container_of(srq, struct uroce_srq, srq);
}

static inline struct uroce_qp *to_uqp(struct ibv_qp *qp)
{
	return uroce_container_of((struct ibv_qp_ex *)qp, struct uroce_qp, qpx);
}

/* The QP as RDMA netlink lists it (the kernel's fill_res_qp_entry() reads ib_query_qp()'s
 * attributes, which are these), from its current attributes. */
static inline void uroce_qp_res_info(const struct uroce_qp *qp, struct uroce_res_qp *r)
{
	const struct ibv_qp *base = &qp->qpx.qp_base;

	*r = (struct uroce_res_qp){
		.lqpn = base->qp_num,
		.rqpn = qp->attr.dest_qp_num,
		.rq_psn = qp->attr.rq_psn,
		.sq_psn = qp->attr.sq_psn,
		.pdn = qp->pd ? qp->pd->pd.handle : 0,
		.has_pd = qp->pd != NULL,
		.port = qp->attr.port_num,
		.type = (uint8_t)base->qp_type,
		.state = (uint8_t)qp->attr.qp_state,
		.mig = (uint8_t)qp->attr.path_mig_state,
	};
}

/* Rewrite the QP's record in the registry after its attributes changed. Under qp->lock (or
 * before the QP is visible). */
static inline void uroce_qp_res_publish(struct uroce_qp *qp)
{
	struct uroce_res_qp r;

	uroce_qp_res_info(qp, &r);
	uroce_resreg_qp_set(&qp->reg, &r);
}

/*
 * Set the QP's state, as the verbs see it, in its one place: qpx.qp_base.state (rdma-core's
 * struct ibv_qp, which applications may read directly) and the copies ibv_query_qp reports
 * (attr.qp_state, attr.cur_qp_state). The transport core keeps its own (core.state), changed
 * by roce_qp_modify() from ibv_modify_qp; the moves the core makes itself (SQE, a fatal error)
 * reach this through its callbacks (core_env.c). Under qp->lock.
 */
static inline void uroce_qp_set_state(struct uroce_qp *qp, enum ibv_qp_state state)
{
	qp->qpx.qp_base.state = state;
	qp->attr.qp_state = state;
	qp->attr.cur_qp_state = state;
	uroce_qp_res_publish(qp);
}

static inline struct uroce_qp *to_uqp_ex(struct ibv_qp_ex *qp)
{
	return uroce_container_of(qp, struct uroce_qp, qpx);
}

#endif
