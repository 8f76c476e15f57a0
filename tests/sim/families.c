// SPDX-License-Identifier: MIT
/*
 * Scenario families (families.h). One generic workload engine: a seed decides the knobs
 * (transport, QPs, sizes, wire faults, attributes, what goes wrong), the workload is generated
 * up front with a post time for every WR and receive, driven through the simulation, and then
 * checked.
 */
#include "tests/sim/families.h"

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim/sim.h"

enum fam_id {
	FAM_STREAM,
	FAM_STREAM_MEDIUM,
	FAM_STREAM_16M,
	FAM_SRQ,
	FAM_RNR,
	FAM_DEAD_PEER,
	FAM_RESTART,
	FAM_TIMEOUTS,
	FAM_UC,
	FAM_UD,
};

const struct sim_family sim_families[] = {
	[FAM_STREAM] = {"stream", "RC SEND/WRITE/READ/atomics of 0 B..4 MTU on 1-4 QPs", 1000},
	[FAM_STREAM_MEDIUM] = {"stream-medium", "RC streams of up to 256 KiB messages", 1000},
	[FAM_STREAM_16M] = {"stream-16m", "RC streams with 16 MiB messages", 12},
	[FAM_SRQ] = {"srq", "RC QPs sharing one SRQ", 1000},
	[FAM_RNR] = {"rnr", "receives posted late: RNR storms, rnr_retry exhaustion", 1000},
	[FAM_DEAD_PEER] = {"dead-peer", "the peer host goes silent mid-stream", 1000},
	[FAM_RESTART] = {"restart", "the peer QP is reset or replaced mid-stream", 1000},
	[FAM_TIMEOUTS] = {"timeouts", "tiny, huge and infinite ACK timeouts", 1000},
	[FAM_UC] = {"uc", "UC SEND/WRITE over a lossy wire", 1000},
	[FAM_UD] = {"ud", "UD datagrams between several QPs", 1000},
};

const unsigned sim_nfamilies = sizeof(sim_families) / sizeof(sim_families[0]);

int sim_family_find(const char *name)
{
	for (unsigned i = 0; i < sim_nfamilies; i++)
		if (!strcmp(sim_families[i].name, name))
			return (int)i;
	return -1;
}

enum {
	FAM_MAX_QP = 8,
	FAM_GUARD = 8, /* bytes between buffers, which must stay FAM_FILL */
	FAM_FILL = 0xA5,
	FAM_SLACK = 16,           /* spare bytes of a receive buffer, which must stay FAM_FILL */
	FAM_MAX_STEPS = 20000000, /* clock steps of one run: far above the longest legitimate run */
};

/* Where a peer event happens. */
enum fam_event {
	EV_NONE,
	EV_DEAD,    /* host B stops */
	EV_RESET,   /* one B QP is reset and reconnected with new PSNs; A is not told */
	EV_REPLACE, /* one B QP is destroyed; later A is reset and connected to a new one */
};

struct fam_host {
	struct sim_host *h;
	uint8_t *src; /* pattern; only ever read */
	size_t src_len;
	uint32_t src_key;
	uint8_t *dst; /* targets and receive buffers, with guards between them */
	size_t dst_len, dst_used;
	uint32_t dst_key;
	uint64_t *atom; /* atomic targets, one word per atomic WR */
	uint32_t natom, atom_used;
	uint32_t atom_key;
};

struct fam_qp {
	struct sim_qp *qp;
	uint32_t host; /* 0: A, 1: B */
	uint32_t peer; /* connected QP (RC, UC) */
	struct sim_cq *scq, *rcq;
	bool replaced; /* destroyed by EV_REPLACE: its WRs are not checked */
};

struct fam_op {
	uint32_t qp;   /* initiator */
	uint32_t dest; /* target QP (UD: any B QP) */
	enum ibv_wr_opcode op;
	uint32_t len;
	unsigned flags;
	uint32_t nsge;
	size_t src_off; /* initiator's src (SEND, WRITE), target's src (READ) */
	size_t dst_off; /* target's dst (WRITE), initiator's dst (READ, atomic result) */
	uint32_t atom;  /* target's atom word */
	uint64_t init, operand, swap;
	uint32_t recv; /* its receive WQE (RC/UC/UD with a fixed mapping), or UINT32_MAX */
	uint64_t time;
	bool posted;
	bool later;        /* EV_REPLACE's second workload: posted once A is reconnected */
	uint32_t sq_index; /* its send queue slot counter, for the PSNs in reports */
	uint32_t ncomp;
	struct sim_wc wc;
};

struct fam_recv {
	uint32_t qp; /* receiving QP; UINT32_MAX: the SRQ */
	bool later;  /* of the second workload */
	size_t dst_off;
	uint32_t cap; /* buffer length */
	uint32_t nsge;
	uint64_t time;
	bool posted;
	uint32_t ncomp;
	struct sim_wc wc;
};

struct fam {
	enum fam_id id;
	uint64_t seed;
	struct sim_prng rng;
	char *why;
	size_t whylen;
	bool failed;

	/* knobs */
	enum ibv_qp_type type;
	uint32_t nqp;   /* QP pairs */
	bool both_ways; /* B QPs initiate too */
	bool use_srq;
	uint32_t max_len;
	uint32_t nops;
	uint32_t mtu;
	uint64_t gap_ns;       /* mean gap between posts */
	uint64_t recv_late_ns; /* receives posted up to this long after their message */
	bool rnr_exhaust;      /* the last message of QP 0 never gets its receive */
	bool tiny_timeout;     /* the ACK timeout is about a round trip: retries may run out */
	enum fam_event event;
	uint64_t event_time;
	uint32_t event_qp;
	struct sim_conn conn;
	struct sim_wire_cfg wire;

	/* state */
	struct sim *s;
	struct fam_host host[2];
	struct fam_qp qp[2 * FAM_MAX_QP];
	uint32_t nqps;
	struct sim_srq *srq;
	struct sim_cq *cq[4]; /* A send, A recv, B send, B recv */
	struct fam_op *op;
	uint32_t nop, cap_op;
	struct fam_recv *rv;
	uint32_t nrv, cap_rv;
	struct ibv_ah *ah[2]; /* UD: to A, to B */
	struct {
		size_t off, len;
	} * slot[2];
	uint32_t nslot[2], cap_slot[2];
	uint64_t down_time, down_flight;
	uint64_t timeouts_at_down[2 * FAM_MAX_QP];
	bool event_done;
	bool reconnected;     /* EV_REPLACE: A talks to qp[replacement] now */
	uint32_t replacement; /* EV_REPLACE: index of the new B QP */
};

