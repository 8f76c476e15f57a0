// SPDX-License-Identifier: MIT
/* The connections' hash table (htab.h). */
#include "verbs-shim/rdmacm/htab.h"

#include <errno.h>
#include <stdlib.h>
#include <xxhash.h>

#define FIRST_SLOTS 64u

uint64_t cma_htab_hash(const void *key, size_t len)
{
	return XXH3_64bits(key, len);
}

/* Move every entry into @n slots (a power of two); on no memory, leave @t as it is. */
static void resize(struct cma_htab *t, size_t n)
{
	struct cma_hlink **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return;
	for (size_t i = 0; t->slots && i <= t->mask; i++) {
		struct cma_hlink *l = t->slots[i], *next;

		for (; l; l = next) {
			next = l->next;
			l->next = slots[l->hash & (n - 1)];
			slots[l->hash & (n - 1)] = l;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->mask = n - 1;
}

int cma_htab_insert(struct cma_htab *t, struct cma_hlink *l, uint64_t hash)
{
	if (!t->slots)
		resize(t, FIRST_SLOTS);
	else if (t->count > t->mask) /* more entries than slots: twice the slots */
		resize(t, (t->mask + 1) * 2);
	if (!t->slots)
		return ENOMEM;
	l->hash = hash;
	l->next = t->slots[hash & t->mask];
	t->slots[hash & t->mask] = l;
	t->count++;
	return 0;
}

void cma_htab_remove(struct cma_htab *t, struct cma_hlink *l)
{
	if (!t->slots)
		return;
	for (struct cma_hlink **pp = &t->slots[l->hash & t->mask]; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			t->count--;
			return;
		}
	}
}

static struct cma_hlink *from(struct cma_hlink *l, uint64_t hash)
{
	while (l && l->hash != hash)
		l = l->next;
	return l;
}

struct cma_hlink *cma_htab_first(const struct cma_htab *t, uint64_t hash)
{
	return t->slots ? from(t->slots[hash & t->mask], hash) : NULL;
}

struct cma_hlink *cma_htab_next(const struct cma_hlink *l)
{
	return from(l->next, l->hash);
}
