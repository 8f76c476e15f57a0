/* SPDX-License-Identifier: MIT */
/* Send queue rules shared by ibv_post_send and the ibv_wr_* interface. */
#ifndef UROCE_VERBS_SHIM_SQ_H
#define UROCE_VERBS_SHIM_SQ_H

#include "verbs-shim/objects.h"

/*
 * 0 if the QP's state takes send WQEs, else EINVAL: not before RTS (RESET, INIT, RTR), as rxe.
 * In SQE and ERR they are taken and flushed at once (uroce_sq_posted). qp->lock held.
 */
int uroce_sq_state_check(struct uroce_qp *qp);

/*
 * 0 if WQE is a valid request for the QP, else EINVAL: opcode not offered by the QP (its
 * service and send_ops_flags), inline data on a read or atomic or beyond max_inline_data, a
 * message over 2^31 bytes, an atomic that is not 8 bytes at an 8-byte aligned address, a local
 * operation (bind, invalidate) with data, a UD send without an address.
 */
int uroce_sq_check_wqe(struct uroce_qp *qp, const struct roce_send_wqe *wqe);

/* After WQEs were queued: flush them if the QP is in SQE or ERR. qp->lock held. */
void uroce_sq_posted(struct uroce_qp *qp);

#endif
