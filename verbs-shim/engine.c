// SPDX-License-Identifier: MIT
/*
 * The data path (engine.h): verbs QPs driven by the transport core (transport/qp.h) over the
 * process's network endpoint (fabric/net.h).
 *
 * Three things run a QP's core, always under the QP's lock: the posting thread (kick), the
 * progress thread for a received packet (on_recv) and for a deadline (on_timer). Each ends by
 * draining: every packet the core has ready is sent from the calling thread, and the QP's
 * timer is moved to the core's next deadline.
 */
#include "verbs-shim/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/net.h"
#include "uroce/uroce.h"
#include "verbs-shim/async.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/cq.h"
#include "verbs-shim/mad.h"
#include "verbs-shim/mcast.h"
#include "verbs-shim/mr.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/flush.h"
#include "verbs-shim/qpn_map.h"

static struct uroce_net *net;
static int net_err;
static atomic_bool net_ready; /* net is open and ours (polling threads read it, not net_once) */
static atomic_bool in_child;  /* a child of fork(): net is the parent's (child_after_fork) */
static pthread_once_t net_once = PTHREAD_ONCE_INIT;

/* Packets dropped before reaching a QP, by reason. */
static struct {
	atomic_uint_least64_t malformed;   /* roce_decode refused it */
	atomic_uint_least64_t bad_icrc;    /* no IPv4 ID makes the ICRC match */
	atomic_uint_least64_t no_qp;       /* DestQP not (or no longer) a QP of this process */
	atomic_uint_least64_t unsupported; /* to QP 1 but no MAD, or no CM to take it */
} drops;

/* The transport counters of the QPs destroyed so far, summed (under qp_totals_lock). */
static struct roce_qp_counters qp_totals;
static pthread_mutex_t qp_totals_lock = PTHREAD_MUTEX_INITIALIZER;

/* Add the counters @c to @sum, field by field. */
static void add_qp_counters(struct roce_qp_counters *sum, const struct roce_qp_counters *c)
{
	sum->rx_state += c->rx_state;
	sum->rx_transport += c->rx_transport;
	sum->rx_duplicate += c->rx_duplicate;
	sum->rx_out_of_seq += c->rx_out_of_seq;
	sum->rx_qkey += c->rx_qkey;
	sum->rx_no_recv += c->rx_no_recv;
	sum->rx_bad_resp += c->rx_bad_resp;
	sum->rnr_naks_sent += c->rnr_naks_sent;
	sum->seq_naks_sent += c->seq_naks_sent;
	sum->retransmits += c->retransmits;
	sum->timeouts += c->timeouts;
}

/* uroce_qpn_map_for_each: add a live QP's counters to @arg, a struct roce_qp_counters. */
static void add_live_qp(struct uroce_qp *qp, void *arg)
{
	pthread_mutex_lock(&qp->lock);
	add_qp_counters(arg, &qp->core.counters);
	pthread_mutex_unlock(&qp->lock);
}

/* uroce_qpn_map_for_each: wait for whoever holds the QP's lock. */
static void wait_unlocked(struct uroce_qp *qp, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&qp->lock);
	pthread_mutex_unlock(&qp->lock);
}

void uroce_engine_quiesce(void)
{
	/* A child of fork() handles no packet, and a lock one of the parent's threads held at
	 * fork() stays held in the child for ever. */
	if (atomic_load(&in_child))
		return;
	uroce_qpn_map_for_each(wait_unlocked, NULL);
}

