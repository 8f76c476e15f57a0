// SPDX-License-Identifier: MIT
/* uroce-sample's work requests (ops.h): post one, wait for its completion. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/samples/ops.h"

/* Longer than any retry of the samples (an RNR wait, a READ asked again). */
#define WC_WAIT_NS 10000000000ull

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The next completion, which must be successful and of opcode @want. */
static int wait_wc(struct sample_conn *c, enum ibv_wc_opcode want, struct ibv_wc *wc)
{
	const struct timespec nap = {.tv_nsec = 100000};
	uint64_t deadline = now_ns() + WC_WAIT_NS;
	char msg[128];
	int n;

	while ((n = ibv_poll_cq(c->cq, 1, wc)) == 0 && now_ns() < deadline)
		nanosleep(&nap, NULL);
	if (n < 0)
		return sample_fail("ibv_poll_cq", "failed");
	if (n == 0)
		return sample_fail("ibv_poll_cq", "no completion within 10 s");
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != want) {
		snprintf(msg, sizeof(msg), "opcode %d status %s, expected opcode %d", wc->opcode,
			 ibv_wc_status_str(wc->status), want);
		return sample_fail("completion", msg);
	}
	return 0;
}

int sample_post_recv(struct sample_conn *c, size_t off, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + off), .length = (uint32_t)len, .lkey = c->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(c->qp, &wr, &bad) ? sample_fail("ibv_post_recv", "refused") : 0;
}

int sample_wait_recv(struct sample_conn *c, uint32_t *len)
{
	struct ibv_wc wc;

	if (wait_wc(c, IBV_WC_RECV, &wc))
		return -1;
	*len = wc.byte_len;
	return 0;
}

/* Post @wr over c->buf[off, off + len), signalled, and wait for its completion @want. */
static int post(struct sample_conn *c, struct ibv_send_wr *wr, size_t off, size_t len,
		enum ibv_wc_opcode want)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->buf + off), .length = (uint32_t)len, .lkey = c->mr->lkey};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->sg_list = &sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, wr, &bad))
		return sample_fail("ibv_post_send", "refused");
	return wait_wc(c, want, &wc);
}

int sample_send(struct sample_conn *c, size_t off, size_t len)
{
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND};

	return post(c, &wr, off, len, IBV_WC_SEND);
}

int sample_write(struct sample_conn *c, size_t off, size_t len, uint64_t roff)
{
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE};

	wr.wr.rdma.remote_addr = c->peer.addr + roff;
	wr.wr.rdma.rkey = c->peer.rkey;
	return post(c, &wr, off, len, IBV_WC_RDMA_WRITE);
}

int sample_read(struct sample_conn *c, size_t off, size_t len, uint64_t roff)
{
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_READ};

	wr.wr.rdma.remote_addr = c->peer.addr + roff;
	wr.wr.rdma.rkey = c->peer.rkey;
	return post(c, &wr, off, len, IBV_WC_RDMA_READ);
}

static int atomic(struct sample_conn *c, enum ibv_wr_opcode op, size_t off, uint64_t roff,
		  uint64_t operand, uint64_t swap, uint64_t *orig)
{
	struct ibv_send_wr wr = {.opcode = op};

	wr.wr.atomic.remote_addr = c->peer.addr + roff;
	wr.wr.atomic.rkey = c->peer.rkey;
	wr.wr.atomic.compare_add = operand;
	wr.wr.atomic.swap = swap;
	if (post(c, &wr, off, 8,
		 op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD))
		return -1;
	memcpy(orig, c->buf + off, 8);
	return 0;
}

int sample_cas(struct sample_conn *c, size_t off, uint64_t roff, uint64_t compare, uint64_t swap,
	       uint64_t *orig)
{
	return atomic(c, IBV_WR_ATOMIC_CMP_AND_SWP, off, roff, compare, swap, orig);
}

int sample_faa(struct sample_conn *c, size_t off, uint64_t roff, uint64_t add, uint64_t *orig)
{
	return atomic(c, IBV_WR_ATOMIC_FETCH_AND_ADD, off, roff, add, 0, orig);
}
