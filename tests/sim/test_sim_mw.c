// SPDX-License-Identifier: MIT
/*
 * Memory windows through the simulated wire (transport/mw.h): binding type 1 and type 2
 * windows, remote access through them and the checks it passes (bounds, access, the QP a type
 * 2 window serves, the key byte), local invalidate, SEND with invalidate (also when its ACK is
 * lost), invalidation while a WRITE is using the window, and the completion statuses of each
 * failure, as rxe gives them.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/sim/pair.h"

static struct sim_pair p;
static struct sim_cq *extra_cq; /* of the QPs a test adds to the pair */

static void teardown(void)
{
	sim_pair_fini(&p);
	sim_cq_free(extra_cq);
	extra_cq = NULL;
}

TestSuite(sim_mw, .fini = teardown);

/* Region access of the buffer a window is bound to: bindable, no remote access of its own. */
#define MW_REGION (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
#define RW        (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static void run_idle(void)
{
	cr_assert_eq(sim_run(p.s, UINT64_MAX), SIM_IDLE, "%s", p.s->fail);
}

/* An RC pair whose host B has buffer bbuf registered a second time, bindable: returns its key. */
static uint32_t setup(uint64_t seed, const struct sim_wire_cfg *w)
{
	sim_pair_init(&p, IBV_QPT_RC, NULL, w, seed, 1 << 16);
	p.s->max_steps = 1000000; /* a run that would not end fails instead */
	return sim_mr_reg(p.hb, 1, p.bbuf, p.len, MW_REGION);
}

/* Post a BIND_MW on @qp: window @mw_rkey gets key byte @key of @new_rkey. */
static int bind(struct sim_qp *qp, uint64_t wr_id, uint32_t mw_rkey, uint32_t new_rkey,
		uint32_t mr_key, void *addr, uint64_t len, int access)
{
	struct ibv_mw mw = {.rkey = mw_rkey};
	struct ibv_mr mr = {.lkey = mr_key};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.bind_mw.mw = &mw;
	wr.bind_mw.rkey = new_rkey;
	wr.bind_mw.bind_info.mr = mr_key ? &mr : NULL;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned int)access;
	return sim_post_send(qp, &wr);
}

/* LOCAL_INV (@send false) or a SEND with invalidate of @len bytes of abuf. */
static int invalidate(struct sim_qp *qp, uint64_t wr_id, uint32_t rkey, bool send, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)p.abuf, .length = len, .lkey = p.akey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = send ? IBV_WR_SEND_WITH_INV : IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.sg_list = send ? &sge : NULL,
		.num_sge = send ? 1 : 0,
		.invalidate_rkey = rkey,
	};

	return sim_post_send(qp, &wr);
}

/* The next completion of @cq has @wr_id, @status and (if it succeeded) @opcode. */
static struct ibv_wc expect(struct sim_cq *cq, uint64_t wr_id, enum ibv_wc_status status,
			    enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc = sim_expect_wc(cq);

	cr_assert_eq(wc.wr_id, wr_id, "wr_id %llu, expected %llu", (unsigned long long)wc.wr_id,
		     (unsigned long long)wr_id);
	cr_assert_eq(wc.status, status, "wr %llu: status %d, expected %d",
		     (unsigned long long)wr_id, wc.status, status);
	if (status == IBV_WC_SUCCESS)
		cr_assert_eq(wc.opcode, opcode, "wr %llu: opcode %d", (unsigned long long)wr_id,
			     wc.opcode);
	return wc;
}

