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
 * is released (cm_unlock), so that a send's system call does not keep the other threads out.
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

/* What Linux puts in a REQ over RoCE (PROTOCOL.md §4.4, §4.9). */
#define CM_RESPONSE_TIMEOUT 20
#define CM_MAX_RETRIES      15
#define PACKET_LIFE_TIME    16
#define LOCAL_ACK_TIMEOUT   17 /* cm_ack_timeout(15, 16) */
#define TARGET_ACK_DELAY    15

struct cma_conn {
	struct cm_conn cm;
	struct cma_id *id; /* NULL once the id is destroyed */
	uint8_t sgid[16], dgid[16];
	/*
	 * rdma_cm's seq_num: the Starting PSN of the REQ or REP this side sends, which is the PSN
	 * it receives at (its QP's rq_psn); the PSN it sends from is the peer's, kept by the pure
	 * CM (cm.sq_psn).
	 */
	uint32_t my_psn, peer_qpn;
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry, path_mtu;
	uint8_t tos;     /* the path's traffic class: the IP TOS of its MADs and its QP's packets */
	bool announced;  /* the host knows it established (mad.h uroce_cm_conn_state) */
	int unreachable; /* the ICMP error that ended its request (on_unreachable), or 0 */
	bool sidr;       /* UD: a SIDR exchange rather than a connection */
	struct cma_conn *next, **pprev; /* cm.conns */
	struct cma_hlink by_local;      /* cm.by_local: our comm ID */
	struct cma_hlink by_peer;       /* cm.by_peer (passive only): the peer's ID and GID */
};

/* A MAD made under the lock, to be sent once it is released (cm_unlock). */
struct cma_mad {
	struct cma_mad *next;
	uint8_t sgid[16], dgid[16], tos;
	uint8_t mad[CM_MAD_LEN];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct cma_mad *outbox, **outbox_tail; /* lock: MADs to send, oldest first */
	pthread_mutex_t send_lock;             /* taken before lock is released: order of sends */
	struct cma_conn *conns;
	struct cma_htab by_local, by_peer; /* the conns by key, for the MADs (htab.h) */
	struct cma_id *listeners;
	uint32_t tag, next_comm_seq; /* comm IDs: cm_comm_id(tag, seq), route.h */
	uint64_t sleep_until;        /* the CM thread's wake-up (UINT64_MAX: none; 0: awake) */
	bool started;
	pid_t pid; /* the process that started the CM thread (a child of fork() has none) */
	pthread_t thread;
} cm = {.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.outbox_tail = &cm.outbox,
	.send_lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* Send @mad from @sgid to @dgid once the lock is released (at once without memory). Locked. */
static void send_mad(const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
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
	*cm.outbox_tail = m;
	cm.outbox_tail = &m->next;
}

/*
 * Release the lock, then send the MADs made under it. The send lock, taken before the lock is
 * released, keeps the MADs of every thread in the order they were made: a connection's
 * messages leave as its state machine wrote them.
 */
static void cm_unlock(void)
{
	struct cma_mad *m = cm.outbox;

	if (!m) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	cm.outbox = NULL;
	cm.outbox_tail = &cm.outbox;
	pthread_mutex_lock(&cm.send_lock);
	pthread_mutex_unlock(&cm.lock);
	while (m) {
		struct cma_mad *next = m->next;

		uroce_mad_send(m->sgid, m->dgid, m->tos, 64, m->mad); /* a loss is retried */
		free(m);
		m = next;
	}
	pthread_mutex_unlock(&cm.send_lock);
}

static const struct cm_timing timing = {.remote_response_timeout = CM_RESPONSE_TIMEOUT,
					.packet_life_time = PACKET_LIFE_TIME,
					.max_cm_retries = CM_MAX_RETRIES,
					.timewait = LOCAL_ACK_TIMEOUT + 2};

static void sa_of(struct sockaddr_storage *ss, const uint8_t gid[16], uint16_t port)
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

static uint16_t port_of(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* Send what the connection has to send. Locked. */
static void flush(struct cma_conn *c)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_LEN];

	while (cm_conn_write(&c->cm, &m, now_ns()))
		if (cm_encode(&m, mad))
			send_mad(c->sgid, c->dgid, c->tos, mad);
}

