/* SPDX-License-Identifier: MIT */
/*
 * Several processes on one host share the RoCEv2 port (fabric/rdv.h): helper processes
 * (tests/fabric/peer.c) open endpoints on one port and exchange UD packets over 127.0.0.1 and
 * ::1 to each other's QPNs; exactly one is the hub; a hub killed with SIGKILL is replaced and
 * traffic resumes at the same QPNs.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fabric/common.h"

#define TIMEOUT_MS 3000

struct proc {
	struct fabric_peer peer;
	unsigned int qpn;
	int hub;
};

static void start(struct proc *p, uint16_t port)
{
	char line[128];

	cr_assert_eq(fabric_peer_start(&p->peer, FABRIC_PEER, port, NULL), 0);
	cr_assert_eq(fabric_peer_expect(&p->peer, "READY ", line, sizeof(line), TIMEOUT_MS), 0,
		     "a peer did not start");
	cr_assert_eq(sscanf(line, "READY %u %d", &p->qpn, &p->hub), 2, "%s", line);
}

static int ask_hub(struct proc *p)
{
	char line[64];
	int hub = -1;

	cr_assert_eq(fabric_peer_cmd(&p->peer, "hub"), 0);
	cr_assert_eq(fabric_peer_expect(&p->peer, "HUB ", line, sizeof(line), TIMEOUT_MS), 0);
	sscanf(line, "HUB %d", &hub);
	return hub;
}

/* @from sends to @to's QPN over IPv4 (@v6 = 0) or IPv6; @to must receive it intact. */
static void exchange(struct proc *from, struct proc *to, int v6, unsigned int psn)
{
	char line[160], expect[96];

	cr_assert_eq(fabric_peer_cmd(&from->peer, "send %d %u %u", v6 ? 6 : 4, to->qpn, psn), 0);
	cr_assert_eq(fabric_peer_expect(&from->peer, "SENT ", line, sizeof(line), TIMEOUT_MS), 0);
	cr_assert_str_eq(line, "SENT 0");
	snprintf(expect, sizeof(expect), "RECV %u %u %u ", from->qpn, to->qpn, psn);
	cr_assert_eq(fabric_peer_expect(&to->peer, expect, line, sizeof(line), TIMEOUT_MS), 0,
		     "QPN %u did not receive PSN %u from %u (IPv%d)", to->qpn, psn, from->qpn,
		     v6 ? 6 : 4);
	snprintf(expect, sizeof(expect), "RECV %u %u %u ok %d ", from->qpn, to->qpn, psn,
		 v6 ? 6 : 4);
	cr_assert(!strncmp(line, expect, strlen(expect)), "%s", line);
}

static void all_pairs(struct proc *p, int n, unsigned int psn)
{
	int v6 = fabric_test_have_ipv6();

	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			if (i == j)
				continue;
			exchange(&p[i], &p[j], 0, psn++);
			if (v6)
				exchange(&p[i], &p[j], 1, psn++);
		}
	}
}

static void stop(struct proc *p)
{
	int status = fabric_peer_finish(&p->peer, TIMEOUT_MS);

	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a peer exited with status %#x",
		  status);
}

Test(multi, two_processes_one_hub_both_directions)
{
	struct proc p[2];
	char line[128];
	unsigned long long rx, tx, fwd;

	start(&p[0], 24810);
	start(&p[1], 24810);
	cr_assert_eq(p[0].hub, 1);
	cr_assert_eq(p[1].hub, 0);
	cr_assert_neq(p[0].qpn >> 12, p[1].qpn >> 12, "both QPNs in one block");
	all_pairs(p, 2, 100);
	/*
	 * Sent from the address it was sent to, a datagram for the second went straight to the
	 * second's own socket (rdv.h: uroce_rdv_direct_port), not through the first as hub.
	 */
	cr_assert_eq(fabric_peer_cmd(&p[0].peer, "stats"), 0);
	cr_assert_eq(fabric_peer_expect(&p[0].peer, "STATS ", line, sizeof(line), TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "STATS %llu %llu %llu", &rx, &tx, &fwd), 3);
	cr_assert_eq(fwd, 0, "%s", line);
	stop(&p[0]);
	stop(&p[1]);
}

