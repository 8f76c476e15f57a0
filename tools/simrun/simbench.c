// SPDX-License-Identifier: MIT
/*
 * uroce-simbench: packets per second of the transport core alone (transport/qp.h), one core,
 * no sockets: the CPU the I/O engine spends on protocol per packet (docs/PERFORMANCE.md).
 *
 * Two RC QPs in one process hand packets to each other through memory. Each case times one
 * side of one direction, in batches of 128 messages of one packet each:
 *
 *   request  WRITE tx   requester: WQE -> RDMA WRITE ONLY packet (roce_qp_write_pkt)
 *   request  WRITE rx   responder: roce_decode + roce_qp_read_pkt, payload placed
 *   request  SEND  tx / rx   the same for SEND ONLY (a receive WQE consumed per message)
 *   response READ  tx   responder: READ RESPONSE ONLY packets for accepted READ requests
 *   response READ  rx   completer: roce_decode + roce_qp_read_pkt, payload placed, WQE done
 *
 * The other work of each batch (posting, the opposite side, ACKs) runs untimed. With --icrc
 * the sending side also fills the ICRC and the receiving side verifies it, as the engine does.
 *
 * The baseline, measured in the same run: what the kernel's UDP path costs one core for a
 * datagram of the same size, on loopback (docs/PERFORMANCE.md compares against it):
 *
 * (a datagram the size of a SEND ONLY packet):
 *
 *   UDP tx   sendto() of one datagram to a socket on 127.0.0.1 (timed; on loopback the kernel
 *            also queues it at the receiving socket inside the call)
 *   UDP rx   recv() of one queued datagram (timed; the queue is filled untimed)
 *
 * Each core case is divided by the UDP case of its direction (tx: what a packet costs to send,
 * rx: to take in). The cases are interleaved: every repetition runs each case once, so drift
 * of a shared machine hits them alike. Each figure is the median of the repetitions, with the
 * slowest and fastest beside it.
 *
 *   uroce-simbench [--icrc] [--reps N] [--ms MS]
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "transport/icrc.h"
#include "transport/qp.h"

enum { BATCH = 128, SQ_SLOTS = 512, MAX_REPS = 64 };

struct side {
	struct roce_qp qp;
	struct roce_wq sq;
	uint8_t *mem; /* one region: every key maps here */
	size_t len;
	uint64_t completions;
};

static uint8_t *env_mem(void *ctx, uint32_t key, bool remote, uint64_t addr, uint64_t len,
			int access, enum roce_mem_err *err)
{
	struct side *s = ctx;
	uint64_t base = (uintptr_t)s->mem;

	(void)key;
	(void)remote;
	(void)access;
	if (addr < base || len > s->len || addr - base > s->len - len) {
		*err = ROCE_MEM_BOUNDS;
		return NULL;
	}
	return s->mem + (addr - base);
}

static bool env_recv_take(void *ctx, struct roce_recv *out)
{
	struct side *s = ctx;

	out->wr_id = 0;
	out->num_sge = 1;
	out->length = 4096;
	out->sge[0] = (struct ibv_sge){.addr = (uintptr_t)s->mem, .length = 4096};
	return true;
}

static void env_complete(void *ctx, bool recv, const struct ibv_wc *wc, bool solicited)
{
	struct side *s = ctx;

	(void)recv;
	(void)solicited;
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "uroce-simbench: a WR failed (status %d)\n", wc->status);
		exit(1);
	}
	s->completions++;
}

static void env_event(void *ctx, enum ibv_event_type type)
{
	(void)ctx;
	(void)type;
}

static void env_to_error(void *ctx)
{
	(void)ctx;
	fprintf(stderr, "uroce-simbench: a QP failed\n");
	exit(1);
}

static const struct roce_qp_env env = {
	.mem = env_mem,
	.recv_take = env_recv_take,
	.complete = env_complete,
	.event = env_event,
	.to_error = env_to_error,
};