void uroce_engine_stats(struct uroce_stats *st)
{
	struct uroce_net_stats ns = {0};
	struct roce_qp_counters qps;

	if (atomic_load_explicit(&net_ready, memory_order_acquire))
		uroce_net_get_stats(net, &ns);
	/* Under the lock a QP being destroyed is counted once: in the map or in the totals. */
	pthread_mutex_lock(&qp_totals_lock);
	qps = qp_totals;
	uroce_qpn_map_for_each(add_live_qp, &qps);
	pthread_mutex_unlock(&qp_totals_lock);
	*st = (struct uroce_stats){
		.tx_packets = ns.tx_packets,
		.rx_packets = ns.rx_packets,
		.forwarded = ns.forwarded,
		.rx_malformed = atomic_load(&drops.malformed),
		.rx_bad_icrc = atomic_load(&drops.bad_icrc),
		.rx_no_qp = atomic_load(&drops.no_qp),
		.rx_unsupported = atomic_load(&drops.unsupported),
		.rx_buffers_lost = ns.rx_buffers_lost,
		.fault_lost = ns.faults.lost,
		.fault_duplicated = ns.faults.duplicated,
		.fault_corrupted = ns.faults.corrupted,
		.fault_reordered = ns.faults.reordered,
		.retransmits = qps.retransmits,
		.timeouts = qps.timeouts,
		.seq_naks_sent = qps.seq_naks_sent,
		.rnr_naks_sent = qps.rnr_naks_sent,
		.rx_duplicate = qps.rx_duplicate,
		.rx_out_of_seq = qps.rx_out_of_seq,
	};
}

const char *uroce_engine_capture_path(void)
{
	if (!atomic_load_explicit(&net_ready, memory_order_acquire))
		return NULL;
	return uroce_net_capture_path(net);
}

/* With UROCE_LOG=info, what the process's engine did, when it exits. */
static void log_totals(void)
{
	struct uroce_stats st;

	if (!uroce_log_enabled(UROCE_LOG_INFO))
		return;
	uroce_engine_stats(&st);
	uroce_log(UROCE_LOG_INFO,
		  "packets: %llu sent, %llu received (%llu forwarded for other processes); "
		  "dropped: %llu malformed, %llu bad ICRC, %llu for no QP, %llu unsupported, %llu "
		  "lost in socket buffers; faults: %llu lost, %llu duplicated, %llu corrupted, "
		  "%llu reordered; QPs: %llu retransmissions, %llu timeouts, %llu sequence NAKs "
		  "and %llu RNR NAKs sent, %llu duplicates and %llu out of sequence received",
		  (unsigned long long)st.tx_packets, (unsigned long long)st.rx_packets,
		  (unsigned long long)st.forwarded, (unsigned long long)st.rx_malformed,
		  (unsigned long long)st.rx_bad_icrc, (unsigned long long)st.rx_no_qp,
		  (unsigned long long)st.rx_unsupported, (unsigned long long)st.rx_buffers_lost,
		  (unsigned long long)st.fault_lost, (unsigned long long)st.fault_duplicated,
		  (unsigned long long)st.fault_corrupted, (unsigned long long)st.fault_reordered,
		  (unsigned long long)st.retransmits, (unsigned long long)st.timeouts,
		  (unsigned long long)st.seq_naks_sent, (unsigned long long)st.rnr_naks_sent,
		  (unsigned long long)st.rx_duplicate, (unsigned long long)st.rx_out_of_seq);
}

static void on_recv(void *arg, const struct uroce_rx *rx);
static void on_batch_end(void *arg);
static void flush_held(void *arg);
static void on_recv_end(void *arg);

static const struct uroce_net_ops net_ops = {
	.recv = on_recv,
	.recv_end = on_recv_end,
	.batch_end = on_batch_end,
	.polling_ended = flush_held,
	.unreachable = uroce_mad_unreachable,
};

/*
 * In a child of fork(): the parent's endpoint is not ours. A flag rather than a getpid() check
 * on every use: getpid() is a system call, and the engine is used several times a connection.
 */
static void child_after_fork(void)
{
	atomic_store(&net_ready, false);
	atomic_store(&in_child, true);
}

static void open_net(void)
{
	net_err = uroce_net_open(&net, &net_ops, NULL);
	if (net && pthread_atfork(NULL, NULL, child_after_fork)) {
		/* Without the handler a child could not tell: no endpoint (ENOMEM). */
		uroce_net_close(net);
		net = NULL;
		net_err = ENOMEM;
	}
	if (net)
		atomic_store_explicit(&net_ready, true, memory_order_release);
}

