/* SPDX-License-Identifier: MIT */
/* fabric/qpn: a process's QP numbers within the blocks the hub granted it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "fabric/qpn.h"

static struct uroce_qpn q;

static void setup(void)
{
	uroce_qpn_init(&q);
}

static void teardown(void)
{
	uroce_qpn_destroy(&q);
}

TestSuite(qpn, .init = setup, .fini = teardown);

Test(qpn, empty_has_none)
{
	uint32_t n;

	cr_assert_eq(uroce_qpn_alloc(&q, &n), ENOSPC);
}

/* Take every number of the blocks; check each is new and in them; then ENOSPC. */
static void take_all(uint32_t expect_count, const uint32_t *blocks, size_t nblocks)
{
	uint8_t *seen = calloc(1u << 24, 1);
	uint32_t n, count = 0;

	cr_assert_not_null(seen);
	while (!uroce_qpn_alloc(&q, &n)) {
		bool in_block = false;

		cr_assert(n != 0 && n != 1 && n != 0xFFFFFF, "reserved QPN %#x handed out", n);
		cr_assert(!seen[n], "QPN %#x handed out twice", n);
		for (size_t i = 0; i < nblocks; i++)
			in_block |= uroce_qpn_block(n) == blocks[i];
		cr_assert(in_block, "QPN %#x outside the blocks", n);
		seen[n] = 1;
		count++;
	}
	cr_assert_eq(count, expect_count);
	free(seen);
}

Test(qpn, block_zero_skips_qp0_and_qp1)
{
	uint32_t blocks[] = {0};

	cr_assert_eq(uroce_qpn_add_block(&q, 0), 0);
	take_all(UROCE_QPN_BLOCK_SIZE - 2, blocks, 1);
}

Test(qpn, last_block_skips_multicast_qpn)
{
	uint32_t blocks[] = {UROCE_QPN_BLOCKS - 1};

	cr_assert_eq(uroce_qpn_add_block(&q, UROCE_QPN_BLOCKS - 1), 0);
	take_all(UROCE_QPN_BLOCK_SIZE - 1, blocks, 1);
}

Test(qpn, several_blocks_and_adding_twice)
{
	uint32_t blocks[] = {7, 300, 12};

	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(uroce_qpn_add_block(&q, blocks[i]), 0);
	cr_assert_eq(uroce_qpn_add_block(&q, 300), 0);
	take_all(3 * UROCE_QPN_BLOCK_SIZE, blocks, 3);
}

Test(qpn, numbers_come_in_order_from_a_new_block)
{
	uint32_t n;

	cr_assert_eq(uroce_qpn_add_block(&q, 5), 0);
	cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
	cr_assert_eq(n, 5 * UROCE_QPN_BLOCK_SIZE);
	cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
	cr_assert_eq(n, 5 * UROCE_QPN_BLOCK_SIZE + 1);
	/* A new block's numbers come before the rest of the old one. */
	cr_assert_eq(uroce_qpn_add_block(&q, 9), 0);
	cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
	cr_assert_eq(n, 9 * UROCE_QPN_BLOCK_SIZE);
}

Test(qpn, freed_number_waits_for_the_rest)
{
	uint32_t first, n;

	cr_assert_eq(uroce_qpn_add_block(&q, 3), 0);
	cr_assert_eq(uroce_qpn_alloc(&q, &first), 0);
	uroce_qpn_free(&q, first);
	for (uint32_t i = 1; i < UROCE_QPN_BLOCK_SIZE; i++) {
		cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
		cr_assert_neq(n, first, "reused after %u allocations", i);
	}
	cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
	cr_assert_eq(n, first);
	cr_assert_eq(uroce_qpn_alloc(&q, &n), ENOSPC);
}

Test(qpn, freeing_what_is_not_ours_is_ignored)
{
	uint32_t n;

	cr_assert_eq(uroce_qpn_add_block(&q, 0), 0);
	uroce_qpn_free(&q, 0);
	uroce_qpn_free(&q, 1);
	uroce_qpn_free(&q, 0xFFFFFF);
	uroce_qpn_free(&q, 0x1000000);
	uroce_qpn_free(&q, 5 * UROCE_QPN_BLOCK_SIZE);
	for (uint32_t i = 0; i < UROCE_QPN_BLOCK_SIZE - 2; i++)
		cr_assert_eq(uroce_qpn_alloc(&q, &n), 0);
	cr_assert_eq(uroce_qpn_alloc(&q, &n), ENOSPC);
}