/* The QP attributes for RTR and RTS from the connection (PROTOCOL.md §4.9). */
static int qp_attr(struct cma_conn *c, struct ibv_qp_attr *a, int *mask)
{
	struct rdma_cm_id *id = &c->id->id;
	int idx;

	switch (a->qp_state) {
	case IBV_QPS_RTR:
		idx = cma_gid_index(id->verbs, c->sgid);
		if (idx < 0)
			return ENODEV;
		a->path_mtu = (enum ibv_mtu)c->path_mtu;
		a->dest_qp_num = c->peer_qpn;
		/* rdma_init_qp_attr's RTR rq_psn is the id's own seq_num, even before the REP. */
		a->rq_psn = c->my_psn;
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = id->port_num;
		memcpy(a->ah_attr.grh.dgid.raw, c->dgid, 16);
		a->ah_attr.grh.sgid_index = (uint8_t)idx;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.traffic_class = c->tos;
		/* The access the connection grants (ib_cm's RTR attributes). */
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (c->responder_resources)
			a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_ACCESS_FLAGS;
		/* A responder's (ib_cm's cm_init_qp_rtr_attr): not an XRC initiator's. */
		if (id->qp_type != IBV_QPT_XRC_SEND) {
			a->max_dest_rd_atomic = c->responder_resources ? c->responder_resources : 1;
			/* 0 (655.36 ms, IBA table 45), as ib_cm's cm_init_qp_rtr_attr sets
			 * it: the RNR NAKs of an rdma_cm QP on Linux carry timer 0. */
			a->min_rnr_timer = 0;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = c->cm.sq_psn;
		a->timeout = c->id->ack_timeout_set ? c->id->ack_timeout : LOCAL_ACK_TIMEOUT;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
		/* A requester's (cm_init_qp_rts_attr): not an XRC target's, which only answers. */
		if (id->qp_type != IBV_QPT_XRC_RECV) {
			a->retry_cnt = c->retry_count;
			a->rnr_retry = c->rnr_retry;
			a->max_rd_atomic = c->initiator_depth ? c->initiator_depth : 1;
			*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return EINVAL;
	}
}

/* Take id->qp to RTR and RTS. 0 or an errno. */
static int ready_qp(struct cma_conn *c)
{
	static const enum ibv_qp_state states[] = {IBV_QPS_RTR, IBV_QPS_RTS};

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {.qp_state = states[i]};
		int mask, err = qp_attr(c, &a, &mask);

		if (!err)
			err = ibv_modify_qp(c->id->id.qp, &a, mask);
		if (err)
			return err;
	}
	return 0;
}

static void qp_to_error(struct rdma_cm_id *id)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (id->qp)
		ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
}

static void set_conn_param(struct rdma_conn_param *p, const struct cma_conn *c)
{
	memset(p, 0, sizeof(*p));
	p->responder_resources = c->initiator_depth; /* the peer's, seen from here */
	p->initiator_depth = c->responder_resources;
	p->rnr_retry_count = c->rnr_retry;
	p->retry_count = c->retry_count;
	p->qp_num = c->peer_qpn;
}

/*
 * UD: the SIDR_REP came (§4.4 SIDR_REP). Success: ESTABLISHED with what an address handle to
 * the peer's QP needs; another status: UNREACHABLE with it. Locked.
 */
static void sidr_answered(struct cma_conn *c, const struct cm_sidr_rep *rep)
{
	struct rdma_cm_id *id = &c->id->id;
	struct cma_event_ud ud = {.qp_num = rep->qpn, .qkey = rep->qkey};
	int idx = cma_gid_index(id->verbs, c->sgid);

	if (rep->status != CM_SIDR_OK || idx < 0) {
		c->id->state = CMA_DISCONNECTED;
		cma_ud_event(id, RDMA_CM_EVENT_UNREACHABLE, rep->status ? rep->status : -ENODEV,
			     NULL, &ud, NULL, 0);
		return;
	}
	ud.ah_attr.is_global = 1;
	ud.ah_attr.port_num = id->port_num;
	memcpy(ud.ah_attr.grh.dgid.raw, c->dgid, 16);
	ud.ah_attr.grh.sgid_index = (uint8_t)idx;
	ud.ah_attr.grh.hop_limit = 64;
	ud.ah_attr.grh.traffic_class = c->tos;
	c->id->state = CMA_CONNECTED;
	cma_ud_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &ud, rep->private_data,
		     CM_SIDR_REP_PRIVATE);
}

/* Turn the connection's CM events into rdma_cm events. Locked. */
static void deliver(struct cma_conn *c)
{
	struct cm_event ev;

	while (cm_conn_event(&c->cm, &ev)) {
		struct rdma_cm_id *id = c->id ? &c->id->id : NULL;
		struct rdma_conn_param p;
		int err;

		if (!id)
			continue; /* destroyed: the connection only finishes its protocol */
		set_conn_param(&p, c);
		switch (ev.type) {
		case CM_EV_REP:
			c->id->remote_ece = (struct ibv_ece){
				.vendor_id = (uint32_t)ev.msg.u.rep.vendor_id[0] << 16 |
					     (uint32_t)ev.msg.u.rep.vendor_id[1] << 8 |
					     ev.msg.u.rep.vendor_id[2],
				.options = ev.msg.hdr.attr_mod};
			c->peer_qpn = ev.msg.u.rep.local_qpn;
			c->rnr_retry = ev.msg.u.rep.rnr_retry_count;
			p.qp_num = c->peer_qpn;
			if (!id->qp) {
				cma_conn_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, &p,
					       ev.msg.u.rep.private_data, CM_REP_PRIVATE);
				break;
			}
			err = ready_qp(c);
			if (err) {
				cm_conn_reject(&c->cm, CM_REJ_CONSUMER, NULL, 0, now_ns());
				c->id->state = CMA_DISCONNECTED;
				cma_conn_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -err, NULL, &p,
					       NULL, 0);
				break;
			}
			cm_conn_rtu(&c->cm, now_ns());
			c->id->state = CMA_CONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &p,
				       ev.msg.u.rep.private_data, CM_REP_PRIVATE);
			break;
		case CM_EV_RTU:
			c->id->state = CMA_CONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, &p, NULL, 0);
			break;
		case CM_EV_REJ:
			c->id->state = CMA_DISCONNECTED;
			cma_conn_event(id, RDMA_CM_EVENT_REJECTED, ev.msg.u.rej.reason, NULL, &p,
				       ev.msg.u.rej.private_data, CM_REJ_PRIVATE);
			break;
		case CM_EV_TIMEOUT:
			if (c->id->state == CMA_CONNECTING || c->sidr) {
				c->id->state = CMA_DISCONNECTED;
				cma_conn_event(id, RDMA_CM_EVENT_UNREACHABLE,
					       c->unreachable ? -c->unreachable : -ETIMEDOUT, NULL,
					       &p, NULL, 0);
			} else {
				cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			}
			break;
		case CM_EV_DREQ:
			/*
			 * The QP stays as it is, as with rdma-core: the kernel's rdma_cm moves
			 * only QPs it created itself to Error on a DREQ (cma_modify_qp_err); the
			 * application's rdma_disconnect does it for its own. Done here, on the
			 * engine's thread, it raced with an application destroying the QP.
			 */
			c->id->state = CMA_DISCONNECTED;
			cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			break;
		case CM_EV_DREP:
			cma_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			break;
		case CM_EV_TIMEWAIT_EXIT:
			cma_event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
			break;
		case CM_EV_SIDR_REP:
			sidr_answered(c, &ev.msg.u.sidr_rep);
			break;
		case CM_EV_REQ: /* reported by on_req */
		case CM_EV_MRA:
			break;
		}
	}
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
	for (struct cma_hlink *l = cma_htab_first(&cm.by_local, local_hash(id)); l;
	     l = cma_htab_next(l))
		if (uroce_container_of(l, struct cma_conn, by_local)->cm.local_id == id)
			return uroce_container_of(l, struct cma_conn, by_local);
	return NULL;
}

