/* SPDX-License-Identifier: MIT */
/*
 * The QP numbers of one process: the blocks the hub granted it (fabric/rdv.h) and which numbers
 * in them are in use. Numbers are handed out by a cursor that moves forward through the blocks
 * and wraps, so a freed number is reused only after every other number of the process's blocks
 * (a late packet for a destroyed QP then rarely reaches a new one). QPN 0, 1 (IBA 3.5.4: QP0 and
 * QP1 are special) and 0xFFFFFF (multicast, IBA 9.2) are never handed out. Thread-safe.
 */
#ifndef UROCE_FABRIC_QPN_H
#define UROCE_FABRIC_QPN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define UROCE_QPN_BLOCK_BITS 12
#define UROCE_QPN_BLOCK_SIZE (1u << UROCE_QPN_BLOCK_BITS)        /* QPNs per block */
#define UROCE_QPN_BLOCKS     (1u << (24 - UROCE_QPN_BLOCK_BITS)) /* blocks in the 24-bit space */

static inline uint32_t uroce_qpn_block(uint32_t qpn)
{
	return (qpn & 0xFFFFFFu) >> UROCE_QPN_BLOCK_BITS;
}

struct uroce_qpn_block;

struct uroce_qpn {
	pthread_mutex_t lock;
	struct uroce_qpn_block *blocks; /* in the order they were added */
	uint32_t nblocks, cap;
	uint32_t cur; /* cursor: index into blocks * BLOCK_SIZE + offset in the block */
};

void uroce_qpn_init(struct uroce_qpn *q);
void uroce_qpn_destroy(struct uroce_qpn *q);

/*
 * Add block @block (< UROCE_QPN_BLOCKS) and move the cursor to its start, so its numbers are
 * used before freed ones. Adding a block again does nothing. Returns 0 or ENOMEM.
 */
int uroce_qpn_add_block(struct uroce_qpn *q, uint32_t block);

/* Take a free number. Returns 0, or ENOSPC when every number of the blocks is in use. */
int uroce_qpn_alloc(struct uroce_qpn *q, uint32_t *qpn);

/* Give @qpn back. A number not taken (or not of these blocks) is ignored. */
void uroce_qpn_free(struct uroce_qpn *q, uint32_t qpn);

#endif
