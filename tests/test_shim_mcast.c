/* SPDX-License-Identifier: MIT */
/*
 * UD multicast on one host: two member processes and a sender process with a member QP of its
 * own. Every datagram sent to the group reaches each member once -- in other processes through
 * the rendezvous, in the sender's process directly -- but not the QP that sent it, which is a
 * member too; a detached QP gets nothing more. A send that has completed has reached the other
 * processes' members even if its process exits at once. On loopback, where no IP multicast route
 * exists.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/lo.h"

#define QKEY     0x11111111u
#define MESSAGES 10
#define MSG_LEN  64
#define GRH_LEN  40

struct member {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[2 * MESSAGES][GRH_LEN + MSG_LEN];
};

/* 239.1.2.3 as an IPv4-mapped GID. */
static union ibv_gid group(void)
{
	union ibv_gid g = {.raw = {[10] = 0xff, [11] = 0xff, [12] = 239, 1, 2, 3}};

	return g;
}

static void make(struct member *m, struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 16,
			.max_recv_wr = 2 * MESSAGES,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	m->ctx = ctx;
	m->pd = pd;
	m->cq = ibv_create_cq(ctx, 4 * MESSAGES, NULL, NULL, 0);
	a.send_cq = a.recv_cq = m->cq;
	m->qp = ibv_create_qp(pd, &a);
	m->mr = ibv_reg_mr(pd, m->buf, sizeof(m->buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert(m->cq && m->qp && m->mr);
	cr_assert_eq(ibv_modify_qp(m->qp, &attr,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
		     0);
	attr.qp_state = IBV_QPS_RTR;
	cr_assert_eq(ibv_modify_qp(m->qp, &attr, IBV_QP_STATE), 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	cr_assert_eq(ibv_modify_qp(m->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	for (int i = 0; i < 2 * MESSAGES; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)m->buf[i],
				      .length = GRH_LEN + MSG_LEN,
				      .lkey = m->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		cr_assert_eq(ibv_post_recv(m->qp, &wr, &bad), 0);
	}
	union ibv_gid g = group();

	cr_assert_eq(ibv_attach_mcast(m->qp, &g, 0), 0);
}

/* Receive for @ms milliseconds; returns the datagrams, each checked against the sender's. */
static int receive(struct member *m, int ms, uint32_t sender_qpn)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct ibv_wc wc;

		if (ibv_poll_cq(m->cq, 1, &wc) != 1) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.byte_len != GRH_LEN + MSG_LEN || wc.src_qp != sender_qpn ||
		    !(wc.wc_flags & IBV_WC_GRH))
			return -1;
		for (int k = 0; k < MSG_LEN; k++)
			if (m->buf[wc.wr_id][GRH_LEN + k] != (char)(k + got))
				return -2;
		got++;
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return got;
}

static void send_group(struct member *s, uint32_t sgid_index)
{
	struct ibv_ah_attr ah_attr = lo_ah_attr(s->ctx);
	struct ibv_ah *ah;
	char msg[MSG_LEN];
	struct ibv_mr *mr = ibv_reg_mr(s->pd, msg, sizeof(msg), 0);

	ah_attr.grh.dgid = group();
	ah_attr.grh.sgid_index = (uint8_t)sgid_index;
	ah = ibv_create_ah(s->pd, &ah_attr);
	cr_assert(ah && mr);
	for (int i = 0; i < MESSAGES; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = MSG_LEN, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.ud = {.ah = ah,
						   .remote_qpn = 0xFFFFFF,
						   .remote_qkey = QKEY}},
				   *bad;
		struct ibv_wc wc;
		int n;

		for (int k = 0; k < MSG_LEN; k++)
			msg[k] = (char)(k + i);
		cr_assert_eq(ibv_post_send(s->qp, &wr, &bad), 0);
		while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
			;
		cr_assert_eq(n, 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.opcode, IBV_WC_SEND);
	}
}

Test(shim_mcast, every_member_on_the_host_once_but_the_sender, .timeout = 60)
{
	int ready[2], go[2], status;
	pid_t child[2];
	uint32_t sender_qpn;
	char c;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	for (int k = 0; k < 2; k++) {
		child[k] = fork();
		cr_assert_geq(child[k], 0);
		if (child[k] == 0) {
			static struct member m;
			struct ibv_context *ctx = open_lo();

			make(&m, ctx, ibv_alloc_pd(ctx));
			if (write(ready[1], "r", 1) != 1 ||
			    read(go[0], &sender_qpn, sizeof(sender_qpn)) != sizeof(sender_qpn))
				_exit(3);
			_exit(receive(&m, 3000, sender_qpn) == MESSAGES ? 0 : 1);
		}
	}
	for (int k = 0; k < 2; k++)
		cr_assert_eq(read(ready[0], &c, 1), 1);

	static struct member sender, local, gone;
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	union ibv_gid g = group();

	make(&sender, ctx, pd); /* a member too: it must not get its own datagrams */
	make(&local, ctx, pd);
	make(&gone, ctx, pd);
	cr_assert_eq(ibv_detach_mcast(gone.qp, &g, 0), 0);
	cr_assert_eq(ibv_detach_mcast(gone.qp, &g, 0), EINVAL);
	sender_qpn = sender.qp->qp_num;
	for (int k = 0; k < 2; k++)
		cr_assert_eq(write(go[1], &sender_qpn, sizeof(sender_qpn)), sizeof(sender_qpn));
	usleep(100000);
	send_group(&sender, (uint32_t)lo_gid_index(ctx));
	cr_assert_eq(receive(&local, 1000, sender_qpn), MESSAGES,
		     "a member in the sender's process");
	cr_assert_eq(receive(&sender, 200, sender_qpn), 0, "the sender got its own");
	cr_assert_eq(receive(&gone, 200, sender_qpn), 0, "a detached QP got some");
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(waitpid(child[k], &status, 0), child[k]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "member process %d: status %#x", k, status);
	}
}

/* The datagrams @m receives within @ms, up to @want, each a whole one; -1 for a bad one. */
static int count(struct member *m, int ms, int want)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct ibv_wc wc;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (ibv_poll_cq(m->cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.byte_len != GRH_LEN + MSG_LEN)
			return -1;
		got++;
	} while (got < want &&
		 (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return got;
}

/* One datagram to the group; exit (no destructor) once its send has completed. */
static void send_once_and_exit(struct member *s, uint32_t sgid_index)
{
	struct ibv_ah_attr ah_attr = lo_ah_attr(s->ctx);
	char msg[MSG_LEN] = "once";
	struct ibv_mr *mr = ibv_reg_mr(s->pd, msg, sizeof(msg), 0);
	struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = MSG_LEN};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.ud = {.remote_qpn = 0xFFFFFF, .remote_qkey = QKEY}},
			   *bad;
	struct ibv_wc wc;
	int n;

	ah_attr.grh.dgid = group();
	ah_attr.grh.sgid_index = (uint8_t)sgid_index;
	wr.wr.ud.ah = ibv_create_ah(s->pd, &ah_attr);
	if (!wr.wr.ud.ah || !mr)
		_exit(2);
	sge.lkey = mr->lkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		_exit(2);
	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
		;
	_exit(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND ? 0 : 2);
}

