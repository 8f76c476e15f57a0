/* SPDX-License-Identifier: MIT */
/*
 * fabric/net in one process: datagrams to its own QPs over 127.0.0.1 and ::1 with the header
 * values the receiver sees, the IPv4 header the kernel writes (ID 0, DF: what the ICRC assumes),
 * send errors, the drops (short, unknown QPN, oversize), and the capture.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/net.h"
#include "tests/fabric/common.h"
#include "transport/icrc.h"
#include "transport/wire.h"

#define MS 1000000ull

struct got {
	struct roce_ipudp ip;
	uint8_t roce[256];
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct got got[16];
static int ngot;
static struct uroce_net *net;
static uint16_t port;

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	if (ngot < 16 && rx->len <= sizeof(got[0].roce)) {
		got[ngot].ip = rx->ip;
		got[ngot].len = rx->len;
		memcpy(got[ngot].roce, rx->roce, rx->len);
		ngot++;
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

/* Wait up to 5 s (a loaded machine) for the @n-th datagram; returns it. */
static struct got *wait_got(int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&lock);
	while (ngot < n && pthread_cond_timedwait(&cond, &lock, &ts) == 0)
		;
	pthread_mutex_unlock(&lock);
	cr_assert_geq(ngot, n, "datagram %d did not arrive", n);
	return &got[n - 1];
}

static void open_on(uint16_t p)
{
	char s[16];

	port = p;
	snprintf(s, sizeof(s), "%u", p);
	setenv("UROCE_UDP_PORT", s, 1);
	unsetenv("UROCE_PCAP");
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
}

static void close_net(void)
{
	uroce_net_close(net);
	net = NULL;
}

static void stats(struct uroce_net_stats *st)
{
	uroce_net_get_stats(net, st);
}

static void open_24800(void)
{
	open_on(24800);
}

Test(net, alone_it_is_the_hub_with_distinct_qpns, .init = open_24800, .fini = close_net)
{
	uint32_t q[100];
	struct uroce_net_stats st;

	cr_assert_eq(uroce_net_is_hub(net), 1);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(uroce_net_alloc_qpn(net, &q[i]), 0);
		cr_assert(q[i] > 1 && q[i] < 0xFFFFFF, "QPN %#x", q[i]);
		for (int j = 0; j < i; j++)
			cr_assert_neq(q[i], q[j]);
	}
	stats(&st);
	cr_assert_eq(st.rx_packets + st.tx_packets + st.tx_errors + st.rx_short +
			     st.rx_unknown_qpn + st.forwarded,
		     0);
}

/*
 * Send a UD packet to our own @qpn over @v6 with @tos and @ttl and check what arrives (TOS and
 * TTL as the receiving socket read them from the IP header; 0 before uroce_net_want_ip_fields).
 */
static void loop_one(int v6, uint32_t qpn, int n, uint8_t tos, uint8_t ttl)
{
	static bool asked;
	struct roce_ipudp f = fabric_test_loopback(v6);
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), qpn, 0x42, 77, "hello!", 6);
	struct got *g;

	f.tos = tos;
	f.ttl = ttl;
	if (!asked && n > 1) {
		uroce_net_want_ip_fields(net);
		asked = true;
	}
	cr_assert_eq(uroce_net_send(net, &f, pkt, len), 0);
	g = wait_got(n);
	cr_assert_eq(g->len, len);
	cr_assert_arr_eq(g->roce, pkt, len, "the payload changed, ICRC included");
	cr_assert_arr_eq(g->ip.sgid, f.sgid, 16);
	cr_assert_arr_eq(g->ip.dgid, f.dgid, 16);
	cr_assert_eq(g->ip.dport, port);
	cr_assert_neq(g->ip.sport, port);
	cr_assert_neq(g->ip.sport, 0);
	cr_assert_eq(g->ip.tos, asked ? tos : 0);
	cr_assert_eq(g->ip.ttl, asked ? ttl : 0);
	cr_assert_eq(g->ip.ip_id, 0);
	cr_assert_eq(g->ip.ip_frag, v6 ? 0 : ROCE_IPV4_DF);
	/* As sent: ROCE_ICRC_OK, not a recovered ID. */
	cr_assert_eq(roce_icrc_verify(&g->ip, g->roce, g->len), ROCE_ICRC_OK);
}

