/* SPDX-License-Identifier: MIT */
/*
 * The process's network endpoint (net.h): configuration, capture, sockets, the progress thread
 * and the rendezvous, put together. Transmission happens on the caller's thread; everything
 * received goes through the progress thread (or a thread polling in its stead, uroce_net_poll):
 * a datagram from a socket (or forwarded by the hub) shorter than a BTH is dropped, the
 * rendezvous says whose it is, and this process's are recorded in the capture and handed to
 * ops->recv. This file opens and closes the endpoint and receives; sending is net_tx.c's;
 * net_int.h is what they share.
 */
#include "fabric/net.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fabric/net_int.h"
#include "cm/route.h"
#include "cm/wire.h"
#include "fabric/config.h"
#include "fabric/faults.h"
#include "fabric/log.h"
#include "fabric/pcap.h"
#include "fabric/progress.h"
#include "fabric/mcast.h"
#include "fabric/qpn.h"
#include "fabric/rdv.h"
#include "fabric/udp.h"
#include "transport/container.h"
#include "transport/icrc.h"
#include "transport/wire.h"

/* How often the capture is flushed, so that a killed process leaves its frames behind. */
#define PCAP_FLUSH_NS (100 * 1000000ull)

uint64_t net_wall_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A host without IPv6 (disabled, or a namespace without it) works with IPv4 alone. */
static bool no_ipv6(int err)
{
	return err == EAFNOSUPPORT || err == EADDRNOTAVAIL || err == EPROTONOSUPPORT;
}

/* Open the IPv4 and (if there is IPv6) IPv6 sockets on @port: both or neither. */
static int open_pair(struct uroce_udp s[FAMILIES], uint16_t port)
{
	int err = uroce_udp_open(&s[V4], AF_INET, port);

	if (err)
		return err;
	err = uroce_udp_open(&s[V6], AF_INET6, port);
	if (err && !no_ipv6(err)) {
		uroce_udp_close(&s[V4]);
		return err;
	}
	return 0;
}

static int watch_pair(struct uroce_progress *p, const struct uroce_udp s[FAMILIES])
{
	int err = 0;

	for (int i = 0; i < FAMILIES && !err; i++)
		if (s[i].fd >= 0)
			err = uroce_progress_add_udp(p, &s[i]);
	return err;
}

/* Check @rx's ICRC (into rx->icrc, and its IPv4 ID), record it, and hand it to the owner. */
static void deliver_now(struct uroce_net *net, struct uroce_rx *rx)
{
	/* First, so that the capture shows the IPv4 ID the frame had on the wire. */
	rx->icrc = roce_icrc_verify_gap(&rx->ip, rx->roce, rx->len, &rx->gap);
	if (net->pcap)
		uroce_pcap_write(net->pcap, &rx->ip, rx->roce, rx->len, net_wall_clock());
	atomic_fetch_add(&net->rx_packets, 1);
	net->ops->recv(net->arg, rx);
}

/* A datagram for this process, through the receive faults if any (faults.h). */
static void deliver(struct uroce_net *net, struct uroce_rx *rx)
{
	uint8_t copy[UROCE_PROGRESS_PAYLOAD_MAX];
	unsigned int n;

	if (!uroce_faults_on(net->faults, false)) {
		deliver_now(net, rx);
		return;
	}
	memcpy(copy, rx->roce, rx->len); /* a corrupted byte must not touch the ring's buffer */
	rx->roce = copy;
	n = uroce_faults_apply(net->faults, false, &rx->ip, copy, rx->len);
	for (unsigned int i = 0; i < n; i++)
		deliver_now(net, rx);
}

/* The packets of one datagram have reached ops->recv (net.h: recv_end). */
static void recv_end(void *arg)
{
	struct uroce_net *net = arg;

	if (net->ops->recv_end)
		net->ops->recv_end(net->arg);
}

/* A packet the faults held back is due (progress thread). */
static void emit_held(void *arg, bool tx, const struct roce_ipudp *ip, uint8_t *roce, size_t len)
{
	struct uroce_net *net = arg;

	if (tx) {
		net_transmit(net, &net->udp[roce_gid_is_v4(ip->sgid) ? V4 : V6], ip, roce, len);
	} else {
		struct uroce_rx rx = {.ip = *ip, .roce = roce, .len = len, .now = uroce_now()};

		deliver_now(net, &rx);
		recv_end(net);
		/* A batch of one, outside the thread's turns (net.h: batch_end). */
		if (net->ops->batch_end)
			net->ops->batch_end(net->arg);
	}
}

