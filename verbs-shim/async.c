// SPDX-License-Identifier: MIT
/* Asynchronous events (async.h): ibv_get_async_event, ibv_ack_async_event. */
#include "verbs-shim/async.h"

#include <errno.h>

enum event_object { OBJ_QP, OBJ_CQ, OBJ_SRQ, OBJ_WQ, OBJ_PORT, OBJ_DEVICE };

/* Which element of struct ibv_async_event an event type carries (verbs.h). */
static enum event_object event_object(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return OBJ_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return OBJ_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return OBJ_SRQ;
	case IBV_EVENT_WQ_FATAL:
		return OBJ_WQ;
	case IBV_EVENT_DEVICE_FATAL:
		return OBJ_DEVICE;
	default:
		return OBJ_PORT;
	}
}

int uroce_async_event(struct uroce_context *ctx, enum ibv_event_type type, void *obj)
{
	return uroce_evq_push(&ctx->async, type, obj);
}

void uroce_async_drain(struct uroce_context *ctx, const void *obj, pthread_mutex_t *mutex,
		       pthread_cond_t *cond, const uint32_t *completed, const uint32_t *reported)
{
	uroce_evq_cancel(&ctx->async, obj);
	pthread_mutex_lock(mutex);
	while (*completed != *reported)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

/* Count the event as reported on its object, under the queue lock (evq.h). */
static void async_event_taken(const struct uroce_event *e)
{
	pthread_mutex_t *mutex;
	uint32_t *reported;

	switch (event_object(e->type)) {
	case OBJ_CQ:
		mutex = &((struct ibv_cq *)e->obj)->mutex;
		reported = &to_ucq(e->obj)->async_events_reported;
		break;
	case OBJ_QP:
		mutex = &((struct ibv_qp *)e->obj)->mutex;
		reported = &to_uqp(e->obj)->async_events_reported;
		break;
	case OBJ_SRQ:
		mutex = &((struct ibv_srq *)e->obj)->mutex;
		reported = &to_usrq(e->obj)->async_events_reported;
		break;
	default:
		return; /* port and device events: nothing waits for them */
	}
	pthread_mutex_lock(mutex);
	(*reported)++;
	pthread_mutex_unlock(mutex);
}

UROCE_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct uroce_context *ctx = to_uctx(context);
	struct uroce_event e;

	if (uroce_evq_pop(&ctx->async, &e, async_event_taken, NULL))
		return -1;
	event->event_type = e.type;
	switch (event_object(e.type)) {
	case OBJ_CQ:
		event->element.cq = e.obj;
		break;
	case OBJ_QP:
		event->element.qp = e.obj;
		break;
	case OBJ_SRQ:
		event->element.srq = e.obj;
		break;
	case OBJ_WQ:
		event->element.wq = e.obj;
		break;
	case OBJ_PORT:
		event->element.port_num = 1;
		break;
	case OBJ_DEVICE:
		break;
	}
	return 0;
}

UROCE_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event_object(event->event_type)) {
	case OBJ_CQ: {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
		break;
	}
	case OBJ_QP: {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		break;
	}
	case OBJ_SRQ: {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		break;
	}
	default:
		break; /* port and device events have no object to release */
	}
}
