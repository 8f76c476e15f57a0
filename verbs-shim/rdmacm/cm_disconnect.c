// SPDX-License-Identifier: MIT
/*
 * Disconnection: rdma_disconnect, and what an id that goes away leaves to finish as Linux's
 * cm_destroy_id does, at once or, for the ids a process leaves behind, at exit.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cm/ib_cm.h"
#include "cm/route.h"
#include "verbs-shim/export.h"
#include "verbs-shim/mad.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/htab.h"
#include "verbs-shim/rdmacm/cm_int.h"

/*
 * The QP goes to ERR (its receives flush) and the peer is told (DREQ, or DREP when it
 * disconnected first); DISCONNECTED follows. 0, or -1 with errno EINVAL (not connected).
 */
UROCE_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return cma_fail(EINVAL);
	cma_qp_to_error(id);
	pthread_mutex_lock(&cma_cm.lock);
	c = to_cma_id(id)->conn;
	err = c ? cm_conn_disconnect(&c->cm, NULL, 0, cma_now()) : EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_DISCONNECTED;
		cma_conn_settle(c);
	}
	cma_cm_unlock();
	return err ? cma_fail(err) : 0;
}

/*
 * A connection whose id goes away (destroyed, or left behind at exit) disconnects, as Linux does
 * (cm_destroy_id): a DREQ if it is up, the DREP to the peer's DREQ if one came, a rejecting
 * SIDR_REP to a SIDR request never answered. Locked. True if a MAD is due.
 */
static bool disconnect_abandoned(struct cma_conn *c)
{
	if (c->cm.state == CM_SIDR_REQ_RCVD) { /* cm_destroy_id: cm_reject_sidr_req */
		cma_sidr_reply(c, CM_SIDR_REJECT, 0, NULL, 0);
		return true;
	}
	if (c->cm.state != CM_ESTABLISHED && c->cm.state != CM_DREQ_RCVD)
		return false;
	cm_conn_disconnect(&c->cm, NULL, 0, cma_now());
	return true;
}

/*
 * At exit: the kernel destroys the ids a process leaves behind, so their connections disconnect
 * (disconnect_abandoned). The disconnects must still reach the peers, which the kernel's CM
 * would go on retrying after the process is gone: repeat each unanswered DREQ every 20 ms, for
 * at most half a second, until answered. A child of fork() leaves its parent's connections alone.
 */
__attribute__((destructor)) static void finish_disconnects(void)
{
	uint64_t end = cma_now() + 500000000u;
	bool waiting = true;

	pthread_mutex_lock(&cma_cm.lock);
	if (!cma_cm.started || cma_cm.pid != getpid()) {
		cma_cm_unlock();
		return;
	}
	for (struct cma_conn *c = cma_cm.conns; c; c = c->next)
		if (disconnect_abandoned(c))
			cma_conn_flush(c);
	while (waiting && cma_now() < end) {
		struct timespec ts = {0, 10000000};

		waiting = false;
		for (struct cma_conn *c = cma_cm.conns; c; c = c->next) {
			if (c->cm.state == CM_DREQ_SENT) {
				cm_conn_hurry(&c->cm, 20000000u, cma_now());
				waiting = true;
			}
		}
		pthread_cond_signal(&cma_cm.wake);
		cma_cm_unlock();
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&cma_cm.lock);
	}
	cma_cm_unlock();
}

void cma_conn_forget(struct cma_id *id)
{
	pthread_mutex_lock(&cma_cm.lock);
	for (struct cma_id **pp = &cma_cm.listeners; *pp; pp = &(*pp)->next_listener) {
		if (*pp == id) {
			*pp = id->next_listener;
			break;
		}
	}
	if (id->conn) {
		struct cma_conn *c = id->conn;

		disconnect_abandoned(c);
		c->id = NULL;
		id->conn = NULL;
		cma_conn_settle(c);
	}
	cma_cm_unlock();
}