static void open_24801(void)
{
	open_on(24801);
}

Test(net, loopback_ipv4_and_ipv6, .init = open_24801, .fini = close_net)
{
	struct uroce_net_stats st;
	uint32_t qpn;

	/* DSCP 26 and TTL 9; the sockets' own 0 and 64, sent without control messages (udp.c);
	 * each alone. The first datagram arrives before the sockets are asked for them. */
	static const uint8_t tos_ttl[][2] = {{0x68, 9}, {0, 64}, {0, 255}, {0x60, 64}};

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	for (int v6 = 0; v6 < 2; v6++) {
		if (v6 && !fabric_test_have_ipv6()) {
			cr_log_warn("no IPv6 on this host: only IPv4 tested");
			break;
		}
		for (size_t i = 0; i < sizeof(tos_ttl) / sizeof(tos_ttl[0]); i++)
			loop_one(v6, qpn, ngot + 1, tos_ttl[i][0], tos_ttl[i][1]);
	}
	stats(&st);
	cr_assert_eq(st.tx_packets, (uint64_t)ngot);
	cr_assert_eq(st.rx_packets, (uint64_t)ngot);
}

static void open_24802(void)
{
	open_on(24802);
}

/* QP 1 and multicast QPN go to every process, so to this one too. */
Test(net, qp1_and_multicast_are_delivered, .init = open_24802, .fini = close_net)
{
	struct roce_ipudp f = fabric_test_loopback(0);
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), ROCE_GSI_QPN, 5, 1, "cm", 2);

	cr_assert_eq(uroce_net_send(net, &f, pkt, len), 0);
	cr_assert_eq(wait_got(1)->roce[7], 1);
	len = fabric_test_ud(pkt, sizeof(pkt), ROCE_MCAST_QPN, 5, 2, "mc", 2);
	cr_assert_eq(uroce_net_send(net, &f, pkt, len), 0);
	cr_assert_eq(wait_got(2)->roce[7], 0xFF);
}

static void open_24803(void)
{
	open_on(24803);
}

Test(net, send_errors, .init = open_24803, .fini = close_net)
{
	static const uint8_t other[4] = {192, 0, 2, 1}; /* TEST-NET-1: not ours */
	struct roce_ipudp f = fabric_test_loopback(0);
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), 0x1000, 5, 1, "x", 1);
	struct uroce_net_stats st;
	uint8_t *big;

	roce_gid_from_v4(f.sgid, other);
	cr_assert_eq(uroce_net_send(net, &f, pkt, len), EADDRNOTAVAIL);
	f = fabric_test_loopback(0);
	f.dgid[10] = 0; /* ::0:7f00:1, not IPv4-mapped: families differ */
	cr_assert_eq(uroce_net_send(net, &f, pkt, len), EAFNOSUPPORT);
	f = fabric_test_loopback(0);
	cr_assert_eq(uroce_net_send(net, &f, pkt, 15), EINVAL);
	big = calloc(1, 70000);
	cr_assert_eq(uroce_net_send(net, &f, big, 65508), EMSGSIZE);
	free(big);
	if (fabric_test_have_ipv6()) {
		struct roce_ipudp g = fabric_test_loopback(1);

		g.sgid[0] = 0x20; /* 2000::1, not ours */
		cr_assert_eq(uroce_net_send(net, &g, pkt, len), EADDRNOTAVAIL);
	}
	stats(&st);
	cr_assert_eq(st.tx_errors, fabric_test_have_ipv6() ? 5 : 4);
	cr_assert_eq(st.tx_packets, 0);
}

/* Send raw bytes to the RoCEv2 port as a foreign stack would. */
static void raw_send(const void *buf, size_t len)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)len);
	close(fd);
}

