/* SPDX-License-Identifier: MIT */
/*
 * Frame builder: a complete IP/UDP/RoCEv2 packet with a correct ICRC from
 * a small description. Used by tests, tools and the capture tap.
 *
 * Pure code: no allocation, no I/O.
 */
#ifndef UROCE_TRANSPORT_FRAME_H
#define UROCE_TRANSPORT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"
#include "transport/wire.h"

/*
 * Build IP header, UDP header and the RoCEv2 packet @pkt (headers, payload,
 * pad; see roce_encode()) with its ICRC into @buf. The IP/UDP fields come
 * from @f (lengths are computed); the UDP checksum is written as @csum says.
 * Returns the IP packet length, or 0 if @cap is too small, the opcode is
 * not defined or the packet is too long for the IP length fields.
 */
size_t roce_frame_build(uint8_t *buf, size_t cap, const struct roce_ipudp *f,
			const struct roce_pkt *pkt, enum roce_udp_csum csum);

#endif