Test(multi, three_started_at_once)
{
	struct proc p[3];
	unsigned int q[6];

	/* Start all, then wait: they race for the name. */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fabric_peer_start(&p[i].peer, FABRIC_PEER, 24811, NULL), 0);
	for (int i = 0; i < 3; i++) {
		char line[128];

		cr_assert_eq(
			fabric_peer_expect(&p[i].peer, "READY ", line, sizeof(line), TIMEOUT_MS),
			0);
		cr_assert_eq(sscanf(line, "READY %u %d", &p[i].qpn, &p[i].hub), 2);
	}
	cr_assert_eq(p[0].hub + p[1].hub + p[2].hub, 1, "not exactly one hub");
	for (int i = 0; i < 3; i++) {
		char line[64];

		q[i] = p[i].qpn;
		cr_assert_eq(fabric_peer_cmd(&p[i].peer, "alloc"), 0);
		cr_assert_eq(fabric_peer_expect(&p[i].peer, "QPN ", line, sizeof(line), TIMEOUT_MS),
			     0);
		cr_assert_eq(sscanf(line, "QPN %u", &q[3 + i]), 1);
	}
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < i; j++)
			cr_assert_neq(q[i], q[j], "QPN %u given twice", q[i]);
	all_pairs(p, 3, 200);
	for (int i = 0; i < 3; i++)
		stop(&p[i]);
}

/* Wait until exactly one of @n processes says it is the hub; returns its index. */
static int wait_one_hub(struct proc *p, int n)
{
	for (int round = 0; round < 100; round++) {
		int hubs = 0, which = -1;

		for (int i = 0; i < n; i++) {
			if (ask_hub(&p[i]) == 1) {
				hubs++;
				which = i;
			}
		}
		cr_assert_leq(hubs, 1, "two hubs");
		if (hubs == 1)
			return which;
		usleep(50000);
	}
	cr_assert_fail("no process took over");
	return -1;
}

/* Kill the hub (@how: SIGKILL, or 0 for a normal exit); the survivors carry on. */
static void takeover(uint16_t port, int how)
{
	struct proc p[3];
	char line[64];
	int sleeper = 0, h;
	unsigned int q[2];

	for (int i = 0; i < 3; i++)
		start(&p[i], port);
	cr_assert_eq(p[0].hub, 1);
	all_pairs(&p[1], 2, 300);
	/* A child of the hub that outlives it must not hold the port or the name. */
	cr_assert_eq(fabric_peer_cmd(&p[0].peer, "spawn"), 0);
	cr_assert_eq(fabric_peer_expect(&p[0].peer, "SPAWNED ", line, sizeof(line), TIMEOUT_MS), 0);
	sscanf(line, "SPAWNED %d", &sleeper);
	cr_assert_gt(sleeper, 0);
	if (how)
		fabric_peer_kill(&p[0].peer, how);
	else
		stop(&p[0]);
	h = wait_one_hub(&p[1], 2);
	cr_log_info("process %d took over", h + 1);
	/* Same QPNs as before: the survivors' numbers are still routed to them. */
	all_pairs(&p[1], 2, 400);
	/* New numbers are still unique across the survivors. */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fabric_peer_cmd(&p[1 + i].peer, "alloc"), 0);
		cr_assert_eq(
			fabric_peer_expect(&p[1 + i].peer, "QPN ", line, sizeof(line), TIMEOUT_MS),
			0);
		cr_assert_eq(sscanf(line, "QPN %u", &q[i]), 1);
		cr_assert_neq(q[i], p[1].qpn);
		cr_assert_neq(q[i], p[2].qpn);
	}
	cr_assert_neq(q[0], q[1]);
	kill(sleeper, SIGKILL);
	stop(&p[1]);
	stop(&p[2]);
}

