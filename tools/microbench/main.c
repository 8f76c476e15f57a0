/* SPDX-License-Identifier: MIT */
/*
 * uroce-microbench: micro-benchmarks of uroce's hot paths and of the
 * libraries they could use. One subcommand per question; each prints a
 * table for docs/PERFORMANCE.md.
 */
#include <stdio.h>
#include <string.h>

#include "tools/microbench/microbench.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{"icrc", mb_icrc, "ICRC: zlib crc32 vs ISA-L crc32_gzip_refl vs roce_icrc"},
};

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *out)
{
	fprintf(out, "Usage: " MB_PROG " COMMAND [OPTIONS]\n"
		     "       " MB_PROG " COMMAND --help\n"
		     "Micro-benchmarks behind docs/PERFORMANCE.md.\n\nCommands:\n");
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return MB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < NSUB; i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, MB_PROG ": unknown command '%s'\nTry '" MB_PROG " --help'.\n", argv[1]);
	return MB_EXIT_USAGE;
}
