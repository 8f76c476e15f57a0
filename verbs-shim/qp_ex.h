/* SPDX-License-Identifier: MIT */
/*
 * The extended send interface of struct ibv_qp_ex (ibv_wr_start ... ibv_wr_complete): WQEs are
 * built in the send queue between wr_start and wr_complete under the QP lock, checked with the
 * ibv_post_send rules, and published (or dropped) at wr_complete / wr_abort. The first error
 * is kept and returned by wr_complete, which then posts nothing (ibv_wr_post(3)).
 */
#ifndef UROCE_VERBS_SHIM_QP_EX_H
#define UROCE_VERBS_SHIM_QP_EX_H

#include "verbs-shim/objects.h"

/* Fill every wr_* pointer of qp->qpx (all are called without NULL checks, ABI.md §2.1). */
void uroce_qp_ex_init(struct uroce_qp *qp);

#endif
