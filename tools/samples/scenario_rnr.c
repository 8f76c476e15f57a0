// SPDX-License-Identifier: MIT
/*
 * Scenario "rnr" (scenarios.h): a SEND meets a responder with no receive posted. The server
 * brings its own QP up with an RNR timer of its choosing (rdma_init_qp_attr, as rping -q does)
 * and posts its receive only once the QP has sent an RNR NAK (uroce's statistics tell), so the
 * capture holds one (another only if the server is held up past the timer): the client's SEND,
 * the RNR NAK with the timer, and the same SEND (same PSN) again after the timer, now ACKed
 * (PROTOCOL.md §3.4).
 */
#include <string.h>
#include <time.h>
#include <uroce/uroce.h>

#include "tools/samples/ops.h"
#include "tools/samples/scenarios.h"

/* 81.92 ms (PROTOCOL.md §3.5): ample time for the server to post its receive meanwhile. */
#define RNR_TIMER_CODE 26
#define RNR_WAIT_MS    5000

enum { BUF_LEN = 64 };

static const char msg[] = "an early SEND";

static uint64_t rnr_naks_sent(void)
{
	struct uroce_stats st;

	return uroce_get_stats(&st, sizeof(st)) ? 0 : st.rnr_naks_sent;
}

/* Wait until this process has sent more than @before RNR NAKs. */
static int await_rnr_nak(uint64_t before)
{
	const struct timespec ms = {.tv_nsec = 1000000};

	for (int i = 0; i < RNR_WAIT_MS; i++) {
		if (rnr_naks_sent() > before)
			return 0;
		nanosleep(&ms, NULL);
	}
	return sample_fail("rnr", "the client's SEND drew no RNR NAK within 5 s");
}

/* The server's QP, taken to RTS with rdma_cm's attributes but the RNR timer. */
static int own_qp(struct sample_conn *c)
{
	static const enum ibv_qp_state states[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};

	c->qp = ibv_create_qp(c->pd, &qa);
	if (!c->qp)
		return sample_fail("ibv_create_qp", "refused");
	c->own_qp = true;
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_attr a = {.qp_state = states[i]};
		int mask;

		if (rdma_init_qp_attr(c->id, &a, &mask))
			return sample_fail("rdma_init_qp_attr", "refused");
		if (states[i] == IBV_QPS_RTR) {
			a.min_rnr_timer = RNR_TIMER_CODE;
			mask |= IBV_QP_MIN_RNR_TIMER;
		}
		if (ibv_modify_qp(c->qp, &a, mask))
			return sample_fail("ibv_modify_qp", "refused");
	}
	return 0;
}

int rnr_server(struct sample_conn *c, const char *addr, const char *port)
{
	uint64_t before = rnr_naks_sent();
	uint32_t len;

	if (sample_listen(c, addr, port) || sample_setup_mem(c, BUF_LEN) || own_qp(c) ||
	    sample_accept(c) || await_rnr_nak(before) || sample_post_recv(c, 0, BUF_LEN) ||
	    sample_wait_recv(c, &len))
		return -1;
	if (len != sizeof(msg) || memcmp(c->buf, msg, len))
		return sample_fail("rnr", "the retried SEND brought another message");
	return sample_await_disconnect(c);
}

int rnr_client(struct sample_conn *c, const char *addr, const char *port)
{
	if (sample_resolve(c, addr, port) || sample_setup(c, BUF_LEN) || sample_connect(c))
		return -1;
	memcpy(c->buf, msg, sizeof(msg));
	/* Completes once the retry after the RNR NAK is ACKed (rnr_retry 7: forever). */
	if (sample_send(c, 0, sizeof(msg)))
		return -1;
	return sample_disconnect(c);
}
