/* SPDX-License-Identifier: MIT */
/*
 * Sending (net.h: uroce_net_send, uroce_net_send_train), on the caller's thread: the socket
 * (this process's own; for a MAD, a MAD socket if there is one), the destination port (4791, or
 * a process's own on this host: direct delivery), a message's packets as one UDP GSO train,
 * the fault injection and the capture of what left.
 */
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

/* Count and record a sent datagram. */
void net_sent(struct uroce_net *net, const struct roce_ipudp *g, const uint8_t *roce, size_t len)
{
	if (net->pcap)
		uroce_pcap_write(net->pcap, g, roce, len, net_wall_clock());
	atomic_fetch_add(&net->tx_packets, 1);
}

/*
 * A CM message to QP 1 at this host's own address that names the receiver's communication ID
 * (every one after the REQ): the own port of the process whose tag the ID carries, or 0. It
 * would reach that process through the hub anyway (fabric/rdv_cm.c), a hop and a wake-up
 * later; REQ and SIDR_REQ still go to the hub, which knows the listeners.
 */
static uint16_t mad_direct_port(struct uroce_net *net, const uint8_t *roce, size_t len, bool v6)
{
	const uint8_t *mad = cm_gsi_mad(roce, len);
	struct cm_route route;

	if (!mad)
		return 0;
	route = cm_route_of(mad, CM_MAD_LEN);
	return route.kind == CM_ROUTE_COMM_ID
		       ? uroce_rdv_block_port(net->rdv, cm_comm_tag(route.comm_id), v6)
		       : 0;
}

/*
 * The UDP port a datagram to @g leaves for: the RoCE port, or, for a QP of a process of this
 * host reached from the very address it is sent from, that process's own socket, past the hub
 * (rdv.h). The ICRC and the capture keep the RoCE port: it is what a wire would carry, and the
 * receiver puts it back (net.c: on_datagram).
 */
static uint16_t dest_port(struct uroce_net *net, const struct roce_ipudp *g, const uint8_t *roce,
			  size_t len)
{
	/* DestQP: BTH bytes 5..7 (PROTOCOL.md §1.5). */
	uint32_t qpn = (uint32_t)roce[5] << 16 | (uint32_t)roce[6] << 8 | roce[7];
	bool v6 = !roce_gid_is_v4(g->dgid);
	uint16_t port = 0;

	if (!memcmp(g->sgid, g->dgid, 16))
		port = qpn == ROCE_GSI_QPN ? mad_direct_port(net, roce, len, v6)
					   : uroce_rdv_direct_port(net->rdv, qpn, v6);
	return port ? port : g->dport;
}

int net_transmit(struct uroce_net *net, const struct uroce_udp *s, const struct roce_ipudp *g,
		 const uint8_t *roce, size_t len)
{
	struct roce_ipudp w = *g;
	int err;

	w.dport = dest_port(net, g, roce, len);
	if (net->pcap)
		uroce_pcap_hold(net->pcap); /* recorded before any answer to it (pcap.h) */
	err = uroce_udp_send(s, &w, roce, len);
	if (err)
		atomic_fetch_add(&net->tx_errors, 1);
	else
		net_sent(net, g, roce, len);
	if (net->pcap)
		uroce_pcap_release(net->pcap);
	return err;
}

/* The socket for @f, or an error for @f and @len (net.h). */
static int check_send(struct uroce_net *net, const struct roce_ipudp *f, size_t len,
		      const struct uroce_udp **s)
{
	bool v4 = roce_gid_is_v4(f->sgid);

	*s = &net->udp[v4 ? V4 : V6];
	if (v4 != roce_gid_is_v4(f->dgid) || (*s)->fd < 0)
		return EAFNOSUPPORT;
	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return EINVAL;
	if (len > ROCE_IP_LEN_MAX - roce_ipudp_hdr_len(f))
		return EMSGSIZE;
	return 0;
}

/* @f as it leaves this process's socket @s, with IPv4 ID @id (PROTOCOL.md §2.1). */
static struct roce_ipudp on_wire(struct uroce_net *net, const struct uroce_udp *s,
				 const struct roce_ipudp *f, uint16_t id)
{
	struct roce_ipudp g = *f;
	bool v4 = roce_gid_is_v4(f->sgid);

	g.sport = s->port;
	g.dport = net->cfg.udp_port;
	g.ip_id = v4 ? id : 0;
	g.ip_frag = v4 ? ROCE_IPV4_DF : 0;
	g.udp_csum = 0;
	return g;
}

