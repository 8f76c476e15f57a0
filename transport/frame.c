/* SPDX-License-Identifier: MIT */
/* Frame builder: roce_encode() + roce_icrc_fill() + roce_ipudp_write(). */
#include "transport/frame.h"

#include "transport/icrc.h"

size_t roce_frame_build(uint8_t *buf, size_t cap, const struct roce_ipudp *f,
			const struct roce_pkt *pkt, enum roce_udp_csum csum)
{
	size_t hdr_len = roce_ipudp_hdr_len(f), len;

	if (cap < hdr_len)
		return 0;
	len = roce_encode(buf + hdr_len, cap - hdr_len, pkt);
	if (!len)
		return 0;
	/* The ICRC first: the UDP checksum covers it. */
	roce_icrc_fill(f, buf + hdr_len, len);
	if (!roce_ipudp_write(buf, f, buf + hdr_len, len, csum))
		return 0;
	return hdr_len + len;
}
