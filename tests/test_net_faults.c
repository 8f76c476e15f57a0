/* SPDX-License-Identifier: MIT */
/*
 * UROCE_FAULTS (fabric/faults.h): the parser and its messages, and what each fault does to the
 * datagrams an endpoint sends to itself -- loss, duplication, corruption (the ICRC check fails),
 * delay, reordering, on transmit or receive -- the same way again for the same seed; RC ACKs
 * spared on request; and an unknown UROCE_* variable is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/faults.h"
#include "fabric/net.h"
#include "transport/icrc.h"
#include "transport/wire.h"

enum { N = 400, MAXGOT = 2 * N, PORT = 24871 };

struct got {
	uint32_t seq;
	uint64_t at;
	enum roce_icrc_result icrc;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct got got[MAXGOT];
static int ngot;
static struct uroce_net *net;

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	struct roce_pkt pkt;

	(void)arg;
	pthread_mutex_lock(&lock);
	if (ngot < MAXGOT && roce_decode(rx->roce, rx->len, &pkt) == ROCE_OK) {
		got[ngot].seq = pkt.bth.psn;
		got[ngot].at = rx->now;
		got[ngot].icrc = rx->icrc;
		ngot++;
	}
	pthread_mutex_unlock(&lock);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

static int open_with(const char *faults)
{
	char s[16];

	snprintf(s, sizeof(s), "%u", PORT);
	setenv("UROCE_UDP_PORT", s, 1);
	if (faults)
		setenv("UROCE_FAULTS", faults, 1);
	else
		unsetenv("UROCE_FAULTS");
	ngot = 0;
	return uroce_net_open(&net, &ops, NULL);
}

/*
 * Send N packets numbered by PSN to a QP of this process, UD SENDs or (@acks) RC ACKs; wait for
 * them to settle.
 */
static uint64_t send_some(bool acks)
{
	uint8_t lo[4] = {127, 0, 0, 1};
	struct roce_ipudp f = {0};
	uint32_t qpn;
	uint64_t t0 = uroce_now();

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, lo);
	f.ttl = 64;
	for (uint32_t i = 0; i < N; i++) {
		uint8_t p[ROCE_BTH_LEN + ROCE_DETH_LEN + 32 + ROCE_ICRC_LEN] = {0};
		size_t hdrs = acks ? ROCE_BTH_LEN + ROCE_AETH_LEN : ROCE_BTH_LEN + ROCE_DETH_LEN;
		size_t len = acks ? hdrs + ROCE_ICRC_LEN : sizeof(p);
		struct roce_pkt pkt = {0};

		pkt.bth.opcode = acks ? ROCE_TR_RC | ROCE_OP_ACK : ROCE_TR_UD | ROCE_OP_SEND_ONLY;
		pkt.bth.pkey = ROCE_DEFAULT_PKEY;
		pkt.bth.dqpn = qpn;
		pkt.bth.psn = i;
		pkt.deth.src_qpn = 2;
		roce_encode_hdrs(p, hdrs, &pkt);
		cr_assert_eq(uroce_net_send(net, &f, p, len), 0);
		if (i % 50 == 49)
			usleep(1000); /* no drops in the socket buffers: only the faults lose */
	}
	usleep(300000);
	return t0;
}

static uint64_t send_all(void)
{
	return send_some(false);
}

static void close_net(void)
{
	uroce_net_close(net);
	net = NULL;
}