/*
 * The passive connection a REQ (@sidr false: @id its comm ID) or SIDR_REQ (@sidr: its request
 * ID) from @gid made, or NULL. Locked.
 */
static struct cma_conn *conn_by_peer(bool sidr, uint32_t id, const uint8_t gid[16])
{
	for (struct cma_hlink *l = cma_htab_first(&cm.by_peer, peer_hash(id, gid)); l;
	     l = cma_htab_next(l)) {
		struct cma_conn *c = uroce_container_of(l, struct cma_conn, by_peer);

		if (c->sidr == sidr && c->cm.remote_id == id && !memcmp(c->dgid, gid, 16))
			return c;
	}
	return NULL;
}

/* Index the passive @c by the request that made it: @id from @c->dgid. Locked. */
static void index_peer(struct cma_conn *c, uint32_t id)
{
	/* Without memory a repeated request is not recognised: it is refused as a new one is. */
	(void)cma_htab_insert(&cm.by_peer, &c->by_peer, peer_hash(id, c->dgid));
}

static void unlink_conn(struct cma_conn *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	cma_htab_remove(&cm.by_local, &c->by_local);
	cma_htab_remove(&cm.by_peer, &c->by_peer); /* nothing for a link never put in */
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
static void settle(struct cma_conn *c)
{
	flush(c);
	deliver(c);
	flush(c);
	announce(c);
	if (c->cm.state == CM_CLOSED && !c->id) {
		unlink_conn(c);
		free(c);
	} else if (cm_conn_expiry(&c->cm) < cm.sleep_until) {
		/* Only a deadline before the one the CM thread sleeps until needs waking it. */
		pthread_cond_signal(&cm.wake);
	}
}

static struct cma_conn *new_conn(void)
{
	struct cma_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* The host routes the peer's answers to us by the tag (cm/route.h). */
	cm_conn_init(&c->cm, cm_comm_id(cm.tag, cm.next_comm_seq++), &timing);
	if (cma_htab_insert(&cm.by_local, &c->by_local, local_hash(c->cm.local_id))) {
		free(c);
		return NULL;
	}
	if (getrandom(&c->my_psn, sizeof(c->my_psn), 0) < 0)
		c->my_psn = (uint32_t)now_ns();
	c->my_psn &= 0xFFFFFF;
	c->next = cm.conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &cm.conns;
	cm.conns = c;
	return c;
}

/* The listener for a REQ's service ID and destination. Locked. */
static struct cma_id *listener_of(uint64_t sid, const uint8_t dgid[16])
{
	for (struct cma_id *l = cm.listeners; l; l = l->next_listener) {
		struct rdma_cm_id *id = &l->id;
		static const uint8_t any4[16] = {[10] = 0xff, 0xff}, any6[16];
		union ibv_gid g = cma_gid(&id->route.addr.src_addr);

		if (cm_service_id((enum cm_port_space)id->ps, port_of(&id->route.addr.src_addr)) !=
		    sid)
			continue;
		if (!memcmp(g.raw, any4, 16) || !memcmp(g.raw, any6, 16) ||
		    !memcmp(g.raw, dgid, 16))
			return l;
	}
	return NULL;
}

/* Refuse the request @rx: REJ @reason, or SIDR_REP @sidr_status (cm/route.h). */
static void refuse(const struct uroce_mad_rx *rx, uint16_t reason, uint8_t sidr_status)
{
	uint8_t mad[CM_MAD_LEN];

	if (cm_refuse_request(rx->mad, CM_MAD_LEN, reason, sidr_status, mad))
		send_mad(rx->dgid, rx->sgid, rx->tos, mad);
}

/* Answer a MAD no connection or listener takes, as a Linux CM does (cm/route.h). */
static void answer_unclaimed(const struct uroce_mad_rx *rx)
{
	uint8_t mad[CM_MAD_LEN];

	if (cm_answer_unclaimed(rx->mad, CM_MAD_LEN, mad))
		send_mad(rx->dgid, rx->sgid, rx->tos, mad);
}

/*
 * A request @rx to listener @l (NULL: gone) for service @sid with private data @pd (the cma
 * header first): a connection with a new child id, as librdmacm makes it (ABI.md: context,
 * channel, port space, QP type of the listener), its addresses from the packet and the cma
 * header; or NULL when refused or unusable (answered as the kernel's rdma_cm would). Locked.
 */
static struct cma_conn *request_conn(struct cma_id *l, const struct uroce_mad_rx *rx, uint64_t sid,
				     const uint8_t *pd)
{
	struct rdma_cm_id *child;
	struct cma_conn *c;
	struct cma_hdr h;
	struct sockaddr_storage ss;

	if (!l) {
		/* Routed here, but the listener has gone since. */
		answer_unclaimed(rx);
		return NULL;
	}
	if (cma_hdr_decode(pd, &h))
		return NULL;
	/* ucma's backlog: requests the application has not taken yet, beyond it refused. */
	if (atomic_load(&l->requests_waiting) >= l->backlog) {
		refuse(rx, CM_REJ_CONSUMER, CM_SIDR_REJECT);
		return NULL;
	}
	if (rdma_create_id(l->id.channel, &child, l->id.context, l->id.ps))
		return NULL;
	child->qp_type = l->id.qp_type;
	c = new_conn();
	if (!c) {
		free(to_cma_id(child)); /* not rdma_destroy_id: it takes the lock held here */
		return NULL;
	}
	c->id = to_cma_id(child);
	c->id->conn = c;
	c->id->state = CMA_CONNECTING;
	memcpy(c->sgid, rx->dgid, 16);
	memcpy(c->dgid, rx->sgid, 16);
	sa_of(&ss, rx->dgid, (uint16_t)sid);
	memcpy(&child->route.addr.src_addr, &ss, sizeof(struct sockaddr_in6));
	sa_of(&ss, rx->sgid, h.src_port);
	memcpy(&child->route.addr.dst_addr, &ss, sizeof(struct sockaddr_in6));
	/* A wildcard listener has no device: the one the request came to. */
	child->verbs = l->id.verbs ? l->id.verbs : cma_device_of(rx->dgid);
	child->port_num = 1;
	atomic_fetch_add(&l->requests_waiting, 1);
	return c;
}

/* A REQ for a listener: CONNECT_REQUEST; rdma_accept or rdma_reject answers it. */
static void on_req(const struct cm_msg *m, const struct uroce_mad_rx *rx)
{
	const struct cm_req *req = &m->u.req;
	struct cma_id *l = listener_of(req->service_id, rx->dgid);
	struct cma_conn *c;
	struct rdma_conn_param p;

	/* A repeated REQ belongs to the connection it made. */
	c = conn_by_peer(false, req->local_comm_id, rx->sgid);
	if (c) {
		cm_conn_read(&c->cm, m, now_ns());
		settle(c);
		return;
	}
	c = request_conn(l, rx, req->service_id, req->private_data);
	if (!c)
		return;
	index_peer(c, req->local_comm_id);
	c->peer_qpn = req->local_qpn;
	c->responder_resources = req->initiator_depth; /* what the peer will read from us */
	c->initiator_depth = req->responder_resources;
	c->retry_count = req->retry_count;
	c->rnr_retry = req->rnr_retry_count;
	c->path_mtu = req->path_mtu;
	c->tos = req->primary.traffic_class; /* the passive path is the REQ's (§4.10) */
	c->id->remote_ece =
		(struct ibv_ece){.vendor_id = req->vendor_id, .options = m->hdr.attr_mod};
	cm_conn_accept_req(&c->cm, m, now_ns());
	set_conn_param(&p, c);
	cma_conn_event(&c->id->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &l->id, &p,
		       req->private_data + CM_HDR_LEN, CM_REQ_PRIVATE - CM_HDR_LEN);
	settle(c);
}

/* A SIDR_REQ for a listener: a new UD id and CONNECT_REQUEST; rdma_accept answers it. */
static void on_sidr_req(const struct cm_msg *m, const struct uroce_mad_rx *rx)
{
	const struct cm_sidr_req *req = &m->u.sidr_req;
	struct cma_id *l = listener_of(req->service_id, rx->dgid);
	struct cma_conn *c;
	struct cma_event_ud ud = {0};

	/* A repeated SIDR_REQ while the application decides: it is answered once, then. */
	if (conn_by_peer(true, req->request_id, rx->sgid))
		return;
	c = request_conn(l, rx, req->service_id, req->private_data);
	if (!c)
		return;
	c->sidr = true;
	cm_conn_accept_sidr_req(&c->cm, m);
	index_peer(c, req->request_id);
	c->tos = rx->tos; /* answered along the path it came */
	cma_ud_event(&c->id->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &l->id, &ud,
		     req->private_data + CM_HDR_LEN, CM_SIDR_REQ_PRIVATE - CM_HDR_LEN);
}

/* Passive SIDR: answer the requester with @status, @qpn and private data. Locked. */
static void sidr_reply(struct cma_conn *c, uint8_t status, uint32_t qpn, const void *pd, size_t len)
{
	struct cm_sidr_rep rep = {.status = status, .qkey = CM_UDP_QKEY};

	rep.qpn = status == CM_SIDR_OK ? qpn : 0;
	if (len)
		memcpy(rep.private_data, pd, len);
	cm_conn_sidr_rep(&c->cm, &rep);
	flush(c);
}

/* The engine's receiving thread: a MAD on QP 1. */
static void on_mad(void *arg, const struct uroce_mad_rx *rx)
{
	struct cm_route r = cm_route_of(rx->mad, CM_MAD_LEN);
	struct cm_msg m;

	(void)arg;
	if (r.kind == CM_ROUTE_NONE || cm_decode(rx->mad, CM_MAD_LEN, &m) != CM_OK)
		return;
	pthread_mutex_lock(&cm.lock);
	if (m.hdr.attr_id == CM_ATTR_REQ) {
		on_req(&m, rx);
	} else if (m.hdr.attr_id == CM_ATTR_SIDR_REQ) {
		on_sidr_req(&m, rx);
	} else {
		/* Every other message names our comm ID (route.h). */
		struct cma_conn *c = conn_by_local(r.comm_id);

		if (!c)
			answer_unclaimed(rx); /* a DREQ of a connection gone: DREP */
		else if (cm_conn_read(&c->cm, &m, now_ns()))
			settle(c);
	}
	cm_unlock();
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
	pthread_mutex_lock(&cm.lock);
	for (struct cma_conn *c = cm.conns, *after; c; c = after) {
		after = c->next;
		if (!memcmp(c->dgid, gid, 16) && cm_conn_unreachable(&c->cm, now_ns())) {
			c->unreachable = err; /* the status deliver() reports */
			settle(c);
		}
	}
	cm_unlock();
}

/* The CM thread: retries, time-outs and time-wait of every connection. */
static void *cm_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cm.lock);
	for (;;) {
		uint64_t next = UINT64_MAX, now = now_ns();
		struct cma_conn *c = cm.conns;

		while (c) {
			struct cma_conn *after = c->next;

			if (cm_conn_expiry(&c->cm) <= now) {
				cm_conn_handle_expiry(&c->cm, now);
				settle(c);
			}
			c = after;
		}
		if (cm.outbox) {
			/* What the deadlines made goes out before the thread sleeps; then it looks
			 * again, the lock having been free meanwhile. */
			cm_unlock();
			pthread_mutex_lock(&cm.lock);
			continue;
		}
		for (c = cm.conns; c; c = c->next)
			if (cm_conn_expiry(&c->cm) < next)
				next = cm_conn_expiry(&c->cm);
		cm.sleep_until = next;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&cm.wake, &cm.lock);
		} else {
			struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
					      .tv_nsec = (long)(next % 1000000000u)};

			pthread_cond_timedwait(&cm.wake, &cm.lock, &ts);
		}
		cm.sleep_until = 0;
	}
	return NULL;
}

