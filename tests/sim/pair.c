// SPDX-License-Identifier: MIT
/* Two connected hosts (pair.h). */
#include "tests/sim/pair.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

void sim_pair_init(struct sim_pair *p, enum ibv_qp_type type, const struct sim_conn *c,
		   const struct sim_wire_cfg *w, uint64_t seed, size_t len)
{
	static const struct sim_wire_cfg clean = {.delay_ns = 2000};
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;
	struct sim_qp_init qi = {
		.type = type,
		.pd = 1,
		.sq_slots = 64,
		.rq_slots = 64,
		.max_sge = 4,
		.max_inline = 64,
	};

	memset(p, 0, sizeof(*p));
	p->s = sim_new(seed, w ? w : &clean);
	p->ha = sim_host_new(p->s);
	p->hb = sim_host_new(p->s);
	p->a_scq = sim_cq_new();
	p->a_rcq = sim_cq_new();
	p->b_scq = sim_cq_new();
	p->b_rcq = sim_cq_new();
	qi.send_cq = p->a_scq;
	qi.recv_cq = p->a_rcq;
	p->a = sim_qp_new(p->ha, &qi);
	qi.send_cq = p->b_scq;
	qi.recv_cq = p->b_rcq;
	p->b = sim_qp_new(p->hb, &qi);
	p->len = len;
	/* 8-byte aligned, for atomics. */
	p->abuf = aligned_alloc(64, (len + 63) & ~(size_t)63);
	p->bbuf = aligned_alloc(64, (len + 63) & ~(size_t)63);
	cr_assert(p->abuf && p->bbuf);
	memset(p->abuf, 0, len);
	memset(p->bbuf, 0, len);
	p->akey = sim_mr_reg(p->ha, 1, p->abuf, len, all);
	p->bkey = sim_mr_reg(p->hb, 1, p->bbuf, len, all);
	p->conn = c ? *c : sim_conn_default();
	if (type == IBV_QPT_UD) {
		sim_ud_ready(p->a, 0x1234, p->conn.mtu);
		sim_ud_ready(p->b, 0x1234, p->conn.mtu);
	} else {
		sim_connect(p->a, p->b, &p->conn);
	}
}

void sim_pair_fini(struct sim_pair *p)
{
	sim_free(p->s);
	sim_cq_free(p->a_scq);
	sim_cq_free(p->a_rcq);
	sim_cq_free(p->b_scq);
	sim_cq_free(p->b_rcq);
	free(p->abuf);
	free(p->bbuf);
}

int sim_send(struct sim_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *laddr, uint32_t len,
	     uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = {.addr = (uintptr_t)laddr, .length = len, .lkey = lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = flags,
		.imm_data = htobe32((uint32_t)wr_id),
	};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return sim_post_send(qp, &wr);
}

int sim_recv(struct sim_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};

	return sim_post_recv(qp, &wr);
}

int sim_atomic(struct sim_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op, void *result,
	       uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
	       unsigned int flags)
{
	struct ibv_sge sge = {.addr = (uintptr_t)result, .length = 8, .lkey = lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = flags,
	};

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return sim_post_send(qp, &wr);
}

struct ibv_wc sim_expect_wc(struct sim_cq *cq)
{
	struct sim_wc wc;

	cr_assert(sim_poll(cq, &wc), "expected a completion, the CQ is empty");
	return wc.wc;
}

uint32_t sim_pending(const struct sim_cq *cq)
{
	return cq->n - cq->polled;
}

void sim_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	struct sim_prng r = {.s = seed};

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = sim_rand(&r);

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}