/* Bind a type 2 window of B's over bbuf[@off, @off + @len) through QP b: its new R_Key. */
static uint32_t bind_type2(uint32_t mr, uint32_t off, uint32_t len, int access)
{
	uint32_t rkey = sim_mw_alloc(p.hb, 1, IBV_MW_TYPE_2);
	uint32_t next = (rkey & ~0xFFu) | ((rkey + 1) & 0xFFu);

	cr_assert_eq(bind(p.b, 50, rkey, next, mr, p.bbuf + off, len, access), 0);
	run_idle();
	expect(p.b_scq, 50, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	return next;
}

Test(sim_mw, type2_bind_write_read_through_the_window)
{
	uint32_t mr = setup(1, NULL);
	uint32_t rkey = bind_type2(mr, 4096, 8192, RW);

	sim_fill(p.abuf, 8192, 7);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 8192, p.akey,
			      (uintptr_t)p.bbuf + 4096, rkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cr_assert_arr_eq(p.bbuf + 4096, p.abuf, 8192);
	/* Back through the window, into the second half of abuf. */
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_READ, p.abuf + 16384, 8192, p.akey,
			      (uintptr_t)p.bbuf + 4096, rkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	cr_assert_arr_eq(p.abuf + 16384, p.abuf, 8192);
	cr_assert_eq(p.hb->mr[mr >> 8].windows, 1);
	cr_assert_eq(sim_mr_dereg(p.hb, mr), EBUSY, "a region with a window bound stays");
	cr_assert_eq(p.a->to_error_calls + p.b->to_error_calls, 0);
}

/* The window holds [addr, addr + length) only, and grants only the access it was bound with. */
Test(sim_mw, access_outside_the_window_or_its_rights_fails)
{
	static const struct {
		uint64_t off;
		uint32_t len;
		enum ibv_wr_opcode op;
	} bad[] = {
		{4096 - 8, 16, IBV_WR_RDMA_WRITE},       /* starts before the window */
		{4096 + 8192 - 8, 16, IBV_WR_RDMA_READ}, /* ends after it */
		{4096, 8, IBV_WR_RDMA_WRITE},            /* the window is read-only */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t mr = setup(2 + i, NULL);
		uint32_t rkey = bind_type2(mr, 4096, 8192, IBV_ACCESS_REMOTE_READ);

		cr_assert_eq(sim_send(p.a, 1, bad[i].op, p.abuf, bad[i].len, p.akey,
				      (uintptr_t)p.bbuf + bad[i].off, rkey, IBV_SEND_SIGNALED),
			     0);
		run_idle();
		expect(p.a_scq, 1, IBV_WC_REM_ACCESS_ERR, 0);
		cr_assert_eq(p.a->state, IBV_QPS_ERR);
		cr_assert_eq(sim_events(p.b, IBV_EVENT_QP_ACCESS_ERR), 1, "case %zu", i);
		sim_pair_fini(&p);
	}
	setup(9, NULL); /* for the teardown */
}

/* IBA 10.6.7.2.1: the R_Key's key byte is part of it; the window's old key opens nothing. */
Test(sim_mw, stale_key_byte_fails)
{
	uint32_t mr = setup(10, NULL);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);

	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey, (uintptr_t)p.bbuf,
			      rkey ^ 0x80, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_REM_ACCESS_ERR, 0);
}

/*
 * A type 2 window serves the QP that bound it only (IBA 10.6.7.2.2); a type 1 window any QP of
 * its PD. B gets a second QP, b2, of the same PD, connected to a2 on A.
 */