/* Wait up to 5 s for @field of the statistics to reach @n. */
#define WAIT_STAT(field, n)                                                                        \
	do {                                                                                       \
		struct uroce_net_stats s_;                                                         \
		uint64_t end_ = uroce_now() + 5000 * MS;                                           \
		do {                                                                               \
			stats(&s_);                                                                \
		} while (s_.field < (n) && uroce_now() < end_ && !usleep(1000));                   \
		cr_assert_eq(s_.field, (n), #field);                                               \
	} while (0)

static void open_24804(void)
{
	open_on(24804);
}

Test(net, short_unknown_and_oversize_are_counted_and_dropped, .init = open_24804, .fini = close_net)
{
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), 0x7FF123, 5, 1, "nobody", 6);
	uint8_t *big = calloc(1, 9000);
	struct uroce_net_stats st;
	uint32_t qpn;

	raw_send("short", 5);
	raw_send(pkt, 11); /* one byte short of a BTH */
	WAIT_STAT(rx_short, 2);
	raw_send(pkt, len);
	WAIT_STAT(rx_unknown_qpn, 1);
	/* A datagram longer than any RoCE packet (the receive buffers' size). */
	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	cr_assert_not_null(big);
	fabric_test_ud(big, 9000, qpn, 5, 1, NULL, 0);
	raw_send(big, 9000);
	WAIT_STAT(rx_oversize, 1);
	free(big);
	stats(&st);
	cr_assert_eq(st.rx_packets, 0);
	cr_assert_eq(ngot, 0);
}

static void open_24805(void)
{
	open_on(24805);
}

/*
 * What the kernel puts on the wire for uroce_net_send over IPv4: a raw socket on loopback sees
 * every UDP packet. ID 0 and DF (IP_PMTUDISC_DO on an unconnected socket), so the ICRC computed
 * for ID 0 verifies against the real header.
 */
Test(net, ipv4_header_has_id_0_and_df, .init = open_24805, .fini = close_net)
{
	struct roce_ipudp f = fabric_test_loopback(0);
	uint8_t pkt[128], wire[2048];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), 0x7FF000, 5, 0xABCDE, "wire-check", 10);
	int raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
	struct timeval tv = {.tv_sec = 1};

	if (raw < 0)
		cr_skip_test("no raw socket (%s): the IPv4 header is not checked", strerror(errno));
	setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	f.ttl = 17;
	cr_assert_eq(uroce_net_send(net, &f, pkt, len), 0);
	for (;;) {
		ssize_t n = recv(raw, wire, sizeof(wire), 0);
		struct roce_ipudp w;
		const uint8_t *payload;
		size_t plen;

		cr_assert_gt(n, 0, "the datagram was not seen on loopback");
		if (roce_ipudp_parse(wire, (size_t)n, &w, &payload, &plen) != ROCE_IPUDP_OK ||
		    w.dport != port || plen != len || memcmp(payload, pkt, len - 4))
			continue;
		cr_assert_eq(wire[0], 0x45);
		cr_assert_eq(w.ip_id, 0, "IPv4 ID %#x", w.ip_id);
		cr_assert_eq(w.ip_frag, ROCE_IPV4_DF);
		cr_assert_eq(w.ttl, 17);
		cr_assert_eq(roce_icrc_verify(&w, payload, plen), ROCE_ICRC_OK);
		break;
	}
	close(raw);
}

