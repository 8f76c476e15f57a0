/* SPDX-License-Identifier: MIT */
/*
 * One received RoCEv2 datagram, as the modules that receive (progress), copy (mcast), forward
 * (rdv) and deliver (net) hand it to each other. A header of its own, below all of them, so that
 * none of them needs another's header for the type.
 */
#ifndef UROCE_FABRIC_RX_H
#define UROCE_FABRIC_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/icrc.h"
#include "transport/ipudp.h"
#include "transport/wire.h"

struct uroce_rx {
	/*
	 * Addresses and ports as received; tos and ttl from the IP header; ip_frag ROCE_IPV4_DF
	 * and ip_id as the ICRC check recovered it (the kernel reports neither; GSO segments
	 * carry IDs 0, 1, 2, ...), so that the capture shows the frame as it was on the wire.
	 */
	struct roce_ipudp ip;
	const uint8_t *roce; /* UDP payload: BTH .. ICRC, valid during the callback only */
	size_t len;
	uint64_t now;               /* uroce_now() when the batch was taken */
	enum roce_icrc_result icrc; /* the ICRC check, done before the capture */
	/*
	 * A packet received straight into place (progress.h: steer): its payload is at gap.src,
	 * not in roce[] (transport/wire.h: struct roce_pkt_gap; gap.len 0: the packet is all in
	 * roce[]). Only the owner of its QP gets such a packet: it is never forwarded, captured or
	 * put through faults (net.c: on_steer).
	 */
	struct roce_pkt_gap gap;
	/*
	 * A multicast datagram a process of this host sent, handed to the host's members through
	 * the rendezvous rather than received from a wire: the QP that sent it (DETH source QP,
	 * unique on the host) is not one of its receivers.
	 */
	bool host_sent;
};

#endif