static void fail(struct fam *F, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *desc(struct fam *F, uint32_t i);

static void fail(struct fam *F, const char *fmt, ...)
{
	va_list ap;

	if (F->failed)
		return;
	F->failed = true;
	va_start(ap, fmt);
	vsnprintf(F->why, F->whylen, fmt, ap);
	va_end(ap);
}

static uint64_t rnd(struct fam *F, uint64_t n)
{
	return n ? sim_rand_below(&F->rng, n) : 0;
}

static void *grow(void *p, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 64;
	p = realloc(p, *cap * size);
	if (!p)
		abort();
	return p;
}

/* Space in host @h's dst for @len bytes, after a guard; returns its offset. */
static size_t dst_alloc(struct fam *F, uint32_t h, size_t len)
{
	struct fam_host *fh = &F->host[h];
	size_t off = fh->dst_used + FAM_GUARD;

	off = (off + 7) & ~(size_t)7;
	fh->dst_used = off + len;
	F->slot[h] = grow(F->slot[h], F->nslot[h], &F->cap_slot[h], sizeof(*F->slot[h]));
	F->slot[h][F->nslot[h]].off = off;
	F->slot[h][F->nslot[h]].len = len;
	F->nslot[h]++;
	return off;
}

/* Knobs. */

static const enum ibv_mtu mtus[] = {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048,
				    IBV_MTU_4096};

static void pick_wire(struct fam *F, bool faults)
{
	struct sim_wire_cfg *w = &F->wire;

	memset(w, 0, sizeof(*w));
	w->delay_ns = 1000 + rnd(F, 10000);
	w->jitter_ns = rnd(F, 3) ? rnd(F, 5000) : 0;
	w->rate_mbps = rnd(F, 2) ? 0 : (uint32_t)(10000 + rnd(F, 90000));
	if (!faults || !rnd(F, 8))
		return; /* a clean wire now and then */
	w->loss_ppm = (uint32_t)rnd(F, 50000);
	w->dup_ppm = (uint32_t)rnd(F, 20000);
	w->corrupt_ppm = (uint32_t)rnd(F, 10000);
	w->reorder_ppm = (uint32_t)rnd(F, 50000);
	/* Now and then packets overtaken by many round trips, as UROCE_FAULTS' 100 us hold on a
	 * loopback of a few: stale requests, responses and NAKs long after their round. */
	w->reorder_ns = 1000 + rnd(F, rnd(F, 4) ? 30000 : 150000);
}

/*
 * Fewer faults, for big messages: each lost or overtaken packet costs a window of resends
 * (go-back-N, up to 512 packets), so the run's cost grows with fault rate times window.
 */
static void scale_faults(struct fam *F, uint32_t by)
{
	F->wire.loss_ppm /= by;
	F->wire.dup_ppm /= by;
	F->wire.corrupt_ppm /= by;
	F->wire.reorder_ppm /= by;
}

static void pick_conn(struct fam *F)
{
	struct sim_conn *c = &F->conn;

	*c = sim_conn_default();
	c->mtu = mtus[rnd(F, 5)];
	F->mtu = 128u << c->mtu;
	c->timeout = (uint8_t)(10 + rnd(F, 5)); /* 4 ms .. 67 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;
	c->min_rnr_timer = (uint8_t)(1 + rnd(F, 8));
	c->max_rd_atomic = (uint8_t)(1 + rnd(F, 16));
	c->max_dest_rd_atomic = c->max_rd_atomic;
	/* First PSNs anywhere, near the 24-bit wrap now and then. */
	c->psn_a = rnd(F, 2) ? (uint32_t)rnd(F, 1u << 24) : 0xFFFFFF - (uint32_t)rnd(F, 50);
	c->psn_b = (uint32_t)rnd(F, 1u << 24);
}

static void knobs(struct fam *F)
{
	F->type = IBV_QPT_RC;
	F->nqp = 1 + (uint32_t)rnd(F, 4);
	F->both_ways = rnd(F, 2);
	F->gap_ns = rnd(F, 3) ? rnd(F, 20000) : 0;
	pick_conn(F);
	pick_wire(F, true);
	F->max_len = 4 * F->mtu;
	F->nops = 20 + (uint32_t)rnd(F, 60);
	switch (F->id) {
	case FAM_STREAM:
		break;
	case FAM_STREAM_MEDIUM:
		F->max_len = 256 * 1024;
		F->nops = 8 + (uint32_t)rnd(F, 16);
		scale_faults(F, 10);
		break;
	case FAM_STREAM_16M:
		F->nqp = 1;
		F->max_len = 16 * 1024 * 1024;
		F->nops = 3 + (uint32_t)rnd(F, 3);
		F->wire.rate_mbps = 10000 + (uint32_t)rnd(F, 90000);
		scale_faults(F, 100);
		F->conn.timeout = 14 + (uint8_t)rnd(F, 4);
		break;
	case FAM_SRQ:
		F->nqp = 2 + (uint32_t)rnd(F, 5);
		F->use_srq = true;
		break;
	case FAM_RNR:
		F->recv_late_ns = 10000 + rnd(F, 3000000);
		F->conn.min_rnr_timer = (uint8_t)(1 + rnd(F, 12));
		if (rnd(F, 3) == 0) {
			F->rnr_exhaust = true;
			F->conn.rnr_retry = (uint8_t)rnd(F, 7);
			F->recv_late_ns = 0;
			if (rnd(F, 2))
				pick_wire(F, false);
		}
		break;
	case FAM_DEAD_PEER:
		F->event = EV_DEAD;
		F->conn.retry_cnt = (uint8_t)rnd(F, 8);
		F->conn.timeout = (uint8_t)(10 + rnd(F, 5));
		/* Few retries fail on a lossy wire before the peer dies; they get a clean one. */
		if (F->conn.retry_cnt < 6)
			pick_wire(F, false);
		else
			F->wire.loss_ppm /= 4;
		break;
	case FAM_RESTART:
		F->event = rnd(F, 2) ? EV_RESET : EV_REPLACE;
		F->conn.retry_cnt = (uint8_t)rnd(F, 8);
		F->conn.timeout = (uint8_t)(10 + rnd(F, 5));
		if (F->conn.retry_cnt < 6)
			pick_wire(F, false);
		else
			F->wire.loss_ppm /= 4;
		break;
	case FAM_TIMEOUTS:
		switch (rnd(F, 3)) {
		case 0: /* tiny: near the round trip; spurious retransmissions, maybe failure */
			F->conn.timeout = (uint8_t)(1 + rnd(F, 3));
			F->tiny_timeout = true;
			F->wire.rate_mbps = 0;
			F->wire.loss_ppm /= 10;
			F->wire.corrupt_ppm /= 10;
			break;
		case 1: /* huge: a lost packet costs hours of virtual time */
			F->conn.timeout = (uint8_t)(20 + rnd(F, 12));
			F->wire.loss_ppm /= 10;
			break;
		default: /* infinite: no timer, so a clean wire */
			F->conn.timeout = 0;
			pick_wire(F, false);
			break;
		}
		F->nops = 10 + (uint32_t)rnd(F, 30);
		break;
	case FAM_UC:
		F->type = IBV_QPT_UC;
		break;
	case FAM_UD:
		F->type = IBV_QPT_UD;
		F->nqp = 1 + (uint32_t)rnd(F, 4);
		F->max_len = F->mtu;
		break;
	}
	if (F->event != EV_NONE)
		F->both_ways = F->event == EV_DEAD ? F->both_ways : false;
	F->event_qp = (uint32_t)rnd(F, F->nqp);
}

/* Workload. */

static uint32_t pick_len(struct fam *F)
{
	uint32_t m = F->mtu, max = F->max_len;
	uint32_t len;

	switch (rnd(F, 10)) {
	case 0:
		len = 0;
		break;
	case 1:
		len = 1 + (uint32_t)rnd(F, 8);
		break;
	case 2:
		len = m - 1 + (uint32_t)rnd(F, 3); /* MTU - 1, MTU, MTU + 1 */
		break;
	case 3:
		len = m * (2 + (uint32_t)rnd(F, 8));
		break;
	case 4:
		len = max;
		break;
	default:
		len = (uint32_t)rnd(F, (uint64_t)max + 1);
		break;
	}
	return len > max ? max : len;
}

static bool is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool needs_recv(enum ibv_wr_opcode op)
{
	return is_send(op) || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static bool has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static enum ibv_wr_opcode pick_op(struct fam *F)
{
	static const enum ibv_wr_opcode rc[] = {
		IBV_WR_SEND,       IBV_WR_SEND_WITH_IMM,       IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_RDMA_READ,  IBV_WR_ATOMIC_CMP_AND_SWP,  IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	enum ibv_wr_opcode op;

	switch (F->type) {
	case IBV_QPT_UD:
		return IBV_WR_SEND_WITH_IMM;
	case IBV_QPT_UC:
		/* Messages are told apart by their immediate data (some are lost). */
		return rnd(F, 2)   ? IBV_WR_SEND_WITH_IMM
		       : rnd(F, 2) ? IBV_WR_RDMA_WRITE
				   : IBV_WR_RDMA_WRITE_WITH_IMM;
	default:
		op = rc[F->rnr_exhaust ? rnd(F, 5) : rnd(F, 9)]; /* RNR victim: a message */
		/* SRQ receives are told apart by their immediate data. */
		return F->use_srq && op == IBV_WR_SEND ? IBV_WR_SEND_WITH_IMM : op;
	}
}

static void add_recv(struct fam *F, struct fam_op *o, uint32_t qp, uint64_t time)
{
	struct fam_recv *r;
	uint32_t h = F->qp[qp].host;
	uint32_t grh = F->type == IBV_QPT_UD ? ROCE_GRH_LEN : 0;
	bool srq = F->use_srq && h == 1;

	F->rv = grow(F->rv, F->nrv, &F->cap_rv, sizeof(*F->rv));
	r = &F->rv[F->nrv];
	memset(r, 0, sizeof(*r));
	r->qp = srq ? UINT32_MAX : qp;
	r->later = o->later;
	/*
	 * Buffers fit their message, with slack that must stay untouched. Where a receive may
	 * get another message than its own (an SRQ; UC and UD, which lose messages) they fit any.
	 */
	r->cap = grh + (srq || F->type != IBV_QPT_RC ? F->max_len : o->len) + FAM_SLACK;
	r->nsge = 1 + (uint32_t)rnd(F, 3);
	r->dst_off = dst_alloc(F, h, r->cap);
	r->time = time;
	o->recv = F->nrv++;
}

/* A WR from QP @qp to @dest (UINT32_MAX: its peer, or for UD a random B QP). */
static void add_op(struct fam *F, uint32_t qp, uint32_t dest, uint64_t time, bool later)
{
	struct fam_op *o;
	uint32_t hi, ht;

	F->op = grow(F->op, F->nop, &F->cap_op, sizeof(*F->op));
	o = &F->op[F->nop];
	memset(o, 0, sizeof(*o));
	o->qp = qp;
	/* UD: any QP of the other host. */
	if (dest == UINT32_MAX && F->type == IBV_QPT_UD)
		dest = (F->qp[qp].host ? 0 : F->nqp) + (uint32_t)rnd(F, F->nqp);
	else if (dest == UINT32_MAX)
		dest = F->qp[qp].peer;
	o->dest = dest;
	o->op = pick_op(F);
	o->time = time;
	o->recv = UINT32_MAX;
	o->later = later;
	o->len = is_atomic(o->op) ? 8 : pick_len(F);
	o->nsge = 1 + (uint32_t)rnd(F, 4);
	o->flags = rnd(F, 4) ? IBV_SEND_SIGNALED : 0;
	if (rnd(F, 8) == 0)
		o->flags |= IBV_SEND_FENCE;
	if (has_imm(o->op) && rnd(F, 4) == 0)
		o->flags |= IBV_SEND_SOLICITED;
	if (o->len <= 64 && !is_atomic(o->op) && o->op != IBV_WR_RDMA_READ && rnd(F, 2))
		o->flags |= IBV_SEND_INLINE;
	hi = F->qp[qp].host;
	ht = F->qp[o->dest].host;
	switch (o->op) {
	case IBV_WR_RDMA_READ:
		o->src_off = rnd(F, F->host[ht].src_len - o->len + 1);
		o->dst_off = dst_alloc(F, hi, o->len);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		o->atom = F->host[ht].natom++;
		o->init = sim_rand(&F->rng);
		o->operand = rnd(F, 2) ? o->init : sim_rand(&F->rng); /* CAS: hit or miss */
		o->swap = sim_rand(&F->rng);
		o->dst_off = dst_alloc(F, hi, 8);
		o->nsge = 1;
		break;
	default:
		o->src_off = rnd(F, F->host[hi].src_len - o->len + 1);
		if (o->op == IBV_WR_RDMA_WRITE || o->op == IBV_WR_RDMA_WRITE_WITH_IMM)
			o->dst_off = dst_alloc(F, ht, o->len);
		break;
	}
	if (needs_recv(o->op)) {
		uint64_t late = F->recv_late_ns ? rnd(F, F->recv_late_ns) : 0;

		add_recv(F, o, o->dest, later ? UINT64_MAX : time + late);
	}
	F->nop++;
}

/* QPs on two hosts: A QPs 0..nqp-1, B QPs nqp..2nqp-1; pair i is (i, nqp + i). */
static void make_qps(struct fam *F)
{
	struct sim_qp_init qi = {
		.type = F->type,
		.pd = 1,
		.sq_slots = 512,
		.rq_slots = 512,
		.max_sge = 4,
		.max_inline = 64,
	};

	for (uint32_t i = 0; i < 4; i++)
		F->cq[i] = sim_cq_new();
	if (F->use_srq)
		F->srq = sim_srq_new(4096, 4);
	F->nqps = 2 * F->nqp;
	for (uint32_t i = 0; i < F->nqps; i++) {
		struct fam_qp *q = &F->qp[i];

		q->host = i >= F->nqp;
		q->peer = q->host ? i - F->nqp : i + F->nqp;
		q->scq = F->cq[2 * q->host];
		q->rcq = F->cq[2 * q->host + 1];
		qi.send_cq = q->scq;
		qi.recv_cq = q->rcq;
		qi.srq = q->host && F->use_srq ? F->srq : NULL;
		qi.sig_all = rnd(F, 8) == 0;
		q->qp = sim_qp_new(F->host[q->host].h, &qi);
	}
	if (F->event == EV_REPLACE) {
		/* The B QP that replaces the destroyed one: made at reconnect(). */
		F->replacement = F->nqps;
		F->qp[F->replacement] = F->qp[F->nqp + F->event_qp];
		F->qp[F->replacement].qp = NULL;
	}
}

static void connect_qps(struct fam *F)
{
	for (uint32_t i = 0; i < F->nqp; i++) {
		struct sim_conn c = F->conn;

		if (F->type == IBV_QPT_UD) {
			sim_ud_ready(F->qp[i].qp, 0x11111111, F->conn.mtu);
			sim_ud_ready(F->qp[F->nqp + i].qp, 0x11111111, F->conn.mtu);
			continue;
		}
		c.psn_a = (c.psn_a + i * 1000003u) & ROCE_PSN_MASK;
		c.psn_b = (c.psn_b + i * 7777u) & ROCE_PSN_MASK;
		sim_connect(F->qp[i].qp, F->qp[F->nqp + i].qp, &c);
	}
}

static void make_workload(struct fam *F)
{
	uint64_t t = 0;

	for (uint32_t n = 0; n < F->nops; n++) {
		uint32_t qp = (uint32_t)rnd(F, F->nqp);

		if (F->both_ways && rnd(F, 2))
			qp += F->nqp;
		if (F->rnr_exhaust)
			qp = 0;
		add_op(F, qp, UINT32_MAX, t, false);
		t += F->gap_ns ? rnd(F, 2 * F->gap_ns) : 0;
	}
	if (F->event != EV_NONE)
		F->event_time = rnd(F, t + 2 * F->wire.delay_ns + 1);
	/* EV_REPLACE: what A sends to the new peer once reconnected. */
	for (uint32_t n = 0; F->event == EV_REPLACE && n < 10; n++)
		add_op(F, F->event_qp, F->replacement, UINT64_MAX, true);
	/* EV_RESET: what the reset peer sends A, which still expects the old PSNs. */
	for (uint32_t n = 0; F->event == EV_RESET && n < 4; n++)
		add_op(F, F->nqp + F->event_qp, UINT32_MAX, UINT64_MAX, true);
	if (F->rnr_exhaust) {
		/* The last message of QP 0 never gets its receive. */
		for (uint32_t i = F->nop; i-- > 0;) {
			if (F->op[i].recv != UINT32_MAX) {
				F->rv[F->op[i].recv].time = UINT64_MAX;
				break;
			}
		}
	}
}

/* Memory, after the workload says how much. */
static void make_memory(struct fam *F)
{
	int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;

	for (uint32_t h = 0; h < 2; h++) {
		struct fam_host *fh = &F->host[h];

		fh->dst_len = fh->dst_used + FAM_GUARD;
		fh->src = malloc(fh->src_len);
		fh->dst = malloc(fh->dst_len);
		fh->atom = calloc(fh->natom + 1, 8);
		if (!fh->src || !fh->dst || !fh->atom)
			abort();
		for (size_t i = 0; i < fh->src_len; i += 8) {
			uint64_t v = sim_rand(&F->rng);

			memcpy(fh->src + i, &v, fh->src_len - i < 8 ? fh->src_len - i : 8);
		}
		memset(fh->dst, FAM_FILL, fh->dst_len);
		/* The source only needs remote read; local access is always allowed. */
		fh->src_key = sim_mr_reg(fh->h, 1, fh->src, fh->src_len, IBV_ACCESS_REMOTE_READ);
		fh->dst_key = sim_mr_reg(fh->h, 1, fh->dst, fh->dst_len, all);
		fh->atom_key = sim_mr_reg(fh->h, 1, fh->atom, (fh->natom + 1) * 8ull, all);
	}
	for (uint32_t i = 0; i < F->nop; i++) {
		struct fam_op *o = &F->op[i];

		if (is_atomic(o->op))
			F->host[F->qp[o->dest].host].atom[o->atom] = o->init;
	}
}

/* Split [addr, addr + len) into @n gather/scatter entries (some may be empty). */
static int split_sge(struct fam *F, struct ibv_sge *sge, uint32_t n, uint8_t *addr, uint32_t len,
		     uint32_t key)
{
	uint32_t left = len;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = i == n - 1 ? left : (uint32_t)rnd(F, (uint64_t)left + 1);

		sge[i] = (struct ibv_sge){.addr = (uintptr_t)addr, .length = k, .lkey = key};
		addr += k;
		left -= k;
	}
	return (int)n;
}

static void post_op(struct fam *F, uint32_t i)
{
	struct fam_op *o = &F->op[i];
	struct fam_qp *q = &F->qp[o->qp];
	struct fam_host *hi = &F->host[q->host], *ht = &F->host[F->qp[o->dest].host];
	struct ibv_sge sge[4];
	struct ibv_send_wr wr = {
		.wr_id = i,
		.sg_list = sge,
		.opcode = o->op,
		.send_flags = o->flags,
		.imm_data = htobe32(i + 1),
	};
	int err;

	if (q->replaced || q->qp->destroyed)
		return;
	switch (o->op) {
	case IBV_WR_RDMA_READ:
		wr.num_sge = split_sge(F, sge, o->nsge, hi->dst + o->dst_off, o->len, hi->dst_key);
		wr.wr.rdma.remote_addr = (uintptr_t)ht->src + o->src_off;
		wr.wr.rdma.rkey = ht->src_key;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wr.num_sge = split_sge(F, sge, 1, hi->dst + o->dst_off, 8, hi->dst_key);
		wr.wr.atomic.remote_addr = (uintptr_t)&ht->atom[o->atom];
		wr.wr.atomic.rkey = ht->atom_key;
		wr.wr.atomic.compare_add = o->operand;
		wr.wr.atomic.swap = o->swap;
		break;
	default:
		wr.num_sge = split_sge(F, sge, o->nsge, hi->src + o->src_off, o->len, hi->src_key);
		if (F->type == IBV_QPT_UD) {
			wr.wr.ud.ah = F->ah[F->qp[o->dest].host];
			wr.wr.ud.remote_qpn = F->qp[o->dest].qp->core.qpn;
			wr.wr.ud.remote_qkey = 0x11111111;
		} else {
			wr.wr.rdma.remote_addr = (uintptr_t)ht->dst + o->dst_off;
			wr.wr.rdma.rkey = ht->dst_key;
		}
		break;
	}
	o->sq_index = q->qp->sq.head;
	if (F->s->trace)
		fprintf(F->s->trace, "%12llu post      %s\n", (unsigned long long)F->s->now,
			desc(F, i));
	err = sim_post_send(q->qp, &wr);
	if (err)
		fail(F, "post of WR %u (QP %u, opcode %d, %u bytes) failed: %d", i, o->qp, o->op,
		     o->len, err);
	o->posted = true;
}

static void post_recv(struct fam *F, uint32_t i)
{
	struct fam_recv *r = &F->rv[i];
	struct fam_host *h = &F->host[r->qp == UINT32_MAX ? 1 : F->qp[r->qp].host];
	struct ibv_sge sge[4];
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = sge};
	int err;

	wr.num_sge = split_sge(F, sge, r->nsge, h->dst + r->dst_off, r->cap, h->dst_key);
	if (r->qp == UINT32_MAX) {
		err = sim_srq_post_recv(F->srq, &wr);
	} else {
		if (F->qp[r->qp].replaced || F->qp[r->qp].qp->destroyed)
			return;
		err = sim_post_recv(F->qp[r->qp].qp, &wr);
	}
	if (err)
		fail(F, "post of receive %u failed: %d", i, err);
	r->posted = true;
	if (F->s->trace)
		fprintf(F->s->trace, "%12llu post-recv %u to %s%u (%u bytes)\n",
			(unsigned long long)F->s->now, i, r->qp == UINT32_MAX ? "SRQ" : "QP ",
			r->qp == UINT32_MAX ? 0 : r->qp, r->cap);
}

/* Peer events. */

static void dead_peer(struct fam *F)
{
	F->host[1].h->down = true;
	F->down_time = F->s->now;
	/* Packets B sent before it stopped may still arrive for this long. */
	F->down_flight = F->wire.delay_ns + F->wire.jitter_ns + F->wire.reorder_ns + 1;
	for (uint32_t q = 0; q < F->nqps; q++)
		F->timeouts_at_down[q] = F->qp[q].qp->core.counters.timeouts;
}

static void reset_peer(struct fam *F)
{
	struct fam_qp *b = &F->qp[F->nqp + F->event_qp];
	struct fam_qp *a = &F->qp[F->event_qp];
	struct sim_conn c = F->conn;
	/* New PSNs far from what A sends and expects (a new incarnation's random ones). */
	uint32_t rq = roce_psn_add(a->qp->core.req.psn, 1u << 22);
	uint32_t sq = roce_psn_add(a->qp->core.resp.psn, 3u << 22);

	sim_connect_one(b->qp, a->qp, &c, sq, rq);
	/* B's queues were emptied without completions (RESET); now it has its say. */
	for (uint32_t i = 0; i < F->nrv && !F->failed; i++)
		if (F->rv[i].later)
			post_recv(F, i);
	for (uint32_t i = 0; i < F->nop && !F->failed; i++)
		if (F->op[i].later)
			post_op(F, i);
}

static void replace_peer(struct fam *F)
{
	struct fam_qp *b = &F->qp[F->nqp + F->event_qp];

	sim_qp_destroy(b->qp);
	b->replaced = true;
}

/*
 * EV_REPLACE, once A's QP has failed: a new B QP, A reset and connected to it (as an
 * application reconnects), then the second workload.
 */
static void reconnect(struct fam *F)
{
	struct fam_qp *a = &F->qp[F->event_qp];
	struct fam_qp *nb = &F->qp[F->replacement];
	struct sim_qp_init qi = F->qp[F->nqp + F->event_qp].qp->init;
	struct sim_conn c = F->conn;

	nb->qp = sim_qp_new(F->host[1].h, &qi);
	nb->peer = F->event_qp;
	F->nqps++;
	a->peer = F->replacement;
	c.psn_a = (uint32_t)rnd(F, 1u << 24);
	c.psn_b = (uint32_t)rnd(F, 1u << 24);
	sim_connect(a->qp, nb->qp, &c);
	F->reconnected = true;
	for (uint32_t i = 0; i < F->nrv && !F->failed; i++)
		if (F->rv[i].later)
			post_recv(F, i);
	for (uint32_t i = 0; i < F->nop && !F->failed; i++)
		if (F->op[i].later)
			post_op(F, i);
}

/* The driver: post everything at its time, apply the event, run to rest. */

static void drive(struct fam *F)
{
	uint32_t oi = 0, ri = 0;
	uint64_t limit;

	for (;;) {
		uint64_t to = oi < F->nop ? F->op[oi].time : UINT64_MAX;
		uint64_t tr = ri < F->nrv ? F->rv[ri].time : UINT64_MAX;
		uint64_t te = F->event != EV_NONE && !F->event_done ? F->event_time : UINT64_MAX;
		uint64_t t = to < tr ? to : tr;
		enum sim_result res;

		if (te <= t)
			t = te;
		if (t == UINT64_MAX || F->failed)
			break;
		res = sim_run(F->s, t);
		if (res == SIM_STUCK) {
			fail(F, "simulation stuck at %llu ns: %s", (unsigned long long)F->s->now,
			     F->s->fail);
			return;
		}
		if (F->s->now < t)
			F->s->now = t; /* idle before t: the clock still moves on */
		if (t == te) {
			F->event_done = true;
			if (F->event == EV_DEAD)
				dead_peer(F);
			else if (F->event == EV_RESET)
				reset_peer(F);
			else
				replace_peer(F);
		} else if (t == tr) {
			post_recv(F,
				  ri++); /* receives first: most are posted before their message */
		} else {
			post_op(F, oi++);
		}
		/* Receives of a message are listed with it; later ones may be due earlier. */
		while (ri < F->nrv && F->rv[ri].time <= F->s->now && !F->failed)
			post_recv(F, ri++);
	}
	/* Long enough for every retry the attributes allow, many times over. */
	limit = F->s->now + 1000000000000000ull;
	for (;;) {
		enum sim_result res = sim_run(F->s, limit);

		if (res == SIM_STUCK) {
			fail(F, "simulation stuck at %llu ns: %s", (unsigned long long)F->s->now,
			     F->s->fail);
			return;
		}
		if (res == SIM_TIME) {
			fail(F, "no rest after %llu ns of virtual time (a hang)",
			     (unsigned long long)F->s->now);
			return;
		}
		if (F->event != EV_REPLACE || F->reconnected || !F->event_done)
			break;
		/* A failed, or had nothing outstanding (check_send_order tells which). */
		reconnect(F);
	}
}

/* Checks. */

/* "WR 12 (QP 1 -> 5, opcode 2, 300 bytes, PSN 100..101)", for reports. */
static const char *desc(struct fam *F, uint32_t i)
{
	static char buf[4][160];
	static unsigned k;
	const struct fam_op *o = &F->op[i];
	const struct sim_qp *qp = F->qp[o->qp].qp;
	char *b = buf[k++ % 4];
	int n;

	n = snprintf(b, sizeof(buf[0]), "WR %u (QP %u -> %u, opcode %d, %u bytes", i, o->qp,
		     o->dest, o->op, o->len);
	if (o->posted && qp && qp->sq.head - o->sq_index <= qp->sq.slots) {
		const struct roce_send_wqe *w = roce_wq_slot(&qp->sq, o->sq_index);

		if (w->started)
			snprintf(b + n, sizeof(buf[0]) - n, ", PSN %u..%u)", w->first_psn,
				 w->last_psn);
		else
			snprintf(b + n, sizeof(buf[0]) - n, ", not started)");
	} else {
		snprintf(b + n, sizeof(buf[0]) - n, ")");
	}
	return b;
}

/* A status's name (ibv_wc_status_str() without linking libibverbs). */
static const char *st(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return "success";
	case IBV_WC_LOC_LEN_ERR:
		return "local length error";
	case IBV_WC_LOC_QP_OP_ERR:
		return "local QP operation error";
	case IBV_WC_LOC_PROT_ERR:
		return "local protection error";
	case IBV_WC_WR_FLUSH_ERR:
		return "WR flushed";
	case IBV_WC_BAD_RESP_ERR:
		return "bad response error";
	case IBV_WC_REM_INV_REQ_ERR:
		return "remote invalid request error";
	case IBV_WC_REM_ACCESS_ERR:
		return "remote access error";
	case IBV_WC_REM_OP_ERR:
		return "remote operation error";
	case IBV_WC_RETRY_EXC_ERR:
		return "transport retry counter exceeded";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "RNR retry counter exceeded";
	default:
		return "another error";
	}
}

