// SPDX-License-Identifier: MIT
/*
 * The scenario families (families.h) over many seeds: sim_families[].ci_seeds each, or
 * SIM_SEEDS=N seeds from SIM_SEED=S (default 1). SIM_FAMILY=name runs one family only.
 * A failing seed is printed with the command that replays it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/sim/families.h"

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static void run_family(const char *name)
{
	int f = sim_family_find(name);
	const char *only = getenv("SIM_FAMILY");
	uint64_t first = env_u64("SIM_SEED", 1);
	uint64_t n;
	char why[512], msg[1024];

	cr_assert_geq(f, 0);
	if (only && *only && strcmp(only, name))
		cr_skip_test("SIM_FAMILY=%s", only);
	n = env_u64("SIM_SEEDS", sim_families[f].ci_seeds);
	for (uint64_t seed = first; seed < first + n; seed++) {
		if (sim_family_run((unsigned)f, seed, why, sizeof(why), NULL))
			continue;
		snprintf(msg, sizeof(msg),
			 "family %s, seed %llu: %s\n"
			 "replay: SIM_FAMILY=%s SIM_SEED=%llu SIM_SEEDS=1 [SIM_TRACE=1] "
			 "test_sim_families\n"
			 "    or: uroce-simrun --family %s --seed %llu [--trace]",
			 name, (unsigned long long)seed, why, name, (unsigned long long)seed, name,
			 (unsigned long long)seed);
		cr_assert_fail("%s", msg);
		return;
	}
}

#define FAMILY(id, name)                                                                           \
	Test(sim_families, id)                                                                     \
	{                                                                                          \
		run_family(name);                                                                  \
	}

FAMILY(stream, "stream")
FAMILY(stream_medium, "stream-medium")
FAMILY(stream_16m, "stream-16m")
FAMILY(srq, "srq")
FAMILY(rnr, "rnr")
FAMILY(dead_peer, "dead-peer")
FAMILY(restart, "restart")
FAMILY(timeouts, "timeouts")
FAMILY(uc, "uc")
FAMILY(ud, "ud")