/* The faults' delay line is timed by the progress thread, as every fabric timer is. */
static void arm_held(void *arg, struct uroce_timer *t, uint64_t deadline)
{
	uroce_timer_arm(arg, t, deadline);
}

static const struct uroce_faults_ops faults_ops = {.emit = emit_held, .arm = arm_held};

static void flush_capture(struct uroce_timer *t, uint64_t now)
{
	struct uroce_net *net = uroce_container_of(t, struct uroce_net, pcap_flush);

	uroce_pcap_flush(net->pcap);
	uroce_timer_arm(net, t, now + PCAP_FLUSH_NS);
}

/* A datagram from a socket, or forwarded by the hub. */
static void on_datagram(void *arg, const struct uroce_rx *in)
{
	struct uroce_net *net = arg;
	struct uroce_rx rx = *in; /* the one copy, which the way to the owner completes */

	if (rx.len < ROCE_BTH_LEN) {
		atomic_fetch_add(&net->rx_short, 1);
		return;
	}
	if (rx.host_sent) {
		/* A host member's multicast, from the hub: routed already (rdv.h, MCAST). */
		deliver(net, &rx);
		return;
	}
	/* Sent past the hub to this process's own socket (net_tx.c: dest_port): the RoCE port. */
	rx.ip.dport = net->cfg.udp_port;
	switch (uroce_rdv_route(net->rdv, &rx)) {
	case UROCE_RDV_DELIVER:
		deliver(net, &rx);
		break;
	case UROCE_RDV_FORWARDED:
	case UROCE_RDV_ANSWERED:
	case UROCE_RDV_HELD:
		break;
	case UROCE_RDV_UNKNOWN:
		atomic_fetch_add(&net->rx_unknown_qpn, 1);
		break;
	}
}

/*
 * A datagram at the head of a socket may be received straight into place (progress.h: steer)
 * when it is for a QP of this process and nothing else wants its bytes as they came: neither a
 * capture nor the receive faults, and no other process (the hub forwards what it receives for
 * them whole).
 */
static bool on_steer(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
		     struct roce_steer *plan)
{
	struct uroce_net *net = arg;

	if (!net->ops->steer || net->pcap || uroce_faults_on(net->faults, false) ||
	    !uroce_rdv_owns(net->rdv, roce_get24(bth + 5)))
		return false;
	return net->ops->steer(net->arg, bth, seg, total, plan);
}

/* Have both sockets of a pair report each datagram's IP header values (udp.h). */
static int ask_ip_fields(struct uroce_udp s[FAMILIES])
{
	int err = uroce_udp_recv_ip_fields(&s[V4]);

	return err ? err : uroce_udp_recv_ip_fields(&s[V6]);
}

/*
 * This process became the hub (progress thread). The RoCE port always asks for the IP header
 * values: what it forwards carries them to their process, and it takes the CM's requests,
 * whose refusals go back with their traffic class.
 */
static int bind_port(void *arg)
{
	struct uroce_net *net = arg;
	int err = open_pair(net->hub_udp, net->cfg.udp_port);

	if (err)
		return err;
	err = ask_ip_fields(net->hub_udp);
	if (!err)
		err = watch_pair(net->progress, net->hub_udp);
	if (err) {
		uroce_udp_close(&net->hub_udp[V4]);
		uroce_udp_close(&net->hub_udp[V6]);
	}
	return err;
}

static void forwarded(void *arg, const struct uroce_rx *rx)
{
	on_datagram(arg, rx);
	recv_end(arg);
}

static void send_mad(void *arg, const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
		     const uint8_t mad[256])
{
	uroce_net_send_mad(arg, sgid, dgid, tos, 64, mad); /* the IP TTL Linux uses */
}

static const struct uroce_rdv_ops rdv_ops = {
	.bind_port = bind_port,
	.forwarded = forwarded,
	.send_mad = send_mad,
};

/*
 * A copy of a multicast datagram this process sent (mcast.h), in a callback: to its own members
 * (its send is captured already; the host's other processes had theirs in the send).
 */
static void mcast_deliver(void *arg, const struct uroce_rx *rx)
{
	struct uroce_net *net = arg;

	atomic_fetch_add(&net->rx_packets, 1);
	net->ops->recv(net->arg, rx);
	recv_end(net);
	if (net->ops->batch_end)
		net->ops->batch_end(net->arg);
}