Test(net_faults, parser)
{
	struct uroce_faults_cfg c;

	cr_assert_eq(uroce_faults_parse("loss=0.05,reorder=0.02,dup=0.01,corrupt=0.001,"
					"delay=200us,seed=7",
					&c),
		     0);
	cr_assert(c.on && c.tx && !c.rx);
	cr_assert_eq(c.loss_ppm, 50000);
	cr_assert_eq(c.reorder_ppm, 20000);
	cr_assert_eq(c.dup_ppm, 10000);
	cr_assert_eq(c.corrupt_ppm, 1000);
	cr_assert_eq(c.delay_ns, 200000);
	cr_assert_eq(c.seed, 7);
	cr_assert_eq(uroce_faults_parse("dir=both,delay=3ms", &c), 0);
	cr_assert(c.tx && c.rx);
	cr_assert_eq(c.delay_ns, 3000000);
	cr_assert_eq(uroce_faults_parse("dir=rx", &c), 0);
	cr_assert(!c.tx && c.rx && !c.spare_acks);
	cr_assert_eq(uroce_faults_parse("loss=0.1,spare=acks", &c), 0);
	cr_assert(c.spare_acks);
	/* Each wrong thing is refused. */
	const char *bad[] = {"",
			     "loss",
			     "loss=",
			     "loss=1.5",
			     "loss=-0.1",
			     "loss=0.1x",
			     "lost=0.1",
			     "delay=200",
			     "delay=5m",
			     "delay=61s",
			     "seed=x",
			     "dir=up",
			     "spare=naks",
			     "spare=",
			     "loss=0.1,loss=0.2",
			     "loss=0.1,,dup=0.1"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(uroce_faults_parse(bad[i], &c), EINVAL, "\"%s\" accepted", bad[i]);
}

Test(net_faults, unknown_variable_is_refused)
{
	setenv("UROCE_PCAPP", "/tmp/x.pcap", 1);
	cr_assert_eq(open_with(NULL), EINVAL);
	unsetenv("UROCE_PCAPP");
	cr_assert_eq(open_with("loss=2"), EINVAL, "a bad UROCE_FAULTS is refused");
	cr_assert_eq(open_with(NULL), 0);
	close_net();
}

Test(net_faults, loss_is_the_same_for_the_same_seed, .timeout = 30)
{
	uint32_t first[N];
	int n1;
	struct uroce_net_stats st;

	cr_assert_eq(open_with("loss=0.3,seed=7"), 0);
	send_all();
	uroce_net_get_stats(net, &st);
	close_net();
	n1 = ngot;
	for (int i = 0; i < n1; i++)
		first[i] = got[i].seq;
	cr_assert_eq(st.faults.lost, (uint64_t)(N - n1));
	cr_assert(n1 > N / 2 && n1 < N * 9 / 10, "%d of %d arrived with loss=0.3", n1, N);
	cr_assert_eq(open_with("loss=0.3,seed=7"), 0);
	send_all();
	close_net();
	cr_assert_eq(ngot, n1);
	for (int i = 0; i < n1; i++)
		cr_assert_eq(got[i].seq, first[i], "packet %d differs", i);
	cr_assert_eq(open_with("loss=0.3,seed=8"), 0);
	send_all();
	close_net();
	bool same = ngot == n1;

	for (int i = 0; same && i < n1; i++)
		same = got[i].seq == first[i];
	cr_assert_not(same, "another seed, other losses");
}

Test(net_faults, dup_and_corrupt, .timeout = 30)
{
	int bad = 0;

	cr_assert_eq(open_with("dup=1"), 0);
	send_all();
	close_net();
	cr_assert_eq(ngot, 2 * N, "every packet twice");
	cr_assert_eq(open_with("corrupt=1,dir=rx"), 0);
	send_all();
	close_net();
	cr_assert_eq(ngot, N);
	for (int i = 0; i < ngot; i++)
		bad += got[i].icrc == ROCE_ICRC_BAD;
	cr_assert_eq(bad, N, "a corrupted packet fails its ICRC check");
}

Test(net_faults, delay_and_reorder, .timeout = 30)
{
	uint64_t t0;
	int late = 0;

	cr_assert_eq(open_with("delay=20ms"), 0);
	t0 = send_all();
	close_net();
	cr_assert_eq(ngot, N);
	for (int i = 0; i < N; i++)
		cr_assert_geq(got[i].at - t0, 20000000u, "packet %d came before its delay", i);
	cr_assert_eq(open_with("reorder=0.2,seed=3"), 0);
	send_all();
	close_net();
	cr_assert_eq(ngot, N, "reordering loses nothing");
	for (int i = 1; i < N; i++)
		late += got[i].seq < got[i - 1].seq;
	cr_assert_gt(late, 0, "some packets are overtaken");
}

Test(net_faults, spare_acks, .timeout = 30)
{
	struct uroce_net_stats st;

	cr_assert_eq(open_with("loss=1,dir=both,spare=acks"), 0);
	send_all();
	cr_assert_eq(ngot, 0, "every SEND is lost");
	send_some(true);
	uroce_net_get_stats(net, &st);
	close_net();
	cr_assert_eq(ngot, N, "no ACK is lost");
	cr_assert_eq(st.faults.lost, (uint64_t)N, "the SENDs, on transmit");
	cr_assert_eq(open_with("corrupt=1,dup=1,spare=acks,dir=rx"), 0);
	send_some(true);
	close_net();
	cr_assert_eq(ngot, N, "no ACK duplicated");
	for (int i = 0; i < ngot; i++)
		cr_assert_neq(got[i].icrc, ROCE_ICRC_BAD, "ACK %d corrupted", i);
}