/* Take every completion into the op or receive it names; duplicates and strays fail. */
static void gather(struct fam *F)
{
	for (uint32_t c = 0; c < 4; c++) {
		struct sim_cq *cq = F->cq[c];
		bool recv = c & 1;

		for (uint32_t k = 0; k < cq->n; k++) {
			const struct sim_wc *w = &cq->wc[k];
			uint64_t id = w->wc.wr_id;

			if (recv) {
				if (id >= F->nrv) {
					fail(F, "receive completion with unknown wr_id %llu",
					     (unsigned long long)id);
					return;
				}
				if (F->rv[id].ncomp++)
					fail(F, "receive %llu completed twice (%s, then %s)",
					     (unsigned long long)id, st(F->rv[id].wc.wc.status),
					     st(w->wc.status));
				F->rv[id].wc = *w;
			} else {
				if (id >= F->nop) {
					fail(F, "send completion with unknown wr_id %llu",
					     (unsigned long long)id);
					return;
				}
				if (F->op[id].ncomp++)
					fail(F, "WR %llu completed twice (%s, then %s)",
					     (unsigned long long)id, st(F->op[id].wc.wc.status),
					     st(w->wc.status));
				F->op[id].wc = *w;
			}
		}
	}
}

/* Statuses an op may end with, other than success and flush, in this family. */
static bool allowed_error(const struct fam *F, enum ibv_wc_status s)
{
	switch (F->id) {
	case FAM_RNR:
		return F->rnr_exhaust && s == IBV_WC_RNR_RETRY_EXC_ERR;
	case FAM_DEAD_PEER:
	case FAM_RESTART:
		return s == IBV_WC_RETRY_EXC_ERR || s == IBV_WC_RNR_RETRY_EXC_ERR;
	case FAM_TIMEOUTS:
		return F->tiny_timeout && s == IBV_WC_RETRY_EXC_ERR;
	default:
		return false;
	}
}

