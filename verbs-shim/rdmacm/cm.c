// SPDX-License-Identifier: MIT
/*
 * The rdma_cm connection calls (rdma_listen(3), rdma_connect(3), rdma_accept(3),
 * rdma_reject(3), rdma_disconnect(3), rdma_establish(3), rdma_get_request(3)) over the IB CM:
 * each connection is a cm_conn (cm/ib_cm.h) whose MADs travel on QP 1 (verbs-shim/mad.h),
 * whose deadlines a thread of this library keeps, and whose events become rdma_cm events.
 * What goes on the wire is what the kernel's rdma_cm sends over RoCE (PROTOCOL.md §4.7-4.11):
 * service ID from port space and port, the cma header ahead of the REQ's private data, GIDs
 * that are the endpoints' IP addresses, permissive LIDs.
 *
 * The QP: librdmacm's way. With id->qp, the library moves it to RTR and RTS itself (the
 * active side on the REP, before its RTU; the passive side in rdma_accept) and reports
 * ESTABLISHED; without (rping -q), the active side gets CONNECT_RESPONSE, readies its QP with
 * rdma_init_qp_attr, and rdma_establish sends the RTU. rdma_disconnect moves the QP to ERR
 * (its receives flush) and sends DREQ, or DREP if the peer disconnected first.
 *
 * One lock guards every connection and listener; MADs arrive on the engine's receiving
 * thread, deadlines are kept by the CM thread. The MADs made under the lock are sent once it
 * is released (cma_cm_unlock), so that a send's system call does not keep the other threads out.
 *
 * The module's files: this one holds the connection table, the sending of MADs, their
 * receiving (on_mad) and the CM thread; cm_passive.c the listeners and the passive side,
 * cm_active.c the active side, cm_events.c the CM events turned into rdma_cm events and QP
 * attributes, cm_disconnect.c disconnection and what a destroyed id leaves to finish.
 * cm_int.h is what they share.
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
#include "transport/container.h"
#include "verbs-shim/export.h"
#include "verbs-shim/mad.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/htab.h"
#include "verbs-shim/rdmacm/cm_int.h"

struct cma_cm cma_cm = {.lock = PTHREAD_MUTEX_INITIALIZER,
			.wake = PTHREAD_COND_INITIALIZER,
			.outbox_tail = &cma_cm.outbox,
			.send_lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t cma_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Send @mad from @sgid to @dgid once the lock is released (at once without memory). Locked. */
void cma_send_mad(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
		  const uint8_t mad[CM_MAD_LEN])
{
	struct cma_mad *m = malloc(sizeof(*m));

	if (!m) {
		uroce_mad_send(sgid, dgid, tos, 64, mad); /* a loss is retried */
		return;
	}
	m->next = NULL;
	memcpy(m->sgid, sgid, 16);
	memcpy(m->dgid, dgid, 16);
	m->tos = tos;
	memcpy(m->mad, mad, CM_MAD_LEN);
	*cma_cm.outbox_tail = m;
	cma_cm.outbox_tail = &m->next;
}

/*
 * Release the lock, then send the MADs made under it. The send lock, taken before the lock is
 * released, keeps the MADs of every thread in the order they were made: a connection's
 * messages leave as its state machine wrote them.
 */
void cma_cm_unlock(void)
{
	struct cma_mad *m = cma_cm.outbox;

	if (!m) {
		pthread_mutex_unlock(&cma_cm.lock);
		return;
	}
	cma_cm.outbox = NULL;
	cma_cm.outbox_tail = &cma_cm.outbox;
	pthread_mutex_lock(&cma_cm.send_lock);
	pthread_mutex_unlock(&cma_cm.lock);
	while (m) {
		struct cma_mad *next = m->next;

		uroce_mad_send(m->sgid, m->dgid, m->tos, 64, m->mad); /* a loss is retried */
		free(m);
		m = next;
	}
	pthread_mutex_unlock(&cma_cm.send_lock);
}

static const struct cm_timing timing = {.remote_response_timeout = CM_RESPONSE_TIMEOUT,
					.packet_life_time = PACKET_LIFE_TIME,
					.max_cm_retries = CM_MAX_RETRIES,
					.timewait = LOCAL_ACK_TIMEOUT + 2};

void cma_sa_of(struct sockaddr_storage *ss, const uint8_t gid[16], uint16_t port)
{
	static const uint8_t mapped[12] = {[10] = 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid, mapped, 12)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, gid + 12, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, gid, 16);
	}
}

