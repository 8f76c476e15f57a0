/* SPDX-License-Identifier: MIT */
/* Completion queues: what the data path calls to complete work requests. */
#ifndef UROCE_VERBS_SHIM_CQ_H
#define UROCE_VERBS_SHIM_CQ_H

#include <infiniband/verbs.h>
#include <stdbool.h>

#include "verbs-shim/objects.h"

/*
 * Add a completion. SOLICITED tells whether it completes a solicited message (the SE bit of
 * the request, IBA 9.2.3): a CQ armed with solicited_only fires for those and for completions
 * in error; a CQ armed for any completion fires for every one. Firing disarms the CQ and
 * queues an event on its completion channel (if it has one).
 * Thread-safe (takes the CQ lock; callers may hold a QP or SRQ lock, never the CQ's).
 * Returns 0, or ENOSPC when the CQ is full: the completion is lost and, unless the CQ was
 * created with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, IBV_EVENT_CQ_ERR is raised once (IBA 11.4.2.1).
 */
int uroce_cq_push(struct uroce_cq *cq, const struct ibv_wc *wc, bool solicited);

/*
 * Remove the completions of QP QP_NUM that wait in CQ, keeping the others in order: what
 * ibv_destroy_qp does once no more can come, and ibv_modify_qp to RESET, as mlx4's and mlx5's
 * providers do (mlx5_destroy_qp and mlx5_modify_qp clean both CQs with __mlx5_cq_clean). No
 * completion then names a QP that
 * no longer exists: software that closes a QP and then drains a CQ it shares with others
 * (libfabric 1.17's rxm: rxm_close_conn closes the endpoint, then reads the CQ and reposts
 * the receive buffer on the endpoint it just freed) sees only the QPs still open. The
 * kernel's rxe leaves them (docs/INTEROP.md). Thread-safe (takes the CQ lock); never fails.
 * Returns how many were removed.
 */
unsigned int uroce_cq_drop_qp(struct uroce_cq *cq, uint32_t qp_num);

#endif
