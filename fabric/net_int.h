/* SPDX-License-Identifier: MIT */
/*
 * The endpoint's insides, shared by net.c (opening, receiving, the rest of net.h) and
 * net_tx.c (sending: the socket, the destination port, GSO trains, the capture of what left).
 */
#ifndef UROCE_FABRIC_NET_INT_H
#define UROCE_FABRIC_NET_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cm/route.h"
#include "cm/wire.h"
#include "fabric/config.h"
#include "fabric/faults.h"
#include "fabric/log.h"
#include "fabric/mcast.h"
#include "fabric/net.h"
#include "fabric/pcap.h"
#include "fabric/progress.h"
#include "fabric/qpn.h"
#include "fabric/rdv.h"
#include "fabric/udp.h"
#include "transport/container.h"
#include "transport/icrc.h"
#include "transport/wire.h"

enum { V4, V6, FAMILIES };

struct uroce_net {
	struct uroce_config cfg;
	const struct uroce_net_ops *ops;
	void *arg;
	struct uroce_pcap *pcap;
	struct uroce_timer pcap_flush;
	struct uroce_udp udp[FAMILIES];     /* this process's own, on ephemeral ports */
	struct uroce_udp hub_udp[FAMILIES]; /* as hub: the RoCEv2 port */
	/*
	 * CM MADs leave through sockets of their own, which take ICMP errors (udp.h): a REQ to a
	 * host where no RoCE port is open fails at once (net.h ops->unreachable). The data path's
	 * sockets do not, so that its sends and receives never meet those errors.
	 */
	struct mad_sock {
		struct uroce_net *net;
		struct uroce_udp udp;
	} mad[FAMILIES];
	struct uroce_qpn qpn;
	struct uroce_faults *faults;     /* UROCE_FAULTS, or NULL */
	struct uroce_progress *progress; /* set by init, on the progress thread */
	struct uroce_rdv *rdv;           /* likewise */
	struct uroce_mcast *mcast;       /* likewise */
	_Atomic uint64_t rx_packets, tx_packets, tx_errors, rx_short, rx_unknown_qpn;
	atomic_bool no_gso;    /* a GSO send failed with EIO/EINVAL: send one by one */
	atomic_bool ip_fields; /* udp[] report TOS and hop limit (uroce_net_want_ip_fields) */
	atomic_uint gsi_psn;   /* QP 1's next send PSN */
};

/* CLOCK_REALTIME in nanoseconds: a capture's timestamps. */
uint64_t net_wall_clock(void);

/* Count and record a sent datagram. */
void net_sent(struct uroce_net *net, const struct roce_ipudp *g, const uint8_t *roce, size_t len);

/*
 * Send @roce (@len bytes) for @g through @s, to the port dest_port picks (4791, or a process's
 * own on this host): 0, or the send's errno, counted in tx_errors. What left is counted and
 * captured (net_sent), before any answer to it is (pcap.h).
 */
int net_transmit(struct uroce_net *net, const struct uroce_udp *s, const struct roce_ipudp *g,
		 const uint8_t *roce, size_t len);

/* An error a send may return once for an earlier datagram's ICMP error (udp.h). */
bool net_icmp_error(int err);

/*
 * uroce_net_send through @s, or the socket net_tx.c's check_send picks (@s NULL). 0, or the
 * errors of uroce_net_send (net.h), counted in tx_errors.
 */
int net_send_via(struct uroce_net *net, const struct uroce_udp *s, const struct roce_ipudp *f,
		 uint8_t *roce, size_t len);

#endif