uint16_t cma_port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* Send what the connection has to send. Locked. */
void cma_conn_flush(struct cma_conn *c)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_LEN];

	while (cm_conn_write(&c->cm, &m, cma_now()))
		if (cm_encode(&m, mad))
			cma_send_mad(c->sgid, c->dgid, c->tos, mad);
}

/* The keys of the indexes: our comm ID; the peer's comm ID (or SIDR request ID) and GID. */
static uint64_t local_hash(uint32_t id)
{
	return cma_htab_hash(&id, sizeof(id));
}

static uint64_t peer_hash(uint32_t id, const uint8_t gid[16])
{
	uint8_t key[20];

	memcpy(key, &id, 4);
	memcpy(key + 4, gid, 16);
	return cma_htab_hash(key, sizeof(key));
}

/* The connection whose comm ID is @id, or NULL. Locked. */
static struct cma_conn *conn_by_local(uint32_t id)
{
	for (struct cma_hlink *l = cma_htab_first(&cma_cm.by_local, local_hash(id)); l;
	     l = cma_htab_next(l))
		if (uroce_container_of(l, struct cma_conn, by_local)->cm.local_id == id)
			return uroce_container_of(l, struct cma_conn, by_local);
	return NULL;
}

/*
 * The passive connection a REQ (@sidr false: @id its comm ID) or SIDR_REQ (@sidr: its request
 * ID) from @gid made, or NULL. Locked.
 */
struct cma_conn *cma_conn_by_peer(bool sidr, uint32_t id, const uint8_t gid[16])
{
	for (struct cma_hlink *l = cma_htab_first(&cma_cm.by_peer, peer_hash(id, gid)); l;
	     l = cma_htab_next(l)) {
		struct cma_conn *c = uroce_container_of(l, struct cma_conn, by_peer);

		if (c->sidr == sidr && c->cm.remote_id == id && !memcmp(c->dgid, gid, 16))
			return c;
	}
	return NULL;
}

/* Index the passive @c by the request that made it: @id from @c->dgid. Locked. */
void cma_conn_index_peer(struct cma_conn *c, uint32_t id)
{
	/* Without memory a repeated request is not recognised: it is refused as a new one is. */
	(void)cma_htab_insert(&cma_cm.by_peer, &c->by_peer, peer_hash(id, c->dgid));
}

static void unlink_conn(struct cma_conn *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	cma_htab_remove(&cma_cm.by_local, &c->by_local);
	cma_htab_remove(&cma_cm.by_peer, &c->by_peer); /* nothing for a link never put in */
}

/* Tell the host when the connection becomes or stops being established. Locked. */
static void announce(struct cma_conn *c)
{
	bool up = c->cm.state == CM_ESTABLISHED && !c->sidr;
	struct uroce_cm_conn cc = {.local_id = c->cm.local_id,
				   .remote_id = c->cm.remote_id,
				   .remote_qpn = c->peer_qpn,
				   .tos = c->tos};

	if (up == c->announced)
		return;
	memcpy(cc.sgid, c->sgid, 16);
	memcpy(cc.dgid, c->dgid, 16);
	uroce_cm_conn_state(up, &cc);
	c->announced = up;
}

/* After a connection's MAD or deadline: send, report, and free it once it is done. Locked. */
void cma_conn_settle(struct cma_conn *c)
{
	cma_conn_flush(c);
	cma_conn_deliver(c);
	cma_conn_flush(c);
	announce(c);
	if (c->cm.state == CM_CLOSED && !c->id) {
		unlink_conn(c);
		free(c);
	} else if (cm_conn_expiry(&c->cm) < cma_cm.sleep_until) {
		/* Only a deadline before the one the CM thread sleeps until needs waking it. */
		pthread_cond_signal(&cma_cm.wake);
	}
}

struct cma_conn *cma_conn_new(void)
{
	struct cma_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* The host routes the peer's answers to us by the tag (cm/route.h). */
	cm_conn_init(&c->cm, cm_comm_id(cma_cm.tag, cma_cm.next_comm_seq++), &timing);
	if (cma_htab_insert(&cma_cm.by_local, &c->by_local, local_hash(c->cm.local_id))) {
		free(c);
		return NULL;
	}
	if (getrandom(&c->my_psn, sizeof(c->my_psn), 0) < 0)
		c->my_psn = (uint32_t)cma_now();
	c->my_psn &= 0xFFFFFF;
	c->next = cma_cm.conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &cma_cm.conns;
	cma_cm.conns = c;
	return c;
}