static struct side a, b;
static struct roce_ipudp ip_ab, ip_ba;
static uint8_t pkts[BATCH][ROCE_PKT_MAX];
static size_t pkt_len[BATCH];
static bool icrc;
static uint64_t clock_ns; /* the core's "now": any value does, no deadline is reached */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void side_init(struct side *s, uint32_t qpn)
{
	s->len = 1 << 20;
	s->mem = aligned_alloc(4096, s->len);
	if (!s->mem || roce_wq_init(&s->sq, SQ_SLOTS, roce_send_wqe_size(1, 0))) {
		fprintf(stderr, "uroce-simbench: out of memory\n");
		exit(1);
	}
	roce_qp_init(&s->qp, IBV_QPT_RC, qpn, true, &s->sq, &env, s);
	memset(s->mem, 0x5A, s->len);
}

static void qp_connect(struct side *s, const struct side *peer, const struct roce_ipudp *to)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT};

	at.qp_access_flags =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
	roce_qp_modify(&s->qp, &at, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_4096;
	at.dest_qp_num = peer->qp.qpn;
	at.rq_psn = 1000;
	at.max_dest_rd_atomic = ROCE_MAX_RD_ATOMIC;
	at.ah_attr.is_global = 1;
	memcpy(at.ah_attr.grh.dgid.raw, to->dgid, 16);
	roce_qp_modify(&s->qp, &at,
		       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 1000;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = ROCE_MAX_RD_ATOMIC;
	roce_qp_modify(&s->qp, &at,
		       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Queue @n one-SGE WQEs of @len bytes on @s, as verbs-shim/qp_post.c fills them. */
static void post(struct side *s, const struct side *peer, enum ibv_wr_opcode op, uint32_t len,
		 uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct roce_send_wqe *w = roce_wq_slot(&s->sq, s->sq.head);
		struct ibv_sge *sge = roce_send_wqe_sge(w);
		uint32_t off = (i % 64) * 8192;

		memset(w, 0, sizeof(*w));
		w->opcode = op;
		w->signaled = true;
		w->length = len;
		w->num_sge = 1;
		w->wr.rdma.remote_addr = (uintptr_t)peer->mem + off;
		sge->addr = (uintptr_t)s->mem + off + 4096;
		sge->length = len;
		s->sq.head++;
	}
}

/* Pull every packet @s has into pkts[] (timed by the caller); returns how many. */
static uint32_t pull(struct side *s, const struct roce_ipudp *ip)
{
	struct roce_dest dest;
	uint32_t n = 0;

	while (n < BATCH && (pkt_len[n] = roce_qp_write_pkt(&s->qp, pkts[n], &dest, clock_ns))) {
		if (icrc)
			roce_icrc_fill(ip, pkts[n], pkt_len[n]);
		n++;
	}
	return n;
}

/* Hand pkts[0..n) to @s. */
static void push(struct side *s, const struct roce_ipudp *ip, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct roce_ipudp f = *ip;
		struct roce_pkt pkt;

		if (icrc && roce_icrc_verify(&f, pkts[i], pkt_len[i]) == ROCE_ICRC_BAD) {
			fprintf(stderr, "uroce-simbench: bad ICRC\n");
			exit(1);
		}
		if (roce_decode(pkts[i], pkt_len[i], &pkt) != ROCE_OK) {
			fprintf(stderr, "uroce-simbench: undecodable packet\n");
			exit(1);
		}
		roce_qp_read_pkt(&s->qp, &pkt, &f, clock_ns);
	}
}

/* Untimed: packets back and forth until both sides are quiet (ACKs, retired WQEs). */
static void settle(void)
{
	for (;;) {
		uint32_t nb = pull(&b, &ip_ba), na;

		push(&a, &ip_ba, nb);
		na = pull(&a, &ip_ab);
		push(&b, &ip_ab, na);
		if (!na && !nb)
			return;
	}
}

enum which { REQ_TX, REQ_RX, RESP_TX, RESP_RX, UDP_TX, UDP_RX };

/*
 * One batch of @op messages of @len bytes; returns the nanoseconds of the side @w times.
 * Requests go a -> b; READ responses b -> a.
 */
static double batch(enum ibv_wr_opcode op, uint32_t len, enum which w)
{
	double t0, t = 0;
	uint32_t n;

	post(&a, &b, op, len, BATCH);
	t0 = now_ns();
	n = pull(&a, &ip_ab);
	if (w == REQ_TX)
		t = now_ns() - t0;
	if (n != BATCH) {
		fprintf(stderr, "uroce-simbench: %u request packets, not %u\n", n, BATCH);
		exit(1);
	}
	t0 = now_ns();
	push(&b, &ip_ab, n);
	if (w == REQ_RX)
		t = now_ns() - t0;
	if (op == IBV_WR_RDMA_READ) {
		t0 = now_ns();
		n = pull(&b, &ip_ba);
		if (w == RESP_TX)
			t = now_ns() - t0;
		if (n != BATCH) {
			fprintf(stderr, "uroce-simbench: %u READ responses, not %u\n", n, BATCH);
			exit(1);
		}
		t0 = now_ns();
		push(&a, &ip_ba, n);
		if (w == RESP_RX)
			t = now_ns() - t0;
	}
	settle();
	clock_ns += 1000;
	return t;
}

/* The baseline's sockets: a sender and a receiver on 127.0.0.1. */
static int udp_tx = -1, udp_rx = -1;
static struct sockaddr_in udp_to;

static void udp_open(void)
{
	socklen_t len = sizeof(udp_to);
	int big = 16 << 20;

	udp_tx = socket(AF_INET, SOCK_DGRAM, 0);
	udp_rx = socket(AF_INET, SOCK_DGRAM, 0);
	udp_to.sin_family = AF_INET;
	udp_to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (udp_tx < 0 || udp_rx < 0 ||
	    (setsockopt(udp_rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) &&
	     setsockopt(udp_rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big))) ||
	    bind(udp_rx, (struct sockaddr *)&udp_to, sizeof(udp_to)) ||
	    getsockname(udp_rx, (struct sockaddr *)&udp_to, &len)) {
		perror("uroce-simbench: the UDP baseline's sockets");
		exit(1);
	}
}