/*
 * At exit, leave the host's rendezvous properly: a hub forwards what its port still holds for
 * other processes before handing the port over (a UD or UC datagram lost there is gone).
 * A child of fork() has its parent's endpoint without its threads: it leaves it alone.
 */
__attribute__((destructor)) static void close_net(void)
{
	if (net && !atomic_load(&in_child)) {
		/* No new entry into the engine; a thread waiting in it leaves (progress.h). */
		atomic_store(&net_ready, false);
		log_totals();
		uroce_net_close(net);
	}
}

/* The endpoint, opened on first use: NULL with errno if it cannot be had. */
static struct uroce_net *uroce_engine(void)
{
	static atomic_bool told;

	pthread_once(&net_once, open_net);
	if (net && atomic_load_explicit(&in_child, memory_order_relaxed)) {
		/* docs/UNSUPPORTED.md: the parent's endpoint is not usable after fork(). */
		if (!atomic_exchange(&told, true))
			fprintf(stderr,
				"uroce: a child of fork() cannot use the data path its parent "
				"started (no QPs in the child)\n");
		errno = ENOTSUP;
		return NULL;
	}
	if (!net)
		errno = net_err;
	return net;
}

/* IP/UDP values of a packet to @ah from the QP's port (the fabric fills ports and ID). */
static int path_of(struct uroce_qp *qp, const struct ibv_ah_attr *ah, struct roce_ipudp *f)
{
	union ibv_gid sgid;

	if (uroce_device_gid(qp->ctx->dev, ah->grh.sgid_index, &sgid))
		return EINVAL;
	memset(f, 0, sizeof(*f));
	memcpy(f->sgid, sgid.raw, 16);
	memcpy(f->dgid, ah->grh.dgid.raw, 16);
	f->tos = ah->grh.traffic_class;
	f->ttl = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
	f->flow_label = ah->grh.flow_label;
	return 0;
}

/* Arm the QP's timer for the core's next deadline if it is earlier than the armed one. */
static void rearm(struct uroce_qp *qp)
{
	uint64_t t = roce_qp_expiry(&qp->core);

	/* A timer that fires with nothing due re-arms itself; cancelling here could wait on a
	 * callback that waits for this QP's lock (net.h). */
	if (t == UINT64_MAX || (qp->timer_armed && qp->timer_deadline <= t))
		return;
	qp->timer_armed = true;
	qp->timer_deadline = t;
	uroce_timer_arm(net, &qp->timer, t);
}

/*
 * Packets the core produced for one destination, sent as one train (uroce_net_send_train: runs
 * of equal length leave as one UDP GSO send). One per thread, allocated on first use.
 */
enum { TRAIN_PKTS = 64, TRAIN_BYTES = 65536 + ROCE_PKT_MAX };

struct train {
	uint8_t buf[TRAIN_BYTES];
	uint16_t lens[TRAIN_PKTS];
};

static pthread_key_t train_key;
static pthread_once_t train_once = PTHREAD_ONCE_INIT;

static void train_key_init(void)
{
	if (pthread_key_create(&train_key, free))
		abort(); /* only EAGAIN (keys exhausted) or ENOMEM at library start */
}

static struct train *train_get(void)
{
	struct train *t;

	pthread_once(&train_once, train_key_init);
	t = pthread_getspecific(train_key);
	if (!t) {
		t = malloc(sizeof(*t));
		if (t && pthread_setspecific(train_key, t)) {
			free(t);
			t = NULL;
		}
	}
	return t;
}

/* The path of the address vector a drain sent its last packet to. */
struct path_cache {
	const struct ibv_ah_attr *ah;
	int err; /* path_of's */
	struct roce_ipudp f;
};

/*
 * The IP/UDP values of a packet to @ah, as path_of, for the packets of one drain: the address
 * vectors the core names cannot change under the QP's lock, so the path of the packet before
 * serves while the vector is the same. Returns 0 or path_of's error.
 */
static int cached_path_of(struct uroce_qp *qp, const struct ibv_ah_attr *ah, struct path_cache *c,
			  struct roce_ipudp *f)
{
	if (ah != c->ah) {
		c->ah = ah;
		c->err = path_of(qp, ah, &c->f);
	}
	*f = c->f;
	return c->err;
}

