/* SPDX-License-Identifier: MIT */
/*
 * Where the data path plugs into the verbs shim. The shim keeps the objects, validates and
 * queues work requests, and completes them on flush; the engine (fabric/) turns queued WQEs
 * into packets and received packets into completions. These hooks are the shim's only calls
 * into the engine; each is called without any uroce lock held.
 *
 * What the engine uses in return:
 *   uroce_qp_lookup (qp.h)      QP by number, for received packets
 *   uroce_mr_lookup (mr.h)      MR by lkey/rkey
 *   qp->lock, qp->sq, qp->rq    WQE rings (wq.h); srq->lock, srq->rq for SRQ receives
 *   qp->attr                    path and transport attributes (objects.h)
 *   uroce_cq_push (cq.h)        completions, with solicited-event arming and channel events
 *   uroce_qp_to_error (qp.h)    a fatal transport error: ERR state + flush
 *   uroce_async_event (async.h) COMM_EST, SQ_DRAINED, SRQ_LIMIT_REACHED, QP_FATAL, ...
 */
#ifndef UROCE_VERBS_SHIM_ENGINE_H
#define UROCE_VERBS_SHIM_ENGINE_H

#include <infiniband/verbs.h>

struct uroce_qp;

/* New WQEs were queued on the send (post_send, wr_complete) or receive queue (post_recv). */
void uroce_qp_kick(struct uroce_qp *qp);

/*
 * ibv_modify_qp succeeded: OLD is the state before, ATTR_MASK what was set. On a move to RESET
 * the queues were emptied; on a move to ERR the outstanding WQEs were already flushed.
 */
void uroce_qp_modified(struct uroce_qp *qp, enum ibv_qp_state old, int attr_mask);

/* The QP is about to be freed; it is no longer findable by uroce_qp_lookup. */
void uroce_qp_destroying(struct uroce_qp *qp);

#endif
