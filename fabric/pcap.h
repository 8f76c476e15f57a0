/* SPDX-License-Identifier: MIT */
/*
 * Capture tap: records RoCEv2 UDP payloads as complete Ethernet + IPv4/IPv6
 * + UDP frames in a pcap file (libpcap, LINKTYPE_ETHERNET, nanosecond
 * timestamps), so Wireshark and tshark decode them as the wire would show
 * them.
 *
 * Safe to call from several threads. The first I/O error is reported once
 * on stderr and remembered; later writes are dropped and counted.
 */
#ifndef UROCE_FABRIC_PCAP_H
#define UROCE_FABRIC_PCAP_H

#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"

struct uroce_pcap;

/*
 * Open @path for writing (truncating it) and write the pcap file header.
 * A FIFO (a live view, `tshark -i FIFO`) is opened without waiting for a
 * reader and without SIGPIPE when the reader goes: frames queue in its pipe
 * (1 MiB where allowed) and, when the reader does not keep up, whole frames
 * are dropped (reported on stderr at close) rather than stalling the sender.
 * Returns NULL and sets errno on failure (ENOENT, EACCES, EISDIR, ... from
 * opening the file; ENOMEM).
 */
struct uroce_pcap *uroce_pcap_open(const char *path);

/*
 * Record one frame: @f gives the IP/UDP header values, @roce the UDP
 * payload (BTH .. ICRC, @len bytes), @ts_ns the time in nanoseconds since
 * the Unix epoch (pcap keeps 32-bit seconds, which libpcap reads as
 * signed: times after January 2038 do not fit). The Ethernet addresses are
 * derived from the IP addresses (02:00 followed by the last four address
 * bytes), the IPv4 header checksum and UDP length are computed, and the
 * UDP checksum is computed as a kernel UDP socket sends it.
 *
 * Returns 0, or -1 with errno:
 *   EINVAL    @roce is NULL; nothing is recorded.
 *   EMSGSIZE  @len exceeds the UDP payload an IP packet can carry (65507
 *             bytes over IPv4, 65527 over IPv6); nothing is recorded.
 *   EIO       an I/O error has occurred, now or before (reported once on
 *             stderr); the frame is counted as dropped.
 */
int uroce_pcap_write(struct uroce_pcap *cap, const struct roce_ipudp *f, const uint8_t *roce,
		     size_t len, uint64_t ts_ns);

/*
 * Hold the capture across a send and the recording of what it sent, so that no other thread
 * records a frame meanwhile: a frame answering this one (received the moment it is sent) then
 * comes after it in the file. uroce_pcap_write may be called while held; each hold is ended by
 * one uroce_pcap_release.
 */
void uroce_pcap_hold(struct uroce_pcap *cap);
void uroce_pcap_release(struct uroce_pcap *cap);

/* Push buffered frames to the file. Returns 0 or -1 (errno EIO). */
int uroce_pcap_flush(struct uroce_pcap *cap);

/*
 * Frames accepted so far, and frames dropped because of an I/O error.
 * Frames accepted but still buffered when the error struck are lost too:
 * the file holds every accepted frame only if uroce_pcap_close() returns 0.
 */
uint64_t uroce_pcap_frames(const struct uroce_pcap *cap);
uint64_t uroce_pcap_dropped(const struct uroce_pcap *cap);

/*
 * Flush and close. Returns 0, or -1 with errno EIO if any write or the
 * final flush failed. @cap is freed either way, so no other thread may be
 * using it; NULL is a no-op.
 */
int uroce_pcap_close(struct uroce_pcap *cap);

#endif
