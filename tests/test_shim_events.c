/* SPDX-License-Identifier: MIT */
/*
 * Completion events with threads blocked in ibv_get_cq_event, which receive the datagrams
 * themselves while they wait (ARCHITECTURE.md "Waiting for a completion event"): two threads
 * on two channels at once, one channel shared by two CQs, a CQ shared by two QPs, and a signal
 * arriving during the wait (SA_RESTART or not, as read() on the kernel's channel).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"

#define MESSAGES 300 /* per QP */

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static char buf[4096];
static struct ibv_mr *mr;

static void setup(void)
{
	ctx = open_lo();
	pd = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert(pd && mr);
}

TestSuite(shim_events, .init = setup, .timeout = 60);

/* An RC QP on @cq connected to itself, with its four receives posted. */
static struct ibv_qp *looped_qp(struct ibv_cq *cq)
{
	struct ibv_qp *qp = lo_rc_qp(pd, cq);

	cr_assert_not_null(qp);
	cr_assert_eq(lo_connect(ctx, qp, qp->qp_num, 0), 0);
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

		cr_assert_eq(ibv_post_recv(qp, &wr, &bad), 0);
	}
	return qp;
}

static void post_recv(struct ibv_qp *qp)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	cr_assert_eq(ibv_post_recv(qp, &wr, &bad), 0);
}

static void post_send(struct ibv_qp *qp)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
}

/* A waiting thread: the CQs on its channel, the QPs on them, and what it has counted. */
struct waiter {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2]; /* qp[i] on cq[i], or both on cq[0] */
	int ncq, nqp;
	atomic_int recvs[2], sends, errors;
	int want; /* receives in all */
	pthread_t thread;
};

static int total_recvs(struct waiter *w)
{
	return atomic_load(&w->recvs[0]) + atomic_load(&w->recvs[1]);
}