/* 127.0.0.0/8 or ::1. */
static bool is_loopback(const uint8_t gid[16])
{
	static const uint8_t v6[16] = {[15] = 1};

	return roce_gid_is_v4(gid) ? gid[12] == 127 : !memcmp(gid, v6, 16);
}

/* An error a send may return once for an earlier datagram's ICMP error (udp.h). */
bool net_icmp_error(int err)
{
	return err == ECONNREFUSED || err == EHOSTUNREACH || err == ENETUNREACH ||
	       err == EHOSTDOWN || err == ENETDOWN;
}

/*
 * uroce_net_send through @s, or the socket check_send picks (@s NULL). 0, or the errors of
 * uroce_net_send (net.h), counted in tx_errors.
 */
int net_send_via(struct uroce_net *net, const struct uroce_udp *s, const struct roce_ipudp *f,
		 uint8_t *roce, size_t len)
{
	const struct uroce_udp *data;
	struct roce_ipudp g;
	int err = check_send(net, f, len, &data);
	unsigned int n = 1;

	if (err) {
		atomic_fetch_add(&net->tx_errors, 1);
		return err;
	}
	if (!s)
		s = data;
	/* PROTOCOL.md §2.1: the ICRC covers the IPv4 ID; the kernel sends 0 with DF. */
	g = on_wire(net, s, f, 0);
	roce_icrc_fill(&g, roce, len);
	if (roce_gid_is_multicast(g.dgid)) {
		struct uroce_rx copy = {
			.ip = g, .roce = roce, .len = len, .icrc = ROCE_ICRC_OK, .host_sent = true};

		/*
		 * This host's members get a copy: the other processes' now (rdv.h), this
		 * process's own from its receiving thread (mcast.h). Over loopback no other host
		 * listens.
		 */
		uroce_rdv_mcast_sent(net->rdv, &copy);
		uroce_mcast_sent(net->mcast, &g, roce, len);
		if (is_loopback(g.sgid)) {
			net_sent(net, &g, roce, len);
			return 0;
		}
	}
	/* Lost or held back by a fault: gone for now, as on a wire; the sender cannot tell. */
	if (uroce_faults_on(net->faults, true))
		n = uroce_faults_apply(net->faults, true, &g, roce, len);
	for (unsigned int i = 0; i < n && !err; i++)
		err = net_transmit(net, s, &g, roce, len);
	return err;
}

int uroce_net_send(struct uroce_net *net, const struct roce_ipudp *f, uint8_t *roce, size_t len)
{
	return net_send_via(net, NULL, f, roce, len);
}

/*
 * How many of the datagrams lens[0..n) at @buf one GSO send takes: equal lengths (the last may
 * be shorter), one destination port (dest_port: UD sends of a train may go to several QPs),
 * which goes to *@dport.
 */
static unsigned int gso_run(struct uroce_net *net, const struct roce_ipudp *g, const uint8_t *buf,
			    const uint16_t *lens, unsigned int n, size_t *bytes, uint16_t *dport)
{
	uint16_t port = dest_port(net, g, buf, lens[0]);
	unsigned int k = 1;

	*dport = port;
	*bytes = lens[0];
	while (k < n && lens[k] <= lens[0] && uroce_udp_gso_room(k, *bytes, lens[k]) &&
	       dest_port(net, g, buf + *bytes, lens[k]) == port) {
		*bytes += lens[k];
		if (lens[k++] < lens[0])
			break; /* a shorter one ends the run */
	}
	return k;
}

/* Send @n datagrams one by one, each with ID 0 (a path without UDP GSO). */
static int send_each(struct uroce_net *net, const struct roce_ipudp *f, uint8_t *buf,
		     const uint16_t *lens, unsigned int n)
{
	int err = 0;

	for (unsigned int j = 0; j < n; buf += lens[j], j++) {
		int e = uroce_net_send(net, f, buf, lens[j]);

		if (!err)
			err = e;
	}
	return err;
}

/*
 * The pieces of gathered runs one sendmmsg takes (run_iov): two full runs' worth, which covers
 * a train of the engine's (verbs-shim/engine_tx.c); a run beyond is copied whole.
 */
#define RUN_IOV (2 * (2 * UROCE_UDP_GSO_SEGS + 1))

/*
 * A GSO run of a train (gso_run): @k datagrams lens[0..k), @bytes in all at @buf, for @dport;
 * with @gaps, the payloads gaps[0..k) left in the sender's memory (transport/wire.h).
 */
struct run {
	uint8_t *buf;
	const uint16_t *lens;
	const struct roce_pkt_gap *gaps;
	unsigned int k;
	size_t bytes;
	uint16_t dport;
};

