/* SPDX-License-Identifier: MIT */
/* verbs-shim completion channels and completion queues. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"

static struct ibv_context *ctx;
static struct ibv_comp_channel *ch;

static void setup(void)
{
	ctx = open_lo();
	ch = ibv_create_comp_channel(ctx);
	cr_assert_not_null(ch);
}

static void teardown(void)
{
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
	ibv_close_device(ctx);
}

TestSuite(shim_cq, .init = setup, .fini = teardown, .timeout = 20);

static int readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0);
}

Test(shim_cq, create_poll_empty_and_arm)
{
	int tag;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, &tag, ch, 0);
	struct ibv_wc wc;

	cr_assert_not_null(cq);
	cr_assert_eq(cq->cqe, 16);
	cr_assert_eq(cq->cq_context, &tag);
	cr_assert_eq(cq->channel, ch);
	cr_assert_eq(ibv_poll_cq(cq, 1, &wc), 0);
	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(ibv_req_notify_cq(cq, 1), 0);
	cr_assert_eq(readable(ch->fd), 0, "no completion, no event");
	/* The channel is in use while the CQ reports to it. */
	cr_assert_eq(ibv_destroy_comp_channel(ch), EBUSY);
	cr_assert_eq(ibv_resize_cq(cq, 64), 0);
	cr_assert_eq(cq->cqe, 64);
	cr_assert_eq(ibv_resize_cq(cq, 0), EINVAL);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

Test(shim_cq, bad_sizes)
{
	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, 0, NULL, NULL, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, 1 << 22, NULL, NULL, 0), "above max_cqe");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(ibv_create_cq(ctx, 4, NULL, NULL, ctx->num_comp_vectors));
	cr_assert_eq(errno, EINVAL, "completion vector out of range");
}

Test(shim_cq, extended_cq)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = 8,
		.channel = ch,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_poll_cq_attr pattr = {0};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &attr);

	cr_assert_not_null(cq);
	cr_assert_not_null(cq->start_poll);
	cr_assert_not_null(cq->next_poll);
	cr_assert_not_null(cq->end_poll);
	cr_assert_not_null(cq->read_opcode);
	cr_assert_not_null(cq->read_completion_ts);
	cr_assert_not_null(cq->read_cvlan);
	cr_assert_not_null(cq->read_flow_tag);
	cr_assert_not_null(cq->read_tm_info);
	cr_assert_not_null(cq->read_completion_wallclock_ns);
	cr_assert_eq(ibv_start_poll(cq, &pattr), ENOENT);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	attr.wc_flags = IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(ctx, &attr));
	cr_assert_eq(errno, EOPNOTSUPP);
}

static void *wait_event(void *arg)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	ibv_get_cq_event(arg, &cq, &cq_ctx);
	return NULL;
}

Test(shim_cq, blocked_reader_is_cancellable)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, ch, 0);
	struct timespec pause = {0, 50 * 1000 * 1000};
	pthread_t t;
	void *ret;

	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, wait_event, ch), 0);
	nanosleep(&pause, NULL);
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

Test(shim_cq, nonblocking_channel)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(ch, &cq, &cq_ctx), -1);
	cr_assert_eq(errno, EAGAIN);
}