/* Start receiving MADs and keeping deadlines. Locked. 0 or an errno. */
static int start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	if (cm.started)
		return 0;
	err = uroce_mad_set_handler(on_mad, NULL);
	if (!err)
		err = uroce_mad_set_unreachable_handler(on_unreachable, NULL);
	if (!err)
		err = uroce_cm_comm_tag(&cm.tag);
	if (err)
		return err;
	if (getrandom(&cm.next_comm_seq, sizeof(cm.next_comm_seq), 0) < 0)
		cm.next_comm_seq = (uint32_t)now_ns();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&cm.wake);
	pthread_cond_init(&cm.wake, &ca);
	pthread_condattr_destroy(&ca);
	/* All signals blocked on the thread (perftest's SIGALRM belongs to the program). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&cm.thread, NULL, cm_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err) {
		pthread_detach(cm.thread);
		cm.started = true;
		cm.pid = getpid();
	}
	return err;
}

/*
 * 0, or -1 with errno: EINVAL (NULL, or @id not bound or already listening), ETIMEDOUT (the
 * host's hub did not answer), or the errno of starting the engine. Beyond @backlog connection
 * requests not yet taken by the application, more are refused (REJ 28), as ucma does.
 */
UROCE_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c;
	int err;

	if (!id)
		return fail(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_BOUND)
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	err = start();
	if (!err) {
		/* ucma's: at most net.rdma_ucm.max_backlog (1024), that too for 0 or less. */
		c->backlog = backlog > 0 && backlog < CMA_MAX_BACKLOG ? backlog : CMA_MAX_BACKLOG;
		c->state = CMA_LISTEN;
		c->next_listener = cm.listeners;
		cm.listeners = c;
	}
	cm_unlock();
	if (!err) {
		/* Unlocked: the hub's answer may come through the thread that delivers MADs. */
		struct uroce_service s = cma_service_of(c);

		err = uroce_cm_service(UROCE_SERVICE_LISTEN, &s);
		if (err) {
			cma_conn_forget(c);
			c->state = CMA_BOUND;
		}
	}
	return err ? fail(err) : 0;
}

