/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 (ABI.md §2): the rdma_cm API over uroce's own libibverbs.so.1. Internal
 * objects: an event channel is a queue of events with an eventfd that applications poll; an id
 * wraps struct rdma_cm_id, whose layout is rdma-core's (rdma/rdma_cma.h).
 *
 * Built so far: event channels (blocking and non-blocking), ids of every port space, device
 * lists, event strings. The connection calls (address and route resolution, listen, connect,
 * accept, reject, disconnect, UD, multicast) and rsockets return ENOSYS with a message naming
 * the call until the IB CM runs on the fabric (issue "Connection manager").
 */
#ifndef UROCE_VERBS_SHIM_RDMACM_CMA_H
#define UROCE_VERBS_SHIM_RDMACM_CMA_H

#include <pthread.h>
#include <stdbool.h>
#include <rdma/rdma_cma.h>

struct cma_event {
	struct rdma_cm_event ev; /* first: the application holds &ev */
	struct cma_event *next;
};

struct cma_channel {
	struct rdma_event_channel ch; /* first: ch.fd is an eventfd, readable while events wait */
	pthread_mutex_t lock;
	struct cma_event *head, **tail; /* events not yet taken */
};

struct cma_id {
	struct rdma_cm_id id; /* first: the application holds &id */
	bool sync;            /* created without a channel: it owns id.channel */
};

static inline struct cma_id *to_cma_id(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

static inline struct cma_channel *to_channel(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)ch;
}

/*
 * Report ENOSYS for @call, which is not built yet: a message on stderr the first time (naming
 * the call), errno ENOSYS, and -1 for the caller to return.
 */
int cma_not_yet(const char *call);

#endif
