/* SPDX-License-Identifier: MIT */
/*
 * Threads against one endpoint, without Criterion so that it also runs in a ThreadSanitizer
 * build (Criterion cannot start under TSan here). Usage: fabric_stress PEER_PROGRAM
 * (UROCE_UDP_PORT chooses the port). Exits 0 when everything checked out, else prints why.
 *
 * 1. A peer process (PEER_PROGRAM, tests/fabric/peer.c) starts first and is the hub; this
 *    process joins, and both exchange datagrams (forwarded by the hub).
 * 2. Meanwhile, in this process: two threads send to our own QPNs over IPv4 and IPv6, one arms
 *    and cancels timers that the progress thread fires, one allocates and frees QPNs, and one
 *    polls (uroce_net_poll) in bursts, so that it receives in turn with the progress thread,
 *    and one blocks in uroce_net_wait (as ibv_get_cq_event does) for 50 datagrams at a time.
 *    Callbacks must never overlap.
 * 3. The peer is killed: this process takes over as hub, and a new peer joins and exchanges.
 * From the first exchange until the new peer has joined, a thread sends multicast datagrams,
 * whose copies go to the host's other processes in the send itself (rdv.h
 * uroce_rdv_mcast_sent): to the hub, then, after the takeover, to the new peer.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/net.h"
#include "tests/fabric/common.h"
#include "transport/icrc.h"
#include "transport/wire.h"

#define SENDS_PER_THREAD 2000
#define TIMERS           64
#define MS               1000000ull

static struct uroce_net *net;
static _Atomic uint32_t my_qpn; /* read on the progress thread */
static atomic_uint received, bad_icrc, from_peer, timer_fires, overlaps, polled;
static atomic_bool inside, stop_polling, poll_steadily, stop_mcast;
static atomic_uint mcast_sent;
static _Thread_local bool is_poller, is_waiter;
static atomic_uint waited;   /* datagrams the waiting thread received */
static int wake_waiter = -1; /* an eventfd: the waiting thread stops */
static int have_v6;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fabric_stress: " __VA_ARGS__);                            \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	struct roce_ipudp ip = rx->ip;

	(void)arg;
	if (atomic_exchange(&inside, true))
		atomic_fetch_add(&overlaps, 1);
	if (is_poller)
		atomic_fetch_add(&polled, 1);
	if (is_waiter)
		atomic_fetch_add(&waited, 1);
	if (roce_icrc_verify(&ip, rx->roce, rx->len) != ROCE_ICRC_OK)
		atomic_fetch_add(&bad_icrc, 1);
	/* DETH SrcQP (bytes 17..19): ours, or the peer's. */
	if (rx->len >= ROCE_BTH_LEN + ROCE_DETH_LEN &&
	    ((uint32_t)rx->roce[17] << 16 | (uint32_t)rx->roce[18] << 8 | rx->roce[19]) != my_qpn)
		atomic_fetch_add(&from_peer, 1);
	else
		atomic_fetch_add(&received, 1);
	atomic_store(&inside, false);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

static int send_one(uint32_t dqpn, int v6, uint32_t psn)
{
	struct roce_ipudp f = fabric_test_loopback(v6);
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), dqpn, my_qpn, psn, "stress", 6);

	return uroce_net_send(net, &f, pkt, len);
}

static void *sender(void *arg)
{
	int v6 = (int)(intptr_t)arg && have_v6;

	for (uint32_t i = 0; i < SENDS_PER_THREAD; i++) {
		int err;

		/* A full socket buffer is EAGAIN/ENOBUFS: a lost packet; wait and retry. */
		while ((err = send_one(my_qpn, v6, i)) == EAGAIN || err == ENOBUFS)
			usleep(100);
		CHECK(!err, "send: %s", strerror(err));
		if (i % 256 == 0)
			usleep(1000); /* let the receiver keep up: nothing may be lost */
	}
	return NULL;
}

/* A multicast datagram every 2 ms from a loopback source (no wire: the host's members only). */
static void *mcaster(void *arg)
{
	static const uint8_t group[4] = {239, 1, 2, 4};

	(void)arg;
	for (uint32_t psn = 0; !atomic_load(&stop_mcast); psn++) {
		struct roce_ipudp f = fabric_test_loopback(0);
		uint8_t pkt[128];
		size_t len =
			fabric_test_ud(pkt, sizeof(pkt), ROCE_MCAST_QPN, my_qpn, psn, "mcast", 5);
		int err;

		roce_gid_from_v4(f.dgid, group);
		err = uroce_net_send(net, &f, pkt, len);
		CHECK(!err || err == EAGAIN || err == ENOBUFS, "multicast send: %s", strerror(err));
		atomic_fetch_add(&mcast_sent, 1);
		usleep(2000);
	}
	return NULL;
}

