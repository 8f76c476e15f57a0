/* SPDX-License-Identifier: MIT */
/*
 * A chained hash table of the rdma_cm's connections (cm.c), so that a MAD finds its connection
 * in constant time however many there are (cmtime makes thousands): intrusive links, keys
 * hashed with xxHash (XXH3) by the caller's cma_htab_hash(), which also compares the keys. Not
 * thread-safe: the rdma_cm's lock guards it.
 */
#ifndef UROCE_VERBS_SHIM_RDMACM_HTAB_H
#define UROCE_VERBS_SHIM_RDMACM_HTAB_H

#include <stddef.h>
#include <stdint.h>

/* The link an entry embeds, one per table it is in. */
struct cma_hlink {
	struct cma_hlink *next;
	uint64_t hash;
};

struct cma_htab {
	struct cma_hlink **slots; /* a power of two of them, or NULL while empty */
	size_t mask;
	size_t count;
};

/* The hash of @len bytes of key at @key. */
uint64_t cma_htab_hash(const void *key, size_t len);

/*
 * Put @l, whose key hashes to @hash, in @t. The table grows as entries come; when memory for a
 * larger one is lacking it keeps its size (the chains grow longer). Returns 0, or ENOMEM when
 * not even the first slots could be had (@l is then not in @t).
 */
int cma_htab_insert(struct cma_htab *t, struct cma_hlink *l, uint64_t hash);

/* Take @l out of @t; nothing if it is not there (also a zeroed link never inserted). */
void cma_htab_remove(struct cma_htab *t, struct cma_hlink *l);

/* The first link of @t with @hash, or NULL; cma_htab_next() gives the next with the same. */
struct cma_hlink *cma_htab_first(const struct cma_htab *t, uint64_t hash);
struct cma_hlink *cma_htab_next(const struct cma_hlink *l);

#endif
