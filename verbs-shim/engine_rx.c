// SPDX-License-Identifier: MIT
/*
 * The engine's receive path (engine_int.h): each packet the fabric receives goes to the core of
 * the QP it is for, to each QP attached to its multicast group, or, for QP 1, to the MAD
 * handler (uroce_engine_set_mad, uroce_engine_set_mcast); the QPs that took packets send their
 * answers once the batch is over.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "fabric/net.h"
#include "verbs-shim/caps.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/engine_int.h"
#include "verbs-shim/qpn_map.h"

/*
 * QPs that took packets in the current receive batch and have not sent what they have ready
 * yet: one drain (uroce_engine_drain) per QP per batch (uroce_engine_on_batch_end) instead of
 * one per packet, so that the answers a batch calls for leave as trains. By QP number: a QP may
 * be destroyed before the batch ends. Used by the receiving thread only (net.h: one at a time).
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
 * (uroce_engine_on_recv_end), before any other callback of the fabric runs on the thread.
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

void uroce_engine_on_recv_end(void *arg)
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
	/* An earlier packet's NAK leaves before this one can replace it (transport/qp.h). */
	if (roce_qp_nak_due(&qp->core))
		uroce_engine_drain(qp, now);
	roce_qp_read_pkt(&qp->core, pkt, ip, now);
	atomic_store_explicit(&qp->drain_due, true, memory_order_relaxed);
	pending.now = now;
	if (!is_pending(qpn)) {
		if (pending.n < sizeof(pending.qpn) / sizeof(pending.qpn[0]))
			pending.qpn[pending.n++] = qpn;
		else
			uroce_engine_drain(qp, now); /* too many QPs in one batch: this one now */
	}
	return true;
}

/*
 * A datagram sent to a multicast group (DestQP 0xFFFFFF): to each QP of this process attached
 * to the group its IP destination names (IBA 10.5.2.3), but not to the QP that sent it.
 */
static void deliver_mcast(const struct roce_pkt *pkt, const struct uroce_rx *rx)
{
	uroce_engine_members_fn members = atomic_load(&uroce_engine_up.mcast_members);
	uint32_t qpn[UROCE_MAX_MCAST_QP_ATTACH];
	unsigned int n = members ? members(rx->ip.dgid, qpn, UROCE_MAX_MCAST_QP_ATTACH) : 0;
	unsigned int got = 0;

	for (unsigned int i = 0; i < n; i++)
		if (!(rx->host_sent && qpn[i] == pkt->deth.src_qpn))
			got += deliver_to(qpn[i], pkt, &rx->ip, rx->now);
	if (!got)
		atomic_fetch_add(&uroce_engine_drops.no_qp, 1);
}

void uroce_engine_on_recv(void *arg, const struct uroce_rx *rx)
{
	uroce_engine_mad_fn mad_received;
	struct roce_pkt pkt;

	(void)arg;
	if (roce_decode(rx->roce, rx->len, &pkt) != ROCE_OK) {
		atomic_fetch_add(&uroce_engine_drops.malformed, 1);
		return;
	}
	if (rx->icrc == ROCE_ICRC_BAD) {
		atomic_fetch_add(&uroce_engine_drops.bad_icrc, 1);
		return;
	}
	/* The fabric steers only whole payloads (progress.h: steer). */
	if (rx->gap.len) {
		if (rx->gap.off != pkt.info->hdr_len || rx->gap.len != pkt.payload_len) {
			atomic_fetch_add(&uroce_engine_drops.malformed, 1);
			return;
		}
		pkt.payload = rx->gap.src;
	}
	if (pkt.bth.dqpn == ROCE_GSI_QPN) {
		rx_qp_release(); /* the CM's handler may modify a QP */
		mad_received = atomic_load(&uroce_engine_up.mad_received);
		if (!mad_received || !mad_received(&pkt, &rx->ip))
			atomic_fetch_add(&uroce_engine_drops.unsupported, 1);
		return;
	}
	if (pkt.bth.dqpn == ROCE_MCAST_QPN) {
		deliver_mcast(&pkt, rx);
		return;
	}
	if (!deliver_to(pkt.bth.dqpn, &pkt, &rx->ip, rx->now))
		atomic_fetch_add(&uroce_engine_drops.no_qp, 1);
}

/*
 * The QP keeps its lock, as rx_qp, from the plan to the datagram's end: the memory it names
 * stays registered (ibv_dereg_mr waits for each QP's lock: uroce_engine_quiesce) while the
 * kernel writes into it.
 */
bool uroce_engine_on_steer(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
			   struct roce_steer *plan)
{
	struct uroce_qp *qp = rx_qp_take(roce_get24(bth + 5));

	(void)arg;
	if (qp && roce_qp_steer(&qp->core, bth, seg, total, plan))
		return true;
	rx_qp_release();
	return false;
}

/*
 * The batch is over: each QP that took packets sends what it has ready, unless a drain since did
 * (a post the application made meanwhile: in a ping-pong the answer took the ACK along).
 * Only the receiving thread marks a QP due, so a QP seen not due was drained after its packets.
 */
void uroce_engine_on_batch_end(void *arg)
{
	(void)arg;
	uroce_qpn_map_read_lock();
	for (unsigned int i = 0; i < pending.n; i++) {
		struct uroce_qp *qp = uroce_qpn_map_find(pending.qpn[i]);

		if (!qp || !atomic_load_explicit(&qp->drain_due, memory_order_relaxed))
			continue; /* destroyed meanwhile, or drained */
		pthread_mutex_lock(&qp->lock);
		uroce_engine_drain(qp, pending.now);
		pthread_mutex_unlock(&qp->lock);
	}
	uroce_qpn_map_read_unlock();
	pending.n = 0;
}

void uroce_engine_on_unreachable(void *arg, const uint8_t gid[16], int err)
{
	uroce_engine_unreachable_fn fn = atomic_load(&uroce_engine_up.mad_unreachable);

	if (fn)
		fn(arg, gid, err);
}
