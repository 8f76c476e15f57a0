/* SPDX-License-Identifier: MIT */
/*
 * A UD multicast member or sender over the verbs API, for the "two hosts" tests
 * (netns/two-hosts.sh), shaped like rdma-core's examples there:
 *
 *   mcast_peer -d DEV -g GID_INDEX [-p TCP_PORT] [-n COUNT]           member: attaches a UD QP
 *       to the group, listens on TCP_PORT (the sender's signal that it may start), receives
 *       COUNT datagrams and checks each byte
 *   mcast_peer -d DEV -g GID_INDEX [-p TCP_PORT] [-n COUNT] SERVER    sender: connects to the
 *       member's TCP_PORT, then sends COUNT datagrams to the group
 *
 * The group is 239.1.2.3 when the GID is IPv4, ff0e::db8:1:2:3 otherwise. Both print
 * "N bytes in S seconds" and exit 0 on success; a member that misses a datagram or gets a
 * wrong byte exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define QKEY    0x11111111u
#define MSG_LEN 512
#define GRH_LEN 40
#define DEPTH   64

static int die(const char *what)
{
	fprintf(stderr, "mcast_peer: %s\n", what);
	exit(1);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct ibv_context *open_named(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static union ibv_gid group_for(const union ibv_gid *sgid)
{
	static const uint8_t v4[16] = {[10] = 0xff, 0xff, 239, 1, 2, 3};
	static const uint8_t v6[16] = {0xff, 0x0e, [10] = 0x0d, 0xb8, 0, 1, 0, 3};
	static const uint8_t mapped[12] = {[10] = 0xff, 0xff};
	union ibv_gid g;

	memcpy(g.raw, memcmp(sgid->raw, mapped, 12) ? v6 : v4, 16);
	return g;
}

static char pattern(int msg, int k)
{
	return (char)(msg * 31 + k);
}

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[DEPTH][GRH_LEN + MSG_LEN];
};

static void post_recv(struct ud *u, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)u->buf[slot], .length = GRH_LEN + MSG_LEN, .lkey = u->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(u->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void setup(struct ud *u, const char *dev)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = DEPTH,
			.max_recv_wr = DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	u->ctx = open_named(dev);
	if (!u->ctx)
		die("no such device");
	u->pd = ibv_alloc_pd(u->ctx);
	u->cq = ibv_create_cq(u->ctx, 2 * DEPTH, NULL, NULL, 0);
	a.send_cq = a.recv_cq = u->cq;
	u->qp = u->pd && u->cq ? ibv_create_qp(u->pd, &a) : NULL;
	u->mr = u->pd ? ibv_reg_mr(u->pd, u->buf, sizeof(u->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!u->qp || !u->mr)
		die("cannot create the UD QP");
	if (ibv_modify_qp(u->qp, &attr,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("INIT");
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &attr, IBV_QP_STATE))
		die("RTR");
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if (ibv_modify_qp(u->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("RTS");
}

static int member(struct ud *u, union ibv_gid group, const char *port, int count)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE},
			*ai;
	int one = 1, lfd, fd, got = 0;
	double t0, deadline;

	for (int i = 0; i < DEPTH; i++)
		post_recv(u, i);
	if (ibv_attach_mcast(u->qp, &group, 0))
		die("ibv_attach_mcast");
	if (getaddrinfo(NULL, port, &hints, &ai))
		die("getaddrinfo");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1))
		die("listen");
	freeaddrinfo(ai);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept");
	t0 = now();
	deadline = t0 + 10;
	while (got < count && now() < deadline) {
		struct ibv_wc wc;

		if (ibv_poll_cq(u->cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != GRH_LEN + MSG_LEN)
			die("a bad receive completion");
		for (int k = 0; k < MSG_LEN; k++)
			if (u->buf[wc.wr_id][GRH_LEN + k] != pattern(got, k)) {
				fprintf(stderr, "mcast_peer: datagram %d byte %d is wrong\n", got,
					k);
				return 1;
			}
		post_recv(u, (int)wc.wr_id);
		got++;
	}
	if (got < count) {
		fprintf(stderr, "mcast_peer: %d of %d datagrams arrived\n", got, count);
		return 1;
	}
	printf("%d bytes in %.2f seconds\n", count * MSG_LEN, now() - t0);
	close(fd);
	close(lfd);
	return 0;
}

static int sender(struct ud *u, union ibv_gid group, int gid_index, const char *server,
		  const char *port, int count)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct ibv_ah_attr ah_attr = {.is_global = 1, .port_num = 1};
	struct ibv_ah *ah;
	int fd = -1;
	double t0;

	if (getaddrinfo(server, port, &hints, &ai))
		die("getaddrinfo");
	for (int i = 0; i < 100 && fd < 0; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			close(fd);
			fd = -1;
			usleep(50000);
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		die("cannot reach the member");
	ah_attr.grh.dgid = group;
	ah_attr.grh.sgid_index = (uint8_t)gid_index;
	ah_attr.grh.hop_limit = 8;
	ah = ibv_create_ah(u->pd, &ah_attr);
	if (!ah)
		die("ibv_create_ah");
	t0 = now();
	for (int i = 0; i < count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)u->buf[0], .length = MSG_LEN, .lkey = u->mr->lkey};
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
			u->buf[0][k] = pattern(i, k);
		if (ibv_post_send(u->qp, &wr, &bad))
			die("ibv_post_send");
		while ((n = ibv_poll_cq(u->cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			die("a bad send completion");
		usleep(1000); /* UD has no flow control: pace below the member's receive depth */
	}
	printf("%d bytes in %.2f seconds\n", count * MSG_LEN, now() - t0);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *port = "18515";
	int gid_index = 0, count = 100, opt;
	static struct ud u;
	union ibv_gid sgid;

	while ((opt = getopt(argc, argv, "d:g:p:n:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			count = atoi(optarg);
			break;
		default:
			die("usage: mcast_peer -d DEV -g GID_INDEX [-p PORT] [-n COUNT] [SERVER]");
		}
	}
	if (!dev || count <= 0)
		die("usage: mcast_peer -d DEV -g GID_INDEX [-p PORT] [-n COUNT] [SERVER]");
	setup(&u, dev);
	if (ibv_query_gid(u.ctx, 1, gid_index, &sgid))
		die("ibv_query_gid");
	if (optind < argc)
		return sender(&u, group_for(&sgid), gid_index, argv[optind], port, count);
	return member(&u, group_for(&sgid), port, count);
}
