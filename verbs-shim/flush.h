/* SPDX-License-Identifier: MIT */
/*
 * Flushing a QP's work queues, and the move to the Error state, for the verbs (ibv_modify_qp,
 * ibv_post_send in SQE or ERR) and for the transport core's callbacks (core_env.c). Below both:
 * it needs only the QP's rings, its CQs (cq.h) and its async events (async.h).
 */
#ifndef UROCE_VERBS_SHIM_FLUSH_H
#define UROCE_VERBS_SHIM_FLUSH_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "verbs-shim/objects.h"

/*
 * Complete every outstanding WQE of the send queue and (without an SRQ) the receive queue with
 * IBV_WC_WR_FLUSH_ERR, in order, on the QP's CQs (IBA 10.3.1: in the Error state WQEs complete
 * in error). Flush completions are always generated, signaled or not. Call with qp->lock held.
 */
void uroce_qp_flush(struct uroce_qp *qp);
/* The two halves of uroce_qp_flush (SQE flushes the send queue only). qp->lock held. */
void uroce_qp_flush_sq(struct uroce_qp *qp);
void uroce_qp_flush_rq(struct uroce_qp *qp);

/*
 * Move the QP to the Error state for a fatal transport error: flush, and for a QP on an SRQ
 * raise IBV_EVENT_QP_LAST_WQE_REACHED (IBA 10.3.1, 11.6.3). Call with qp->lock held.
 */
void uroce_qp_to_error(struct uroce_qp *qp);

#endif