/* ICMP errors for CM MADs this process sent (progress thread). */
static void on_icmp(void *arg)
{
	struct mad_sock *m = arg;
	uint8_t gid[16];
	int err;

	while (uroce_udp_take_error(&m->udp, gid, &err))
		if (m->net->ops->unreachable && err)
			m->net->ops->unreachable(m->net->arg, gid, err);
}

/* On the progress thread, before anything is received. */
static int init(void *arg, struct uroce_progress *p)
{
	struct uroce_net *net = arg;
	int err;

	net->progress = p;
	net->mcast = uroce_mcast_new(p, mcast_deliver, net);
	if (!net->mcast)
		return errno;
	err = watch_pair(p, net->udp);
	for (int i = 0; i < FAMILIES && !err; i++)
		if (net->mad[i].udp.fd >= 0 &&
		    !uroce_progress_watch(p, net->mad[i].udp.fd, on_icmp, &net->mad[i]))
			err = errno;
	if (!err)
		err = uroce_rdv_join(&net->rdv, net->cfg.udp_port,
				     (uint16_t[2]){net->udp[V4].port, net->udp[V6].port}, p,
				     &net->qpn, &rdv_ops, net);
	return err;
}

static void on_batch_end(void *arg)
{
	struct uroce_net *net = arg;

	if (net->ops->batch_end)
		net->ops->batch_end(net->arg);
}

static void on_polling_ended(void *arg)
{
	struct uroce_net *net = arg;

	if (net->ops->polling_ended)
		net->ops->polling_ended(net->arg);
}

static const struct uroce_progress_ops progress_ops = {
	.init = init,
	.datagram = on_datagram,
	.datagram_end = recv_end,
	.steer = on_steer,
	.batch_end = on_batch_end,
	.polling_ended = on_polling_ended,
};

/*
 * The hub's last act, once its progress thread has stopped: forward what its port received and
 * nobody has read yet. A peer's last packets must not die with the hub (on a wire they would
 * already be on their way); the next hub can bind the port only after this.
 */
static void drain_port(struct uroce_net *net)
{
	uint8_t *buf = malloc(UROCE_UDP_RECV_MAX);

	for (int i = 0; i < FAMILIES && buf; i++) {
		while (net->hub_udp[i].fd >= 0) {
			struct uroce_rx rx = {.now = uroce_now()};
			uint16_t seg;
			ssize_t n = uroce_udp_recv(&net->hub_udp[i], &rx.ip, buf,
						   UROCE_UDP_RECV_MAX, &seg);

			if (n < 0 && errno != EMSGSIZE && errno != EINVAL)
				break;
			/* Only others' datagrams matter: this process is closing. */
			for (size_t off = 0; n > 0 && off < (size_t)n; off += rx.len) {
				rx.roce = buf + off;
				rx.len = uroce_udp_segment((size_t)n, seg, off);
				if (rx.len >= ROCE_BTH_LEN)
					uroce_rdv_route(net->rdv, &rx);
			}
		}
	}
	free(buf);
}

static void free_net(struct uroce_net *net)
{
	for (int i = 0; i < FAMILIES; i++) {
		/* The port first, so that the next hub can bind it when it sees us leave. */
		uroce_udp_close(&net->hub_udp[i]);
		uroce_udp_close(&net->udp[i]);
		uroce_udp_close(&net->mad[i].udp);
	}
	uroce_rdv_leave(net->rdv);
	uroce_mcast_free(net->mcast);
	uroce_faults_free(net->faults);
	uroce_pcap_close(net->pcap);
	uroce_qpn_destroy(&net->qpn);
	uroce_config_free(&net->cfg);
	free(net);
}

