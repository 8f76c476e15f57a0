// SPDX-License-Identifier: MIT
/*
 * QP state transitions (qp_state.h). The required and optional attributes are those Linux
 * enforces for verbs applications (ib_modify_qp_is_ok, drivers/infiniband/core/verbs.c), for the
 * QP types uroce implements; XRC_SEND is the kernel's XRC_INI, XRC_RECV its XRC_TGT.
 */
#include "transport/qp_state.h"

enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_NUM };

struct transition {
	bool valid;
	int req[T_NUM];
	int opt[T_NUM];
};

#define S(x) IBV_QPS_##x
#define A(x) IBV_QP_##x

/* RTS -> RTS and SQD -> RTS allow the same attributes. */
#define RTS_OPT                                                                                    \
	{                                                                                          \
		[T_RC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |         \
			 A(PATH_MIG_STATE),                                                        \
		[T_UC] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE),         \
		[T_UD] = A(CUR_STATE) | A(QKEY),                                                   \
		[T_XI] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PATH_MIG_STATE),         \
		[T_XT] = A(CUR_STATE) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(MIN_RNR_TIMER) |         \
			 A(PATH_MIG_STATE),                                                        \
	}

/* One row per current state, one entry per next state. */
/* clang-format off */
static const struct transition table[S(ERR) + 1][S(ERR) + 1] = {
	[S(RESET)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(INIT)] = {
			.valid = true,
			.req = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[T_XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
		},
	},
	[S(INIT)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(INIT)] = {
			.valid = true,
			.opt = {
				[T_RC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UC] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_UD] = A(PKEY_INDEX) | A(PORT) | A(QKEY),
				[T_XI] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
				[T_XT] = A(PKEY_INDEX) | A(PORT) | A(ACCESS_FLAGS),
			},
		},
		[S(RTR)] = {
			.valid = true,
			.req = {
				[T_RC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
				[T_UC] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[T_XI] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN),
				[T_XT] = A(AV) | A(PATH_MTU) | A(DEST_QPN) | A(RQ_PSN) |
					 A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER),
			},
			.opt = {
				[T_RC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UC] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
				[T_XI] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
				[T_XT] = A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX),
			},
		},
	},
	[S(RTR)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {
			.valid = true,
			.req = {
				[T_RC] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
					 A(MAX_QP_RD_ATOMIC),
				[T_UC] = A(SQ_PSN),
				[T_UD] = A(SQ_PSN),
				[T_XI] = A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) | A(SQ_PSN) |
					 A(MAX_QP_RD_ATOMIC),
				[T_XT] = A(TIMEOUT) | A(SQ_PSN),
			},
			.opt = RTS_OPT,
		},
	},
	[S(RTS)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true, .opt = RTS_OPT},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_RC] = A(EN_SQD_ASYNC_NOTIFY),
				[T_UC] = A(EN_SQD_ASYNC_NOTIFY),
				[T_UD] = A(EN_SQD_ASYNC_NOTIFY),
				[T_XI] = A(EN_SQD_ASYNC_NOTIFY),
				[T_XT] = A(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[S(SQD)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {.valid = true, .opt = RTS_OPT},
		[S(SQD)] = {
			.valid = true,
			.opt = {
				[T_RC] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
					 A(MAX_QP_RD_ATOMIC) | A(MAX_DEST_RD_ATOMIC) | A(ALT_PATH) |
					 A(ACCESS_FLAGS) | A(PKEY_INDEX) | A(MIN_RNR_TIMER) |
					 A(PATH_MIG_STATE),
				[T_UC] = A(AV) | A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(PATH_MIG_STATE),
				[T_UD] = A(PKEY_INDEX) | A(QKEY),
				[T_XI] = A(PORT) | A(AV) | A(TIMEOUT) | A(RETRY_CNT) | A(RNR_RETRY) |
					 A(MAX_QP_RD_ATOMIC) | A(ALT_PATH) | A(ACCESS_FLAGS) |
					 A(PKEY_INDEX) | A(PATH_MIG_STATE),
				[T_XT] = A(PORT) | A(AV) | A(TIMEOUT) | A(MAX_DEST_RD_ATOMIC) |
					 A(ALT_PATH) | A(ACCESS_FLAGS) | A(PKEY_INDEX) |
					 A(MIN_RNR_TIMER) | A(PATH_MIG_STATE),
			},
		},
	},
	[S(SQE)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
		[S(RTS)] = {
			.valid = true,
			.opt = {
				[T_UC] = A(CUR_STATE) | A(ACCESS_FLAGS),
				[T_UD] = A(CUR_STATE) | A(QKEY),
			},
		},
	},
	[S(ERR)] = {
		[S(RESET)] = {.valid = true},
		[S(ERR)] = {.valid = true},
	},
};
/* clang-format on */

bool roce_qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type type,
			   int mask)
{
	const struct transition *t;
	int req, opt, ti;

	switch (type) {
	case IBV_QPT_RC:
		ti = T_RC;
		break;
	case IBV_QPT_UC:
		ti = T_UC;
		break;
	case IBV_QPT_UD:
		ti = T_UD;
		break;
	case IBV_QPT_XRC_SEND:
		ti = T_XI;
		break;
	case IBV_QPT_XRC_RECV:
		ti = T_XT;
		break;
	default:
		return false;
	}
	if ((unsigned int)cur > S(ERR) || (unsigned int)next > S(ERR))
		return false;
	if ((mask & A(CUR_STATE)) && cur != S(RTR) && cur != S(RTS) && cur != S(SQD) &&
	    cur != S(SQE))
		return false;
	t = &table[cur][next];
	if (!t->valid)
		return false;
	req = t->req[ti];
	opt = t->opt[ti];
	return (mask & req) == req && !(mask & ~(req | opt | A(STATE)));
}

int roce_qp_mask_used(enum ibv_qp_type type, int mask)
{
	switch (type) {
	case IBV_QPT_XRC_SEND:
		return mask & ~(A(MAX_DEST_RD_ATOMIC) | A(MIN_RNR_TIMER));
	case IBV_QPT_XRC_RECV:
		return mask & ~(A(MAX_QP_RD_ATOMIC) | A(RETRY_CNT) | A(RNR_RETRY));
	default:
		return mask;
	}
}
