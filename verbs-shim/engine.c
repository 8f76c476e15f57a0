// SPDX-License-Identifier: MIT
/*
 * The engine's lifetime (engine.h): the process's network endpoint (fabric/net.h), opened on
 * first use and closed at exit, never used by a child of fork(); a QP's number, transport core
 * and timer from its creation to its destruction; the process's counters.
 *
 * The engine's other files: engine_tx.c sends what a QP's core has ready, engine_rx.c hands
 * received packets to QPs, engine_held.c holds the packets of a burst of posts for the next
 * poll. They share engine_int.h. The core's view of a QP's objects, which the engine is given
 * for each QP (uroce_core_env), is core_env.c, a module above the engine (core_env.h).
 */
#include "verbs-shim/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fabric/log.h"
#include "fabric/net.h"
#include "uroce/uroce.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/engine_int.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/qpn_map.h"

struct uroce_net *uroce_engine_ep;
static int net_err;
atomic_bool uroce_engine_ready;
/* A child of fork(): uroce_engine_ep is the parent's (child_after_fork). */
static atomic_bool in_child;
static pthread_once_t net_once = PTHREAD_ONCE_INIT;

struct uroce_engine_drops uroce_engine_drops;

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

	if (atomic_load_explicit(&uroce_engine_ready, memory_order_acquire))
		uroce_net_get_stats(uroce_engine_ep, &ns);
	/* Under the lock a QP being destroyed is counted once: in the map or in the totals. */
	pthread_mutex_lock(&qp_totals_lock);
	qps = qp_totals;
	uroce_qpn_map_for_each(add_live_qp, &qps);
	pthread_mutex_unlock(&qp_totals_lock);
	*st = (struct uroce_stats){
		.tx_packets = ns.tx_packets,
		.rx_packets = ns.rx_packets,
		.forwarded = ns.forwarded,
		.rx_malformed = atomic_load(&uroce_engine_drops.malformed),
		.rx_bad_icrc = atomic_load(&uroce_engine_drops.bad_icrc),
		.rx_no_qp = atomic_load(&uroce_engine_drops.no_qp),
		.rx_unsupported = atomic_load(&uroce_engine_drops.unsupported),
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
	if (!atomic_load_explicit(&uroce_engine_ready, memory_order_acquire))
		return NULL;
	return uroce_net_capture_path(uroce_engine_ep);
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

static const struct uroce_net_ops net_ops = {
	.recv = uroce_engine_on_recv,
	.recv_end = uroce_engine_on_recv_end,
	.steer = uroce_engine_on_steer,
	.batch_end = uroce_engine_on_batch_end,
	.polling_ended = uroce_engine_flush_held,
	.unreachable = uroce_engine_on_unreachable,
};
/*
 * In a child of fork(): the parent's endpoint is not ours. A flag rather than a getpid() check
 * on every use: getpid() is a system call, and the engine is used several times a connection.
 */
static void child_after_fork(void)
{
	atomic_store(&uroce_engine_ready, false);
	atomic_store(&in_child, true);
}

static void open_net(void)
{
	net_err = uroce_net_open(&uroce_engine_ep, &net_ops, NULL);
	if (uroce_engine_ep && pthread_atfork(NULL, NULL, child_after_fork)) {
		/* Without the handler a child could not tell: no endpoint (ENOMEM). */
		uroce_net_close(uroce_engine_ep);
		uroce_engine_ep = NULL;
		net_err = ENOMEM;
	}
	if (uroce_engine_ep)
		atomic_store_explicit(&uroce_engine_ready, true, memory_order_release);
}

/*
 * At exit, leave the host's rendezvous properly: a hub forwards what its port still holds for
 * other processes before handing the port over (a UD or UC datagram lost there is gone).
 * A child of fork() has its parent's endpoint without its threads: it leaves it alone.
 */
__attribute__((destructor)) static void close_net(void)
{
	if (uroce_engine_ep && !atomic_load(&in_child)) {
		log_totals(); /* first: uroce_engine_stats reads the endpoint only while ready */
		/* No new entry into the engine; a thread waiting in it leaves (progress.h). */
		atomic_store(&uroce_engine_ready, false);
		uroce_net_close(uroce_engine_ep);
	}
}

/* The endpoint, opened on first use: NULL with errno if it cannot be had. */
static struct uroce_net *uroce_engine(void)
{
	static atomic_bool told;

	pthread_once(&net_once, open_net);
	if (uroce_engine_ep && atomic_load_explicit(&in_child, memory_order_relaxed)) {
		/* docs/UNSUPPORTED.md: the parent's endpoint is not usable after fork(). */
		if (!atomic_exchange(&told, true))
			fprintf(stderr,
				"uroce: a child of fork() cannot use the data path its parent "
				"started (no QPs in the child)\n");
		errno = ENOTSUP;
		return NULL;
	}
	if (!uroce_engine_ep)
		errno = net_err;
	return uroce_engine_ep;
}

struct uroce_engine_upcalls uroce_engine_up;

void uroce_engine_set_mad(uroce_engine_mad_fn received, uroce_engine_unreachable_fn unreachable)
{
	atomic_store(&uroce_engine_up.mad_received, received);
	atomic_store(&uroce_engine_up.mad_unreachable, unreachable);
}

void uroce_engine_set_mcast(uroce_engine_members_fn members, uroce_engine_detach_fn detach_all)
{
	atomic_store(&uroce_engine_up.mcast_members, members);
	atomic_store(&uroce_engine_up.mcast_detach_all, detach_all);
}

int uroce_engine_start(void)
{
	return uroce_engine() ? 0 : errno;
}

struct uroce_net *uroce_engine_net(void)
{
	return uroce_engine();
}

int uroce_qp_engine_init(struct uroce_qp *qp, enum ibv_qp_type type, const struct roce_qp_env *env,
			 uint32_t *qpn)
{
	struct uroce_port_state port;
	struct ibv_qp_attr mtu;
	int err;

	if (!uroce_engine())
		return errno;
	err = uroce_net_alloc_qpn(uroce_engine_ep, qpn);
	if (err)
		return err;
	if (type == IBV_QPT_UD) /* its receives get the IP header as GRH (responder.c) */
		uroce_net_want_ip_fields(uroce_engine_ep);
	roce_qp_init(&qp->core, type, *qpn, qp->sq_sig_all, &qp->sq, env, qp);
	err = uroce_qpn_map_add(*qpn, qp);
	if (err) {
		roce_qp_fini(&qp->core);
		uroce_net_free_qpn(uroce_engine_ep, *qpn);
		return err;
	}
	/* No more in flight than the receiver's socket holds (the peer's: alike, net.h). */
	roce_qp_set_window_bytes(&qp->core, uroce_net_rx_budget(uroce_engine_ep));
	/* UD messages are bounded by the port's MTU (IBA 9.8.1); RC and UC set a path MTU. */
	uroce_device_port(qp->ctx->dev, &port);
	mtu.path_mtu = uroce_active_mtu(port.ifmtu);
	roce_qp_modify(&qp->core, &mtu, IBV_QP_PATH_MTU);
	qp->timer.fire = uroce_engine_on_timer;
	return 0;
}

void uroce_engine_mcast(struct uroce_qp *qp, const union ibv_gid *group, bool join)
{
	/* The QP exists: so does the engine. An error is logged there (net.h). */
	uroce_net_mcast_join(uroce_engine_ep, group->raw, qp->ctx->dev->ifindex, join);
}

void uroce_qp_destroying(struct uroce_qp *qp)
{
	uint32_t qpn = qp->qpx.qp_base.qp_num;
	uroce_engine_detach_fn detach_all;

	uroce_qp_kick(qp); /* as in uroce_qp_modified */
	detach_all = atomic_load(&uroce_engine_up.mcast_detach_all);
	if (detach_all)
		detach_all(qp);
	/* From the map to the totals in one step for uroce_get_stats (packet handlers and
	 * timers do not take qp_totals_lock). */
	pthread_mutex_lock(&qp_totals_lock);
	uroce_qpn_map_remove(qpn); /* waits for a packet being handled */
	uroce_timer_cancel(uroce_engine_ep, &qp->timer);
	add_qp_counters(&qp_totals, &qp->core.counters);
	pthread_mutex_unlock(&qp_totals_lock);
	roce_qp_fini(&qp->core);
	uroce_net_free_qpn(uroce_engine_ep, qpn);
}
