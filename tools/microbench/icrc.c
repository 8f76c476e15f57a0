/* SPDX-License-Identifier: MIT */
/*
 * uroce-microbench icrc: which CRC-32 library should compute the ICRC
 * (CMake option UROCE_CRC32), and what the whole ICRC costs.
 *
 * On a packet of S bytes (BTH up to and including the ICRC; S = 64 and
 * 4096) it times, interleaved in the same run: zlib crc32() and ISA-L
 * crc32_gzip_refl() over the S bytes (the bare library), roce_icrc() (the
 * masked IPv4 pseudo-header then the S - 4 bytes before the ICRC, with the
 * library this build selected), and roce_icrc_verify() on a frame whose
 * IPv4 ID must be recovered (a frame from a foreign stack).
 */
#include <getopt.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "tools/microbench/microbench.h"
#include "transport/icrc.h"

#define CMD          "icrc"
#define DEFAULT_REPS 21
#define BATCH_BYTES  (4u << 20) /* per timed batch: milliseconds, not microseconds */
#define TRUE_ID      0x5A3C     /* the ID the "foreign" frame was sent with */

static const size_t sizes[] = {64, 4096};

struct job {
	struct roce_ipudp f;
	uint8_t *pkt; /* S bytes, ICRC filled for f with ID TRUE_ID */
	size_t len;
};

static uint64_t run_zlib(const struct job *j, size_t iters)
{
	uint64_t acc = 0;

	for (size_t i = 0; i < iters; i++)
		acc += crc32(0, j->pkt, (uInt)j->len);
	return acc;
}

static uint64_t run_isal(const struct job *j, size_t iters)
{
	uint64_t acc = 0;

	for (size_t i = 0; i < iters; i++)
		acc += crc32_gzip_refl(0, j->pkt, j->len);
	return acc;
}

static uint64_t run_icrc(const struct job *j, size_t iters)
{
	uint64_t acc = 0;

	for (size_t i = 0; i < iters; i++)
		acc += roce_icrc(&j->f, j->pkt, j->len - 4);
	return acc;
}

static uint64_t run_verify_id(const struct job *j, size_t iters)
{
	struct roce_ipudp f = j->f;
	uint64_t acc = 0;

	for (size_t i = 0; i < iters; i++) {
		f.ip_id = 0; /* unknown to a UDP socket receiver */
		acc += roce_icrc_verify(&f, j->pkt, j->len);
		acc += f.ip_id;
	}
	return acc;
}

static const struct impl {
	const char *name;
	uint64_t (*run)(const struct job *j, size_t iters);
} impls[] = {
	{"zlib crc32", run_zlib}, /* the baseline */
	{"ISA-L crc32_gzip_refl", run_isal},
	{"roce_icrc", run_icrc},
	{"roce_icrc_verify, ID recovered", run_verify_id},
};

#define NIMPL (sizeof(impls) / sizeof(impls[0]))

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " MB_PROG " " CMD " [--reps N] [--help]\n"
		"Time zlib crc32, ISA-L crc32_gzip_refl, roce_icrc and roce_icrc_verify with\n"
		"IPv4 ID recovery on 64 B and 4 KiB packets, interleaved; print medians as a\n"
		"Markdown table with speeds relative to zlib crc32 in the same run.\n"
		"\n"
		"  --reps N  timed batches per implementation and size (default %d)\n"
		"  --help    show this help\n",
		DEFAULT_REPS);
}

/* Returns the repetition count, 0 after --help, -1 after a bad command line. */
static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"reps", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int reps = DEFAULT_REPS, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			reps = mb_parse_reps(CMD, "--reps", optarg);
			if (reps < 0)
				return -1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default: /* getopt_long has named the bad option */
			fprintf(stderr, "Try '" MB_PROG " " CMD " --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, MB_PROG " " CMD ": unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return reps;
}

/* A packet of @len bytes with a correct ICRC for an IPv4 flow sent with ID TRUE_ID. */
static int make_job(struct job *j, size_t len)
{
	static const uint8_t a[4] = {10, 77, 0, 2}, b[4] = {10, 77, 0, 3};
	struct roce_ipudp f;

	*j = (struct job){.f = {.sport = 0xC8CC,
				.dport = 4791,
				.ttl = 64,
				.ip_id = TRUE_ID,
				.ip_frag = ROCE_IPV4_DF},
			  .len = len};
	roce_gid_from_v4(j->f.sgid, a);
	roce_gid_from_v4(j->f.dgid, b);
	j->pkt = malloc(len);
	if (!j->pkt)
		return -1;
	for (size_t i = 0; i < len; i++)
		j->pkt[i] = (uint8_t)(i * 131 + 7);
	roce_icrc_fill(&j->f, j->pkt, len);
	/* The measured paths must work: the ID is found, the libraries agree. */
	f = j->f;
	f.ip_id = 0;
	if (roce_icrc_verify(&f, j->pkt, len) != ROCE_ICRC_OK_ID || f.ip_id != TRUE_ID ||
	    crc32(0, j->pkt, (uInt)len) != crc32_gzip_refl(0, j->pkt, len)) {
		fprintf(stderr, MB_PROG " " CMD ": self-check failed for %zu-byte packets\n", len);
		return -1;
	}
	return 0;
}

static void print_header(int reps)
{
	char cpu[128];

	mb_cpu_model(cpu, sizeof(cpu));
	printf("CPU: %s, %ld online CPUs; roce_icrc uses %s (UROCE_CRC32); median of %d "
	       "interleaved batches of %u KiB each\n\n",
	       cpu, sysconf(_SC_NPROCESSORS_ONLN), roce_icrc_backend(), reps, BATCH_BYTES >> 10);
	printf("| packet | implementation | ns/packet (min-max) | GB/s | speed vs %s |\n",
	       impls[0].name);
	printf("|---|---|---|---|---|\n");
}

/* Time every implementation on @j, @reps batches each, interleaved; print the rows. */
static void measure(const struct job *j, int reps, double *ns)
{
	size_t iters = BATCH_BYTES / j->len;
	double med[NIMPL];

	for (size_t k = 0; k < NIMPL; k++)
		mb_consume(impls[k].run(j, iters)); /* warm-up */
	for (int r = 0; r < reps; r++) {
		for (size_t i = 0; i < NIMPL; i++) {
			size_t k = ((size_t)r + i) % NIMPL; /* rotate who goes first */
			uint64_t t0 = mb_now_ns();

			mb_consume(impls[k].run(j, iters));
			ns[k * (size_t)reps + (size_t)r] =
				(double)(mb_now_ns() - t0) / (double)iters;
		}
	}
	for (size_t k = 0; k < NIMPL; k++) {
		double *v = ns + k * (size_t)reps;

		med[k] = mb_median(v, (size_t)reps); /* sorts v */
		printf("| %zu B | %s | %.1f (%.1f-%.1f) | %.2f | %.2fx |\n", j->len, impls[k].name,
		       med[k], v[0], v[reps - 1], (double)j->len / med[k], med[0] / med[k]);
	}
}

int mb_icrc(int argc, char **argv)
{
	int reps = parse_args(argc, argv), status = 0;
	double *ns;

	if (reps <= 0)
		return reps ? MB_EXIT_USAGE : 0;
	ns = calloc(NIMPL * (size_t)reps, sizeof(*ns));
	if (!ns) {
		perror(MB_PROG " " CMD);
		return 1;
	}
	print_header(reps);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !status; s++) {
		struct job j;

		if (make_job(&j, sizes[s])) {
			status = 1;
			break;
		}
		measure(&j, reps, ns);
		free(j.pkt);
	}
	free(ns);
	return status;
}
