// SPDX-License-Identifier: MIT
/*
 * transport/qp_state: the transitions and attribute masks of ibv_modify_qp per QP type (the
 * kernel's ib_modify_qp_is_ok table), XRC included, and the attributes XRC halves ignore.
 */
#include <criterion/criterion.h>

#include "transport/qp_state.h"

#define S(x) IBV_QPS_##x
#define A(x) IBV_QP_##x

static const int rc_rtr = A(STATE) | A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
			  A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER);
static const int rc_rts =
	A(STATE) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) | A(MAX_QP_RD_ATOMIC);
static const int init = A(STATE) | A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS);

Test(qp_state, rc_path_and_extra_attributes)
{
	cr_assert(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_RC, init));
	cr_assert_not(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_RC, init | A(QKEY)));
	cr_assert_not(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_RC, init & ~A(PORT)));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_RC, rc_rtr));
	cr_assert_not(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_RC, rc_rtr & ~A(RQ_PSN)));
	cr_assert(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_RC, rc_rts));
	cr_assert_not(roce_qp_transition_ok(S(RESET), S(RTS), IBV_QPT_RC, rc_rts));
	cr_assert(roce_qp_transition_ok(S(RTS), S(SQD), IBV_QPT_RC, A(STATE)));
	cr_assert(roce_qp_transition_ok(S(SQD), S(RTS), IBV_QPT_RC, A(STATE)));
	cr_assert(roce_qp_transition_ok(S(ERR), S(RESET), IBV_QPT_RC, A(STATE)));
	cr_assert_not(roce_qp_transition_ok(S(ERR), S(RTS), IBV_QPT_RC, A(STATE)));
	/* CUR_STATE only from RTR, RTS, SQD and SQE. */
	cr_assert_not(roce_qp_transition_ok(S(INIT), S(INIT), IBV_QPT_RC, A(CUR_STATE)));
	cr_assert(roce_qp_transition_ok(S(RTS), S(RTS), IBV_QPT_RC, A(CUR_STATE)));
	cr_assert_not(roce_qp_transition_ok(S(RTS), S(RTS), IBV_QPT_RC, A(QKEY)));
}

Test(qp_state, ud_uc_and_sqe)
{
	cr_assert(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_UD,
					A(STATE) | A(PKEY_INDEX) | A(PORT) | A(QKEY)));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_UD, A(STATE)));
	cr_assert(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_UD, A(STATE) | A(SQ_PSN)));
	cr_assert(roce_qp_transition_ok(S(SQE), S(RTS), IBV_QPT_UD, A(STATE) | A(QKEY)));
	cr_assert(roce_qp_transition_ok(S(SQE), S(RTS), IBV_QPT_UC, A(STATE) | A(ACCESS_FLAGS)));
	cr_assert_not(roce_qp_transition_ok(S(SQE), S(RTS), IBV_QPT_UC, A(STATE) | A(QKEY)));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_UC,
					A(STATE) | A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN)));
	cr_assert_not(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_UC, rc_rtr));
}

Test(qp_state, xrc_halves)
{
	const int xi_rtr = A(STATE) | A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN);

	/* Initiator: RC's requester attributes, no responder ones. */
	cr_assert(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_XRC_SEND, init));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_XRC_SEND, xi_rtr));
	cr_assert_not(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_XRC_SEND, rc_rtr));
	cr_assert(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_XRC_SEND, rc_rts));
	cr_assert_not(roce_qp_transition_ok(S(RTS), S(RTS), IBV_QPT_XRC_SEND,
					    A(STATE) | A(MIN_RNR_TIMER)));
	/* Target: RC's responder attributes; to RTS only the timeout and the SQ PSN. */
	cr_assert(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_XRC_RECV, init));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_XRC_RECV, rc_rtr));
	cr_assert(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_XRC_RECV,
					A(STATE) | A(TIMEOUT) | A(SQ_PSN)));
	cr_assert_not(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_XRC_RECV, rc_rts));
	cr_assert(roce_qp_transition_ok(S(RTS), S(RTS), IBV_QPT_XRC_RECV,
					A(STATE) | A(MIN_RNR_TIMER)));
	cr_assert_not(roce_qp_transition_ok(S(SQE), S(RTS), IBV_QPT_XRC_RECV, A(CUR_STATE)));
	cr_assert_not(roce_qp_transition_ok(S(RESET), S(INIT), IBV_QPT_RAW_PACKET, init));
}

/* The kernel strips what an XRC half ignores before the check: perftest relies on it. */
Test(qp_state, xrc_ignored_attributes)
{
	cr_assert_eq(roce_qp_mask_used(IBV_QPT_XRC_SEND, rc_rtr),
		     rc_rtr & ~(A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER)));
	cr_assert(roce_qp_transition_ok(S(INIT), S(RTR), IBV_QPT_XRC_SEND,
					roce_qp_mask_used(IBV_QPT_XRC_SEND, rc_rtr)));
	cr_assert(roce_qp_transition_ok(S(RTR), S(RTS), IBV_QPT_XRC_RECV,
					roce_qp_mask_used(IBV_QPT_XRC_RECV, rc_rts)));
	cr_assert_eq(roce_qp_mask_used(IBV_QPT_RC, rc_rts), rc_rts);
	cr_assert_eq(roce_qp_mask_used(IBV_QPT_UD, rc_rtr), rc_rtr);
}