/*
 * A new connection for the active @ci (route resolved): its addresses from the route. Locked.
 * NULL with *@err set (ENOMEM, or the errno of starting the engine).
 */
static struct cma_conn *active_conn(struct cma_id *ci, int *err)
{
	struct rdma_cm_id *id = &ci->id;
	struct cma_conn *c;

	*err = start();
	c = *err ? NULL : new_conn();
	if (!c) {
		*err = *err ? *err : ENOMEM;
		return NULL;
	}
	c->id = ci;
	ci->conn = c;
	ci->state = CMA_CONNECTING;
	memcpy(c->sgid, cma_gid(&id->route.addr.src_addr).raw, 16);
	memcpy(c->dgid, cma_gid(&id->route.addr.dst_addr).raw, 16);
	c->tos = id->route.path_rec ? id->route.path_rec->traffic_class : 0;
	return c;
}

/* REQ and SIDR_REQ private data: the cma header (§4.8), then the application's. */
static void request_private_data(const struct rdma_cm_id *id, const struct cma_conn *c,
				 const struct rdma_conn_param *param, uint8_t *pd)
{
	struct cma_hdr h = {.ip_version = id->route.addr.src_addr.sa_family == AF_INET ? 4 : 6,
			    .src_port = port_of(&id->route.addr.src_addr)};

	memcpy(h.src, c->sgid, 16);
	memcpy(h.dst, c->dgid, 16);
	cma_hdr_encode(&h, pd);
	if (param && param->private_data_len)
		memcpy(pd + CM_HDR_LEN, param->private_data, param->private_data_len);
}