/*
 * An adapter completes a send once the datagram has left, its loopback to the host's members
 * included: so a process that exits the moment its send completes, without a destructor (as
 * Python's multiprocessing children do), has reached every other member (fabric/rdv.h
 * uroce_rdv_mcast_sent). The member process starts first and stays the hub.
 */
Test(shim_mcast, a_completed_send_has_reached_the_other_processes, .timeout = 60)
{
	enum { SENDERS = 10 };
	int ready[2], status;
	pid_t member;
	char c;

	cr_assert_eq(pipe(ready), 0);
	member = fork();
	cr_assert_geq(member, 0);
	if (member == 0) {
		static struct member m;
		struct ibv_context *ctx = open_lo();

		make(&m, ctx, ibv_alloc_pd(ctx));
		if (write(ready[1], "r", 1) != 1)
			_exit(255);
		_exit(count(&m, 5000, SENDERS));
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	for (int k = 0; k < SENDERS; k++) {
		pid_t s = fork();

		cr_assert_geq(s, 0);
		if (s == 0) {
			static struct member m;
			struct ibv_context *ctx = open_lo();

			make(&m, ctx, ibv_alloc_pd(ctx));
			send_once_and_exit(&m, (uint32_t)lo_gid_index(ctx));
		}
		cr_assert_eq(waitpid(s, &status, 0), s);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender %d: status %#x", k,
			  status);
	}
	cr_assert_eq(waitpid(member, &status, 0), member);
	cr_assert(WIFEXITED(status), "the member: status %#x", status);
	cr_assert_eq(WEXITSTATUS(status), SENDERS, "the member got %d of %d datagrams",
		     WEXITSTATUS(status), SENDERS);
}

Test(shim_mcast, attach_refuses_what_the_kernel_refuses)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *rc = ibv_create_qp(pd, &a);
	union ibv_gid g = group(), unicast = lo_ipv4_gid();

	a.qp_type = IBV_QPT_UD;
	struct ibv_qp *ud = ibv_create_qp(pd, &a);

	cr_assert(rc && ud);
	cr_assert_eq(ibv_attach_mcast(rc, &g, 0), EINVAL, "an RC QP");
	cr_assert_eq(ibv_attach_mcast(ud, &unicast, 0), EINVAL, "a unicast GID");
	cr_assert_eq(ibv_attach_mcast(ud, &g, 0), 0);
	cr_assert_eq(ibv_attach_mcast(ud, &g, 0), 0, "twice is no error");
	cr_assert_eq(ibv_destroy_qp(ud), 0, "destroy detaches");
	cr_assert_eq(ibv_destroy_qp(rc), 0);
}
