/* SPDX-License-Identifier: MIT */
/*
 * The transport core's view of a verbs QP (struct roce_qp_env, transport/qp.h), given to the
 * engine when a QP is created (uroce_qp_engine_init): memory by key (mr.h), the receive queue
 * or SRQ, completions on the QP's CQs (cq.h), async events (async.h), the SRQ an XRC packet
 * names (xrcd.c), and the moves to SQE and ERR (flush.h). Above those modules and below the
 * QP's; the engine reaches them only through this table.
 *
 * Each callback's ctx is the struct uroce_qp; each runs with qp->lock held, from whatever runs
 * the core (engine_tx.c). recv_take takes the SRQ's lock inside the QP's (objects.h, "Locks").
 */
#ifndef UROCE_VERBS_SHIM_CORE_ENV_H
#define UROCE_VERBS_SHIM_CORE_ENV_H

#include "transport/qp.h"

extern const struct roce_qp_env uroce_core_env;

#endif