/* UD: a SIDR_REQ for the peer's QP number and Q_Key (§4.4, §4.11). */
static int sidr_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci = to_cma_id(id);
	struct cm_sidr_req req = {.pkey = 0xFFFF};
	struct cma_conn *c;
	int err;

	if (ci->state != CMA_ROUTE_RESOLVED ||
	    (conn_param && conn_param->private_data_len > CM_SIDR_REQ_PRIVATE - CM_HDR_LEN))
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	c = active_conn(ci, &err);
	if (!c) {
		cm_unlock();
		return fail(err);
	}
	c->sidr = true;
	req.service_id =
		cm_service_id((enum cm_port_space)id->ps, port_of(&id->route.addr.dst_addr));
	request_private_data(id, c, conn_param, req.private_data);
	cm_conn_sidr_req(&c->cm, &req, (uint64_t)1 << 32 | c->cm.local_id, now_ns());
	settle(c);
	cm_unlock();
	return cma_complete(id);
}

/*
 * 0 (ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_RESPONSE follows; a synchronous id waits
 * for it), or -1 with errno: EINVAL (NULL, the route not resolved, no QP and no
 * conn_param->qp_num, more than 56 bytes of private data), ENOMEM, or the errno of starting
 * the engine.
 */
UROCE_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci;
	struct cma_conn *c;
	struct cm_req req = {0};
	uint32_t qpn;
	int err;

	if (!id)
		return fail(EINVAL);
	if (id->qp_type == IBV_QPT_UD)
		return sidr_connect(id, conn_param);
	ci = to_cma_id(id);
	qpn = id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0;
	if (ci->state != CMA_ROUTE_RESOLVED || !qpn ||
	    (conn_param && conn_param->private_data_len > CM_REQ_PRIVATE - CM_HDR_LEN))
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	c = active_conn(ci, &err);
	if (!c) {
		cm_unlock();
		return fail(err);
	}
	c->responder_resources = conn_param ? conn_param->responder_resources : 1;
	c->initiator_depth = conn_param ? conn_param->initiator_depth : 1;
	c->retry_count = conn_param && conn_param->retry_count < 7 ? conn_param->retry_count : 7;
	c->rnr_retry =
		conn_param && conn_param->rnr_retry_count < 7 ? conn_param->rnr_retry_count : 7;
	c->path_mtu = id->route.path_rec ? id->route.path_rec->mtu : IBV_MTU_1024;
	req.service_id =
		cm_service_id((enum cm_port_space)id->ps, port_of(&id->route.addr.dst_addr));
	req.local_ca_guid = id->verbs ? be64toh(ibv_get_device_guid(id->verbs->device)) : 0;
	req.local_qpn = qpn;
	req.vendor_id = ci->local_ece.vendor_id;
	cm_conn_set_ece(&c->cm, ci->local_ece.options);
	req.responder_resources = c->responder_resources;
	req.initiator_depth = c->initiator_depth;
	req.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	/* RC 0, UC 1; XRC: 3 (extended), extended type 1 (ib_cm's cm_req_set_qp_type). */
	req.transport_type = id->qp_type == IBV_QPT_UC         ? 1
			     : id->qp_type == IBV_QPT_XRC_SEND ? 3
							       : 0;
	req.ext_transport_type = id->qp_type == IBV_QPT_XRC_SEND ? 1 : 0;
	req.e2e_flow_control = conn_param ? conn_param->flow_control : 1;
	req.starting_psn = c->my_psn;
	req.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.retry_count = c->retry_count;
	req.pkey = 0xFFFF;
	req.path_mtu = c->path_mtu;
	req.rnr_retry_count = c->rnr_retry;
	req.max_cm_retries = CM_MAX_RETRIES;
	req.srq = id->srq || (conn_param && conn_param->srq);
	req.primary.local_lid = req.primary.remote_lid = 0xFFFF; /* permissive (§4.7) */
	memcpy(req.primary.local_gid, c->sgid, 16);
	memcpy(req.primary.remote_gid, c->dgid, 16);
	req.primary.flow_label = ((uint32_t)port_of(&id->route.addr.src_addr) * 31 +
				  port_of(&id->route.addr.dst_addr)) &
				 0xFFFFF;
	req.primary.hop_limit = 64;
	req.primary.traffic_class = c->tos;
	req.primary.local_ack_timeout = LOCAL_ACK_TIMEOUT;
	request_private_data(id, c, conn_param, req.private_data);
	cm_conn_connect(&c->cm, &req, (uint64_t)1 << 32 | c->cm.local_id, now_ns());
	settle(c);
	cm_unlock();
	return cma_complete(id);
}