/* Send everything the core has ready, one packet at a time (no train buffer). */
static void drain_one_by_one(struct uroce_qp *qp, uint64_t now)
{
	struct path_cache paths = {0};
	uint8_t buf[ROCE_PKT_MAX];
	struct roce_dest dest;
	size_t len;

	while ((len = roce_qp_write_pkt(&qp->core, buf, &dest, now))) {
		struct roce_ipudp f;

		/* A send error is a lost packet, which the transport recovers from (net.h). */
		if (!cached_path_of(qp, dest.ah, &paths, &f))
			uroce_net_send(net, &f, buf, len);
	}
}

/* Send everything the core has ready, in trains per destination. qp->lock held. */
static void drain(struct uroce_qp *qp, uint64_t now)
{
	struct train *t = train_get();
	struct path_cache paths = {0};
	struct roce_ipudp f, next;
	struct roce_dest dest;
	unsigned int n = 0;
	size_t off = 0, len;

	atomic_store_explicit(&qp->drain_due, false, memory_order_relaxed);
	if (!t) {
		drain_one_by_one(qp, now);
		rearm(qp);
		return;
	}
	while ((len = roce_qp_write_pkt(&qp->core, t->buf + off, &dest, now))) {
		if (cached_path_of(qp, dest.ah, &paths, &next))
			continue; /* no source address: the packet is lost (net.h) */
		if (n && memcmp(&next, &f, sizeof(f))) {
			/* Another destination (UD): the train so far leaves first. */
			uroce_net_send_train(net, &f, t->buf, t->lens, n);
			memmove(t->buf, t->buf + off, len);
			off = 0;
			n = 0;
		}
		f = next;
		t->lens[n++] = (uint16_t)len;
		off += len;
		if (n == TRAIN_PKTS || off + ROCE_PKT_MAX > TRAIN_BYTES) {
			uroce_net_send_train(net, &f, t->buf, t->lens, n);
			off = 0;
			n = 0;
		}
	}
	if (n)
		uroce_net_send_train(net, &f, t->buf, t->lens, n);
	rearm(qp);
}

/*
 * QPs that took packets in the current receive batch and have not sent what they have ready
 * yet: one drain per QP per batch (on_batch_end) instead of one per packet, so that the
 * answers a batch calls for leave as trains. By QP number: a QP may be destroyed before the
 * batch ends. Used by the receiving thread only (net.h: one at a time).
 */
static struct {
	uint32_t qpn[64];
	unsigned int n;
	uint64_t now;
} pending;

static bool is_pending(uint32_t qpn)
{
	for (unsigned int i = 0; i < pending.n; i++)
		if (pending.qpn[i] == qpn)
			return true;
	return false;
}

/*
 * The QP whose lock (and the QP map's read lock) the receiving thread keeps from one packet of
 * a datagram to the next while they go to the same QP, as a ping-pong hop's SEND and the ACK
 * riding with it do. Let go before a packet for another QP or a MAD, and at the datagram's end
 * (on_recv_end), before any other callback of the fabric runs on the thread.
 */
static _Thread_local struct uroce_qp *rx_qp;

static void rx_qp_release(void)
{
	if (!rx_qp)
		return;
	pthread_mutex_unlock(&rx_qp->lock);
	uroce_qpn_map_read_unlock();
	rx_qp = NULL;
}

static void on_recv_end(void *arg)
{
	(void)arg;
	rx_qp_release();
}

/* QP @qpn, locked and kept as rx_qp, or NULL if there is no such QP. */
static struct uroce_qp *rx_qp_take(uint32_t qpn)
{
	struct uroce_qp *qp;

	if (rx_qp && rx_qp->qpx.qp_base.qp_num == qpn)
		return rx_qp;
	rx_qp_release();
	uroce_qpn_map_read_lock();
	qp = uroce_qpn_map_find(qpn);
	if (!qp) {
		uroce_qpn_map_read_unlock();
		return NULL;
	}
	pthread_mutex_lock(&qp->lock);
	rx_qp = qp;
	return qp;
}

