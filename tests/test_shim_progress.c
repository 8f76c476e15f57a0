/* SPDX-License-Identifier: MIT */
/*
 * Progress without the application: an RDMA READ from a peer process that sleeps, never calling
 * into verbs, completes -- the peer's progress thread answers it, as a peer's RNIC would. And
 * progress after an application thread that was busy polling (and so receiving for the process)
 * is cancelled. While a thread busy-polls, a lone post leaves from ibv_post_send and a burst
 * waits for the next poll.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"
#include "uroce/uroce.h"

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[8192];
};

/* What the peer tells the reader: its QP, and where its buffer is. */
struct card {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

static void make(struct side *s)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};

	s->ctx = open_lo();
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0);
	a.send_cq = a.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &a);
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE);
	cr_assert(s->pd && s->cq && s->qp && s->mr);
}

Test(shim_progress, read_from_a_sleeping_peer, .timeout = 30)
{
	int to_reader[2], to_peer[2], status;
	struct side me;
	struct card card;
	uint32_t my_qpn;
	pid_t peer;

	cr_assert_eq(pipe(to_reader), 0);
	cr_assert_eq(pipe(to_peer), 0);
	peer = fork();
	cr_assert_geq(peer, 0);
	if (peer == 0) {
		static struct side s;

		make(&s);
		for (size_t i = 0; i < sizeof(s.buf); i++)
			s.buf[i] = (char)(i * 7);
		card = (struct card){s.qp->qp_num, s.mr->rkey, (uintptr_t)s.buf};
		if (write(to_reader[1], &card, sizeof(card)) != sizeof(card) ||
		    read(to_peer[0], &my_qpn, sizeof(my_qpn)) != sizeof(my_qpn) ||
		    lo_connect(s.ctx, s.qp, my_qpn, IBV_ACCESS_REMOTE_READ))
			_exit(2);
		/* The application sleeps: nothing here calls into verbs while the READ is served.
		 */
		sleep(3);
		_exit(0);
	}
	make(&me);
	cr_assert_eq(read(to_reader[0], &card, sizeof(card)), sizeof(card));
	my_qpn = me.qp->qp_num;
	cr_assert_eq(lo_connect(me.ctx, me.qp, card.qpn, IBV_ACCESS_REMOTE_READ), 0);
	cr_assert_eq(write(to_peer[1], &my_qpn, sizeof(my_qpn)), sizeof(my_qpn));
	usleep(200000); /* the peer's QP reaches RTR */

	struct ibv_sge sge = {.addr = (uintptr_t)me.buf, .length = 8192, .lkey = me.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = card.addr, .rkey = card.rkey}},
			   *bad;
	struct ibv_wc wc;
	struct timespec t0, t;
	int n;

	cr_assert_eq(ibv_post_send(me.qp, &wr, &bad), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(me.cq, 1, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (n == 0 && t.tv_sec - t0.tv_sec < 2);
	cr_assert_eq(n, 1, "the READ did not complete while the peer slept");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	for (size_t i = 0; i < sizeof(me.buf); i++)
		cr_assert_eq(me.buf[i], (char)(i * 7), "byte %zu", i);
	cr_assert_eq(waitpid(peer, &status, 0), peer);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "peer status %#x", status);
}

static void *poll_until_cancelled(void *cq)
{
	struct ibv_wc wc;

	for (unsigned int i = 1;; i++) {
		ibv_poll_cq(cq, 1, &wc);
		/* The program's own cancellation point, now and then: a cancellation point inside
		 * ibv_poll_cq would almost always come first. */
		if (i % 1024 == 0)
			pthread_testcancel();
	}
	return NULL;
}

/*
 * A thread that polls an empty CQ long enough is handed the sockets and receives for the
 * process. Cancelled (its cancellation point is in its own loop: ibv_poll_cq is none), it must
 * not take the receive lock with it: afterwards the process still receives, and a WRITE between
 * two of its QPs completes.
 */
