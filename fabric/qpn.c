/* SPDX-License-Identifier: MIT */
#include "fabric/qpn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WORDS (UROCE_QPN_BLOCK_SIZE / 64)

struct uroce_qpn_block {
	uint32_t index;
	uint64_t used[WORDS]; /* bit i: QPN index * BLOCK_SIZE + i is taken (or reserved) */
};

static bool reserved(uint32_t qpn)
{
	return qpn == 0 || qpn == 1 || qpn == 0xFFFFFFu;
}

void uroce_qpn_init(struct uroce_qpn *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
}

void uroce_qpn_destroy(struct uroce_qpn *q)
{
	pthread_mutex_destroy(&q->lock);
	free(q->blocks);
	q->blocks = NULL;
}

static struct uroce_qpn_block *find(struct uroce_qpn *q, uint32_t block)
{
	for (uint32_t i = 0; i < q->nblocks; i++)
		if (q->blocks[i].index == block)
			return &q->blocks[i];
	return NULL;
}

int uroce_qpn_add_block(struct uroce_qpn *q, uint32_t block)
{
	struct uroce_qpn_block *b;
	int err = 0;

	pthread_mutex_lock(&q->lock);
	if (find(q, block))
		goto out;
	if (q->nblocks == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 4;
		struct uroce_qpn_block *blocks = realloc(q->blocks, cap * sizeof(*blocks));

		if (!blocks) {
			err = ENOMEM;
			goto out;
		}
		q->blocks = blocks;
		q->cap = cap;
	}
	b = &q->blocks[q->nblocks];
	memset(b, 0, sizeof(*b));
	b->index = block;
	for (uint32_t i = 0; i < UROCE_QPN_BLOCK_SIZE; i++)
		if (reserved(block * UROCE_QPN_BLOCK_SIZE + i))
			b->used[i / 64] |= 1ull << (i % 64);
	q->cur = q->nblocks++ * UROCE_QPN_BLOCK_SIZE;
out:
	pthread_mutex_unlock(&q->lock);
	return err;
}

int uroce_qpn_alloc(struct uroce_qpn *q, uint32_t *qpn)
{
	uint32_t total, pos;
	int err = ENOSPC;

	pthread_mutex_lock(&q->lock);
	total = q->nblocks * UROCE_QPN_BLOCK_SIZE;
	pos = q->cur;
	/* Visit every word once from the cursor's, then the cursor's own word again. */
	for (uint32_t n = 0; total && n <= total / 64; n++) {
		struct uroce_qpn_block *b = &q->blocks[pos / UROCE_QPN_BLOCK_SIZE];
		uint32_t w = pos % UROCE_QPN_BLOCK_SIZE / 64;
		uint64_t free = ~b->used[w] & (~0ull << (pos % 64));

		if (free) {
			uint32_t bit = (uint32_t)__builtin_ctzll(free);

			b->used[w] |= 1ull << bit;
			*qpn = b->index * UROCE_QPN_BLOCK_SIZE + w * 64 + bit;
			q->cur = (pos - pos % 64 + bit + 1) % total;
			err = 0;
			break;
		}
		pos = (pos - pos % 64 + 64) % total;
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}

void uroce_qpn_free(struct uroce_qpn *q, uint32_t qpn)
{
	struct uroce_qpn_block *b;
	uint32_t i = qpn % UROCE_QPN_BLOCK_SIZE;

	if (reserved(qpn) || qpn > 0xFFFFFFu)
		return;
	pthread_mutex_lock(&q->lock);
	b = find(q, uroce_qpn_block(qpn));
	if (b)
		b->used[i / 64] &= ~(1ull << (i % 64));
	pthread_mutex_unlock(&q->lock);
}