struct counted {
	struct uroce_timer t;
	atomic_int fired;
};

static struct counted timers[TIMERS];

static void count_fire(struct uroce_timer *t, uint64_t now)
{
	struct counted *c = (struct counted *)t;

	atomic_fetch_add(&c->fired, 1);
	atomic_fetch_add(&timer_fires, 1);
	if (atomic_load(&c->fired) % 3)
		uroce_timer_arm(net, t, now + 100000);
}

static void *timer_thread(void *arg)
{
	(void)arg;
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < TIMERS; i++)
			uroce_timer_arm(net, &timers[i].t, uroce_now() + (uint64_t)(i % 7) * 50000);
		usleep(500);
		for (int i = round % 2; i < TIMERS; i += 2)
			uroce_timer_cancel(net, &timers[i].t);
	}
	for (int i = 0; i < TIMERS; i++)
		uroce_timer_cancel(net, &timers[i].t);
	return NULL;
}

static void *qpn_thread(void *arg)
{
	uint32_t q[64];

	(void)arg;
	for (int round = 0; round < 100; round++) {
		for (int i = 0; i < 64; i++)
			CHECK(!uroce_net_alloc_qpn(net, &q[i]), "alloc_qpn");
		for (int i = 0; i < 64; i++)
			uroce_net_free_qpn(net, q[i]);
	}
	return NULL;
}

/* Busy polling in bursts, with pauses (the progress thread takes over) and explicit hand-backs. */
static void *poller(void *arg)
{
	(void)arg;
	is_poller = true;
	for (unsigned int round = 0; !atomic_load(&stop_polling); round++) {
		for (int i = 0; i < 20000; i++)
			uroce_net_poll(net);
		if (atomic_load(&poll_steadily))
			continue;
		if (round % 2)
			uroce_net_unpoll(net);
		else
			usleep(2000);
	}
	return NULL;
}

static unsigned int wait_from;

static bool fifty_more(void *arg)
{
	(void)arg;
	return atomic_load(&received) >= wait_from + 50;
}

/* Blocked in uroce_net_wait for 50 datagrams at a time, until wake_waiter is written. */
static void *waiter(void *arg)
{
	(void)arg;
	is_waiter = true;
	while (!atomic_load(&stop_polling)) {
		wait_from = atomic_load(&received);
		CHECK(!uroce_net_wait(net, wake_waiter, fifty_more, NULL), "wait");
	}
	return NULL;
}

/*
 * Whether the polling thread ever takes the receiving over while the senders run is a matter of
 * timing: a hand-over needs consecutive polls, which a loaded machine under TSan may not give
 * it, and hand-overs that end soon raise the polls the next one needs (pace_handovers in
 * fabric/progress.c) beyond what a burst of 20,000 makes. So the thread now polls without
 * pauses, and we send to ourselves, a datagram a millisecond, until it has received one.
 */
static void until_polled(void)
{
	uint64_t end = uroce_now() + 10000 * MS;

	atomic_store(&poll_steadily, true);
	for (uint32_t psn = 0; atomic_load(&polled) == 0 && uroce_now() < end; psn++) {
		int err = send_one(my_qpn, 0, psn);

		CHECK(!err || err == EAGAIN || err == ENOBUFS, "send: %s", strerror(err));
		usleep(1000);
	}
	CHECK(atomic_load(&polled) > 0, "the polling thread never received");
}

static void wait_for(atomic_uint *counter, unsigned int n, const char *what)
{
	uint64_t end = uroce_now() + 10000 * MS;

	while (atomic_load(counter) < n && uroce_now() < end)
		usleep(1000);
	CHECK(atomic_load(counter) >= n, "%s: %u of %u", what, atomic_load(counter), n);
}

/* The peer sends to us and we to it; both must arrive. */
static void exchange(struct fabric_peer *peer, unsigned int peer_qpn, unsigned int psn)
{
	unsigned int before = atomic_load(&from_peer);
	char line[160], expect[64];

	CHECK(!send_one(peer_qpn, 0, psn), "send to the peer");
	snprintf(expect, sizeof(expect), "RECV %u %u %u ok", my_qpn, peer_qpn, psn);
	CHECK(!fabric_peer_expect(peer, expect, line, sizeof(line), 5000), "the peer got nothing");
	CHECK(!fabric_peer_cmd(peer, "send 4 %u %u", my_qpn, psn + 1), "command the peer");
	wait_for(&from_peer, before + 1, "datagrams from the peer");
}