int uroce_net_open(struct uroce_net **out, const struct uroce_net_ops *ops, void *arg)
{
	struct uroce_net *net = calloc(1, sizeof(*net));
	struct uroce_progress *p;
	int err;

	if (!net)
		return ENOMEM;
	net->ops = ops;
	net->arg = arg;
	for (int i = 0; i < FAMILIES; i++) {
		net->udp[i].fd = net->hub_udp[i].fd = net->mad[i].udp.fd = -1;
		net->mad[i].net = net;
	}
	uroce_qpn_init(&net->qpn);
	err = uroce_config_load(&net->cfg);
	if (err)
		goto fail;
	uroce_log_set_level(net->cfg.log_level);
	if (net->cfg.pcap_path) {
		net->pcap = uroce_pcap_open(net->cfg.pcap_path);
		if (!net->pcap) {
			err = errno;
			uroce_log(UROCE_LOG_ERROR, "UROCE_PCAP=%s: %s", net->cfg.pcap_path,
				  strerror(err));
			goto fail;
		}
	}
	if (net->cfg.faults.on) {
		net->faults = uroce_faults_new(&net->cfg.faults, &faults_ops, net);
		if (!net->faults) {
			err = ENOMEM;
			goto fail;
		}
	}
	err = open_pair(net->udp, 0);
	if (err) {
		uroce_log(UROCE_LOG_ERROR, "cannot open a UDP socket: %s", strerror(err));
		goto fail;
	}
	if (net->pcap)
		uroce_net_want_ip_fields(net); /* a frame is recorded as it was on the wire */
	/* Without them (or IP_RECVERR), MADs leave through the data sockets: no early error. */
	for (int i = 0; i < FAMILIES; i++)
		if (net->udp[i].fd >= 0 &&
		    (uroce_udp_open(&net->mad[i].udp, net->udp[i].family, 0) ||
		     uroce_udp_recverr(&net->mad[i].udp)))
			uroce_udp_close(&net->mad[i].udp);
	roce_icrc_prime(); /* before the first packet, which would pay for it */
	err = uroce_progress_start(&p, &progress_ops, net, UROCE_PROGRESS_BUFFERS,
				   net->cfg.backend);
	if (err)
		goto fail;
	uroce_log(UROCE_LOG_INFO, "engine: %s receive backend%s%s", uroce_progress_backend(p),
		  net->pcap ? ", capturing to " : "", net->pcap ? net->cfg.pcap_path : "");
	/* net.h: a first range, so that the process is known to the hub from the start. */
	err = uroce_rdv_request_block(net->rdv);
	if (err) {
		uroce_log(UROCE_LOG_ERROR, "no QP numbers: %s", strerror(err));
		uroce_progress_stop(p);
		goto fail;
	}
	if (net->pcap) {
		net->pcap_flush.fire = flush_capture;
		uroce_timer_arm(net, &net->pcap_flush, uroce_now() + PCAP_FLUSH_NS);
	}
	*out = net;
	return 0;

fail:
	free_net(net);
	return err;
}

void uroce_net_close(struct uroce_net *net)
{
	if (!net)
		return;
	uroce_progress_stop(net->progress);
	if (uroce_rdv_is_hub(net->rdv))
		drain_port(net);
	free_net(net);
}

int uroce_net_alloc_qpn(struct uroce_net *net, uint32_t *qpn)
{
	for (;;) {
		int err;

		if (!uroce_qpn_alloc(&net->qpn, qpn))
			return 0;
		err = uroce_rdv_request_block(net->rdv);
		if (err)
			return err;
	}
}

void uroce_net_free_qpn(struct uroce_net *net, uint32_t qpn)
{
	uroce_qpn_free(&net->qpn, qpn);
}

void uroce_net_want_ip_fields(struct uroce_net *net)
{
	int err;

	/* Set once the sockets ask: a second caller meanwhile asks again (no harm), and none
	 * returns before they do. */
	if (atomic_load(&net->ip_fields))
		return;
	err = ask_ip_fields(net->udp);
	if (err)
		uroce_log(UROCE_LOG_ERROR, "received packets' traffic class and hop limit: %s",
			  strerror(err));
	else
		atomic_store(&net->ip_fields, true);
}

int uroce_net_mcast_join(struct uroce_net *net, const uint8_t group[16], unsigned int ifindex,
			 bool join)
{
	return uroce_mcast_join(net->mcast, &net->udp[roce_gid_is_v4(group) ? V4 : V6], group,
				ifindex, join);
}

int uroce_net_poll(struct uroce_net *net)
{
	return uroce_progress_poll(net->progress);
}

void uroce_net_unpoll(struct uroce_net *net)
{
	uroce_progress_unpoll(net->progress);
}

int uroce_net_wait(struct uroce_net *net, int fd, bool (*ready)(void *arg), void *arg)
{
	return uroce_progress_wait(net->progress, fd, ready, arg);
}

uint32_t uroce_net_rx_budget(const struct uroce_net *net)
{
	uint32_t min = UINT32_MAX;

	for (int i = 0; i < FAMILIES; i++)
		if (net->udp[i].fd >= 0 && net->udp[i].rcvbuf < min)
			min = net->udp[i].rcvbuf;
	return min == UINT32_MAX ? 0 : min / 2;
}

