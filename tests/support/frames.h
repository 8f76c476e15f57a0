/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 part of a captured frame, for tests and the fuzz seed
 * generator. Written independently of transport/ipudp, so that tests of
 * transport/ can rely on it.
 */
#ifndef UROCE_TEST_FRAMES_H
#define UROCE_TEST_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/*
 * The RoCEv2 part (BTH through ICRC) of @frame (@len bytes): untagged
 * Ethernet, IPv4 without options (ethertype 0x0800, 20 bytes) or IPv6
 * without extension headers (0x86dd, 40 bytes), then UDP to port 4791,
 * whose length field gives *@roce_len (bytes after it, such as Ethernet
 * padding, are not part of it). Returns NULL if @frame is not such a frame
 * or its UDP length runs past @len.
 */
const uint8_t *test_roce_of_frame(const uint8_t *frame, size_t len, size_t *roce_len);

/*
 * Call @fn(frame, length, @arg) on every frame of the pcap file @path, in order. Returns the
 * frame count, or -1 (reason on stderr) if the file does not open, is not Ethernet, holds a
 * frame the capture cut short, or ends in a read error. Link libpcap to use it.
 */
int test_for_each_frame(const char *path, void (*fn)(const uint8_t *frame, size_t len, void *arg),
			void *arg);

#endif