static bool signaled(const struct fam *F, const struct fam_op *o)
{
	return (o->flags & IBV_SEND_SIGNALED) || F->qp[o->qp].qp->init.sig_all;
}

/* May a QP of this run fail (its scenario allows an error)? */
static bool may_fail(const struct fam *F)
{
	return F->event != EV_NONE || F->rnr_exhaust || F->tiny_timeout;
}

/* Per QP, in post order: successes, at most one error, then flushes only. */
static void check_send_order(struct fam *F)
{
	for (uint32_t q = 0; q < F->nqps && !F->failed; q++) {
		bool errored = false, seen_later = false;
		uint64_t last_time = 0;

		if (F->qp[q].replaced)
			continue;
		for (uint32_t i = 0; i < F->nop && !F->failed; i++) {
			struct fam_op *o = &F->op[i];
			enum ibv_wc_status s = o->wc.wc.status;

			if (o->qp != q || !o->posted)
				continue;
			if (o->later && !seen_later) {
				/* EV_REPLACE: A was reset and reconnected; a new sequence starts.
				 */
				seen_later = true;
				errored = false;
				last_time = 0;
			}
			if (o->ncomp && o->wc.time < last_time)
				fail(F, "WR %u completed before an earlier WR of its QP", i);
			if (o->ncomp) {
				last_time = o->wc.time;
				if (o->wc.wc.qp_num != F->qp[q].qp->core.qpn)
					fail(F, "WR %u completed with qp_num %u, not %u", i,
					     o->wc.wc.qp_num, F->qp[q].qp->core.qpn);
			}
			if (errored) {
				if (o->ncomp != 1 || s != IBV_WC_WR_FLUSH_ERR)
					fail(F, "%s after an error: %u completions, %s", desc(F, i),
					     o->ncomp, o->ncomp ? st(s) : "-");
				continue;
			}
			if (!o->ncomp) {
				if (signaled(F, o))
					fail(F, "signalled %s never completed", desc(F, i));
				continue;
			}
			if (s == IBV_WC_SUCCESS) {
				if (!signaled(F, o))
					fail(F, "unsignalled WR %u completed with success", i);
				continue;
			}
			if (s == IBV_WC_WR_FLUSH_ERR && F->qp[q].qp->to_error_calls == 0 &&
			    F->event == EV_NONE)
				fail(F, "WR %u flushed though nothing failed", i);
			if (s != IBV_WC_WR_FLUSH_ERR && !allowed_error(F, s))
				fail(F, "%s completed with %s", desc(F, i), st(s));
			errored = true;
		}
		if (!F->failed && F->qp[q].qp->sq.tail != F->qp[q].qp->sq.head)
			fail(F, "QP %u has %u WRs never retired", q,
			     F->qp[q].qp->sq.head - F->qp[q].qp->sq.tail);
	}
}

