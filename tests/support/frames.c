/* SPDX-License-Identifier: MIT */
#include "frames.h"

#include <pcap/pcap.h>
#include <stdio.h>

enum { ETH_LEN = 14, IPV4_LEN = 20, IPV6_LEN = 40, UDP_LEN = 8, UDP_PROTO = 17 };

const uint8_t *test_roce_of_frame(const uint8_t *frame, size_t len, size_t *roce_len)
{
	size_t ip_len;
	if (len < ETH_LEN)
		return NULL;
	if (frame[12] == 0x08 && frame[13] == 0x00) {
		ip_len = IPV4_LEN;
		if (len < ETH_LEN + IPV4_LEN || frame[ETH_LEN] != 0x45 ||
		    frame[ETH_LEN + 9] != UDP_PROTO)
			return NULL;
	} else if (frame[12] == 0x86 && frame[13] == 0xdd) {
		ip_len = IPV6_LEN;
		if (len < ETH_LEN + IPV6_LEN || frame[ETH_LEN + 6] != UDP_PROTO)
			return NULL;
	} else {
		return NULL;
	}
	const uint8_t *udp = frame + ETH_LEN + ip_len;
	if (len < ETH_LEN + ip_len + UDP_LEN || (udp[2] << 8 | udp[3]) != 4791)
		return NULL;
	size_t udp_len = (size_t)(udp[4] << 8 | udp[5]);
	if (udp_len < UDP_LEN || ETH_LEN + ip_len + udp_len > len)
		return NULL;
	*roce_len = udp_len - UDP_LEN;
	return udp + UDP_LEN;
}

int test_for_each_frame(const char *path, void (*fn)(const uint8_t *frame, size_t len, void *arg),
			void *arg)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, errbuf);
	struct pcap_pkthdr *h;
	const u_char *data;
	int n = 0, rc;

	if (!pc) {
		fprintf(stderr, "%s: %s\n", path, errbuf);
		return -1;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "%s: not Ethernet\n", path);
		pcap_close(pc);
		return -1;
	}
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		if (h->caplen != h->len) {
			fprintf(stderr, "%s: frame %d cut by the capture\n", path, n + 1);
			pcap_close(pc);
			return -1;
		}
		fn(data, h->caplen, arg);
		n++;
	}
	if (rc != PCAP_ERROR_BREAK) {
		fprintf(stderr, "%s: %s\n", path, pcap_geterr(pc));
		n = -1;
	}
	pcap_close(pc);
	return n;
}