/* Hand @pkt to QP @qpn, which stays rx_qp. Returns false if there is no such QP. */
static bool deliver_to(uint32_t qpn, const struct roce_pkt *pkt, const struct roce_ipudp *ip,
		       uint64_t now)
{
	struct uroce_qp *qp = rx_qp_take(qpn);

	if (!qp)
		return false;
	/* An earlier packet's NAK leaves before this one can replace it (qp.h). */
	if (roce_qp_nak_due(&qp->core))
		drain(qp, now);
	roce_qp_read_pkt(&qp->core, pkt, ip, now);
	atomic_store_explicit(&qp->drain_due, true, memory_order_relaxed);
	pending.now = now;
	if (!is_pending(qpn)) {
		if (pending.n < sizeof(pending.qpn) / sizeof(pending.qpn[0]))
			pending.qpn[pending.n++] = qpn;
		else
			drain(qp, now); /* too many QPs in one batch: this one now */
	}
	return true;
}

/*
 * A datagram sent to a multicast group (DestQP 0xFFFFFF): to each QP of this process attached
 * to the group its IP destination names (IBA 10.5.2.3), but not to the QP that sent it.
 */
static void deliver_mcast(const struct roce_pkt *pkt, const struct uroce_rx *rx)
{
	uint32_t qpn[UROCE_MAX_MCAST_QP_ATTACH];
	unsigned int n = uroce_mcast_members(rx->ip.dgid, qpn, UROCE_MAX_MCAST_QP_ATTACH);
	unsigned int got = 0;

	for (unsigned int i = 0; i < n; i++)
		if (!(rx->host_sent && qpn[i] == pkt->deth.src_qpn))
			got += deliver_to(qpn[i], pkt, &rx->ip, rx->now);
	if (!got)
		atomic_fetch_add(&drops.no_qp, 1);
}

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	struct roce_pkt pkt;

	(void)arg;
	if (roce_decode(rx->roce, rx->len, &pkt) != ROCE_OK) {
		atomic_fetch_add(&drops.malformed, 1);
		return;
	}
	if (rx->icrc == ROCE_ICRC_BAD) {
		atomic_fetch_add(&drops.bad_icrc, 1);
		return;
	}
	if (pkt.bth.dqpn == ROCE_GSI_QPN) {
		rx_qp_release(); /* the CM's handler may modify a QP */
		if (!uroce_mad_received(&pkt, &rx->ip))
			atomic_fetch_add(&drops.unsupported, 1);
		return;
	}
	if (pkt.bth.dqpn == ROCE_MCAST_QPN) {
		deliver_mcast(&pkt, rx);
		return;
	}
	if (!deliver_to(pkt.bth.dqpn, &pkt, &rx->ip, rx->now))
		atomic_fetch_add(&drops.no_qp, 1);
}

/*
 * The batch is over: each QP that took packets sends what it has ready, unless a drain since
 * did (a post the application made meanwhile: in a ping-pong the answer took the ACK along).
 * Only the receiving thread marks a QP due, so a QP seen not due was drained after its packets.
 */
static void on_batch_end(void *arg)
{
	(void)arg;
	uroce_qpn_map_read_lock();
	for (unsigned int i = 0; i < pending.n; i++) {
		struct uroce_qp *qp = uroce_qpn_map_find(pending.qpn[i]);

		if (!qp || !atomic_load_explicit(&qp->drain_due, memory_order_relaxed))
			continue; /* destroyed meanwhile, or drained */
		pthread_mutex_lock(&qp->lock);
		drain(qp, pending.now);
		pthread_mutex_unlock(&qp->lock);
	}
	uroce_qpn_map_read_unlock();
	pending.n = 0;
}

static void on_timer(struct uroce_timer *t, uint64_t now)
{
	struct uroce_qp *qp = uroce_container_of(t, struct uroce_qp, timer);

	pthread_mutex_lock(&qp->lock);
	qp->timer_armed = false;
	roce_qp_handle_expiry(&qp->core, now);
	drain(qp, now);
	pthread_mutex_unlock(&qp->lock);
}