Test(net, capture_with_pid_decodes_in_tshark)
{
	char dir[] = "/tmp/uroce-fabric-XXXXXX", pattern[128], file[128], cmd[512], line[256];
	struct roce_ipudp f4 = fabric_test_loopback(0), f6 = fabric_test_loopback(1);
	uint8_t pkt[128];
	uint32_t qpn;
	size_t len;
	int frames = 0, malformed = 0, v6 = fabric_test_have_ipv6();
	FILE *out;
	struct stat sb;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(pattern, sizeof(pattern), "%s/cap-%%p.pcap", dir);
	snprintf(file, sizeof(file), "%s/cap-%d.pcap", dir, (int)getpid());
	setenv("UROCE_UDP_PORT", "24806", 1);
	port = 24806;
	setenv("UROCE_PCAP", pattern, 1);
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
	unsetenv("UROCE_PCAP");
	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	len = fabric_test_ud(pkt, sizeof(pkt), qpn, 0x42, 1, "captured", 8);
	cr_assert_eq(uroce_net_send(net, &f4, pkt, len), 0);
	wait_got(1);
	if (v6) {
		len = fabric_test_ud(pkt, sizeof(pkt), qpn, 0x42, 2, "captured6", 9);
		cr_assert_eq(uroce_net_send(net, &f6, pkt, len), 0);
		wait_got(2);
	}
	close_net();
	cr_assert_eq(stat(file, &sb), 0, "no capture %s", file);

	/* Every frame sent and received: 2 per datagram, none malformed. */
	snprintf(cmd, sizeof(cmd),
		 "tshark --disable-heuristic rpcrdma_infiniband -o infiniband.rroce.port:24806 "
		 "-r %s -T fields -e infiniband.bth.destqp -e _ws.malformed 2>/dev/null",
		 file);
	out = popen(cmd, "r");
	cr_assert_not_null(out);
	while (fgets(line, sizeof(line), out)) {
		unsigned int destqp;

		cr_assert_eq(sscanf(line, "%x", &destqp), 1, "tshark: %s", line);
		cr_assert_eq(destqp, qpn);
		frames++;
		malformed += strchr(line, '\t') && strchr(line, '\t')[1] != '\n';
	}
	cr_assert_eq(pclose(out), 0);
	cr_assert_eq(frames, v6 ? 4 : 2);
	cr_assert_eq(malformed, 0);
	snprintf(cmd, sizeof(cmd),
		 "tshark --disable-heuristic rpcrdma_infiniband -o infiniband.rroce.port:24806 "
		 "-r %s -Y _ws.malformed 2>/dev/null",
		 file);
	out = popen(cmd, "r");
	cr_assert_not_null(out);
	cr_assert_null(fgets(line, sizeof(line), out), "malformed: %s", line);
	pclose(out);
	unlink(file);
	rmdir(dir);
}

Test(net, capture_file_that_cannot_be_opened)
{
	struct uroce_net *n = NULL;

	setenv("UROCE_UDP_PORT", "24807", 1);
	setenv("UROCE_PCAP", "/nonexistent-dir/x.pcap", 1);
	cr_assert_eq(uroce_net_open(&n, &ops, NULL), ENOENT);
	cr_assert_null(n);
}

static atomic_int burst_count;

/* The first datagram stalls the progress thread while the rest pile up. */
static void slow_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	(void)rx;
	if (atomic_fetch_add(&burst_count, 1) == 0)
		usleep(*(const int *)arg);
}

/* Blast @n datagrams at our own QPN while the first one's callback sleeps @stall_us. */
static void burst(uint16_t p, int n, int stall_us, struct uroce_net_stats *st)
{
	static const struct uroce_net_ops slow_ops = {.recv = slow_recv};
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(p)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	char s[16];
	uint8_t pkt[128];
	uint32_t qpn;
	size_t len;
	uint64_t end;

	snprintf(s, sizeof(s), "%u", p);
	setenv("UROCE_UDP_PORT", s, 1);
	cr_assert_eq(uroce_net_open(&net, &slow_ops, &stall_us), 0);
	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	len = fabric_test_ud(pkt, sizeof(pkt), qpn, 5, 1, "burst", 5);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sendto(fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)),
			     (ssize_t)len);
	end = uroce_now() + 5000 * MS;
	/* Until every datagram is accounted for, delivered or dropped; then nothing more. */
	do {
		usleep(10000);
		stats(st);
	} while (st->rx_packets + st->rx_buffers_lost < (uint64_t)n && uroce_now() < end);
	usleep(50000);
	stats(st);
	close(fd);
	close_net();
}

/* A burst of many more datagrams than receive buffers arrives while the thread is stalled. */
Test(net, burst_is_delivered_whole)
{
	struct uroce_net_stats st;

	burst(24808, 2000, 50000, &st);
	cr_assert_eq(st.rx_packets + st.rx_buffers_lost, 2000);
	cr_assert_eq(st.rx_buffers_lost, 0, "the socket buffer should hold 2000 datagrams");
}

/* A burst that overflows the socket buffer: every datagram is delivered or counted lost. */
Test(net, socket_overflow_is_counted)
{
	struct uroce_net_stats st;

	burst(24809, 40000, 400000, &st);
	cr_log_info("delivered %llu, lost %llu", (unsigned long long)st.rx_packets,
		    (unsigned long long)st.rx_buffers_lost);
	cr_assert_gt(st.rx_buffers_lost, 0);
	cr_assert_eq(st.rx_packets + st.rx_buffers_lost, 40000);
}
