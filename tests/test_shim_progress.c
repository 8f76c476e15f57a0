/* SPDX-License-Identifier: MIT */
/*
 * Progress without the application: an RDMA READ from a peer process that sleeps, never calling
 * into verbs, completes -- the peer's progress thread answers it, as a peer's RNIC would. And
 * progress after an application thread that was busy polling (and so receiving for the process)
 * is cancelled.
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
