/* SPDX-License-Identifier: MIT */
/*
 * A process with a uroce network endpoint, driven line by line on stdin by the multi-process
 * tests (test_fabric_multi.c), answering on stdout:
 *   start            -> READY <qpn> <is_hub>        (a QP number is allocated at start)
 *   send <4|6> <dqpn> <psn> -> SENT <errno>        (a UD SEND Only from our QPN to @dqpn)
 *   alloc            -> QPN <qpn> <errno>
 *   hub              -> HUB <0|1>
 *   stats            -> STATS <rx> <tx> <forwarded> <short> <unknown_qpn> <lost>
 *   spawn            -> SPAWNED <pid>               (fork + exec a sleeping child)
 *   quiet            -> QUIET                       (no more RECV lines; datagrams are counted)
 *   count            -> COUNT <datagrams received>
 *   stall <ms>       -> STALL                       (the next callback sleeps that long)
 *   quit or EOF      -> BYE, after uroce_net_close()
 * and for each datagram received:
 *   RECV <src_qpn> <dest_qpn> <psn> <ok|recovered|bad ICRC> <4|6> <tos> <ttl> <dport>
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fabric/net.h"
#include "tests/fabric/common.h"
#include "transport/icrc.h"
#include "transport/wire.h"

static uint32_t my_qpn;
static atomic_int quiet, received, stall_ms;

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	static const char *const icrc_names[] = {"ok", "recovered", "bad"};
	struct roce_ipudp ip = rx->ip;
	struct roce_pkt pkt;
	enum roce_icrc_result icrc = roce_icrc_verify(&ip, rx->roce, rx->len);
	int stall = atomic_exchange(&stall_ms, 0);

	(void)arg;
	if (stall)
		usleep((useconds_t)stall * 1000);
	atomic_fetch_add(&received, 1);
	if (atomic_load(&quiet))
		return;
	if (roce_decode(rx->roce, rx->len, &pkt) != ROCE_OK) {
		printf("RECV malformed\n");
		return;
	}
	printf("RECV %u %u %u %s %d %u %u %u\n", pkt.deth.src_qpn, pkt.bth.dqpn, pkt.bth.psn,
	       icrc_names[icrc], roce_ipudp_is_v4(&ip) ? 4 : 6, ip.tos, ip.ttl, ip.dport);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

static int send_to(struct uroce_net *net, int family, uint32_t dqpn, uint32_t psn)
{
	struct roce_ipudp f = fabric_test_loopback(family == 6);
	uint8_t pkt[128];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), dqpn, my_qpn, psn, "peer", 4);

	return uroce_net_send(net, &f, pkt, len);
}

int main(void)
{
	struct uroce_net *net;
	char line[256];
	pid_t child = 0;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	err = uroce_net_open(&net, &ops, NULL);
	if (err) {
		printf("ERROR open %d\n", err);
		return 1;
	}
	err = uroce_net_alloc_qpn(net, &my_qpn);
	if (err) {
		printf("ERROR alloc %d\n", err);
		return 1;
	}
	printf("READY %u %d\n", my_qpn, uroce_net_is_hub(net));
	while (fgets(line, sizeof(line), stdin)) {
		unsigned int family, dqpn, psn;
		struct uroce_net_stats st;
		uint32_t qpn = 0;

		if (sscanf(line, "send %u %u %u", &family, &dqpn, &psn) == 3) {
			printf("SENT %d\n", send_to(net, (int)family, dqpn, psn));
		} else if (!strcmp(line, "alloc\n")) {
			err = uroce_net_alloc_qpn(net, &qpn);
			printf("QPN %u %d\n", qpn, err);
		} else if (!strcmp(line, "hub\n")) {
			printf("HUB %d\n", uroce_net_is_hub(net));
		} else if (!strcmp(line, "stats\n")) {
			uroce_net_get_stats(net, &st);
			printf("STATS %llu %llu %llu %llu %llu %llu\n",
			       (unsigned long long)st.rx_packets, (unsigned long long)st.tx_packets,
			       (unsigned long long)st.forwarded, (unsigned long long)st.rx_short,
			       (unsigned long long)st.rx_unknown_qpn,
			       (unsigned long long)st.rx_buffers_lost);
		} else if (!strcmp(line, "spawn\n")) {
			/* A child that outlives us: it must not keep our sockets (CLOEXEC). */
			child = fork();
			if (child == 0) {
				execl("/bin/sleep", "sleep", "30", (char *)NULL);
				_exit(127);
			}
			printf("SPAWNED %d\n", (int)child);
		} else if (!strcmp(line, "quiet\n")) {
			atomic_store(&quiet, 1);
			printf("QUIET\n");
		} else if (!strcmp(line, "count\n")) {
			printf("COUNT %d\n", atomic_load(&received));
		} else if (sscanf(line, "stall %u", &psn) == 1) {
			atomic_store(&stall_ms, (int)psn);
			printf("STALL\n");
		} else if (!strcmp(line, "quit\n")) {
			break;
		} else {
			printf("ERROR command %s", line);
		}
	}
	uroce_net_close(net);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	printf("BYE\n");
	return 0;
}