/*
 * One batch of datagrams through loopback, each the size of a SEND ONLY packet of @payload
 * bytes; the nanoseconds of direction @w.
 */
static double udp_batch(uint32_t payload, enum which w)
{
	uint32_t len = ROCE_BTH_LEN + payload + ROCE_ICRC_LEN;
	double t0, t = 0;

	t0 = now_ns();
	for (uint32_t i = 0; i < BATCH; i++)
		if (sendto(udp_tx, pkts[i], len, 0, (struct sockaddr *)&udp_to, sizeof(udp_to)) !=
		    (ssize_t)len) {
			perror("uroce-simbench: sendto");
			exit(1);
		}
	if (w == UDP_TX)
		t = now_ns() - t0;
	t0 = now_ns();
	for (uint32_t i = 0; i < BATCH; i++)
		if (recv(udp_rx, pkts[i], sizeof(pkts[i]), 0) != (ssize_t)len) {
			perror("uroce-simbench: recv");
			exit(1);
		}
	if (w == UDP_RX)
		t = now_ns() - t0;
	return t;
}

struct bench_case {
	const char *name;
	enum ibv_wr_opcode op;
	enum which w;
	double pps[MAX_REPS];
};

static struct bench_case cases[] = {
	{"request  WRITE tx", IBV_WR_RDMA_WRITE, REQ_TX, {0}},
	{"request  WRITE rx", IBV_WR_RDMA_WRITE, REQ_RX, {0}},
	{"request  SEND  tx", IBV_WR_SEND, REQ_TX, {0}},
	{"request  SEND  rx", IBV_WR_SEND, REQ_RX, {0}},
	{"response READ  tx", IBV_WR_RDMA_READ, RESP_TX, {0}},
	{"response READ  rx", IBV_WR_RDMA_READ, RESP_RX, {0}},
	{"baseline UDP   tx", IBV_WR_SEND, UDP_TX, {0}},
	{"baseline UDP   rx", IBV_WR_SEND, UDP_RX, {0}},
};
enum { NCASES = sizeof(cases) / sizeof(cases[0]), UDP_TX_CASE = NCASES - 2 };

