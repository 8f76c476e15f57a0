// SPDX-License-Identifier: MIT
/*
 * The engine's send path (engine_int.h): what a QP's transport core (transport/qp.h) has ready
 * leaves as trains of packets per destination, and the QP's timer follows the core's next
 * deadline.
 *
 * Three things run a QP's core, always under the QP's lock: the posting thread (uroce_qp_posted
 * in engine_held.c, uroce_qp_kick), and the receiving thread -- the progress thread or one
 * polling in its stead -- for a received packet (engine_rx.c) and for a deadline
 * (uroce_engine_on_timer). Each ends by draining: every packet the core has ready is sent from
 * the calling thread, and the QP's timer is moved to the core's next deadline.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/net.h"
#include "fabric/udp.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/engine_int.h"

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
	uroce_timer_arm(uroce_engine_ep, &qp->timer, t);
}

/*
 * Packets the core produced for one destination, sent as one train (uroce_net_send_train: runs
 * of equal length leave as UDP GSO sends, each a datagram of at most UROCE_UDP_GSO_MAX bytes and
 * UROCE_UDP_GSO_SEGS packets). A train that has TRAIN_FLUSH bytes leaves where one of its
 * datagrams is full, so that a stream's datagrams are all full but the last of each message: a
 * receiver takes a full one straight into place (fabric/progress_steer.c), and a train cut
 * anywhere else would leave a datagram of a few packets at every cut. One per thread, allocated
 * on first use.
 */
enum {
	TRAIN_PKTS = 3 * UROCE_UDP_GSO_SEGS,
	TRAIN_FLUSH = 2 * 65536,
	TRAIN_BYTES = TRAIN_FLUSH + UROCE_UDP_GSO_MAX + ROCE_PKT_MAX,
};

struct train {
	uint8_t buf[TRAIN_BYTES];
	uint16_t lens[TRAIN_PKTS];
	struct roce_pkt_gap gaps[TRAIN_PKTS]; /* payloads left in the application's memory */
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
			uroce_net_send(uroce_engine_ep, &f, buf, len);
	}
}

/*
 * Send everything the core has ready, in trains per destination. qp->lock held. An ACK held
 * back to coalesce waits on the QP's timer only when the progress thread drains: from any other
 * thread (a receive batch of a polling or waiting thread, a post) it leaves now, since arming
 * that timer would wake the progress thread twice, which would then contend with this thread
 * for the receive and QP locks, at each batch of a stream.
 */
void uroce_engine_drain(struct uroce_qp *qp, uint64_t now)
{
	struct train *t = train_get();
	struct path_cache paths = {0};
	struct roce_ipudp f, next;
	struct roce_dest dest;
	unsigned int n = 0, dgram_k = 0;
	size_t off = 0, len, dgram_len = 0, dgram_bytes = 0;

	atomic_store_explicit(&qp->drain_due, false, memory_order_relaxed);
	if (!uroce_net_on_timer_thread(uroce_engine_ep))
		roce_qp_ack_now(&qp->core);
	if (!t) {
		drain_one_by_one(qp, now);
		rearm(qp);
		return;
	}
	/*
	 * A payload left in the application's memory (transport/qp.h: roce_qp_write_pkt_gap) is
	 * read by the send of its train, which happens under the QP's lock, before anything
	 * could complete its request.
	 */
	while ((len = roce_qp_write_pkt_gap(&qp->core, t->buf + off, &dest, now, &t->gaps[n]))) {
		bool other, joins;

		if (cached_path_of(qp, dest.ah, &paths, &next))
			continue; /* no source address: the packet is lost (net.h) */
		/* Another destination (UD), or the packet joins the train's last datagram. */
		other = n && memcmp(&next, &f, sizeof(f));
		joins = n && !other && len == dgram_len &&
			uroce_udp_gso_room(dgram_k, dgram_bytes, len);
		if (other || (n && !joins && off >= TRAIN_FLUSH)) {
			/* The train so far leaves first; this packet starts the next. */
			uroce_net_send_train(uroce_engine_ep, &f, t->buf, t->lens, t->gaps, n);
			memmove(t->buf, t->buf + off, len);
			t->gaps[0] = t->gaps[n];
			off = 0;
			n = 0;
		}
		if (joins) {
			dgram_k++;
			dgram_bytes += len;
		} else {
			dgram_len = len;
			dgram_k = 1;
			dgram_bytes = len;
		}
		f = next;
		t->lens[n++] = (uint16_t)len;
		off += len;
		if (n == TRAIN_PKTS || off + ROCE_PKT_MAX > TRAIN_BYTES) {
			uroce_net_send_train(uroce_engine_ep, &f, t->buf, t->lens, t->gaps, n);
			off = 0;
			n = 0;
		}
	}
	if (n)
		uroce_net_send_train(uroce_engine_ep, &f, t->buf, t->lens, t->gaps, n);
	rearm(qp);
}

void uroce_engine_on_timer(struct uroce_timer *t, uint64_t now)
{
	struct uroce_qp *qp = uroce_container_of(t, struct uroce_qp, timer);

	pthread_mutex_lock(&qp->lock);
	qp->timer_armed = false;
	roce_qp_handle_expiry(&qp->core, now);
	uroce_engine_drain(qp, now);
	pthread_mutex_unlock(&qp->lock);
}

void uroce_qp_kick(struct uroce_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	qp->posts_held = 0;
	uroce_engine_drain(qp, uroce_now());
	pthread_mutex_unlock(&qp->lock);
}

void uroce_qp_modified(struct uroce_qp *qp, const struct ibv_qp_attr *attr, int attr_mask)
{
	/* What a received packet called for (an ACK a polling thread put off, net.h) leaves
	 * first, as it would have from a NIC before the application saw the completion. */
	uroce_engine_drain(qp, uroce_now());
	roce_qp_modify(&qp->core, attr, attr_mask);
}
