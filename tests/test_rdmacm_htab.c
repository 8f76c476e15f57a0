/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm's connection index (verbs-shim/rdmacm/htab.h): every entry found by its hash
 * through growth, entries that share a hash all found, removal of any of them, and a removed
 * or never inserted link not found.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>

#include "verbs-shim/rdmacm/htab.h"

#define N 5000

struct item {
	uint32_t key;
	struct cma_hlink link;
};

static bool holds(const struct cma_htab *t, const struct item *it)
{
	for (struct cma_hlink *l = cma_htab_first(t, it->link.hash); l; l = cma_htab_next(l))
		if (l == &it->link)
			return true;
	return false;
}

Test(rdmacm_htab, grows_and_finds_every_entry)
{
	static struct item items[N];
	struct cma_htab t = {0};

	cr_assert_null(cma_htab_first(&t, 42), "an empty table has nothing");
	for (uint32_t i = 0; i < N; i++) {
		items[i].key = i;
		cr_assert_eq(cma_htab_insert(&t, &items[i].link,
					     cma_htab_hash(&items[i].key, sizeof(items[i].key))),
			     0);
	}
	cr_assert_eq(t.count, N);
	cr_assert_geq(t.mask + 1, N, "the table grew with its entries (%zu slots)", t.mask + 1);
	for (uint32_t i = 0; i < N; i++)
		cr_assert(holds(&t, &items[i]), "entry %u lost", i);
	/* Every other one out: those are gone, the rest are still found. */
	for (uint32_t i = 0; i < N; i += 2)
		cma_htab_remove(&t, &items[i].link);
	cr_assert_eq(t.count, N / 2);
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(holds(&t, &items[i]), i % 2 == 1, "entry %u", i);
	free(t.slots);
}

Test(rdmacm_htab, entries_with_one_hash_are_all_found)
{
	struct item a = {.key = 1}, b = {.key = 2}, c = {.key = 3}, other = {.key = 4},
		    never = {.key = 5};
	struct cma_htab t = {0};
	int seen = 0;

	cr_assert_eq(cma_htab_insert(&t, &a.link, 7), 0);
	cr_assert_eq(cma_htab_insert(&t, &b.link, 7), 0);
	cr_assert_eq(cma_htab_insert(&t, &other.link, 7 + 64), 0); /* same slot, other hash */
	cr_assert_eq(cma_htab_insert(&t, &c.link, 7), 0);
	for (struct cma_hlink *l = cma_htab_first(&t, 7); l; l = cma_htab_next(l)) {
		cr_assert_neq(l, &other.link, "a link of another hash in the same slot");
		seen++;
	}
	cr_assert_eq(seen, 3);
	cma_htab_remove(&t, &b.link);
	cr_assert(holds(&t, &a) && !holds(&t, &b) && holds(&t, &c) && holds(&t, &other));
	cma_htab_remove(&t, &b.link);     /* not there: nothing */
	cma_htab_remove(&t, &never.link); /* never put in (zeroed): nothing */
	cr_assert_eq(t.count, 3);
	cr_assert(holds(&t, &a) && holds(&t, &c) && holds(&t, &other));
	free(t.slots);
}

Test(rdmacm_htab, hash_depends_on_every_byte)
{
	uint8_t key[20] = {0};
	uint64_t h = cma_htab_hash(key, sizeof(key));

	for (size_t i = 0; i < sizeof(key); i++) {
		key[i] ^= 1;
		cr_assert_neq(cma_htab_hash(key, sizeof(key)), h, "byte %zu", i);
		key[i] ^= 1;
	}
}