/* The transport core's view of the QP's objects (transport/qp.h). */

static uint8_t *env_mem(void *ctx, uint32_t key, bool remote, uint64_t addr, uint64_t len,
			int access, enum roce_mem_err *err)
{
	struct uroce_qp *qp = ctx;
	struct uroce_mr *mr = uroce_mr_lookup(key);
	/* XRC: the PD of the SRQ the request names guards the target's memory (IBA A14). */
	struct uroce_pd *pd = qp->xrc_cur ? qp->xrc_cur->pd : qp->pd;

	(void)remote; /* one key serves as lkey and rkey */
	if (!mr || !pd || mr->pd != pd) {
		*err = ROCE_MEM_KEY;
		return NULL;
	}
	if (addr < mr->iova || len > mr->mr.length || addr - mr->iova > mr->mr.length - len) {
		*err = ROCE_MEM_BOUNDS;
		return NULL;
	}
	if ((mr->access & access) != access) {
		*err = ROCE_MEM_ACCESS;
		return NULL;
	}
	return (uint8_t *)mr->mr.addr + (addr - mr->iova);
}

static void copy_recv(struct roce_recv *out, const struct roce_recv_wqe *wqe)
{
	out->wr_id = wqe->wr_id;
	out->num_sge = wqe->num_sge;
	out->length = wqe->length;
	memcpy(out->sge, wqe->sge, wqe->num_sge * sizeof(wqe->sge[0]));
}

static bool env_recv_take(void *ctx, struct roce_recv *out)
{
	struct uroce_qp *qp = ctx;
	struct uroce_srq *srq = qp->xrc_cur ? qp->xrc_cur : qp->srq;
	bool limit = false;

	if (!srq) {
		if (!roce_wq_used(&qp->rq))
			return false;
		copy_recv(out, roce_wq_slot(&qp->rq, qp->rq.tail++));
		return true;
	}
	pthread_mutex_lock(&srq->lock);
	if (!roce_wq_used(&srq->rq)) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	copy_recv(out, roce_wq_slot(&srq->rq, srq->rq.tail++));
	/* ibv_modify_srq(3): an armed SRQ fires once when fewer than srq_limit WQEs remain. */
	if (srq->limit && roce_wq_used(&srq->rq) < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit)
		uroce_async_event(qp->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->srq);
	return true;
}

static void env_complete(void *ctx, bool recv, const struct ibv_wc *wc, bool solicited)
{
	struct uroce_qp *qp = ctx;
	struct uroce_cq *cq = recv ? qp->recv_cq : qp->send_cq;

	/* An XRC target completes receives on the CQ of the SRQ; none if that SRQ is gone. */
	if (recv && qp->xrc)
		cq = qp->xrc_cur ? qp->xrc_cur->cq : NULL;
	if (cq)
		uroce_cq_push(cq, wc, solicited);
}

static bool env_xrc_srq(void *ctx, uint32_t srqn)
{
	struct uroce_qp *qp = ctx;

	qp->xrc_cur = uroce_xrc_srq_find(srqn, qp->xrc);
	return qp->xrc_cur;
}

static void env_event(void *ctx, enum ibv_event_type type)
{
	struct uroce_qp *qp = ctx;

	uroce_async_event(qp->ctx, type, &qp->qpx.qp_base);
}

/* With UROCE_LOG=info, where QP @c stood when it went to the error state: for post-mortems. */
static void log_qp_error(const struct roce_qp *c)
{
	const struct roce_qp_counters *n = &c->counters;

	if (!uroce_log_enabled(UROCE_LOG_INFO))
		return;
	uroce_log(UROCE_LOG_INFO,
		  "QP %#x: error state; sending: PSN %#x next, %#x oldest unacknowledged, %u "
		  "retries left; receiving: PSN %#x expected; %llu retransmissions, %llu timeouts, "
		  "%llu duplicates, %llu out of sequence, %llu unmatched responses received, %llu "
		  "sequence NAKs sent",
		  c->qpn, c->req.psn, c->comp.psn, c->comp.retry_left, c->resp.psn,
		  (unsigned long long)n->retransmits, (unsigned long long)n->timeouts,
		  (unsigned long long)n->rx_duplicate, (unsigned long long)n->rx_out_of_seq,
		  (unsigned long long)n->rx_bad_resp, (unsigned long long)n->seq_naks_sent);
}

