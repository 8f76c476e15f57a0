/* SPDX-License-Identifier: MIT */
/*
 * Write a seed corpus for the RoCEv2 fuzz targets: the RoCEv2 part (BTH
 * through ICRC) of every frame of vectors.json, and of the first frame of
 * each opcode in each capture given.
 *
 * Usage: make_seeds OUTDIR VECTORS_JSON [CAPTURE.pcap...]
 */
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/frames.h"
#include "tests/support/vectors.h"

static int write_seed(const char *dir, const char *name, const uint8_t *p, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(p, 1, len, fp) != len || fclose(fp)) {
		perror(path);
		return -1;
	}
	return 0;
}

static int seeds_from_vectors(const char *dir, const char *json)
{
	static struct test_vector v[64];
	int n = test_vectors_load(json, v, 64);
	if (n <= 0) {
		fprintf(stderr, "make_seeds: %s: no vectors\n", json);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		size_t len;
		const uint8_t *roce = test_roce_of_frame(v[i].bytes, v[i].len, &len);
		char name[32];
		snprintf(name, sizeof(name), "vector-%02d", v[i].frame);
		if (!roce || write_seed(dir, name, roce, len))
			return -1;
	}
	return n;
}

static int seeds_from_capture(const char *dir, const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, errbuf);
	if (!pc) {
		fprintf(stderr, "make_seeds: %s\n", errbuf);
		return -1;
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	bool seen[256] = {false};
	struct pcap_pkthdr *h;
	const u_char *data;
	int n = 0;
	while (pcap_next_ex(pc, &h, &data) == 1) {
		size_t len;
		const uint8_t *roce = test_roce_of_frame(data, h->caplen, &len);
		if (!roce || !len || seen[roce[0]])
			continue;
		seen[roce[0]] = true;
		char name[300];
		snprintf(name, sizeof(name), "%s-%02x", base, roce[0]);
		if (write_seed(dir, name, roce, len)) {
			pcap_close(pc);
			return -1;
		}
		n++;
	}
	pcap_close(pc);
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: make_seeds OUTDIR VECTORS_JSON [CAPTURE.pcap...]\n");
		return 2;
	}
	int total = seeds_from_vectors(argv[1], argv[2]);
	if (total < 0)
		return 1;
	for (int i = 3; i < argc; i++) {
		int n = seeds_from_capture(argv[1], argv[i]);
		if (n < 0)
			return 1;
		total += n;
	}
	printf("make_seeds: %d seeds in %s\n", total, argv[1]);
	return 0;
}