Test(sim_mw, type2_serves_its_qp_only_type1_every_qp_of_its_pd)
{
	uint32_t mr = setup(11, NULL);
	struct sim_cq *cq = extra_cq = sim_cq_new();
	struct sim_qp_init qi = {
		.type = IBV_QPT_RC,
		.pd = 1,
		.sq_slots = 16,
		.rq_slots = 16,
		.max_sge = 1,
		.send_cq = cq,
		.recv_cq = cq,
	};
	struct sim_qp *a2 = sim_qp_new(p.ha, &qi);
	struct sim_qp *b2 = sim_qp_new(p.hb, &qi);
	uint32_t t2 = bind_type2(mr, 0, 4096, RW);
	uint32_t t1 = sim_mw_alloc(p.hb, 1, IBV_MW_TYPE_1);
	uint32_t t1_next = (t1 & ~0xFFu) | ((t1 + 7) & 0xFFu);

	sim_connect(a2, b2, &p.conn);
	cr_assert_eq(bind(p.b, 51, t1, t1_next, mr, p.bbuf + 4096, 4096, RW), 0);
	run_idle();
	expect(p.b_scq, 51, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	/* Through a2 -> b2: the type 1 window works, the type 2 one is b's. */
	cr_assert_eq(sim_send(a2, 1, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey,
			      (uintptr_t)p.bbuf + 4096, t1_next, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(cq, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cr_assert_eq(sim_send(a2, 2, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey, (uintptr_t)p.bbuf, t2,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(cq, 2, IBV_WC_REM_ACCESS_ERR, 0);
	/* Through a -> b both work. */
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey, (uintptr_t)p.bbuf, t2,
			      IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 4, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey,
			      (uintptr_t)p.bbuf + 4096, t1_next, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect(p.a_scq, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
}

/* A zero-based window is addressed from 0 (IBA 10.6.7.2.1). */
Test(sim_mw, zero_based_type2_window)
{
	uint32_t mr = setup(12, NULL);
	uint32_t rkey = bind_type2(mr, 1024, 2048, RW | IBV_ACCESS_ZERO_BASED);

	sim_fill(p.abuf, 256, 3);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 256, p.akey, 512, rkey,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	cr_assert_arr_eq(p.bbuf + 1024 + 512, p.abuf, 256);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 256, p.akey, 2048 - 128, rkey,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 2, IBV_WC_REM_ACCESS_ERR, 0);
}

/* A local invalidate frees the window: the next access through it fails, the region goes. */
Test(sim_mw, local_invalidate_then_remote_access_fails)
{
	uint32_t mr = setup(13, NULL);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);

	cr_assert_eq(invalidate(p.b, 52, rkey, false, 0), 0);
	run_idle();
	expect(p.b_scq, 52, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	cr_assert_eq(sim_mw(p.hb, rkey)->state, ROCE_MW_FREE);
	cr_assert_eq(sim_mr_dereg(p.hb, mr), 0, "no window left on the region");
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey, (uintptr_t)p.bbuf,
			      rkey, IBV_SEND_SIGNALED),
		     0);
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 64, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_REM_ACCESS_ERR, 0);
	expect(p.a_scq, 2, IBV_WC_WR_FLUSH_ERR, 0);
}

/* A second invalidate of the same key, or one of a region's key, fails the QP (rxe). */
Test(sim_mw, local_invalidate_of_a_free_window_or_a_region_fails)
{
	uint32_t mr = setup(14, NULL);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);

	cr_assert_eq(invalidate(p.b, 52, rkey, false, 0), 0);
	cr_assert_eq(invalidate(p.b, 53, rkey, false, 0), 0);
	cr_assert_eq(invalidate(p.b, 54, rkey, false, 0), 0);
	run_idle();
	expect(p.b_scq, 52, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	expect(p.b_scq, 53, IBV_WC_LOC_QP_OP_ERR, 0);
	expect(p.b_scq, 54, IBV_WC_WR_FLUSH_ERR, 0);
	cr_assert_eq(p.b->state, IBV_QPS_ERR);
	sim_pair_fini(&p);

	setup(15, NULL);
	cr_assert_eq(invalidate(p.a, 1, p.akey, false, 0), 0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_LOC_QP_OP_ERR, 0);
}

/*
 * A local operation completes after every WQE posted before it, and its effect follows theirs:
 * a WRITE through a window, then an invalidate of that window on the same QP.
 */
Test(sim_mw, local_operations_complete_in_order)
{
	uint32_t mr = setup(16, NULL);
	uint32_t amr = sim_mr_reg(p.ha, 1, p.abuf, p.len, MW_REGION);
	uint32_t arkey = sim_mw_alloc(p.ha, 1, IBV_MW_TYPE_2);

	(void)mr;
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 32768, p.akey, (uintptr_t)p.bbuf,
			      p.bkey, 0),
		     0);
	cr_assert_eq(bind(p.a, 2, arkey, arkey, amr, p.abuf, 4096, RW), 0);
	cr_assert_eq(invalidate(p.a, 3, arkey, false, 0), 0);
	cr_assert_eq(sim_pending(p.a_scq), 0, "the bind waits for the WRITE");
	run_idle();
	expect(p.a_scq, 2, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect(p.a_scq, 3, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	cr_assert_eq(sim_mw(p.ha, arkey)->state, ROCE_MW_FREE);
}

/* Binding fails with IBV_WC_MW_BIND_ERR for each rule of IBA 10.6.7.2 rxe enforces. */
Test(sim_mw, bind_errors)
{
	enum region { BINDABLE, PLAIN, NO_LOCAL_WRITE }; /* the region the bind names */
	static const struct {
		const char *rule;
		uint32_t pd; /* the window's PD; the QP's is 1 */
		enum ibv_mw_type type;
		enum region region;
		uint32_t off, len;
		int access;
		uint32_t stale; /* XORed into the key naming the window */
		bool bound;     /* bound once before */
	} bad[] = {
		{.rule = "C10-73: the region has no MW_BIND access",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .region = PLAIN,
		 .len = 4096,
		 .access = RW},
		{.rule = "C10-75: the range is outside the region",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .off = 65436,
		 .len = 4096,
		 .access = RW},
		{.rule = "C10-74: a writable window, its region without local write",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .region = NO_LOCAL_WRITE,
		 .len = 4096,
		 .access = IBV_ACCESS_REMOTE_WRITE},
		{.rule = "o10-37.2.30: a bound type 2 window",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .len = 4096,
		 .access = RW,
		 .bound = true},
		{.rule = "C10-72: a type 2 window of another PD",
		 .pd = 2,
		 .type = IBV_MW_TYPE_2,
		 .len = 4096,
		 .access = RW},
		{.rule = "o10-36.2.2: a zero-based type 1 window",
		 .pd = 1,
		 .type = IBV_MW_TYPE_1,
		 .len = 4096,
		 .access = RW | IBV_ACCESS_ZERO_BASED},
		{.rule = "o10-37.2.40: a type 2 window of length 0",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .access = RW},
		{.rule = "the window named by an old key",
		 .pd = 1,
		 .type = IBV_MW_TYPE_2,
		 .len = 4096,
		 .access = RW,
		 .stale = 1},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t mr = setup(17 + i, NULL), rkey;

		if (bad[i].region == PLAIN)
			mr = p.bkey;
		else if (bad[i].region == NO_LOCAL_WRITE)
			mr = sim_mr_reg(p.hb, 1, p.bbuf, p.len, IBV_ACCESS_MW_BIND);
		rkey = bad[i].bound ? bind_type2(mr, 0, 4096, RW)
				    : sim_mw_alloc(p.hb, bad[i].pd, bad[i].type);
		cr_assert_eq(bind(p.b, 1, rkey ^ bad[i].stale, rkey, mr, p.bbuf + bad[i].off,
				  bad[i].len, bad[i].access),
			     0);
		cr_assert_eq(sim_send(p.b, 2, IBV_WR_RDMA_WRITE, p.bbuf, 8, p.bkey,
				      (uintptr_t)p.abuf, p.akey, IBV_SEND_SIGNALED),
			     0);
		run_idle();
		cr_assert_eq(sim_expect_wc(p.b_scq).status, IBV_WC_MW_BIND_ERR, "%s", bad[i].rule);
		expect(p.b_scq, 2, IBV_WC_WR_FLUSH_ERR, 0);
		cr_assert_eq(p.b->state, IBV_QPS_ERR, "%s", bad[i].rule);
		sim_pair_fini(&p);
	}
	setup(1, NULL); /* for the teardown */
}

/* A type 1 window rebound with length 0 grants nothing; rebound with a length, it works. */
Test(sim_mw, type1_rebind)
{
	uint32_t mr = setup(25, NULL);
	uint32_t t1 = sim_mw_alloc(p.hb, 1, IBV_MW_TYPE_1);

	cr_assert_eq(bind(p.b, 1, t1, t1 + 1, mr, p.bbuf, 4096, RW), 0);
	cr_assert_eq(bind(p.b, 2, t1 + 1, t1 + 2, 0, NULL, 0, 0), 0);
	run_idle();
	expect(p.b_scq, 1, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect(p.b_scq, 2, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	cr_assert_eq(p.hb->mr[mr >> 8].windows, 0, "the window left its region");
	cr_assert_eq(sim_send(p.a, 3, IBV_WR_RDMA_WRITE, p.abuf, 8, p.akey, (uintptr_t)p.bbuf,
			      t1 + 2, IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 3, IBV_WC_REM_ACCESS_ERR, 0);
}

/* A deallocated window grants nothing and leaves its region. */
Test(sim_mw, dealloc_then_access_fails)
{
	uint32_t mr = setup(26, NULL);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);

	sim_mw_dealloc(p.hb, rkey);
	cr_assert_eq(sim_mr_dereg(p.hb, mr), 0);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_READ, p.abuf, 64, p.akey, (uintptr_t)p.bbuf, rkey,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_REM_ACCESS_ERR, 0);
}

/* SEND with invalidate: the receive says which key it invalidated (IBV_WC_WITH_INV). */
static void send_with_invalidate(uint64_t seed, const struct sim_wire_cfg *w)
{
	uint32_t mr = setup(seed, w);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);
	struct ibv_wc wc;

	sim_fill(p.abuf, 3000, seed);
	cr_assert_eq(sim_recv(p.b, 60, p.bbuf + 8192, 4096, p.bkey), 0);
	cr_assert_eq(invalidate(p.a, 1, rkey, true, 3000), 0); /* 3 packets at MTU 1024 */
	run_idle();
	expect(p.a_scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = expect(p.b_rcq, 60, IBV_WC_SUCCESS, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert_eq(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	cr_assert_arr_eq(p.bbuf + 8192, p.abuf, 3000);
	cr_assert_eq(sim_pending(p.b_rcq), 0, "one receive, however often the packets came");
	cr_assert_eq(sim_mw(p.hb, rkey)->state, ROCE_MW_FREE);
	cr_assert_eq(p.a->to_error_calls + p.b->to_error_calls, 0);
	if (w)
		return; /* a lost NAK would end the next WRITE in retries instead */
	/* The window is free: an access through its key fails. */
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_RDMA_WRITE, p.abuf, 8, p.akey, (uintptr_t)p.bbuf, rkey,
			      IBV_SEND_SIGNALED),
		     0);
	run_idle();
	expect(p.a_scq, 2, IBV_WC_REM_ACCESS_ERR, 0);
}

Test(sim_mw, send_with_invalidate)
{
	send_with_invalidate(27, NULL);
}

/* Drop the first ACK from B: A sends the SEND with invalidate again, B must not invalidate
 * twice (the second would fail: the window is free), only ACK the duplicate. */
static bool drop_first_ack(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt)
{
	uint32_t *dropped = arg;

	if (from == p.b && (pkt->bth.opcode & 0x1F) == ROCE_OP_ACK && !*dropped) {
		(*dropped)++;
		return false;
	}
	return true;
}

Test(sim_mw, send_with_invalidate_ack_lost)
{
	uint32_t dropped = 0;
	uint32_t mr = setup(28, NULL);
	uint32_t rkey = bind_type2(mr, 0, 4096, RW);

	p.s->filter = drop_first_ack;
	p.s->filter_arg = &dropped;
	cr_assert_eq(sim_recv(p.b, 60, p.bbuf + 8192, 4096, p.bkey), 0);
	cr_assert_eq(invalidate(p.a, 1, rkey, true, 100), 0);
	run_idle();
	cr_assert_eq(dropped, 1);
	cr_assert_geq(p.a->core.counters.retransmits, 1);
	cr_assert_geq(p.b->core.counters.rx_duplicate, 1);
	expect(p.a_scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	cr_assert_eq(expect(p.b_rcq, 60, IBV_WC_SUCCESS, IBV_WC_RECV).invalidated_rkey, rkey);
	cr_assert_eq(sim_pending(p.b_rcq), 0);
	cr_assert_eq(sim_mw(p.hb, rkey)->state, ROCE_MW_FREE);
	cr_assert_eq(p.a->to_error_calls + p.b->to_error_calls, 0);
}

/* The same over a wire that loses, duplicates and reorders packets, over several seeds. */
Test(sim_mw, send_with_invalidate_lossy_wire)
{
	static const struct sim_wire_cfg lossy = {
		.loss_ppm = 100000,
		.dup_ppm = 100000,
		.reorder_ppm = 100000,
		.delay_ns = 2000,
		.reorder_ns = 5000,
	};

	for (uint64_t seed = 100; seed < 120; seed++) {
		send_with_invalidate(seed, &lossy);
		sim_pair_fini(&p);
	}
	setup(1, NULL); /* for the teardown */
}

/* A SEND with invalidate of a key that cannot be invalidated: both sides fail (class J). */
Test(sim_mw, send_with_invalidate_of_a_bad_key)
{
	setup(29, NULL);
	cr_assert_eq(sim_recv(p.b, 60, p.bbuf, 4096, p.bkey), 0);
	cr_assert_eq(invalidate(p.a, 1, p.bkey, true, 100), 0); /* a region's key */
	cr_assert_eq(sim_send(p.a, 2, IBV_WR_SEND, p.abuf, 10, p.akey, 0, 0, IBV_SEND_SIGNALED), 0);
	run_idle();
	expect(p.a_scq, 1, IBV_WC_REM_INV_REQ_ERR, 0);
	expect(p.a_scq, 2, IBV_WC_WR_FLUSH_ERR, 0);
	expect(p.b_rcq, 60, IBV_WC_REM_INV_REQ_ERR, 0);
	cr_assert_eq(p.b->state, IBV_QPS_ERR);
	cr_assert_eq(p.a->state, IBV_QPS_ERR);
}

/*
 * Invalidate while in use: B invalidates the window while a long WRITE through it is arriving.
 * The packets before the invalidate land, those after are refused: the WRITE fails with a
 * remote access error and what came after the invalidate is not written.
 */
Test(sim_mw, invalidate_while_a_write_uses_the_window)
{
	static const struct sim_wire_cfg slow = {.delay_ns = 2000, .rate_mbps = 1000};
	uint32_t mr = setup(30, &slow);
	uint32_t rkey = bind_type2(mr, 0, 65536, RW);
	size_t landed = 0;

	sim_fill(p.abuf, 65536, 30);
	cr_assert_eq(sim_send(p.a, 1, IBV_WR_RDMA_WRITE, p.abuf, 65536, p.akey, (uintptr_t)p.bbuf,
			      rkey, IBV_SEND_SIGNALED),
		     0);
	/* 64 packets of 1 KiB at 1 Gb/s: about 8.6 us each. After 200 us some have landed. */
	cr_assert_eq(sim_run_for(p.s, 200000), SIM_TIME);
	cr_assert_eq(invalidate(p.b, 52, rkey, false, 0), 0);
	run_idle();
	expect(p.b_scq, 52, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	expect(p.a_scq, 1, IBV_WC_REM_ACCESS_ERR, 0);
	while (landed < 65536 && !memcmp(p.bbuf + landed, p.abuf + landed, 1024))
		landed += 1024;
	cr_assert_gt(landed, 0, "packets before the invalidate were written");
	cr_assert_lt(landed, 65536, "packets after it were refused");
	for (size_t i = landed; i < 65536; i++)
		cr_assert_eq(p.bbuf[i], 0, "byte %zu written after the invalidate", i);
	cr_assert_eq(sim_events(p.b, IBV_EVENT_QP_ACCESS_ERR), 1);
}