/*
 * 0 (ESTABLISHED follows when the RTU comes), or -1 with errno: EINVAL (NULL, not a
 * connection request, more than 196 bytes of private data), or what readying id->qp returns.
 */
UROCE_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *ci;
	struct cma_conn *c;
	struct cm_rep rep = {0};
	int err = 0;

	if (!id)
		return fail(EINVAL);
	ci = to_cma_id(id);
	pthread_mutex_lock(&cm.lock);
	c = ci->conn;
	if (c && c->cm.state == CM_SIDR_REQ_RCVD) {
		if (conn_param && conn_param->private_data_len > CM_SIDR_REP_PRIVATE) {
			cm_unlock();
			return fail(EINVAL);
		}
		sidr_reply(c, CM_SIDR_OK, id->qp ? id->qp->qp_num : 0,
			   conn_param ? conn_param->private_data : NULL,
			   conn_param ? conn_param->private_data_len : 0);
		ci->state = CMA_CONNECTED;
		cm_unlock();
		return 0;
	}
	if (!c || c->cm.state != CM_REQ_RCVD ||
	    (conn_param && conn_param->private_data_len > CM_REP_PRIVATE)) {
		cm_unlock();
		return fail(EINVAL);
	}
	if (conn_param) {
		/* As librdmacm: never more than the peer asked for. */
		if (conn_param->responder_resources < c->responder_resources)
			c->responder_resources = conn_param->responder_resources;
		if (conn_param->initiator_depth < c->initiator_depth)
			c->initiator_depth = conn_param->initiator_depth;
		c->rnr_retry = conn_param->rnr_retry_count < 7 ? conn_param->rnr_retry_count : 7;
	}
	if (id->qp)
		err = ready_qp(c);
	if (err) {
		cm_unlock();
		return fail(err);
	}
	rep.local_qpn = id->qp ? id->qp->qp_num : conn_param ? conn_param->qp_num : 0;
	rep.vendor_id[0] = (uint8_t)(ci->local_ece.vendor_id >> 16);
	rep.vendor_id[1] = (uint8_t)(ci->local_ece.vendor_id >> 8);
	rep.vendor_id[2] = (uint8_t)ci->local_ece.vendor_id;
	cm_conn_set_ece(&c->cm, ci->local_ece.options);
	rep.starting_psn = c->my_psn;
	rep.responder_resources = c->responder_resources;
	rep.initiator_depth = c->initiator_depth;
	rep.target_ack_delay = TARGET_ACK_DELAY;
	rep.e2e_flow_control = conn_param ? conn_param->flow_control : 1;
	rep.rnr_retry_count = c->rnr_retry;
	rep.srq = id->srq != NULL;
	rep.local_ca_guid = id->verbs ? be64toh(ibv_get_device_guid(id->verbs->device)) : 0;
	if (conn_param && conn_param->private_data_len)
		memcpy(rep.private_data, conn_param->private_data, conn_param->private_data_len);
	cm_conn_rep(&c->cm, &rep, now_ns());
	settle(c);
	cm_unlock();
	return cma_complete(id);
}

/* Reject the request of @id with @reason (a UD id's SIDR_REP says only "rejected"). */
static int reject(struct rdma_cm_id *id, uint16_t reason, const void *private_data,
		  uint8_t private_data_len)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	c = to_cma_id(id)->conn;
	if (c && c->cm.state == CM_SIDR_REQ_RCVD) {
		sidr_reply(c, CM_SIDR_REJECT, 0, private_data,
			   private_data_len < CM_SIDR_REP_PRIVATE ? private_data_len
								  : CM_SIDR_REP_PRIVATE);
		to_cma_id(id)->state = CMA_DISCONNECTED;
		cm_unlock();
		return 0;
	}
	err = c ? cm_conn_reject(&c->cm, reason, private_data, private_data_len, now_ns()) : EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_DISCONNECTED;
		settle(c);
	}
	cm_unlock();
	return err ? fail(err) : 0;
}

/*
 * 0, or -1 with errno EINVAL: NULL, no connection request (or response) to reject, more than
 * 148 bytes of private data. A REJ "consumer defined" (28); SIDR_REP "rejected" for UD.
 */
UROCE_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			     uint8_t private_data_len)
{
	return reject(id, CM_REJ_CONSUMER, private_data, private_data_len);
}

/* As rdma_reject, with REJ reason 35, "vendor option not supported" (the peer's ECE). */
UROCE_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
				 uint8_t private_data_len)
{
	return reject(id, CM_REJ_VENDOR_OPTION, private_data, private_data_len);
}

/*
 * What this side offers in its REQ or REP (ECE: vendor ID and options). 0, or -1 with errno
 * EINVAL: NULL, an id with a QP of its own (librdmacm's rule: ECE is for applications that
 * move their QP themselves), vendor ID 0, comp_mask set.
 */
