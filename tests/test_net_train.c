/* SPDX-License-Identifier: MIT */
/*
 * uroce_net_send_train (fabric/net.h): a message's packets leave as UDP GSO sends, cut by the
 * kernel, each with the ICRC of the IPv4 ID the kernel gives it, so that a receiver that checks
 * ICRCs as hardware does (with the real ID) accepts every one; runs of other lengths and a
 * shorter last packet; and the capture shows each packet with that ID. An ACK ahead of requests
 * for a process of this host travels behind them, in their GSO send, and is taken first.
 * Payloads left in the sender's memory (gaps) are gathered by the send, not copied.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/net.h"
#include "transport/icrc.h"
#include "transport/wire.h"

enum { MAXGOT = 200, PORT = 24870 };

struct got {
	struct roce_ipudp ip;
	uint8_t roce[4200];
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct got got[MAXGOT];
static int ngot;
static struct uroce_net *net;

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	if (ngot < MAXGOT && rx->len <= sizeof(got[0].roce)) {
		got[ngot].ip = rx->ip;
		got[ngot].len = rx->len;
		memcpy(got[ngot].roce, rx->roce, rx->len);
		ngot++;
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

static void wait_got(int n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&lock);
	while (ngot < n && pthread_cond_timedwait(&cond, &lock, &ts) == 0)
		;
	pthread_mutex_unlock(&lock);
	cr_assert_eq(ngot, n, "%d datagrams of %d arrived", ngot, n);
}

static void setup(void)
{
	char s[16];

	snprintf(s, sizeof(s), "%u", PORT);
	setenv("UROCE_UDP_PORT", s, 1);
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
}

static void teardown(void)
{
	uroce_net_close(net);
}

TestSuite(net_train, .init = setup, .fini = teardown, .timeout = 30);

/* A UD SEND ONLY packet of @len bytes to @qpn, numbered @i in its DETH source QP. */
static size_t put_pkt(uint8_t *p, size_t len, uint32_t qpn, uint32_t i)
{
	struct roce_pkt pkt = {0};
	size_t hdr = ROCE_BTH_LEN + ROCE_DETH_LEN;

	pkt.bth.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY;
	pkt.bth.pkey = ROCE_DEFAULT_PKEY;
	pkt.bth.dqpn = qpn;
	pkt.bth.psn = i;
	pkt.deth.qkey = 0x1234;
	pkt.deth.src_qpn = i;
	pkt.payload_len = len - hdr - ROCE_ICRC_LEN;
	roce_encode_hdrs(p, hdr, &pkt);
	memset(p + hdr, (int)i, pkt.payload_len);
	return len;
}

/* Every packet arrived once, in order, intact, and its ICRC holds with the ID the kernel gave. */
static void check(const uint16_t *lens, int n, const uint16_t *ids)
{
	wait_got(n);
	for (int i = 0; i < n; i++) {
		struct roce_ipudp f = got[i].ip;

		cr_assert_eq(got[i].len, lens[i], "packet %d: %zu bytes", i, got[i].len);
		cr_assert_eq(got[i].roce[ROCE_BTH_LEN + ROCE_DETH_LEN], (uint8_t)i);
		/* What a hardware receiver does: the ICRC with the IPv4 header as received. */
		f.ip_id = ids[i];
		cr_assert_eq(roce_icrc_verify(&f, got[i].roce, got[i].len), ROCE_ICRC_OK,
			     "packet %d: the ICRC is not that of IPv4 ID %u", i, ids[i]);
	}
}

static void send_train(const uint16_t *lens, int n)
{
	static uint8_t buf[1 << 17];
	struct roce_ipudp f = {0};
	uint8_t lo[4] = {127, 0, 0, 1};
	uint32_t qpn;
	size_t off = 0;

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	for (int i = 0; i < n; i++)
		off += put_pkt(buf + off, lens[i], qpn, (uint32_t)i);
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, lo);
	f.ttl = 64;
	cr_assert_eq(uroce_net_send_train(net, &f, buf, lens, NULL, (unsigned int)n), 0);
}