/* The engine's receiving thread: a MAD on QP 1. */
static void on_mad(void *arg, const struct uroce_mad_rx *rx)
{
	struct cm_route r = cm_route_of(rx->mad, CM_MAD_LEN);
	struct cm_msg m;

	(void)arg;
	if (r.kind == CM_ROUTE_NONE || cm_decode(rx->mad, CM_MAD_LEN, &m) != CM_OK)
		return;
	pthread_mutex_lock(&cma_cm.lock);
	if (m.hdr.attr_id == CM_ATTR_REQ) {
		cma_on_req(&m, rx);
	} else if (m.hdr.attr_id == CM_ATTR_SIDR_REQ) {
		cma_on_sidr_req(&m, rx);
	} else {
		/* Every other message names our comm ID (route.h). */
		struct cma_conn *c = conn_by_local(r.comm_id);

		if (!c)
			cma_answer_unclaimed(rx); /* a DREQ of a connection gone: DREP */
		else if (cm_conn_read(&c->cm, &m, cma_now()))
			cma_conn_settle(c);
	}
	cma_cm_unlock();
}

/*
 * The engine's progress thread: an ICMP error for a MAD sent to @gid, whose host then runs no
 * CM. A request waiting there fails now with that error rather than after its retries (the
 * kernel's CM waits them out); a DREQ waiting for its DREP ends as if it came, as the kernel's
 * CM on that host would have answered (cm_conn_unreachable).
 */
static void on_unreachable(void *arg, const uint8_t gid[16], int err)
{
	(void)arg;
	pthread_mutex_lock(&cma_cm.lock);
	for (struct cma_conn *c = cma_cm.conns, *after; c; c = after) {
		after = c->next;
		if (!memcmp(c->dgid, gid, 16) && cm_conn_unreachable(&c->cm, cma_now())) {
			c->unreachable = err; /* the status cma_conn_deliver() reports */
			cma_conn_settle(c);
		}
	}
	cma_cm_unlock();
}

/* The CM thread: retries, time-outs and time-wait of every connection. */
static void *cm_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cma_cm.lock);
	for (;;) {
		uint64_t next = UINT64_MAX, now = cma_now();
		struct cma_conn *c = cma_cm.conns;

		while (c) {
			struct cma_conn *after = c->next;

			if (cm_conn_expiry(&c->cm) <= now) {
				cm_conn_handle_expiry(&c->cm, now);
				cma_conn_settle(c);
			}
			c = after;
		}
		if (cma_cm.outbox) {
			/* What the deadlines made goes out before the thread sleeps; then it looks
			 * again, the lock having been free meanwhile. */
			cma_cm_unlock();
			pthread_mutex_lock(&cma_cm.lock);
			continue;
		}
		for (c = cma_cm.conns; c; c = c->next)
			if (cm_conn_expiry(&c->cm) < next)
				next = cm_conn_expiry(&c->cm);
		cma_cm.sleep_until = next;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&cma_cm.wake, &cma_cm.lock);
		} else {
			struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
					      .tv_nsec = (long)(next % 1000000000u)};

			pthread_cond_timedwait(&cma_cm.wake, &cma_cm.lock, &ts);
		}
		cma_cm.sleep_until = 0;
	}
	return NULL;
}

/* Start receiving MADs and keeping deadlines. Locked. 0 or an errno. */
int cma_cm_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	if (cma_cm.started)
		return 0;
	err = uroce_mad_set_handler(on_mad, NULL);
	if (!err)
		err = uroce_mad_set_unreachable_handler(on_unreachable, NULL);
	if (!err)
		err = uroce_cm_comm_tag(&cma_cm.tag);
	if (err)
		return err;
	if (getrandom(&cma_cm.next_comm_seq, sizeof(cma_cm.next_comm_seq), 0) < 0)
		cma_cm.next_comm_seq = (uint32_t)cma_now();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&cma_cm.wake);
	pthread_cond_init(&cma_cm.wake, &ca);
	pthread_condattr_destroy(&ca);
	/* All signals blocked on the thread (perftest's SIGALRM belongs to the program). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&cma_cm.thread, NULL, cm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err) {
		pthread_detach(cma_cm.thread);
		cma_cm.started = true;
		cma_cm.pid = getpid();
	}
	return err;
}

void cma_cm_start_early(void)
{
	pthread_mutex_lock(&cma_cm.lock);
	(void)cma_cm_start(); /* a failure comes back from the rdma_connect or rdma_listen */
	cma_cm_unlock();
}
