/* SPDX-License-Identifier: MIT */
/* Measuring helpers shared by the microbench subcommands. */
#include "tools/microbench/microbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t mb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double mb_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static volatile uint64_t sink;

void mb_consume(uint64_t v)
{
	sink ^= v;
}

int mb_parse_reps(const char *cmd, const char *opt, const char *arg)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > 1000) {
		fprintf(stderr, MB_PROG " %s: %s wants a count from 1 to 1000, not '%s'\n", cmd,
			opt, arg);
		return -1;
	}
	return (int)n;
}

void mb_cpu_model(char *buf, size_t len)
{
	FILE *fp = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, len, "unknown");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(fp);
}