/* Did @o succeed? Unsignalled ones did if their QP retired them before any error. */
static bool op_succeeded(const struct fam *F, const struct fam_op *o)
{
	if (!o->posted || F->qp[o->qp].replaced)
		return false;
	if (o->ncomp)
		return o->wc.wc.status == IBV_WC_SUCCESS;
	/* Unsignalled and never completed: retired as a success (check_send_order). */
	return true;
}

static bool fill_intact(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != FAM_FILL)
			return false;
	return true;
}

/* The bytes a receive's scatter list covers (its pieces are contiguous). */
static const uint8_t *recv_bytes(struct fam *F, const struct fam_recv *r)
{
	uint32_t h = r->qp == UINT32_MAX ? 1 : F->qp[r->qp].host;

	return F->host[h].dst + r->dst_off;
}

static void check_recv(struct fam *F, const struct fam_op *o, uint32_t ri)
{
	const struct fam_recv *r = &F->rv[ri];
	const struct ibv_wc *wc = &r->wc.wc;
	const uint8_t *src = F->host[F->qp[o->qp].host].src + o->src_off;
	uint32_t grh = F->type == IBV_QPT_UD ? ROCE_GRH_LEN : 0;
	uint32_t oi = (uint32_t)(o - F->op);

	if (wc->status != IBV_WC_SUCCESS) {
		fail(F, "receive %u of WR %u: %s", ri, oi, st(wc->status));
		return;
	}
	if (wc->byte_len != o->len + grh)
		fail(F, "receive %u of WR %u: byte_len %u, sent %u", ri, oi, wc->byte_len,
		     o->len + grh);
	if (wc->opcode != (is_send(o->op) ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM))
		fail(F, "receive %u of WR %u: opcode %d", ri, oi, wc->opcode);
	if (has_imm(o->op) != !!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (has_imm(o->op) && be32toh(wc->imm_data) != oi + 1))
		fail(F, "receive %u of WR %u: immediate data wrong", ri, oi);
	if (r->wc.solicited != !!(o->flags & IBV_SEND_SOLICITED))
		fail(F, "receive %u of WR %u: solicited flag wrong", ri, oi);
	if (F->type == IBV_QPT_RC || F->type == IBV_QPT_UC) {
		if (wc->src_qp != F->qp[o->qp].qp->core.qpn && !F->use_srq)
			fail(F, "receive %u: src_qp %u", ri, wc->src_qp);
	} else if (wc->src_qp != F->qp[o->qp].qp->core.qpn) {
		fail(F, "UD receive %u: src_qp %u, sender %u", ri, wc->src_qp,
		     F->qp[o->qp].qp->core.qpn);
	}
	if (is_send(o->op)) {
		const uint8_t *got = recv_bytes(F, r);

		if (memcmp(got + grh, src, o->len))
			fail(F, "receive %u of WR %u: the %u bytes differ from those sent", ri, oi,
			     o->len);
		/* UC: a message cut short may have left bytes in the WQE the next one reuses. */
		if (F->type != IBV_QPT_UC &&
		    !fill_intact(got + grh + o->len, r->cap - grh - o->len))
			fail(F, "receive %u of WR %u: bytes after the message changed", ri, oi);
	} else if (F->type != IBV_QPT_UC && !fill_intact(recv_bytes(F, r), r->cap)) {
		fail(F, "receive %u of WRITE with immediate %u: its buffer was written", ri, oi);
	}
}

