/* SPDX-License-Identifier: MIT */
/*
 * uroce-microbench: subcommands and the measuring helpers they share.
 *
 * The rules for numbers (docs/PERFORMANCE.md): alternatives are measured in
 * the same run, interleaved, on CLOCK_MONOTONIC, and reported as medians of
 * several repetitions with ratios against a baseline from that same run.
 */
#ifndef UROCE_TOOLS_MICROBENCH_H
#define UROCE_TOOLS_MICROBENCH_H

#include <stddef.h>
#include <stdint.h>

#define MB_PROG "uroce-microbench"

enum { MB_EXIT_USAGE = 2 };

/*
 * A subcommand: argv[0] is its name, options follow. Returns the process
 * exit status (0, 1 on failure, MB_EXIT_USAGE on a bad command line).
 */
int mb_icrc(int argc, char **argv);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mb_now_ns(void);

/* Median of @v[0..@n) (@n > 0); reorders @v. */
double mb_median(double *v, size_t n);

/* Fold a result into a sink the compiler cannot remove, so the work that
 * produced it is not eliminated as dead code. */
void mb_consume(uint64_t v);

/* Parse a repetition count in [1, 1000] for @opt; returns -1 after saying why not. */
int mb_parse_reps(const char *cmd, const char *opt, const char *arg);

/* The CPU model from /proc/cpuinfo into @buf, or "unknown". */
void mb_cpu_model(char *buf, size_t len);

#endif