static unsigned int start_peer(struct fabric_peer *peer, const char *prog, uint16_t port, int *hub)
{
	char line[64];
	unsigned int qpn;

	CHECK(!fabric_peer_start(peer, prog, port, NULL), "start the peer");
	CHECK(!fabric_peer_expect(peer, "READY ", line, sizeof(line), 5000),
	      "the peer did not start");
	CHECK(sscanf(line, "READY %u %d", &qpn, hub) == 2, "%s", line);
	return qpn;
}

int main(int argc, char **argv)
{
	const char *port_env = getenv("UROCE_UDP_PORT");
	uint16_t port = port_env ? (uint16_t)atoi(port_env) : 0;
	pthread_t th[4], poll_th, wait_th, mcast_th;
	struct fabric_peer peer;
	unsigned int peer_qpn;
	char line[64];
	int hub, senders = 2;

	CHECK(argc == 2 && port, "usage: UROCE_UDP_PORT=N fabric_stress PEER_PROGRAM");
	have_v6 = fabric_test_have_ipv6();
	peer_qpn = start_peer(&peer, argv[1], port, &hub);
	CHECK(hub == 1, "the first peer is not the hub");
	CHECK(!uroce_net_open(&net, &ops, NULL), "open");
	CHECK(!uroce_net_is_hub(net), "two hubs");
	uint32_t qpn;

	CHECK(!uroce_net_alloc_qpn(net, &qpn), "alloc");
	atomic_store(&my_qpn, qpn);
	for (int i = 0; i < TIMERS; i++)
		timers[i].t.fire = count_fire;

	wake_waiter = eventfd(0, EFD_CLOEXEC);
	CHECK(wake_waiter >= 0, "eventfd");
	pthread_create(&poll_th, NULL, poller, NULL);
	pthread_create(&wait_th, NULL, waiter, NULL);
	pthread_create(&th[0], NULL, sender, (void *)0);
	pthread_create(&th[1], NULL, sender, (void *)1);
	pthread_create(&th[2], NULL, timer_thread, NULL);
	pthread_create(&th[3], NULL, qpn_thread, NULL);
	exchange(&peer, peer_qpn, 1000);
	/* The peer counts the multicast datagrams without a line for each (peer.c: quiet). */
	CHECK(!fabric_peer_cmd(&peer, "quiet"), "command the peer");
	CHECK(!fabric_peer_expect(&peer, "QUIET", line, sizeof(line), 5000),
	      "the peer is not quiet");
	pthread_create(&mcast_th, NULL, mcaster, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	wait_for(&received, senders * SENDS_PER_THREAD, "datagrams to ourselves");
	CHECK(atomic_load(&bad_icrc) == 0, "%u bad ICRCs", atomic_load(&bad_icrc));
	CHECK(atomic_load(&timer_fires) > 0, "no timer fired");
	until_polled();
	/* The hub had our multicast datagrams (besides the exchange's one). */
	CHECK(!fabric_peer_cmd(&peer, "count"), "command the peer");
	CHECK(!fabric_peer_expect(&peer, "COUNT ", line, sizeof(line), 5000), "no count");
	CHECK(atomic_load(&mcast_sent) > 1 && strtoul(line + 6, NULL, 10) > 1,
	      "the hub got none of %u multicast datagrams", atomic_load(&mcast_sent));

	/* The hub goes: we take over, and serve a newcomer. */
	fabric_peer_kill(&peer, SIGKILL);
	for (int i = 0; i < 500 && !uroce_net_is_hub(net); i++)
		usleep(10000);
	CHECK(uroce_net_is_hub(net), "no takeover");
	peer_qpn = start_peer(&peer, argv[1], port, &hub);
	CHECK(hub == 0, "the new peer is a hub too");
	CHECK(peer_qpn != my_qpn, "QPN %u given twice", my_qpn);
	atomic_store(&stop_mcast, true);
	pthread_join(mcast_th, NULL);
	CHECK(atomic_load(&mcast_sent) > 0, "no multicast sent");
	exchange(&peer, peer_qpn, 2000);
	CHECK(fabric_peer_finish(&peer, 5000) == 0, "the peer did not exit cleanly");
	atomic_store(&stop_polling, true);
	pthread_join(poll_th, NULL);
	CHECK(eventfd_write(wake_waiter, 1) == 0, "wake the waiting thread");
	pthread_join(wait_th, NULL);
	CHECK(atomic_load(&overlaps) == 0, "callbacks overlapped %u times", atomic_load(&overlaps));
	uroce_net_close(net);
	printf("fabric_stress: ok: %u datagrams (%u by the polling thread, %u by the waiting one), "
	       "%u timer callbacks\n",
	       atomic_load(&received), atomic_load(&polled), atomic_load(&waited),
	       atomic_load(&timer_fires));
	return 0;
}