Test(multi, hub_killed_survivor_takes_over)
{
	takeover(24812, SIGKILL);
}

Test(multi, hub_exits_survivor_takes_over)
{
	takeover(24813, 0);
}

/* The capture is flushed periodically: a process killed with SIGKILL leaves its frames. */
Test(multi, capture_of_a_killed_process)
{
	char dir[] = "/tmp/uroce-fabric-XXXXXX", env[128], file[128], cmd[256], line[128];
	char *envs[] = {env, NULL};
	struct proc p;
	FILE *out;
	int frames = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(env, sizeof(env), "UROCE_PCAP=%s/k-%%p.pcap", dir);
	cr_assert_eq(fabric_peer_start(&p.peer, FABRIC_PEER, 24814, envs), 0);
	cr_assert_eq(fabric_peer_expect(&p.peer, "READY ", line, sizeof(line), TIMEOUT_MS), 0);
	cr_assert_eq(sscanf(line, "READY %u %d", &p.qpn, &p.hub), 2);
	exchange(&p, &p, 0, 1);
	usleep(300000);
	fabric_peer_kill(&p.peer, SIGKILL);
	snprintf(file, sizeof(file), "%s/k-%d.pcap", dir, (int)p.peer.pid);
	snprintf(cmd, sizeof(cmd),
		 "tshark --disable-heuristic rpcrdma_infiniband -o infiniband.rroce.port:24814 -r "
		 "%s "
		 "-T fields -e infiniband.bth.destqp 2>/dev/null",
		 file);
	out = popen(cmd, "r");
	cr_assert_not_null(out);
	while (fgets(line, sizeof(line), out)) {
		unsigned int destqp = 0;

		sscanf(line, "%x", &destqp);
		cr_assert_eq(destqp, p.qpn, "%s", line);
		frames++;
	}
	cr_assert_eq(pclose(out), 0, "tshark could not read %s", file);
	cr_assert_eq(frames, 2, "%d frames, not 2: sent and received", frames);
	unlink(file);
	rmdir(dir);
}

/* Send @n datagrams to @qpn at the RoCEv2 port, as a peer host would. */
static void blast(uint16_t port, uint32_t qpn, int n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	uint8_t pkt[64];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), qpn, 9, 1, "last", 4);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sendto(fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)),
			     (ssize_t)len);
	close(fd);
}

/*
 * Datagrams for another process still queued at the hub's port when the hub exits are forwarded,
 * not lost: the hub is stalled in a callback while they arrive, then told to quit.
 */
Test(multi, hub_exit_forwards_what_is_queued)
{
	struct proc hub, other;
	char line[64];
	int count = 0;

	start(&hub, 24815);
	start(&other, 24815);
	cr_assert_eq(fabric_peer_cmd(&other.peer, "quiet"), 0);
	cr_assert_eq(fabric_peer_expect(&other.peer, "QUIET", line, sizeof(line), TIMEOUT_MS), 0);
	cr_assert_eq(fabric_peer_cmd(&hub.peer, "stall 300"), 0);
	cr_assert_eq(fabric_peer_expect(&hub.peer, "STALL", line, sizeof(line), TIMEOUT_MS), 0);
	blast(24815, hub.qpn, 1); /* the hub's progress thread sleeps in this one's callback */
	usleep(50000);
	blast(24815, other.qpn, 300);
	stop(&hub);
	for (int i = 0; i < 100 && count < 300; i++) {
		cr_assert_eq(fabric_peer_cmd(&other.peer, "count"), 0);
		cr_assert_eq(
			fabric_peer_expect(&other.peer, "COUNT ", line, sizeof(line), TIMEOUT_MS),
			0);
		sscanf(line, "COUNT %d", &count);
		usleep(20000);
	}
	cr_assert_eq(count, 300);
	stop(&other);
}
