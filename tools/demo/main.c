/* SPDX-License-Identifier: MIT */
/*
 * uroce-demo: write a short RoCEv2 conversation between two hosts to a
 * pcap file, built by uroce's transport encoder and recorded by its
 * capture tap, for Wireshark or tshark to decode.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fabric/pcap.h"
#include "tools/demo/conversation.h"
#include "transport/frame.h"
#include "transport/icrc.h"

#define PROG         "uroce-demo"
#define DEFAULT_PCAP "uroce-demo.pcap"

enum { EXIT_USAGE = 2 };

static void usage(FILE *out)
{
	fprintf(out, "Usage: " PROG " [--pcap FILE] [--help]\n"
		     "Write a short RoCEv2 conversation (RC SEND, RDMA WRITE and READ, atomics,\n"
		     "ACK/NAK/RNR NAK, UD SEND, IPv6, CNP) to a pcap file.\n"
		     "\n"
		     "  --pcap FILE  where to write it (default: " DEFAULT_PCAP ")\n"
		     "  --help       show this help\n");
}

/* Returns the pcap path, or NULL after reporting a bad command line. */
static const char *parse_args(int argc, char **argv, int *exit_code)
{
	static const struct option opts[] = {
		{"pcap", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *path = DEFAULT_PCAP;
	int c;

	*exit_code = EXIT_USAGE;
	opterr = 0; /* our messages, under our name */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!*optarg) {
				fprintf(stderr, PROG ": --pcap needs a file name\n");
				return NULL;
			}
			path = optarg;
			break;
		case 'h':
			usage(stdout);
			*exit_code = 0;
			return NULL;
		case ':':
			fprintf(stderr, PROG ": option '%s' needs an argument\n", argv[optind - 1]);
			return NULL;
		default:
			/* A long option's error has moved optind past it; a short one's may not. */
			if (!strncmp(argv[optind - 1], "--", 2))
				fprintf(stderr, PROG ": bad option '%s'\n", argv[optind - 1]);
			else
				fprintf(stderr, PROG ": unknown option '-%c'\n", optopt);
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return NULL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\nTry '" PROG " --help'.\n",
			argv[optind]);
		return NULL;
	}
	return path;
}

/*
 * Decode the built packet as a receiver would and compare it with what was
 * meant to be sent. Returns NULL, or what is wrong.
 */
static const char *frame_check(const struct demo_frame *fr, const uint8_t *ip, size_t ip_len)
{
	const uint8_t *udp_payload;
	enum roce_decode_err err;
	struct roce_ipudp parsed;
	struct roce_pkt pkt;
	size_t udp_len;

	if (roce_ipudp_parse(ip, ip_len, &parsed, &udp_payload, &udp_len) != ROCE_IPUDP_OK)
		return "IP/UDP headers do not parse";
	err = roce_decode(udp_payload, udp_len, &pkt);
	if (err != ROCE_OK)
		return roce_decode_strerror(err);
	if (roce_icrc_verify(&parsed, udp_payload, udp_len) != ROCE_ICRC_OK)
		return "ICRC does not verify";
	if (pkt.bth.opcode != fr->pkt.bth.opcode || pkt.bth.dqpn != fr->pkt.bth.dqpn ||
	    pkt.bth.psn != fr->pkt.bth.psn || pkt.payload_len != fr->pkt.payload_len)
		return "decoded BTH or payload length differs from the script";
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Build, check and record every frame. Returns 0 or 1 after reporting why. */
static int write_conversation(struct uroce_pcap *cap, const char *path,
			      const struct demo_conversation *conv)
{
	static uint8_t buf[ROCE_IPV6_HDR_LEN + ROCE_UDP_HDR_LEN + ROCE_MAX_PMTU + 128];
	uint64_t ts = now_ns();

	printf("%3s  %-4s  %-30s  %-8s  %-8s  %5s\n", "#", "dir", "opcode", "QP", "PSN", "bytes");
	for (size_t i = 0; i < conv->count; i++) {
		const struct demo_frame *fr = &conv->frames[i];
		size_t hdr_len = roce_ipudp_hdr_len(&fr->ip);
		size_t len =
			roce_frame_build(buf, sizeof(buf), &fr->ip, &fr->pkt, ROCE_UDP_CSUM_FULL);
		const char *bad = len ? frame_check(fr, buf, len) : "roce_frame_build failed";

		if (bad) {
			fprintf(stderr, PROG ": internal error: frame %zu: %s\n", i + 1, bad);
			return 1;
		}
		ts += fr->gap_ns;
		if (uroce_pcap_write(cap, &fr->ip, buf + hdr_len, len - hdr_len, ts)) {
			/* The capture tap has reported the cause. */
			fprintf(stderr, PROG ": writing %s failed at frame %zu\n", path, i + 1);
			return 1;
		}
		printf("%3zu  %-4s  %-30s  0x%06x  0x%06x  %5zu%s%s\n", i + 1, fr->dir,
		       roce_opcode(fr->pkt.bth.opcode)->name, fr->pkt.bth.dqpn, fr->pkt.bth.psn,
		       ETH_HLEN + len, *fr->note ? "  " : "", fr->note);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct demo_conversation conv;
	struct uroce_pcap *cap;
	const char *path;
	int ret;

	path = parse_args(argc, argv, &ret);
	if (!path)
		return ret;

	demo_conversation_init(&conv);
	cap = uroce_pcap_open(path);
	if (!cap) {
		fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	ret = write_conversation(cap, path, &conv);
	if (uroce_pcap_close(cap) && !ret) {
		fprintf(stderr, PROG ": writing %s failed\n", path);
		ret = 1;
	}
	if (ret)
		return ret;
	printf("Wrote %zu frames to %s. Open it with:\n"
	       "  tshark -r %s --disable-heuristic rpcrdma_infiniband\n",
	       conv.count, path, path);
	return 0;
}
