/* SPDX-License-Identifier: MIT */
/*
 * The QP state machine of IBA 10.3 (QP states and their transitions): which transitions exist
 * and which attributes each requires or allows, per QP type -- the rules ibv_modify_qp enforces.
 */
#ifndef UROCE_TRANSPORT_QP_STATE_H
#define UROCE_TRANSPORT_QP_STATE_H

#include <infiniband/verbs.h>
#include <stdbool.h>

/*
 * true if @cur -> @next is a transition of @type (RC, UC, UD, XRC_SEND or XRC_RECV) and @mask
 * (IBV_QP_*, including IBV_QP_STATE when @next was given) holds every required and only allowed
 * attributes. Any other QP type, or a state out of range, gives false. IBV_QP_CUR_STATE is only
 * allowed from RTR, RTS, SQD and SQE.
 */
bool roce_qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type,
			   int mask);

/*
 * @mask without the attributes @type ignores, as the kernel strips them before checking
 * (uverbs modify_qp_mask): an XRC initiator has no responder (MAX_DEST_RD_ATOMIC,
 * MIN_RNR_TIMER), an XRC target no requester (MAX_QP_RD_ATOMIC, RETRY_CNT, RNR_RETRY).
 */
int roce_qp_mask_used(enum ibv_qp_type type, int mask);

#endif