static void env_to_error(void *ctx)
{
	struct uroce_qp *qp = ctx;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	log_qp_error(&qp->core);
	roce_qp_modify(&qp->core, &attr, IBV_QP_STATE);
	uroce_qp_to_error(qp);
}

static void env_sq_error(void *ctx)
{
	struct uroce_qp *qp = ctx;

	qp->attr.qp_state = IBV_QPS_SQE;
	qp->qpx.qp_base.state = IBV_QPS_SQE;
	uroce_qp_flush_sq(qp);
}

static const struct roce_qp_env qp_env = {
	.mem = env_mem,
	.recv_take = env_recv_take,
	.complete = env_complete,
	.event = env_event,
	.xrc_srq = env_xrc_srq,
	.to_error = env_to_error,
	.sq_error = env_sq_error,
};

int uroce_engine_start(void)
{
	return uroce_engine() ? 0 : errno;
}

struct uroce_net *uroce_engine_net(void)
{
	return uroce_engine();
}

int uroce_qp_engine_init(struct uroce_qp *qp, enum ibv_qp_type type, uint32_t *qpn)
{
	struct uroce_port_state port;
	struct ibv_qp_attr mtu;
	int err;

	if (!uroce_engine())
		return errno;
	err = uroce_net_alloc_qpn(net, qpn);
	if (err)
		return err;
	if (type == IBV_QPT_UD) /* its receives get the IP header as GRH (responder.c) */
		uroce_net_want_ip_fields(net);
	roce_qp_init(&qp->core, type, *qpn, qp->sq_sig_all, &qp->sq, &qp_env, qp);
	err = uroce_qpn_map_add(*qpn, qp);
	if (err) {
		roce_qp_fini(&qp->core);
		uroce_net_free_qpn(net, *qpn);
		return err;
	}
	/* No more in flight than the receiver's socket holds (the peer's: alike, net.h). */
	roce_qp_set_window_bytes(&qp->core, uroce_net_rx_budget(net));
	/* UD messages are bounded by the port's MTU (IBA 9.8.1); RC and UC set a path MTU. */
	uroce_device_port(qp->ctx->dev, &port);
	mtu.path_mtu = uroce_active_mtu(port.ifmtu);
	roce_qp_modify(&qp->core, &mtu, IBV_QP_PATH_MTU);
	qp->timer.fire = on_timer;
	return 0;
}

void uroce_qp_kick(struct uroce_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	qp->posts_held = 0;
	drain(qp, uroce_now());
	pthread_mutex_unlock(&qp->lock);
}

/*
 * Held posts (uroce_qp_posted): while threads busy-poll, the packets of a post that is part of
 * a burst wait for the next poll (or unpoll, or the progress thread taking the sockets back,
 * within a millisecond), so that the burst leaves as one train -- one system call for many
 * small messages. The QPs holding some, by number (a QP may be destroyed first; it sends its
 * own then).
 */
enum { POSTS_HELD_MAX = 32 }; /* a QP with this many held posts sends at once */
/*
 * A post is alone, not part of a burst, when its QP has nothing else on the send queue and
 * posted nothing for this long: a ping-pong's next message (posts a round trip apart, ~6 us on
 * loopback) then leaves from ibv_post_send itself, rather than from the poll after it (held:
 * 0.1-0.2 us more per hop of ib_send_lat). Posts of a burst come within ~0.3 us of each other.
 */
#define POST_GAP_NS 1000u

static struct {
	pthread_mutex_t lock;
	uint32_t qpn[64];
	unsigned int n;
	atomic_uint count; /* n, read without the lock */
} held = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Add @qpn to the held QPs: false if the list is full (the caller sends now). */
static bool hold(uint32_t qpn)
{
	bool ok;

	pthread_mutex_lock(&held.lock);
	ok = held.n < sizeof(held.qpn) / sizeof(held.qpn[0]);
	if (ok) {
		held.qpn[held.n++] = qpn;
		atomic_store(&held.count, held.n);
	}
	pthread_mutex_unlock(&held.lock);
	return ok;
}

