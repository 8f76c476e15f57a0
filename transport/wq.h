/* SPDX-License-Identifier: MIT */
/*
 * Work queues: rings of fixed-size WQE slots with free-running head (posted) and tail
 * (oldest not yet completed) counters, guarded by the owning QP's or SRQ's lock.
 *
 * The data path consumes a send queue in order from tail to head and completes WQEs in order
 * (it keeps its own "next to transmit" cursor between the two); receive WQEs are consumed
 * from the tail as requests arrive.
 */
#ifndef UROCE_TRANSPORT_WQ_H
#define UROCE_TRANSPORT_WQ_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The ring has a power of two of slots, at least the capacity (so up to twice the memory, as
 * RNICs round their queues up too): a counter's slot is its low bits, right across the
 * counters' wrap at 2^32 (a remainder by another size would give two consecutive counters one
 * slot there) and without a division for each use.
 */
struct roce_wq {
	uint8_t *buf;
	uint32_t slots;  /* capacity in WQEs */
	uint32_t mask;   /* slots in the ring - 1 */
	uint32_t stride; /* bytes per slot */
	uint32_t head;   /* WQEs posted */
	uint32_t tail;   /* WQEs completed or flushed */
};

/*
 * A send WQE: a copy of the ibv_send_wr (inline data copied at post time, ABI semantics),
 * plus the requester's note of the PSNs it took.
 */
struct roce_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags; /* IBV_SEND_* */
	bool signaled;           /* SIGNALED, or the QP signals all */
	__be32 imm_data;         /* *_WITH_IMM */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			uint32_t mw_rkey; /* the window, by its current R_Key */
			uint32_t rkey;    /* its new R_Key: the key byte is taken from it */
			uint32_t mr_lkey; /* the region (none when length is 0) */
			uint64_t addr;
			uint64_t length;
			int access; /* IBV_ACCESS_* the window grants */
		} bind;             /* BIND_MW */
	} wr;
	uint32_t inv_rkey; /* LOCAL_INV and SEND_WITH_INV: the R_Key to invalidate */
	struct {
		bool has_ah;                /* an address was given (UD needs one) */
		struct ibv_ah_attr ah_attr; /* copied from the AH: it may go before the WQE */
		uint32_t remote_qpn;
		uint32_t remote_qkey;
	} ud;
	uint32_t xrc_remote_srqn;
	/* Set by the requester when it starts the WQE (qp.h); zero when posted. */
	bool started;
	uint32_t first_psn; /* its first and last PSN (READ: of its responses) */
	uint32_t last_psn;
	uint32_t length;            /* payload bytes */
	uint32_t num_sge;           /* gather entries in data[] (0 when inline) */
	bool is_inline;             /* data[] holds the payload itself */
	_Alignas(8) uint8_t data[]; /* struct ibv_sge[num_sge], or length bytes of payload */
};

struct roce_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length; /* sum of the scatter lengths */
	struct ibv_sge sge[];
};

/* The power of two at or above @n (1 for 0), or 0 if @n is over 2^31. */
uint32_t roce_ring_size(uint32_t n);

/*
 * A queue for @slots WQEs of @stride bytes (rounded up to 8), in a ring of the next power of
 * two of slots: 0, or ENOMEM (also for more than 2^31 slots).
 */
int roce_wq_init(struct roce_wq *wq, uint32_t slots, size_t stride);
void roce_wq_free(struct roce_wq *wq);

static inline uint32_t roce_wq_used(const struct roce_wq *wq)
{
	return wq->head - wq->tail;
}

static inline void *roce_wq_slot(const struct roce_wq *wq, uint32_t counter)
{
	return wq->buf + (size_t)(counter & wq->mask) * wq->stride;
}

static inline struct ibv_sge *roce_send_wqe_sge(struct roce_send_wqe *wqe)
{
	return (struct ibv_sge *)wqe->data;
}

/*
 * A BIND_MW WQE's window (by its current R_Key @mw_rkey), its new R_Key @rkey and what
 * @info binds it to (region, range, access), as ibv_post_send and ibv_wr_bind_mw give them.
 */
void roce_wqe_set_bind(struct roce_send_wqe *wqe, uint32_t mw_rkey, uint32_t rkey,
		       const struct ibv_mw_bind_info *info);

/* The ibv_wc_opcode that completes a send WQE of @opcode. */
enum ibv_wc_opcode roce_wc_opcode(enum ibv_wr_opcode opcode);

/* Bytes of a send slot for a QP with these capabilities. */
size_t roce_send_wqe_size(uint32_t max_sge, uint32_t max_inline);
/* Bytes of a receive slot. */
size_t roce_recv_wqe_size(uint32_t max_sge);

/*
 * Queue the receive work requests of the chain @wr on @wq (the caller holds
 * the queue's lock). Stops at the first bad one: *@bad is set to it and the
 * result is EINVAL (num_sge outside 0..@max_sge) or ENOMEM (queue full);
 * earlier ones stay queued. Returns 0 and leaves *@bad alone when all are
 * queued. *@posted counts the WRs queued.
 */
int roce_wq_post_recv(struct roce_wq *wq, uint32_t max_sge, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad, unsigned *posted);

#endif
