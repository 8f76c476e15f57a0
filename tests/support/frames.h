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

#endif