static int cmp_double(const void *x, const void *y)
{
	double a1 = *(const double *)x, b1 = *(const double *)y;

	return a1 < b1 ? -1 : a1 > b1;
}

/* Packets per second of case @c over @ms of batches. */
static double run_case(const struct bench_case *c, uint32_t len, unsigned ms)
{
	double busy = 0, start = now_ns();
	uint64_t pkts_done = 0;

	while (now_ns() - start < ms * 1e6) {
		busy += c->w >= UDP_TX ? udp_batch(len, c->w) : batch(c->op, len, c->w);
		pkts_done += BATCH;
	}
	return pkts_done / busy * 1e9;
}

/* The cases for packets of @len payload bytes, interleaved, and their medians. */
static void measure(uint32_t len, unsigned reps, unsigned ms)
{
	double median[NCASES];

	for (unsigned r = 0; r < reps; r++)
		for (unsigned i = 0; i < NCASES; i++)
			cases[i].pps[r] = run_case(&cases[i], len, ms);
	for (unsigned i = 0; i < NCASES; i++) {
		qsort(cases[i].pps, reps, sizeof(double), cmp_double);
		median[i] = cases[i].pps[reps / 2];
	}
	for (unsigned i = 0; i < NCASES; i++) {
		struct bench_case *c = &cases[i];
		/* tx cases against UDP tx, rx cases against UDP rx */
		bool tx = c->w == REQ_TX || c->w == RESP_TX || c->w == UDP_TX;
		double base = median[tx ? UDP_TX_CASE : UDP_TX_CASE + 1];

		printf("%-18s %5u B  %7.2f Mpps  %7.1f ns/pkt  (%.2f .. %.2f Mpps)  %6.1fx UDP "
		       "%s\n",
		       c->name, len, median[i] / 1e6, 1e9 / median[i], c->pps[0] / 1e6,
		       c->pps[reps - 1] / 1e6, median[i] / base, tx ? "tx" : "rx");
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"icrc", no_argument, NULL, 'i'},
		{"reps", required_argument, NULL, 'r'},
		{"ms", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	static const uint32_t sizes[] = {64, 4096};
	uint8_t v4a[4] = {10, 0, 0, 1}, v4b[4] = {10, 0, 0, 2};
	unsigned reps = 7, ms = 200;
	int c;

	while ((c = getopt_long(argc, argv, "ir:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			icrc = true;
			break;
		case 'r':
			reps = (unsigned)atoi(optarg);
			break;
		case 'm':
			ms = (unsigned)atoi(optarg);
			break;
		default:
			printf("usage: uroce-simbench [--icrc] [--reps N (1..%d)] [--ms MS]\n",
			       MAX_REPS);
			return c == 'h' ? 0 : 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS || ms < 1) {
		fprintf(stderr, "uroce-simbench: --reps 1..%d, --ms at least 1\n", MAX_REPS);
		return 2;
	}
	roce_gid_from_v4(ip_ab.sgid, v4a);
	roce_gid_from_v4(ip_ab.dgid, v4b);
	ip_ab.sport = 49152;
	ip_ab.dport = ROCE_UDP_PORT;
	ip_ab.ip_frag = ROCE_IPV4_DF;
	ip_ba = ip_ab;
	memcpy(ip_ba.sgid, ip_ab.dgid, 16);
	memcpy(ip_ba.dgid, ip_ab.sgid, 16);
	side_init(&a, 0x11);
	side_init(&b, 0x12);
	qp_connect(&a, &b, &ip_ab);
	qp_connect(&b, &a, &ip_ba);
	printf("transport core, one core, RC, MTU 4096, batches of %d, %s ICRC, median of %u x "
	       "%u ms\n",
	       BATCH, icrc ? "with" : "without", reps, ms);
	udp_open();
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		measure(sizes[i], reps, ms);
	printf("completions: %llu\n", (unsigned long long)(a.completions + b.completions));
	roce_qp_fini(&a.qp);
	roce_qp_fini(&b.qp);
	roce_wq_free(&a.sq);
	roce_wq_free(&b.sq);
	close(udp_tx);
	close(udp_rx);
	free(a.mem);
	free(b.mem);
	return 0;
}
