/* SPDX-License-Identifier: MIT */
/*
 * The QP state machine of IBA chapter 10.3 (QP states and their transitions): which
 * transitions exist and which attributes each requires or allows, per QP type.
 */
#ifndef UROCE_VERBS_SHIM_QP_STATE_H
#define UROCE_VERBS_SHIM_QP_STATE_H

#include <infiniband/verbs.h>
#include <stdbool.h>

/*
 * true if CUR -> NEXT is a transition of TYPE (RC, UC or UD) and MASK (IBV_QP_*, including
 * IBV_QP_STATE when NEXT was given) holds every required and only allowed attributes. Any other
 * QP type, or a state out of range, gives false. IBV_QP_CUR_STATE is only allowed from RTR,
 * RTS, SQD and SQE.
 */
bool uroce_qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type,
			    int mask);

#endif
