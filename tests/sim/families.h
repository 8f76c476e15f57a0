/* SPDX-License-Identifier: MIT */
/*
 * Scenario families of the simulation (sim.h): each is a generator of runs. A seed picks the
 * wire's faults, the connection attributes and a workload of work requests; the run is driven
 * to its end in virtual time and then checked against invariants:
 *
 *   - every posted WR completes exactly once, in order, with a status the scenario allows
 *     (successes only when signalled; after a QP's first error, flushes only);
 *   - the bytes a receive, WRITE or READ delivered equal the bytes sent, and nothing outside
 *     the target buffers changed;
 *   - each atomic was applied exactly once (at most once if its WR failed) and returned the
 *     original value;
 *   - errors come within the time and the retries the attributes allow;
 *   - nothing completes after a QP is destroyed, and the simulation comes to rest (no hang, no
 *     livelock).
 *
 * Used by tests/sim/test_sim_families.c (CI) and tools/simrun (long runs).
 */
#ifndef UROCE_TESTS_SIM_FAMILIES_H
#define UROCE_TESTS_SIM_FAMILIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_family {
	const char *name;
	const char *what;
	uint32_t ci_seeds; /* seeds CI runs (tests/sim/test_sim_families.c) */
};

extern const struct sim_family sim_families[];
extern const unsigned sim_nfamilies;

/* What a run did, for reports. */
struct sim_family_stats {
	uint64_t ops;         /* WRs posted */
	uint64_t bytes;       /* payload bytes of them */
	uint64_t packets;     /* packets the QPs wrote */
	uint64_t lost;        /* lost, corrupted or filtered on the wire */
	uint64_t retransmits; /* go-back-N restarts */
	uint64_t errors;      /* WRs that completed with an error other than a flush */
	uint64_t virtual_ns;  /* simulated time the run took */
};

/* The family called @name, or -1. */
int sim_family_find(const char *name);

/*
 * Run family @f with @seed. Returns true if every invariant held; otherwise false with the
 * first violation described in @why. @stats (may be NULL) is filled either way.
 * With SIM_TRACE=1 in the environment every packet is printed to stderr.
 */
bool sim_family_run(unsigned f, uint64_t seed, char *why, size_t whylen,
		    struct sim_family_stats *stats);

#endif