/* Take every completion of @cq, reposting each receive on the QP it came from. */
static void drain(struct waiter *w, struct ibv_cq *cq)
{
	struct ibv_wc wc[8];
	int n;

	while ((n = ibv_poll_cq(cq, 8, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			int q = w->qp[1] && wc[i].qp_num == w->qp[1]->qp_num;

			if (wc[i].status != IBV_WC_SUCCESS)
				atomic_fetch_add(&w->errors, 1);
			else if (wc[i].opcode == IBV_WC_RECV) {
				atomic_fetch_add(&w->recvs[q], 1);
				post_recv(w->qp[q]);
			} else {
				atomic_fetch_add(&w->sends, 1);
			}
		}
	}
	if (n < 0)
		atomic_fetch_add(&w->errors, 1);
}

/* The usual event loop (rping's, perftest's): arm, drain, sleep in ibv_get_cq_event. */
static void *wait_loop(void *arg)
{
	struct waiter *w = arg;

	for (int i = 0; i < w->ncq; i++)
		cr_assert_eq(ibv_req_notify_cq(w->cq[i], 0), 0);
	while (total_recvs(w) < w->want) {
		struct ibv_cq *cq;
		void *cq_ctx;

		for (int i = 0; i < w->ncq; i++)
			drain(w, w->cq[i]);
		if (total_recvs(w) >= w->want)
			break;
		if (ibv_get_cq_event(w->ch, &cq, &cq_ctx)) {
			atomic_fetch_add(&w->errors, 1);
			break;
		}
		ibv_ack_cq_events(cq, 1);
		if (cq_ctx != w)
			atomic_fetch_add(&w->errors, 1);
		cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	}
	return NULL;
}

static void start(struct waiter *w, int ncq, int nqp)
{
	w->ch = ibv_create_comp_channel(ctx);
	cr_assert_not_null(w->ch);
	w->ncq = ncq;
	w->nqp = nqp;
	for (int i = 0; i < ncq; i++) {
		w->cq[i] = ibv_create_cq(ctx, 64, w, w->ch, 0);
		cr_assert_not_null(w->cq[i]);
	}
	for (int i = 0; i < nqp; i++)
		w->qp[i] = looped_qp(w->cq[ncq == 2 ? i : 0]);
	w->want = nqp * MESSAGES;
	cr_assert_eq(pthread_create(&w->thread, NULL, wait_loop, w), 0);
}

static void finish(struct waiter *w)
{
	cr_assert_eq(pthread_join(w->thread, NULL), 0);
	cr_assert_eq(atomic_load(&w->errors), 0);
	for (int i = 0; i < w->nqp; i++) {
		cr_assert_eq(atomic_load(&w->recvs[i]), MESSAGES, "QP %d: %d of %d", i,
			     atomic_load(&w->recvs[i]), MESSAGES);
		cr_assert_eq(ibv_destroy_qp(w->qp[i]), 0);
	}
	for (int i = 0; i < w->ncq; i++)
		cr_assert_eq(ibv_destroy_cq(w->cq[i]), 0);
	cr_assert_eq(ibv_destroy_comp_channel(w->ch), 0);
}

/*
 * The main thread sends on every QP in turn, one message each, and waits (10 s at most) until
 * each has been received before the next round: every message must wake its waiter.
 */
static void send_rounds(struct waiter **ws, int nw)
{
	time_t end = time(NULL) + 10;

	for (int round = 1; round <= MESSAGES; round++) {
		for (int i = 0; i < nw; i++)
			for (int q = 0; q < ws[i]->nqp; q++)
				post_send(ws[i]->qp[q]);
		for (int i = 0; i < nw; i++)
			for (int q = 0; q < ws[i]->nqp; q++)
				while (atomic_load(&ws[i]->recvs[q]) < round) {
					cr_assert_lt(time(NULL), end,
						     "waiter %d, QP %d: message %d not received "
						     "within 10 s",
						     i, q, round);
					usleep(50);
				}
	}
}

Test(shim_events, two_threads_on_two_channels)
{
	struct waiter a = {0}, b = {0};
	struct waiter *ws[] = {&a, &b};

	start(&a, 1, 1);
	start(&b, 1, 1);
	send_rounds(ws, 2);
	finish(&a);
	finish(&b);
}

Test(shim_events, one_channel_for_two_cqs)
{
	struct waiter w = {0};
	struct waiter *ws[] = {&w};

	start(&w, 2, 2);
	send_rounds(ws, 1);
	finish(&w);
}

Test(shim_events, one_cq_for_two_qps)
{
	struct waiter w = {0};
	struct waiter *ws[] = {&w};

	start(&w, 1, 2);
	send_rounds(ws, 1);
	finish(&w);
}

static void on_signal(int sig)
{
	(void)sig;
}

struct blocked {
	struct ibv_comp_channel *ch;
	int ret, err;
	atomic_bool done;
};

static void *get_one(void *arg)
{
	struct blocked *b = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	b->ret = ibv_get_cq_event(b->ch, &cq, &cq_ctx);
	b->err = errno;
	if (!b->ret)
		ibv_ack_cq_events(cq, 1);
	atomic_store(&b->done, true);
	return NULL;
}

/*
 * A signal to a thread blocked in ibv_get_cq_event: with SA_RESTART on every handler, it waits
 * on and returns the event that comes later (perftest -D's SIGALRM is installed so); without,
 * it fails with EINTR, as read() on the kernel's channel does.
 */
static void signal_during_wait(int flags)
{
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = flags};
	struct blocked b = {0};
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	pthread_t t;

	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	b.ch = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, b.ch, 0);
	cr_assert(b.ch && cq);
	qp = looped_qp(cq);
	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, get_one, &b), 0);
	usleep(100000);
	cr_assert_eq(pthread_kill(t, SIGUSR1), 0);
	usleep(100000);
	if (flags & SA_RESTART) {
		cr_assert_not(atomic_load(&b.done), "the signal ended the wait");
		post_send(qp);
	} else {
		/* Again while it waits: a thread slow to start may have had it before its wait. */
		for (int i = 0; i < 50 && !atomic_load(&b.done); i++) {
			cr_assert_eq(pthread_kill(t, SIGUSR1), 0);
			usleep(100000);
		}
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	if (flags & SA_RESTART) {
		cr_assert_eq(b.ret, 0, "ibv_get_cq_event: %s", strerror(b.err));
	} else {
		cr_assert_eq(b.ret, -1);
		cr_assert_eq(b.err, EINTR);
	}
	signal(SIGUSR1, SIG_DFL);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(b.ch), 0);
}

Test(shim_events, signal_with_sa_restart_waits_on)
{
	signal_during_wait(SA_RESTART);
}

Test(shim_events, signal_without_sa_restart_is_eintr)
{
	signal_during_wait(0);
}
