/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (IBA 10.6.7), as pure rules over a window's state: binding one to a range of
 * a memory region, invalidating it, and checking a remote access through its R_Key. The owner
 * (the verbs layer, or the simulation) keeps the windows and their lock, finds the window and
 * the region a request names, and calls these; the rules are rxe's (rxe_mw.c), cited below
 * by the IBA requirement each one implements.
 *
 * Two types: a type 1 window is bound by ibv_bind_mw and any QP of its PD may use it; a type
 * 2 (2B) window is bound by a BIND_MW work request, only the QP that bound it may use it, and
 * it is freed by a local invalidate or a SEND with invalidate before it can be bound again.
 */
#ifndef UROCE_TRANSPORT_MW_H
#define UROCE_TRANSPORT_MW_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/qp.h"

/*
 * Keys: an R_Key with its top bit set names a window, any other a region (as rxe keeps them
 * apart by index range, rxe_param.h RXE_MIN_MW_INDEX). Its low byte is the key byte the
 * consumer changes at each bind (IBA 10.6.7.2.1: "the key portion").
 */
#define ROCE_MW_KEY_BIT 0x80000000u

static inline bool roce_key_is_mw(uint32_t key)
{
	return key & ROCE_MW_KEY_BIT;
}

/* The key of window number @index (0 .. 2^23 - 1) with key byte @key_byte. */
static inline uint32_t roce_mw_key(uint32_t index, uint8_t key_byte)
{
	return ROCE_MW_KEY_BIT | (index & 0x7FFFFFu) << 8 | key_byte;
}

/* The window number of an R_Key roce_key_is_mw() says is one. */
static inline uint32_t roce_mw_index(uint32_t key)
{
	return (key & ~ROCE_MW_KEY_BIT) >> 8;
}

enum roce_mw_state {
	ROCE_MW_INVALID, /* deallocated */
	ROCE_MW_FREE,    /* type 2, not bound */
	ROCE_MW_VALID,   /* bound (type 1 also after a bind of length 0, which grants nothing) */
};

struct roce_mw {
	enum ibv_mw_type type;
	enum roce_mw_state state;
	uint32_t rkey;   /* current R_Key */
	uint32_t pd;     /* its protection domain (the owner's PD number) */
	uint32_t qpn;    /* type 2, bound: the QP it was bound through */
	uint32_t mr_key; /* bound with a length: the region's L_Key; else 0 */
	uint64_t addr;   /* the window: [addr, addr + length) of the region's addresses */
	uint64_t length;
	int access; /* IBV_ACCESS_* it grants (IBV_ACCESS_ZERO_BASED: addressed from 0) */
};

/* What a bind needs to know of the region it names. */
struct roce_mw_region {
	uint32_t lkey;
	uint32_t pd;
	uint64_t iova; /* the address of its first byte */
	uint64_t length;
	int access; /* IBV_ACCESS_* of the region */
};

/* A window of @type with R_Key @rkey on PD @pd, as ibv_alloc_mw makes it (rxe_alloc_mw). */
void roce_mw_init(struct roce_mw *mw, enum ibv_mw_type type, uint32_t rkey, uint32_t pd);

/*
 * Bind @mw as the BIND_MW work request @wqe asks, for QP @qpn of PD @qp_pd; @mr is the region
 * its wr.bind.mr_lkey names (NULL when there is none or the bind has length 0). The owner
 * counts the windows bound to each region (a region cannot be deregistered while one is, IBA
 * 10.6.7.2.6): on success the window left region *@old_mr_key (0: none) and is now bound to
 * mw->mr_key (0: none). Returns IBV_WC_SUCCESS, or IBV_WC_MW_BIND_ERR when a rule of IBA 10.6.7.2
 * refuses it (the window's key is stale, a type 1 window is not valid or the bind is zero-based, a
 * type 2 window is bound already, is of another PD than the QP or is bound without a region or
 * length, the region is zero-based, has no MW_BIND access, lacks the local write access a
 * writable window needs, is of another PD or does not hold the range, or the access asks
 * for an unknown bit).
 */
enum ibv_wc_status roce_mw_bind(struct roce_mw *mw, const struct roce_send_wqe *wqe, uint32_t qpn,
				uint32_t qp_pd, const struct roce_mw_region *mr,
				uint32_t *old_mr_key);

/*
 * Invalidate @mw on behalf of QP @qpn of PD @qp_pd (a local invalidate, or a SEND with
 * invalidate it received) naming R_Key @rkey. True if done: the window is free, *@old_mr_key
 * names the region it left (its window count is the owner's to lower). False if @rkey is not
 * the window's current key, the window is type 1 (IBA o10-37.2.26: only a type 2 window is
 * invalidated), not bound, or of another PD.
 */
bool roce_mw_invalidate(struct roce_mw *mw, uint32_t rkey, uint32_t qp_pd, uint32_t *old_mr_key);

/*
 * A remote access of @access (IBV_ACCESS_REMOTE_*) to [@addr, @addr + @len) through R_Key
 * @rkey, for QP @qpn of PD @qp_pd, checked against window @mw (rxe_lookup_mw): the key is
 * current, the window is valid, of the QP's PD, bound (type 2: through this QP) with a length,
 * grants the access, and holds the range (addressed from 0 for a zero-based window). Returns
 * ROCE_MEM_OK with the region's key and the range's address in the region, or why not.
 */
enum roce_mem_err roce_mw_check(const struct roce_mw *mw, uint32_t rkey, uint32_t qpn,
				uint32_t qp_pd, uint64_t addr, uint64_t len, int access,
				uint32_t *mr_key, uint64_t *mr_addr);

/*
 * Deallocate @mw (ibv_dealloc_mw): it grants nothing more. *@old_mr_key names the region it
 * was bound to (0 if none), whose window count the owner lowers.
 */
void roce_mw_dealloc(struct roce_mw *mw, uint32_t *old_mr_key);

#endif
