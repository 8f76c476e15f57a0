/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events of a context (ibv_get_async_event). The data path raises QP, CQ and SRQ
 * events through uroce_async_event(); destroying an object cancels its unread events and waits
 * until the application acknowledged those it read, as rdma-core's destroy does.
 */
#ifndef UROCE_VERBS_SHIM_ASYNC_H
#define UROCE_VERBS_SHIM_ASYNC_H

#include <infiniband/verbs.h>
#include <pthread.h>

#include "verbs-shim/objects.h"

/*
 * Raise TYPE on OBJ: a struct ibv_qp * for QP events (IBV_EVENT_QP_*, COMM_EST, SQ_DRAINED,
 * PATH_MIG*), a struct ibv_cq * for IBV_EVENT_CQ_ERR, a struct ibv_srq * for SRQ events, and
 * the context for port and device events (port 1). Returns 0 or ENOMEM (event lost).
 */
int uroce_async_event(struct uroce_context *ctx, enum ibv_event_type type, void *obj);

/*
 * Before freeing an object: cancel its unread events, then wait (on MUTEX/COND, the rdma-core
 * fields of the object) until *COMPLETED reaches *REPORTED.
 */
void uroce_async_drain(struct uroce_context *ctx, const void *obj, pthread_mutex_t *mutex,
		       pthread_cond_t *cond, const uint32_t *completed, const uint32_t *reported);

#endif