UROCE_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return fail(EINVAL);
	to_cma_id(id)->local_ece =
		(struct ibv_ece){.vendor_id = ece->vendor_id & 0xFFFFFF, .options = ece->options};
	return 0;
}

/* What the peer's REQ or REP carried (zero if none). 0, or -1 with errno EINVAL as above. */
UROCE_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece)
		return fail(EINVAL);
	*ece = to_cma_id(id)->remote_ece;
	return 0;
}

/* Active side without id->qp (CONNECT_RESPONSE): the RTU. 0, or -1 with errno EINVAL. */
UROCE_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	c = to_cma_id(id)->conn;
	err = c ? cm_conn_rtu(&c->cm, now_ns()) : EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_CONNECTED;
		settle(c);
	}
	cm_unlock();
	return err ? fail(err) : 0;
}

/*
 * Passive side: data came on the QP before the RTU (the application saw IBV_EVENT_COMM_EST):
 * established now, ESTABLISHED follows (the kernel's ib_cm_notify). 0, or -1 with errno:
 * EINVAL (NULL, another event, no connection waiting for its RTU), EISCONN (established).
 */
UROCE_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_conn *c;
	int err = EINVAL;

	if (!id || event != IBV_EVENT_COMM_EST)
		return fail(EINVAL);
	pthread_mutex_lock(&cm.lock);
	c = to_cma_id(id)->conn;
	if (c && c->cm.state == CM_ESTABLISHED) {
		err = EISCONN;
	} else if (c && c->cm.state == CM_REP_SENT) {
		cm_conn_established(&c->cm);
		settle(c);
		err = 0;
	}
	cm_unlock();
	return err ? fail(err) : 0;
}

/*
 * The QP goes to ERR (its receives flush) and the peer is told (DREQ, or DREP when it
 * disconnected first); DISCONNECTED follows. 0, or -1 with errno EINVAL (not connected).
 */
UROCE_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_conn *c;
	int err;

	if (!id)
		return fail(EINVAL);
	qp_to_error(id);
	pthread_mutex_lock(&cm.lock);
	c = to_cma_id(id)->conn;
	err = c ? cm_conn_disconnect(&c->cm, NULL, 0, now_ns()) : EINVAL;
	if (!err) {
		to_cma_id(id)->state = CMA_DISCONNECTED;
		settle(c);
	}
	cm_unlock();
	return err ? fail(err) : 0;
}

int cma_conn_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask)
{
	int err;

	pthread_mutex_lock(&cm.lock);
	err = id->conn ? qp_attr(id->conn, a, mask) : EINVAL;
	cm_unlock();
	return err;
}

/* A synchronous listener: wait for a connection request. 0 and *@id, or -1 with errno. */
UROCE_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	if (!listen || !id || to_cma_id(listen)->state != CMA_LISTEN)
		return fail(EINVAL);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct cma_id *l = to_cma_id(listen);

			*id = ev->id;
			ev->id->event = ev; /* the request stays readable in id->event */
			if (l->ep_qp_attr) {
				struct ibv_qp_init_attr a = *l->ep_qp_attr;

				if (rdma_create_qp(ev->id, l->ep_pd, &a)) {
					int err = errno;

					rdma_reject(ev->id, NULL, 0);
					rdma_destroy_id(ev->id);
					return fail(err);
				}
			}
			return 0;
		}
		rdma_ack_cm_event(ev);
	}
}

/*
 * A connection whose id goes away (destroyed, or left behind at exit) disconnects, as Linux does
 * (cm_destroy_id): a DREQ if it is up, the DREP to the peer's DREQ if one came, a rejecting
 * SIDR_REP to a SIDR request never answered. Locked. True if a MAD is due.
 */
static bool disconnect_abandoned(struct cma_conn *c)
{
	if (c->cm.state == CM_SIDR_REQ_RCVD) { /* cm_destroy_id: cm_reject_sidr_req */
		sidr_reply(c, CM_SIDR_REJECT, 0, NULL, 0);
		return true;
	}
	if (c->cm.state != CM_ESTABLISHED && c->cm.state != CM_DREQ_RCVD)
		return false;
	cm_conn_disconnect(&c->cm, NULL, 0, now_ns());
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
	uint64_t end = now_ns() + 500000000u;
	bool waiting = true;

	pthread_mutex_lock(&cm.lock);
	if (!cm.started || cm.pid != getpid()) {
		cm_unlock();
		return;
	}
	for (struct cma_conn *c = cm.conns; c; c = c->next)
		if (disconnect_abandoned(c))
			flush(c);
	while (waiting && now_ns() < end) {
		struct timespec ts = {0, 10000000};

		waiting = false;
		for (struct cma_conn *c = cm.conns; c; c = c->next) {
			if (c->cm.state == CM_DREQ_SENT) {
				cm_conn_hurry(&c->cm, 20000000u, now_ns());
				waiting = true;
			}
		}
		pthread_cond_signal(&cm.wake);
		cm_unlock();
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&cm.lock);
	}
	cm_unlock();
}

void cma_conn_forget(struct cma_id *id)
{
	pthread_mutex_lock(&cm.lock);
	for (struct cma_id **pp = &cm.listeners; *pp; pp = &(*pp)->next_listener) {
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
		settle(c);
	}
	cm_unlock();
}