static void check_data(struct fam *F)
{
	for (uint32_t i = 0; i < F->nop && !F->failed; i++) {
		struct fam_op *o = &F->op[i];
		struct fam_host *hi = &F->host[F->qp[o->qp].host];
		struct fam_host *ht = &F->host[F->qp[o->dest].host];
		bool ok = op_succeeded(F, o);
		uint64_t word, want;

		if (!o->posted)
			continue;
		switch (o->op) {
		case IBV_WR_RDMA_READ:
			if (ok && memcmp(hi->dst + o->dst_off, ht->src + o->src_off, o->len))
				fail(F, "READ %u (%u bytes): data differs", i, o->len);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			word = ht->atom[o->atom];
			if (o->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
				want = o->init + o->operand;
			else
				want = o->operand == o->init ? o->swap : o->init;
			if (ok) {
				uint64_t res;

				memcpy(&res, hi->dst + o->dst_off, 8);
				if (res != o->init)
					fail(F, "atomic %u returned %llx, not the original %llx", i,
					     (unsigned long long)res, (unsigned long long)o->init);
				if (word != want)
					fail(F, "atomic %u: word is %llx, want %llx (applied %s)",
					     i, (unsigned long long)word, (unsigned long long)want,
					     word == o->init ? "never" : "more than once");
			} else if (word != o->init && word != want) {
				fail(F, "failed atomic %u: word %llx is neither before nor after",
				     i, (unsigned long long)word);
			}
			break;
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			/* UC WRITEs may be lost; those with immediate are checked when received. */
			if (ok && F->type == IBV_QPT_RC &&
			    memcmp(ht->dst + o->dst_off, hi->src + o->src_off, o->len))
				fail(F, "WRITE %u (%u bytes): data differs", i, o->len);
			break;
		default:
			break;
		}
		if (F->failed || !needs_recv(o->op) || o->recv == UINT32_MAX)
			continue;
		/* UD and UC may lose messages; RC delivers each one it completed. */
		if (F->use_srq) {
			continue; /* matched by immediate data below */
		} else if (F->rv[o->recv].ncomp && F->rv[o->recv].wc.wc.status == IBV_WC_SUCCESS &&
			   (F->type == IBV_QPT_RC)) {
			check_recv(F, o, o->recv);
		} else if (ok && F->type == IBV_QPT_RC && !F->qp[o->dest].replaced) {
			fail(F, "%s succeeded but its receive %u has %u completions (%s)",
			     desc(F, i), o->recv, F->rv[o->recv].ncomp,
			     F->rv[o->recv].ncomp ? st(F->rv[o->recv].wc.wc.status) : "-");
		}
	}
}

/*
 * UC, UD and SRQ receives: matched to their message by immediate data. Each message is
 * received at most once (RC: exactly once if it succeeded), intact.
 */
static void check_recv_by_imm(struct fam *F)
{
	uint32_t *seen = calloc(F->nop + 1, sizeof(*seen));

	if (!seen)
		abort();
	for (uint32_t ri = 0; ri < F->nrv && !F->failed; ri++) {
		struct fam_recv *r = &F->rv[ri];
		uint32_t oi;

		if (!r->ncomp || r->wc.wc.status != IBV_WC_SUCCESS)
			continue;
		if (!(r->wc.wc.wc_flags & IBV_WC_WITH_IMM)) {
			fail(F, "receive %u without immediate data", ri);
			break;
		}
		oi = be32toh(r->wc.wc.imm_data) - 1;
		if (oi >= F->nop || !needs_recv(F->op[oi].op)) {
			fail(F, "receive %u: immediate %u names no message", ri, oi + 1);
			break;
		}
		/* UD may deliver a duplicated datagram twice; RC and UC never. */
		if (seen[oi]++ && F->type != IBV_QPT_UD)
			fail(F, "message %u received twice", oi);
		if (F->use_srq) {
			struct fam_qp *dq = &F->qp[F->op[oi].dest];

			if (r->wc.wc.qp_num != dq->qp->core.qpn)
				fail(F, "SRQ receive %u on QP %u, message went to %u", ri,
				     r->wc.wc.qp_num, dq->qp->core.qpn);
		}
		check_recv(F, &F->op[oi], ri);
	}
	for (uint32_t oi = 0; oi < F->nop && !F->failed; oi++) {
		struct fam_op *o = &F->op[oi];

		if (F->type == IBV_QPT_RC && needs_recv(o->op) && op_succeeded(F, o) && !seen[oi])
			fail(F, "message %u succeeded but was never received", oi);
		if (F->type == IBV_QPT_UC && o->op == IBV_WR_RDMA_WRITE_WITH_IMM && seen[oi] &&
		    memcmp(F->host[1 - F->qp[o->qp].host].dst + o->dst_off,
			   F->host[F->qp[o->qp].host].src + o->src_off, o->len))
			fail(F, "UC WRITE with immediate %u completed with wrong data", oi);
	}
	free(seen);
}

/* Every receive either completed once or is still queued; flushes only after an error. */
static void check_recvs(struct fam *F)
{
	for (uint32_t ri = 0; ri < F->nrv && !F->failed; ri++) {
		struct fam_recv *r = &F->rv[ri];

		if (r->ncomp && r->wc.wc.status != IBV_WC_SUCCESS &&
		    r->wc.wc.status != IBV_WC_WR_FLUSH_ERR)
			fail(F, "receive %u completed with %s", ri, st(r->wc.wc.status));
		if (r->ncomp && r->wc.wc.status == IBV_WC_WR_FLUSH_ERR && !may_fail(F))
			fail(F, "receive %u flushed though nothing failed", ri);
	}
	/* A clean run consumes exactly the receives it posted. */
	if (!may_fail(F) && F->type == IBV_QPT_RC) {
		for (uint32_t ri = 0; ri < F->nrv && !F->failed; ri++)
			if (F->rv[ri].posted && F->rv[ri].ncomp != 1)
				fail(F, "receive %u: %u completions", ri, F->rv[ri].ncomp);
	}
}

static void check_guards(struct fam *F)
{
	for (uint32_t h = 0; h < 2 && !F->failed; h++) {
		size_t end = 0;

		for (uint32_t k = 0; k < F->nslot[h]; k++) {
			size_t off = F->slot[h][k].off;

			if (!fill_intact(F->host[h].dst + end, off - end))
				fail(F, "host %u: bytes %zu..%zu outside every buffer changed", h,
				     end, off);
			end = off + F->slot[h][k].len;
		}
		if (!fill_intact(F->host[h].dst + end, F->host[h].dst_len - end))
			fail(F, "host %u: bytes after the last buffer changed", h);
	}
}

/* Dead peer: A's first error came within the time the attributes allow. */
static void check_dead_peer(struct fam *F)
{
	uint64_t T = roce_ack_timeout_ns(F->conn.timeout);
	uint64_t slack = F->down_flight + roce_rnr_timer_ns(F->conn.min_rnr_timer) +
			 (F->wire.rate_mbps ? 10000000 : 0) + 1;

	if (!F->event_done)
		return;
	for (uint32_t q = 0; q < F->nqps && !F->failed; q++) {
		const struct fam_op *first = NULL;
		uint64_t start;

		if (F->qp[q].host)
			continue;
		for (uint32_t i = 0; i < F->nop; i++) {
			const struct fam_op *o = &F->op[i];

			if (o->qp == q && o->posted && o->ncomp &&
			    o->wc.wc.status != IBV_WC_SUCCESS) {
				first = o;
				break;
			}
		}
		if (!first)
			continue;
		if (first->wc.wc.status == IBV_WC_WR_FLUSH_ERR) {
			fail(F, "QP %u: flushed without an error first", q);
			break;
		}
		start = first->time > F->down_time ? first->time : F->down_time;
		if (first->wc.time > start + (F->conn.retry_cnt + 1ull) * T + slack)
			fail(F, "QP %u: %s after %llu ns; retry_cnt %u, timeout %llu ns allow %llu",
			     q, st(first->wc.wc.status),
			     (unsigned long long)(first->wc.time - start), F->conn.retry_cnt,
			     (unsigned long long)T,
			     (unsigned long long)((F->conn.retry_cnt + 1ull) * T + slack));
		if (first->wc.time < F->down_time)
			fail(F, "QP %u: %s before the peer went down", q, st(first->wc.wc.status));
		/* Nothing answers after the peer went: each timeout spends a retry. */
		if (F->qp[q].qp->core.counters.timeouts - F->timeouts_at_down[q] >
		    F->conn.retry_cnt + 1u)
			fail(F, "QP %u: %llu ACK timeouts after the peer went down, retry_cnt %u",
			     q,
			     (unsigned long long)(F->qp[q].qp->core.counters.timeouts -
						  F->timeouts_at_down[q]),
			     F->conn.retry_cnt);
	}
}

/* RNR exhaustion: the message without a receive is the one that fails, as often as allowed. */
static void check_rnr_exhaust(struct fam *F)
{
	const struct fam_op *victim = NULL;
	const struct fam_op *first = NULL;

	for (uint32_t i = 0; i < F->nop; i++)
		if (F->op[i].recv != UINT32_MAX && F->rv[F->op[i].recv].time == UINT64_MAX)
			victim = &F->op[i];
	for (uint32_t i = 0; i < F->nop && !first; i++)
		if (F->op[i].ncomp && F->op[i].wc.wc.status != IBV_WC_SUCCESS)
			first = &F->op[i];
	if (!victim)
		return;
	if (first != victim) {
		fail(F, "RNR exhaustion: WR %zd failed first, not WR %zd (the one without receive)",
		     first ? first - F->op : -1, victim - F->op);
		return;
	}
	if (victim->wc.wc.status != IBV_WC_RNR_RETRY_EXC_ERR)
		fail(F, "RNR exhaustion: %s", st(victim->wc.wc.status));
	/* On a clean wire each try gets exactly one RNR NAK: rnr_retry + 1 of them. */
	if (!F->wire.loss_ppm && !F->wire.dup_ppm && !F->wire.corrupt_ppm &&
	    F->qp[F->nqp].qp->core.counters.rnr_naks_sent != F->conn.rnr_retry + 1u)
		fail(F, "RNR exhaustion: %llu RNR NAKs for rnr_retry %u",
		     (unsigned long long)F->qp[F->nqp].qp->core.counters.rnr_naks_sent,
		     F->conn.rnr_retry);
}

/* After destroy, nothing completes; a destroyed QP takes no packets. */
static void check_destroy(struct fam *F)
{
	uint32_t n[4];

	for (uint32_t c = 0; c < 4; c++)
		n[c] = F->cq[c]->n;
	for (uint32_t q = 0; q < F->nqps; q++)
		sim_qp_destroy(F->qp[q].qp);
	sim_run(F->s, F->s->now + 1000000000ull);
	for (uint32_t c = 0; c < 4; c++)
		if (F->cq[c]->n != n[c])
			fail(F, "completions after every QP was destroyed");
	for (uint32_t q = 0; q < F->nqps; q++)
		if (F->qp[q].qp->late_completions)
			fail(F, "QP %u completed %u WRs after it was destroyed", q,
			     F->qp[q].qp->late_completions);
}

static void check(struct fam *F)
{
	gather(F);
	if (!F->failed)
		check_send_order(F);
	if (!F->failed)
		check_data(F);
	if (!F->failed && (F->type != IBV_QPT_RC || F->use_srq))
		check_recv_by_imm(F);
	if (!F->failed)
		check_recvs(F);
	if (!F->failed)
		check_guards(F);
	if (!F->failed && F->event == EV_DEAD)
		check_dead_peer(F);
	if (!F->failed && F->rnr_exhaust)
		check_rnr_exhaust(F);
	for (uint32_t i = 0; i < F->nop && !F->failed; i++) {
		struct fam_op *o = &F->op[i];

		if (!o->later)
			continue;
		/* EV_REPLACE: the new connection works. EV_RESET: A takes nothing of B's. */
		if (F->event == EV_REPLACE && o->ncomp && o->wc.wc.status != IBV_WC_SUCCESS)
			fail(F, "%s on the new connection: %s", desc(F, i), st(o->wc.wc.status));
		if (F->event == EV_RESET && (o->ncomp != 1 || o->wc.wc.status == IBV_WC_SUCCESS))
			fail(F, "%s from the reset peer to a QP expecting other PSNs: %s",
			     desc(F, i), o->ncomp ? st(o->wc.wc.status) : "retired as a success");
	}
	if (!F->failed)
		check_destroy(F);
}

static void cleanup(struct fam *F)
{
	if (F->s)
		sim_free(F->s);
	for (uint32_t i = 0; i < 4; i++)
		sim_cq_free(F->cq[i]);
	sim_srq_free(F->srq);
	for (uint32_t h = 0; h < 2; h++) {
		free(F->host[h].src);
		free(F->host[h].dst);
		free(F->host[h].atom);
		free(F->slot[h]);
	}
	free(F->op);
	free(F->rv);
}

bool sim_family_run(unsigned f, uint64_t seed, char *why, size_t whylen,
		    struct sim_family_stats *stats)
{
	struct fam *F = calloc(1, sizeof(*F));
	bool ok;

	if (!F)
		abort();
	F->id = (enum fam_id)f;
	F->seed = seed;
	/* Hashed, so that neighbouring seeds are unrelated runs. */
	F->rng.s = seed;
	F->rng.s = sim_rand(&F->rng) ^ (f * 0xD1B54A32D192ED03ull);
	F->why = why;
	F->whylen = whylen;
	if (whylen)
		why[0] = 0;
	knobs(F);
	F->s = sim_new(sim_rand(&F->rng), &F->wire);
	F->s->max_steps = FAM_MAX_STEPS;
	/* Half the seeds receive in batches (sim.h); from the seed alone, so the rest is as it was.
	 */
	F->s->batch = (seed * 0x9E3779B97F4A7C15ull) >> 63;
	if (F->s->trace)
		fprintf(F->s->trace,
			"%s seed %llu: %s, %u QP pairs%s%s, MTU %u, up to %u bytes, %u WRs; "
			"timeout %u "
			"retry_cnt %u rnr_retry %u min_rnr_timer %u max_rd_atomic %u; wire delay "
			"%llu "
			"jitter %llu rate %u Mb/s, ppm loss %u dup %u corrupt %u reorder %u; event "
			"%d%s\n",
			sim_families[f].name, (unsigned long long)seed,
			F->type == IBV_QPT_RC   ? "RC"
			: F->type == IBV_QPT_UC ? "UC"
						: "UD",
			F->nqp, F->both_ways ? " both ways" : "", F->use_srq ? " on an SRQ" : "",
			F->mtu, F->max_len, F->nops, F->conn.timeout, F->conn.retry_cnt,
			F->conn.rnr_retry, F->conn.min_rnr_timer, F->conn.max_rd_atomic,
			(unsigned long long)F->wire.delay_ns, (unsigned long long)F->wire.jitter_ns,
			F->wire.rate_mbps, F->wire.loss_ppm, F->wire.dup_ppm, F->wire.corrupt_ppm,
			F->wire.reorder_ppm, F->event, F->s->batch ? "; batched receive" : "");
	F->host[0].h = sim_host_new(F->s);
	F->host[1].h = sim_host_new(F->s);
	make_qps(F);
	if (F->type == IBV_QPT_UD) {
		F->ah[0] = sim_ah_new(F->host[1].h, F->host[0].h);
		F->ah[1] = sim_ah_new(F->host[0].h, F->host[1].h);
	}
	F->host[0].src_len = F->host[1].src_len = F->max_len + 4096;
	make_workload(F);
	if (F->event == EV_REPLACE) {
		/* Room for the second workload's buffers: its ops are made later. */
		for (uint32_t h = 0; h < 2; h++)
			F->host[h].dst_used += 10 * ((size_t)F->max_len + F->max_len + 64);
		F->host[1].natom += 10;
	}
	make_memory(F);
	connect_qps(F);
	drive(F);
	if (!F->failed)
		check(F);
	if (stats) {
		memset(stats, 0, sizeof(*stats));
		stats->ops = F->nop;
		for (uint32_t i = 0; i < F->nop; i++) {
			stats->bytes += F->op[i].len;
			stats->errors += F->op[i].ncomp &&
					 F->op[i].wc.wc.status != IBV_WC_SUCCESS &&
					 F->op[i].wc.wc.status != IBV_WC_WR_FLUSH_ERR;
		}
		stats->packets = F->s->stats.sent;
		stats->lost = F->s->stats.lost + F->s->stats.bad_icrc;
		for (uint32_t q = 0; q < F->nqps; q++)
			stats->retransmits += F->qp[q].qp->core.counters.retransmits;
		stats->virtual_ns = F->s->now;
	}
	ok = !F->failed;
	cleanup(F);
	free(F);
	return ok;
}
