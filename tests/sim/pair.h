/* SPDX-License-Identifier: MIT */
/*
 * Two hosts with one connected QP each and a registered buffer each: the setup most
 * simulation tests start from (sim.h).
 */
#ifndef UROCE_TESTS_SIM_PAIR_H
#define UROCE_TESTS_SIM_PAIR_H

#include "tests/sim/sim.h"

struct sim_pair {
	struct sim *s;
	struct sim_host *ha, *hb;
	struct sim_qp *a, *b;
	struct sim_cq *a_scq, *a_rcq, *b_scq, *b_rcq;
	uint8_t *abuf, *bbuf; /* @len bytes each, registered with all access rights */
	size_t len;
	uint32_t akey, bkey;
	struct sim_conn conn;
};

/*
 * Make the pair: QPs of @type (RC or UC; UD QPs are made ready but not connected), queues of
 * 64 WQEs, 4 SGEs, 64 bytes inline; buffers of @len bytes. @c NULL: sim_conn_default().
 */
void sim_pair_init(struct sim_pair *p, enum ibv_qp_type type, const struct sim_conn *c,
		   const struct sim_wire_cfg *w, uint64_t seed, size_t len);
void sim_pair_fini(struct sim_pair *p);

/* One-SGE WR helpers; they return what sim_post_send/sim_post_recv return. */
int sim_send(struct sim_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *laddr, uint32_t len,
	     uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned int flags);
int sim_recv(struct sim_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
int sim_atomic(struct sim_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *result,
	       uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
	       unsigned int flags);

/* The next completion of @cq; fails the test if there is none. */
struct ibv_wc sim_expect_wc(struct sim_cq *cq);
/* Completions of @cq not yet polled. */
uint32_t sim_pending(const struct sim_cq *cq);

/* Fill @buf with a pattern of @seed (so each message is recognisable). */
void sim_fill(uint8_t *buf, size_t len, uint64_t seed);

#endif