Test(net_train, one_gso_run_with_a_shorter_last)
{
	uint16_t lens[12], ids[12];

	for (int i = 0; i < 11; i++) {
		lens[i] = 4136;
		ids[i] = (uint16_t)i;
	}
	lens[11] = 1000;
	ids[11] = 11;
	send_train(lens, 12);
	check(lens, 12, ids);
}

/* A shorter packet ends a run; the next starts a new one, its IDs from 0 again. */
Test(net_train, runs_of_other_lengths)
{
	const uint16_t lens[] = {1100, 1084, 1084, 1084, 500, 1084, 1084, 60};
	const uint16_t ids[] = {0, 1, 0, 1, 2, 0, 1, 2};

	send_train(lens, 8);
	check(lens, 8, ids);
}

/* More than a GSO send may carry (65,000 bytes): several runs. */
Test(net_train, longer_than_one_gso_send)
{
	uint16_t lens[100], ids[100];

	for (int i = 0; i < 100; i++) {
		lens[i] = 1084;
		ids[i] = (uint16_t)(i % 59); /* 59 * 1084 bytes fit in 65000 */
	}
	send_train(lens, 100);
	check(lens, 100, ids);
}

/* An RC packet @op of @len bytes to @qpn, PSN @psn, its payload (if any) filled with @psn. */
static size_t put_rc(uint8_t *p, uint8_t op, size_t len, uint32_t qpn, uint32_t psn)
{
	struct roce_pkt pkt = {0};
	size_t hdr = roce_opcode(op)->hdr_len;

	pkt.bth.opcode = op;
	pkt.bth.pkey = ROCE_DEFAULT_PKEY;
	pkt.bth.dqpn = qpn;
	pkt.bth.psn = psn;
	pkt.payload_len = (uint32_t)(len - hdr - ROCE_ICRC_LEN);
	roce_encode_hdrs(p, hdr, &pkt);
	memset(p + hdr, (int)psn, pkt.payload_len);
	return len;
}

/*
 * Send [ACK][SEND][SEND] (PSNs 7, 8, 9) from 127.0.0.1 to 127.0.0.@dst_host and check that
 * they arrive ACK first, each whole, its ICRC that of the IPv4 ID ids[i].
 */
static void ack_train(uint8_t dst_host, const uint16_t ids[3])
{
	static uint8_t buf[256];
	const uint16_t lens[] = {20, 36, 36};
	struct roce_ipudp f = {0};
	uint8_t lo[4] = {127, 0, 0, 1}, dst[4] = {127, 0, 0, dst_host};
	uint32_t qpn;
	size_t off = 0;

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	off += put_rc(buf + off, ROCE_TR_RC | ROCE_OP_ACK, lens[0], qpn, 7);
	off += put_rc(buf + off, ROCE_TR_RC | ROCE_OP_SEND_ONLY, lens[1], qpn, 8);
	put_rc(buf + off, ROCE_TR_RC | ROCE_OP_SEND_ONLY, lens[2], qpn, 9);
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, dst);
	f.ttl = 64;
	cr_assert_eq(uroce_net_send_train(net, &f, buf, lens, NULL, 3), 0);
	wait_got(3);
	for (int i = 0; i < 3; i++) {
		struct roce_ipudp g = got[i].ip;

		cr_assert_eq(got[i].len, lens[i], "packet %d: %zu bytes", i, got[i].len);
		cr_assert_eq(got[i].roce[0],
			     i ? ROCE_TR_RC | ROCE_OP_SEND_ONLY : ROCE_TR_RC | ROCE_OP_ACK,
			     "packet %d: opcode %#x", i, got[i].roce[0]);
		cr_assert_eq(roce_get24(got[i].roce + 9), 7u + (unsigned int)i, "packet %d", i);
		g.ip_id = ids[i];
		cr_assert_eq(roce_icrc_verify(&g, got[i].roce, got[i].len), ROCE_ICRC_OK,
			     "packet %d: the ICRC is not that of IPv4 ID %u", i, ids[i]);
	}
}

/*
 * [ACK][SEND][SEND] to this very process (direct delivery): one GSO send of the SENDs and then
 * the ACK (wire.h: roce_train_ack_last), taken ACK first (roce_datagram_acks_first). The IPv4
 * IDs the receiver saw tell the datagram's layout: 2 for the ACK, the third of one send.
 */