Test(shim_progress, cancelled_polling_thread_leaves_receive_working, .timeout = 30)
{
	static struct side a, b;
	struct timespec pause = {0, 100 * 1000 * 1000}, t0, t;
	struct ibv_wc wc;
	pthread_t poller;
	int n;

	make(&a);
	make(&b);
	cr_assert_eq(lo_connect(a.ctx, a.qp, b.qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(lo_connect(b.ctx, b.qp, a.qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(pthread_create(&poller, NULL, poll_until_cancelled, a.cq), 0);
	nanosleep(&pause, NULL); /* thousands of empty polls: the sockets are the poller's */
	cr_assert_eq(pthread_cancel(poller), 0);
	cr_assert_eq(pthread_join(poller, NULL), 0);

	memset(b.buf, 0x5a, 4096);
	struct ibv_sge sge = {.addr = (uintptr_t)b.buf, .length = 4096, .lkey = b.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 9,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = (uintptr_t)a.buf, .rkey = a.mr->rkey}},
			   *bad;

	cr_assert_eq(ibv_post_send(b.qp, &wr, &bad), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(b.cq, 1, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (n == 0 && t.tv_sec - t0.tv_sec < 3);
	cr_assert_eq(n, 1, "the WRITE did not complete after the polling thread was cancelled");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(a.buf[4095], 0x5a);
}

static uint64_t tx_packets(void)
{
	struct uroce_stats st;

	cr_assert_eq(uroce_get_stats(&st, sizeof(st)), 0);
	return st.tx_packets;
}

/* Poll @cq until @n completions, all successful, came (at most 3 s). */
static void reap(struct ibv_cq *cq, int n)
{
	struct timespec t0, t;
	struct ibv_wc wc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int got = 0; got < n;) {
		int k = ibv_poll_cq(cq, 1, &wc);

		cr_assert_geq(k, 0);
		if (k)
			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		got += k;
		clock_gettime(CLOCK_MONOTONIC, &t);
		cr_assert_lt(t.tv_sec - t0.tv_sec, 3, "%d of %d completions", got, n);
	}
}

/*
 * While this thread busy-polls (it has the sockets), a post to a QP with nothing else on its
 * send queue leaves from ibv_post_send (engine_held.c, POST_GAP_NS), and the posts of a burst
 * behind it are held for the next poll, which sends them. A descheduling past the idle window gives
 * the sockets back to the progress thread, and then posts leave at once: one attempt in several
 * must show both.
 */
Test(shim_progress, lone_post_leaves_at_once_and_a_burst_waits_for_the_poll, .timeout = 30)
{
	static struct side a, b;
	const long poll_ns = 20 * 1000 * 1000;
	struct timespec t0, t;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	bool shown = false;

	make(&a);
	make(&b);
	cr_assert_eq(lo_connect(a.ctx, a.qp, b.qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(lo_connect(b.ctx, b.qp, a.qp->qp_num, IBV_ACCESS_REMOTE_WRITE), 0);
	sge = (struct ibv_sge){.addr = (uintptr_t)b.buf, .length = 64, .lkey = b.mr->lkey};
	wr = (struct ibv_send_wr){.sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = {.remote_addr = (uintptr_t)a.buf, .rkey = a.mr->rkey}};
	for (int attempt = 0; attempt < 20 && !shown; attempt++) {
		uint64_t before, lone, burst;

		/* Thousands of empty polls: the sockets are this thread's. */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			cr_assert_eq(ibv_poll_cq(b.cq, 1, &wc), 0);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < poll_ns);
		before = tx_packets();
		cr_assert_eq(ibv_post_send(b.qp, &wr, &bad), 0);
		lone = tx_packets();
		for (int i = 0; i < 3; i++)
			cr_assert_eq(ibv_post_send(b.qp, &wr, &bad), 0);
		burst = tx_packets();
		cr_assert_geq(lone, before);
		shown = lone == before + 1 && burst == lone;
		reap(b.cq, 4);
		cr_assert_geq(tx_packets(), lone + 3, "the held posts left at the poll");
	}
	cr_assert(shown, "no attempt saw the lone post sent at once and the burst held");
}