/* Copy the gaps of the @n datagrams lens[0..n) at @buf into them (wire.h: roce_pkt_gap_fill). */
static void fill_gaps(uint8_t *buf, const uint16_t *lens, const struct roce_pkt_gap *gaps,
		      unsigned int n)
{
	for (unsigned int j = 0; j < n; buf += lens[j], j++)
		roce_pkt_gap_fill(buf, &gaps[j]);
}

/* Fill the ICRCs of run @r, @g0 being its first datagram's headers. */
static void fill_run(const struct roce_ipudp *g0, const struct run *r)
{
	struct roce_ipudp g = *g0;
	bool v4 = roce_gid_is_v4(g0->sgid);
	uint8_t *p = r->buf;

	/* The kernel numbers the IPv4 IDs of GSO segments 0, 1, 2, ... (udp.h). */
	for (unsigned int j = 0; j < r->k; p += r->lens[j], j++) {
		g.ip_id = v4 ? (uint16_t)j : 0;
		if (r->gaps)
			roce_icrc_fill_gap(&g, p, r->lens[j], &r->gaps[j]);
		else
			roce_icrc_fill(&g, p, r->lens[j]);
	}
}

/*
 * The pieces of run @r with gaps, into @iov (room for @cap): the buffer's bytes up to each gap,
 * the gap's bytes where they are, and the rest; returns how many, or 0 if they do not fit.
 */
static unsigned int run_iov(const struct run *r, struct iovec *iov, unsigned int cap)
{
	const uint8_t *p = r->buf, *cur = r->buf;
	unsigned int n = 0;

	for (unsigned int j = 0; j < r->k; p += r->lens[j], j++) {
		const struct roce_pkt_gap *gp = &r->gaps[j];

		if (!gp->len)
			continue;
		if (n + 3 > cap)
			return 0;
		iov[n++] = (struct iovec){.iov_base = (void *)cur,
					  .iov_len = (size_t)(p + gp->off - cur)};
		iov[n++] = (struct iovec){.iov_base = (void *)gp->src, .iov_len = gp->len};
		cur = p + gp->off + gp->len;
	}
	iov[n++] = (struct iovec){.iov_base = (void *)cur, .iov_len = (size_t)(p - cur)};
	return n;
}

/* Count and record run @r, sent. */
static void run_sent(struct uroce_net *net, const struct roce_ipudp *g0, const struct run *r)
{
	struct roce_ipudp g = *g0;
	bool v4 = roce_gid_is_v4(g0->sgid);
	uint8_t *p = r->buf;

	atomic_fetch_add(&net->tx_packets, r->k);
	if (!net->pcap)
		return;
	for (unsigned int j = 0; j < r->k; p += r->lens[j], j++) {
		g.ip_id = v4 ? (uint16_t)j : 0;
		uroce_pcap_write(net->pcap, &g, p, r->lens[j], net_wall_clock());
	}
}

/*
 * Send the runs @r[0..n) of a train through @s as one sendmmsg (udp.h: uroce_udp_send_batch),
 * @g0 being their first datagrams' headers; each datagram is recorded before any answer to it
 * (pcap.h). A run the kernel refuses is counted in tx_errors; one it cannot send as GSO (EIO or
 * EINVAL) turns GSO off, and it and those after it go one by one. Returns 0 or the first error.
 */
static int send_runs(struct uroce_net *net, const struct uroce_udp *s, const struct roce_ipudp *g0,
		     struct run *r, unsigned int n)
{
	struct uroce_udp_msg m[UROCE_UDP_BATCH];
	struct iovec iov[RUN_IOV];
	unsigned int i = 0, used = 0;
	int err = 0;

	for (unsigned int j = 0; j < n; j++) {
		unsigned int k = 0;

		fill_run(g0, &r[j]);
		m[j] = (struct uroce_udp_msg){.roce = r[j].buf,
					      .len = r[j].bytes,
					      .seg = r[j].k > 1 ? r[j].lens[0] : 0,
					      .dport = r[j].dport};
		if (r[j].gaps && !(k = run_iov(&r[j], iov + used, RUN_IOV - used))) {
			/* No room for its pieces: the run is made whole (its ICRCs stay right). */
			fill_gaps(r[j].buf, r[j].lens, r[j].gaps, r[j].k);
			r[j].gaps = NULL;
		}
		if (k) {
			m[j].iov = iov + used;
			m[j].iovcnt = k;
			used += k;
		}
	}
	if (net->pcap)
		uroce_pcap_hold(net->pcap);
	while (i < n) {
		int e;
		unsigned int sent = uroce_udp_send_batch(s, g0, m + i, n - i, &e);

		for (unsigned int j = i; j < i + sent; j++)
			run_sent(net, g0, &r[j]);
		i += sent;
		if (!e)
			continue;
		if ((e == EIO || e == EINVAL) && r[i].k > 1)
			break;
		atomic_fetch_add(&net->tx_errors, r[i].k);
		if (!err)
			err = e;
		i++;
	}
	if (net->pcap)
		uroce_pcap_release(net->pcap);
	if (i < n) {
		/* No UDP GSO on this path: from now on one by one (send_each records them). */
		atomic_store(&net->no_gso, true);
		for (; i < n; i++) {
			int e;

			if (r[i].gaps)
				fill_gaps(r[i].buf, r[i].lens, r[i].gaps, r[i].k);
			e = send_each(net, g0, r[i].buf, r[i].lens, r[i].k);

			if (!err)
				err = e;
		}
	}
	return err;
}