/* Send what every QP holds. */
static void flush_held(void *arg)
{
	uint32_t qpn[sizeof(held.qpn) / sizeof(held.qpn[0])];
	unsigned int n;

	(void)arg;
	if (!atomic_load(&held.count))
		return;
	pthread_mutex_lock(&held.lock);
	n = held.n;
	memcpy(qpn, held.qpn, n * sizeof(qpn[0]));
	held.n = 0;
	atomic_store(&held.count, 0);
	pthread_mutex_unlock(&held.lock);
	uroce_qpn_map_read_lock();
	for (unsigned int i = 0; i < n; i++) {
		struct uroce_qp *qp = uroce_qpn_map_find(qpn[i]);

		if (!qp)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (qp->posts_held) {
			qp->posts_held = 0;
			drain(qp, uroce_now());
		}
		pthread_mutex_unlock(&qp->lock);
	}
	uroce_qpn_map_read_unlock();
}

void uroce_qp_posted(struct uroce_qp *qp, uint32_t posted)
{
	bool polled =
		atomic_load_explicit(&net_ready, memory_order_acquire) && uroce_net_polled(net);
	uint64_t now = uroce_now();
	bool alone = roce_wq_used(&qp->sq) == posted && now - qp->last_post >= POST_GAP_NS;

	qp->last_post = now;
	if (polled && !alone && qp->posts_held < POSTS_HELD_MAX &&
	    (qp->posts_held || hold(qp->qpx.qp_base.qp_num))) {
		qp->posts_held++;
	} else {
		qp->posts_held = 0;
		drain(qp, now);
	}
}

int uroce_engine_poll(void)
{
	/* No engine before the first QP; a child of fork() must not touch its parent's. */
	if (!atomic_load_explicit(&net_ready, memory_order_acquire))
		return -1;
	flush_held(NULL);
	return uroce_net_poll(net);
}

void uroce_engine_mcast(struct uroce_qp *qp, const union ibv_gid *group, bool join)
{
	/* The QP exists: so does the engine. An error is logged there (net.h). */
	uroce_net_mcast_join(net, group->raw, qp->ctx->dev->ifindex, join);
}

void uroce_engine_unpoll(void)
{
	if (atomic_load_explicit(&net_ready, memory_order_acquire)) {
		flush_held(NULL);
		uroce_net_unpoll(net);
	}
}

int uroce_engine_wait(int fd, bool (*ready)(void *arg), void *arg)
{
	if (!atomic_load_explicit(&net_ready, memory_order_acquire))
		return 0;
	flush_held(NULL);
	return uroce_net_wait(net, fd, ready, arg);
}

void uroce_qp_modified(struct uroce_qp *qp, const struct ibv_qp_attr *attr, int attr_mask)
{
	/* What a received packet called for (an ACK a polling thread put off, net.h) leaves
	 * first, as it would have from a NIC before the application saw the completion. */
	drain(qp, uroce_now());
	roce_qp_modify(&qp->core, attr, attr_mask);
}

void uroce_qp_destroying(struct uroce_qp *qp)
{
	uint32_t qpn = qp->qpx.qp_base.qp_num;

	uroce_qp_kick(qp); /* as in uroce_qp_modified */
	uroce_mcast_detach_all(qp);
	/* From the map to the totals in one step for uroce_get_stats (packet handlers and
	 * timers do not take qp_totals_lock). */
	pthread_mutex_lock(&qp_totals_lock);
	uroce_qpn_map_remove(qpn); /* waits for a packet being handled */
	uroce_timer_cancel(net, &qp->timer);
	add_qp_counters(&qp_totals, &qp->core.counters);
	pthread_mutex_unlock(&qp_totals_lock);
	roce_qp_fini(&qp->core);
	uroce_net_free_qpn(net, qpn);
}