bool uroce_net_polled(const struct uroce_net *net)
{
	return uroce_progress_polled(net->progress);
}

void uroce_timer_arm(struct uroce_net *net, struct uroce_timer *t, uint64_t deadline)
{
	uroce_timers_arm(uroce_progress_timers(net->progress), t, deadline);
}

bool uroce_net_on_timer_thread(struct uroce_net *net)
{
	return uroce_timers_on_runner(uroce_progress_timers(net->progress));
}

void uroce_timer_cancel(struct uroce_net *net, struct uroce_timer *t)
{
	uroce_timers_cancel(uroce_progress_timers(net->progress), t);
}

void uroce_net_get_stats(struct uroce_net *net, struct uroce_net_stats *out)
{
	*out = (struct uroce_net_stats){
		.rx_packets = atomic_load(&net->rx_packets),
		.tx_packets = atomic_load(&net->tx_packets),
		.tx_errors = atomic_load(&net->tx_errors),
		.forwarded = uroce_rdv_forwarded(net->rdv),
		.rx_short = atomic_load(&net->rx_short),
		.rx_unknown_qpn = atomic_load(&net->rx_unknown_qpn),
		.rx_buffers_lost =
			uroce_progress_rx_lost(net->progress) + uroce_rdv_forward_lost(net->rdv),
		.rx_oversize = uroce_progress_rx_oversize(net->progress),
	};
	uroce_faults_get_stats(net->faults, &out->faults);
}

const char *uroce_net_capture_path(const struct uroce_net *net)
{
	return net->pcap ? net->cfg.pcap_path : NULL;
}

int uroce_net_is_hub(struct uroce_net *net)
{
	return uroce_rdv_is_hub(net->rdv);
}

int uroce_net_send_mad(struct uroce_net *net, const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t tos, uint8_t ttl, const uint8_t mad[256])
{
	struct roce_pkt pkt = {
		.bth = {.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY,
			.pkey = 0xFFFF,
			.dqpn = ROCE_GSI_QPN,
			/* QP 1's send PSN: from 0, one per MAD (§4.1) */
			.psn = atomic_fetch_add(&net->gsi_psn, 1) & ROCE_PSN_MASK},
		.deth = {.qkey = CM_QP1_QKEY, .src_qpn = ROCE_GSI_QPN},
		.payload = mad,
		.payload_len = CM_MAD_LEN,
	};
	struct roce_ipudp f = {.tos = tos, .ttl = ttl};
	uint8_t buf[ROCE_BTH_LEN + ROCE_DETH_LEN + CM_MAD_LEN + ROCE_ICRC_LEN];
	size_t len = roce_encode(buf, sizeof(buf), &pkt);
	const struct uroce_udp *s = &net->mad[roce_gid_is_v4(sgid) ? V4 : V6].udp;
	int err;

	memcpy(f.sgid, sgid, 16);
	memcpy(f.dgid, dgid, 16);
	if (s->fd < 0)
		s = NULL; /* no MAD socket: a data socket's */
	err = net_send_via(net, s, &f, buf, len);
	/* The socket's pending ICMP error (another MAD's, queued for on_icmp) failed this one. */
	return s && net_icmp_error(err) ? net_send_via(net, s, &f, buf, len) : err;
}

int uroce_net_service(struct uroce_net *net, enum uroce_service_op op, struct uroce_service *s)
{
	int err = uroce_rdv_service(net->rdv, op, s);

	/* A readiness signal for scripts: an rdma_cm listener is no socket that ss would show. */
	if (!err && op == UROCE_SERVICE_LISTEN)
		uroce_log(UROCE_LOG_INFO, "rdma_cm: listening on port %u (port space %#x)", s->port,
			  s->ps);
	return err;
}

int uroce_net_service_async(struct uroce_net *net, enum uroce_service_op op,
			    const struct uroce_service *s, uroce_service_done_fn fn, void *arg)
{
	return uroce_rdv_service_async(net->rdv, op, s, fn, arg);
}

void uroce_net_cm_conn(struct uroce_net *net, bool up, const struct uroce_cm_conn *c)
{
	uroce_rdv_cm_conn(net->rdv, up, c);
}

uint32_t uroce_net_comm_tag(struct uroce_net *net)
{
	return uroce_rdv_comm_tag(net->rdv);
}