/*
 * The most bytes of requests an ACK is moved behind (roce_train_ack_last): a copy of this size
 * costs less than the send and the receive it saves.
 */
#define ACK_LAST_MAX 16384u

/*
 * A train of @n packets at @buf (@lens) to a process of this host (direct delivery, dest_port)
 * that starts with an ACK ahead of requests: the ACK rides behind them, so that the train is
 * one GSO send, one datagram at the receiver, which takes the ACK first (wire.h). Only there:
 * another host's RoCE stack may take packets in the order they come. @lens is copied to @moved
 * if the train changes; returns the lengths to use.
 */
static const uint16_t *ack_last(struct uroce_net *net, const struct roce_ipudp *g0, uint8_t *buf,
				const uint16_t *lens, const struct roce_pkt_gap **gaps,
				unsigned int n, uint16_t *moved)
{
	size_t max = UROCE_UDP_GSO_MAX - lens[0], reqs = 0;

	if (max > ACK_LAST_MAX)
		max = ACK_LAST_MAX;
	if (n < 2 || n > UROCE_UDP_GSO_SEGS || buf[0] != (ROCE_TR_RC | ROCE_OP_ACK) ||
	    dest_port(net, g0, buf, lens[0]) == g0->dport)
		return lens;
	for (unsigned int j = 1; j < n; j++)
		reqs += lens[j];
	if (reqs > max)
		return lens;
	if (*gaps) { /* the requests move as bytes */
		fill_gaps(buf, lens, *gaps, n);
		*gaps = NULL;
	}
	memcpy(moved, lens, n * sizeof(*lens));
	return roce_train_ack_last(buf, moved, n, max) ? moved : lens;
}

/*
 * A train's runs leave together, a sendmmsg of up to UROCE_UDP_BATCH of them: an ACK and the
 * reply behind it (two lengths, so two runs) cost one system call. Faults act on single packets
 * and multicast copies are made per packet: with them, trains go one by one.
 */
int uroce_net_send_train(struct uroce_net *net, const struct roce_ipudp *f, uint8_t *buf,
			 const uint16_t *lens, const struct roce_pkt_gap *gaps, unsigned int n)
{
	struct run r[UROCE_UDP_BATCH];
	uint16_t moved[UROCE_UDP_GSO_SEGS];
	const struct uroce_udp *s;
	struct roce_ipudp g0;
	unsigned int nr = 0;
	int err = 0;
	bool each = atomic_load(&net->no_gso) || uroce_faults_on(net->faults, true) ||
		    roce_gid_is_multicast(f->dgid);

	/* What reads a datagram's bytes (faults, multicast copies, the capture) reads them whole.
	 */
	if (gaps && (each || net->pcap)) {
		fill_gaps(buf, lens, gaps, n);
		gaps = NULL;
	}
	if (each)
		return send_each(net, f, buf, lens, n);
	(void)check_send(net, f, lens[0], &s); /* the socket; each run's own check below */
	g0 = on_wire(net, s, f, 0);
	lens = ack_last(net, &g0, buf, lens, &gaps, n, moved);
	for (unsigned int i = 0; i < n;) {
		int e = check_send(net, f, lens[i], &s);
		struct run run = {.buf = buf, .lens = lens + i, .gaps = gaps ? gaps + i : NULL};

		run.k = gso_run(net, &g0, buf, lens + i, n - i, &run.bytes, &run.dport);
		if (e) {
			atomic_fetch_add(&net->tx_errors, run.k);
			if (!err)
				err = e;
		} else {
			r[nr++] = run;
		}
		buf += run.bytes;
		i += run.k;
		if (nr == UROCE_UDP_BATCH || (i == n && nr)) {
			e = send_runs(net, s, &g0, r, nr);
			if (!err)
				err = e;
			nr = 0;
		}
	}
	return err;
}