Test(net_train, an_ack_rides_behind_requests_to_this_host_and_is_taken_first)
{
	ack_train(1, (const uint16_t[]){2, 0, 1});
}

/*
 * The same train to another host (here another loopback address, which the rendezvous does
 * not count as this host's): the ACK leaves first, a datagram of its own (IPv4 ID 0), then
 * the SENDs in one GSO send (IDs 0 and 1), as another RoCE stack may take packets in the order
 * they come (net_tx.c: ack_last).
 */
Test(net_train, an_ack_to_another_host_leaves_first)
{
	ack_train(2, (const uint16_t[]){0, 0, 1});
}

/*
 * A train of @n packets of @len bytes whose payloads are in @src (packet i's filled with i),
 * not in the buffer, which holds 0xA5 there; sent with those gaps. Returns the buffer.
 */
static uint8_t *send_gapped(uint16_t *lens, int n, uint16_t len, uint8_t (*src)[1100])
{
	static uint8_t buf[1 << 17];
	static struct roce_pkt_gap gaps[MAXGOT];
	const uint16_t hdr = ROCE_BTH_LEN + ROCE_DETH_LEN;
	struct roce_ipudp f = {0};
	uint8_t lo[4] = {127, 0, 0, 1};
	uint32_t qpn;
	size_t off = 0;

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	for (int i = 0; i < n; i++) {
		lens[i] = len;
		put_pkt(buf + off, len, qpn, (uint32_t)i);
		gaps[i] = (struct roce_pkt_gap){
			.src = src[i], .off = hdr, .len = (uint16_t)(len - hdr - ROCE_ICRC_LEN)};
		memcpy(src[i], buf + off + hdr, gaps[i].len);
		memset(buf + off + hdr, 0xA5, gaps[i].len);
		off += len;
	}
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, lo);
	f.ttl = 64;
	cr_assert_eq(uroce_net_send_train(net, &f, buf, lens, gaps, (unsigned int)n), 0);
	return buf;
}

/* Every byte of each payload arrived, and the buffer's gap of packet @i holds @expect. */
static void check_gapped(const uint8_t *buf, const uint16_t *lens, int n, int i, uint8_t expect)
{
	const uint16_t hdr = ROCE_BTH_LEN + ROCE_DETH_LEN;

	for (int j = 0; j < n; j++)
		for (size_t k = hdr; k < (size_t)lens[j] - ROCE_ICRC_LEN; k++)
			cr_assert_eq(got[j].roce[k], (uint8_t)j, "packet %d, byte %zu", j, k);
	cr_assert_eq(buf[(size_t)i * lens[0] + hdr], expect, "the gap of packet %d", i);
}

/*
 * A train of @n gapped packets of @len bytes, @per to a GSO run: each arrives whole with the
 * ICRC of its IPv4 ID, and the buffer's gaps of the first and last packets hold @first and
 * @last afterwards (0xA5: never written, no copy).
 */
static void gapped_train(int n, uint16_t len, int per, uint8_t first, uint8_t last)
{
	static uint8_t src[MAXGOT][1100];
	uint16_t lens[MAXGOT], ids[MAXGOT];
	const uint8_t *buf;

	for (int i = 0; i < n; i++)
		ids[i] = (uint16_t)(i % per);
	buf = send_gapped(lens, n, len, src);
	check(lens, n, ids);
	check_gapped(buf, lens, n, 0, first);
	check_gapped(buf, lens, n, n - 1, last);
}

/* Two GSO runs (59 packets of 1084 bytes fit in one) gathered from the payloads' own memory. */
Test(net_train, payloads_left_in_memory_are_gathered)
{
	gapped_train(100, 1084, 59, 0xA5, 0xA5);
}

/*
 * More pieces than one sendmmsg gathers (three runs of 64 packets or fewer, each packet two
 * pieces): the runs that do not fit are copied whole first, and every packet arrives right.
 */
Test(net_train, gaps_beyond_the_pieces_of_one_send_are_copied)
{
	gapped_train(150, 300, 64, 0xA5, 149);
}
