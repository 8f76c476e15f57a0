// SPDX-License-Identifier: MIT
/*
 * uroce-simrun: the simulation's scenario families (tests/sim/families.h) for as many seeds as
 * asked, outside the test suite: long runs, and replaying one failing seed with a packet trace.
 *
 *   uroce-simrun [--family NAME|all] [--seed S] [--seeds N] [--trace] [--keep-going] [--list]
 *
 * Exit status: 0 if every run held its invariants, 1 if one did not, 2 for bad usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/sim/families.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: uroce-simrun [--family NAME|all] [--seed S] [--seeds N] [--trace]\n"
		   "                    [--keep-going] [--list]\n"
		   "  --family   one family (default: all); --list names them\n"
		   "  --seed     first seed (default 1)\n"
		   "  --seeds    how many seeds from it (default: the family's CI count)\n"
		   "  --trace    print every packet (SIM_TRACE=1): use with one seed\n"
		   "  --keep-going  do not stop at the first failing seed\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, unsigned long long *v)
{
	char *end;

	*v = strtoull(s, &end, 0);
	return *s && !*end ? 0 : -1;
}

/* Run @n seeds of family @f from @first; returns the number of failing seeds. */
static unsigned run(unsigned f, unsigned long long first, unsigned long long n, bool keep_going)
{
	struct sim_family_stats st, sum = {0};
	unsigned failed = 0;
	double t0 = now_s();
	char why[512];

	for (unsigned long long seed = first; seed < first + n; seed++) {
		bool ok = sim_family_run(f, seed, why, sizeof(why), &st);

		sum.ops += st.ops;
		sum.bytes += st.bytes;
		sum.packets += st.packets;
		sum.lost += st.lost;
		sum.retransmits += st.retransmits;
		sum.errors += st.errors;
		sum.virtual_ns += st.virtual_ns;
		if (ok)
			continue;
		failed++;
		printf("FAIL %s seed %llu: %s\n  replay: uroce-simrun --family %s --seed %llu "
		       "--trace\n",
		       sim_families[f].name, seed, why, sim_families[f].name, seed);
		fflush(stdout);
		if (!keep_going)
			break;
	}
	printf("%-14s seeds %llu..%llu: %s  (%llu WRs, %.1f MB, %llu packets, %llu lost, "
	       "%llu retransmits, %llu errors; %.1f s virtual, %.2f s)\n",
	       sim_families[f].name, first, first + n - 1, failed ? "FAILED" : "ok",
	       (unsigned long long)sum.ops, sum.bytes / 1e6, (unsigned long long)sum.packets,
	       (unsigned long long)sum.lost, (unsigned long long)sum.retransmits,
	       (unsigned long long)sum.errors, sum.virtual_ns / 1e9, now_s() - t0);
	return failed;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"family", required_argument, NULL, 'f'}, {"seed", required_argument, NULL, 's'},
		{"seeds", required_argument, NULL, 'n'},  {"trace", no_argument, NULL, 't'},
		{"keep-going", no_argument, NULL, 'k'},   {"list", no_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},         {0},
	};
	const char *family = "all";
	unsigned long long first = 1, n = 0;
	bool keep_going = false;
	unsigned failed = 0;
	int c;

	while ((c = getopt_long(argc, argv, "f:s:n:tklh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			family = optarg;
			break;
		case 's':
			if (parse_u64(optarg, &first)) {
				fprintf(stderr, "uroce-simrun: bad --seed '%s'\n", optarg);
				return 2;
			}
			if (!n)
				n = 1;
			break;
		case 'n':
			if (parse_u64(optarg, &n) || !n) {
				fprintf(stderr, "uroce-simrun: bad --seeds '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			setenv("SIM_TRACE", "1", 1);
			break;
		case 'k':
			keep_going = true;
			break;
		case 'l':
			for (unsigned i = 0; i < sim_nfamilies; i++)
				printf("%-14s %5u CI seeds  %s\n", sim_families[i].name,
				       sim_families[i].ci_seeds, sim_families[i].what);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(family, "all")) {
		int f = sim_family_find(family);

		if (f < 0) {
			fprintf(stderr, "uroce-simrun: no family '%s' (--list names them)\n",
				family);
			return 2;
		}
		failed = run((unsigned)f, first, n ? n : sim_families[f].ci_seeds, keep_going);
	} else {
		for (unsigned f = 0; f < sim_nfamilies && (!failed || keep_going); f++)
			failed += run(f, first, n ? n : sim_families[f].ci_seeds, keep_going);
	}
	return failed ? 1 : 0;
}
