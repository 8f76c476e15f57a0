/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous protocol (fabric/rdv.h) as a process other than uroce's would speak it: this
 * test connects to a hub's abstract socket and sends the records of fabric/rdv_proto.h itself,
 * checking the table, grants, claims, forwarding, the refusal of bad records, the freeing of a
 * leaving process's blocks, and what a new hub keeps after a takeover.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fabric/net.h"
#include "fabric/qpn.h"
#include "fabric/rdv_proto.h"
#include "tests/fabric/common.h"
#include "transport/wire.h"

#define TIMEOUT_MS 2000

static struct uroce_net *net;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int hub_got_qp1;

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	hub_got_qp1 += rx->roce[7] == 1 && rx->roce[6] == 0 && rx->roce[5] == 0;
	pthread_mutex_unlock(&lock);
}

static const struct uroce_net_ops ops = {.recv = on_recv};

static void open_hub(const char *port)
{
	setenv("UROCE_UDP_PORT", port, 1);
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
	cr_assert_eq(uroce_net_is_hub(net), 1);
}

static void close_hub(void)
{
	uroce_net_close(net);
	net = NULL;
}

static int rdv_connect(uint16_t port)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "uroce/%u", port);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)),
		     0, "connect: %s", strerror(errno));
	return fd;
}

static struct rdv_hdr hdr(uint16_t type)
{
	return (struct rdv_hdr){.magic = RDV_MAGIC, .version = RDV_VERSION, .type = type};
}

static void put(int fd, const void *msg, size_t len)
{
	cr_assert_eq(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* The next record (of @type unless 0), or 0 bytes at EOF; fails on timeout. */
static ssize_t get(int fd, void *buf, size_t size, uint16_t type)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		cr_assert_eq(poll(&pfd, 1, TIMEOUT_MS), 1, "no record of type %u", type);
		n = recv(fd, buf, size, 0);
		if (n <= 0 || !type || ((struct rdv_hdr *)buf)->type == type)
			return n;
	}
}

static void hello(int fd, uint64_t token)
{
	struct rdv_hello h = {.hdr = hdr(RDV_HELLO), .token = token, .pid = (uint32_t)getpid()};

	put(fd, &h, sizeof(h));
}

/* Read TABLE records until the hub has been quiet for 100 ms; count the entries per token. */
static size_t read_table(int fd, uint64_t token, size_t *total)
{
	_Alignas(8) uint8_t buf[8192];
	size_t mine = 0;

	*total = 0;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		const struct rdv_table *t = (const struct rdv_table *)buf;
		ssize_t n;

		if (poll(&pfd, 1, 100) != 1)
			return mine;
		n = recv(fd, buf, sizeof(buf), 0);
		cr_assert_geq(n, (ssize_t)sizeof(*t));
		cr_assert_eq(t->hdr.type, RDV_TABLE);
		cr_assert_eq(sizeof(*t) + t->count * sizeof(t->entry[0]), (size_t)n);
		for (uint32_t i = 0; i < t->count; i++) {
			mine += t->entry[i].token == token;
			(*total)++;
		}
	}
}

static uint32_t request(int fd)
{
	struct rdv_hdr req = hdr(RDV_REQUEST);
	struct rdv_block_msg grant;

	put(fd, &req, sizeof(req));
	cr_assert_eq(get(fd, &grant, sizeof(grant), RDV_GRANT), (ssize_t)sizeof(grant));
	cr_assert_lt(grant.block, UROCE_QPN_BLOCKS);
	return grant.block;
}

static uint32_t claim(int fd, uint32_t block)
{
	struct rdv_block_msg c = {.hdr = hdr(RDV_CLAIM), .block = block}, r;

	put(fd, &c, sizeof(c));
	cr_assert_eq(get(fd, &r, sizeof(r), RDV_CLAIMED), (ssize_t)sizeof(r));
	cr_assert_eq(r.block, block);
	return r.ok;
}

static void udp_to_port(uint16_t port, uint32_t dqpn)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	uint8_t pkt[64];
	size_t len = fabric_test_ud(pkt, sizeof(pkt), dqpn, 9, 3, "fwd", 3);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(sendto(fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)len);
	close(fd);
}

static void open_24830(void)
{
	open_hub("24830");
}

Test(rdv, table_grant_claim_and_forwarding, .init = open_24830, .fini = close_hub)
{
	const uint64_t token = 0x1234567890ull;
	_Alignas(8) uint8_t buf[256];
	const struct rdv_frame *f = (const struct rdv_frame *)buf;
	uint32_t qpn, hub_block, block;
	size_t total;
	ssize_t n;
	int fd = rdv_connect(24830);

	cr_assert_eq(uroce_net_alloc_qpn(net, &qpn), 0);
	hub_block = uroce_qpn_block(qpn);
	hello(fd, token);
	cr_assert_eq(read_table(fd, token, &total), 0);
	cr_assert_eq(total, 1, "the hub's own block");
	block = request(fd);
	cr_assert_neq(block, hub_block);
	/* The hub's block is not ours to claim; a free one is. */
	cr_assert_eq(claim(fd, hub_block), 0);
	cr_assert_eq(claim(fd, (block + 10) % UROCE_QPN_BLOCKS), 1);
	cr_assert_eq(claim(fd, block), 1);

	/* A datagram to our block arrives as FRAME, with its addresses. */
	udp_to_port(24830, block * UROCE_QPN_BLOCK_SIZE + 77);
	n = get(fd, buf, sizeof(buf), RDV_FRAME);
	cr_assert_eq(n, (ssize_t)(sizeof(*f) + ROCE_BTH_LEN + ROCE_DETH_LEN + 4 + 4));
	cr_assert_eq(f->dport, 24830);
	cr_assert_eq(f->sgid[10], 0xFF);
	cr_assert_eq(f->sgid[12], 127);
	cr_assert_eq(f->dgid[15], 1);
	cr_assert_eq(f->ttl, 64);
	cr_assert_eq(buf[sizeof(*f) + 7], 77);
	/* QP 1 goes to every process: us and the hub. */
	udp_to_port(24830, ROCE_GSI_QPN);
	n = get(fd, buf, sizeof(buf), RDV_FRAME);
	cr_assert_eq(buf[sizeof(*f) + 7], 1);
	for (int i = 0; i < 100 && !hub_got_qp1; i++)
		usleep(10000);
	cr_assert_eq(hub_got_qp1, 1);
	close(fd);

	/* Our blocks were freed when we left: a newcomer sees only the hub's. */
	fd = rdv_connect(24830);
	hello(fd, token + 1);
	usleep(50000);
	read_table(fd, token, &total);
	cr_assert_eq(total, 1);
	close(fd);
}

static void open_24831(void)
{
	open_hub("24831");
}

/* Each bad record gets the sender dropped (EOF), and the hub carries on. */
Test(rdv, bad_records_are_refused, .init = open_24831, .fini = close_hub)
{
	struct rdv_hdr req = hdr(RDV_REQUEST), bad_magic = hdr(RDV_HELLO), old = hdr(RDV_HELLO);
	struct rdv_block_msg far = {.hdr = hdr(RDV_CLAIM), .block = UROCE_QPN_BLOCKS};
	uint8_t buf[64];
	int fd;

	/* Before HELLO. */
	fd = rdv_connect(24831);
	put(fd, &req, sizeof(req));
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	/* Not this protocol. */
	fd = rdv_connect(24831);
	bad_magic.magic = 0xDEADBEEF;
	put(fd, &bad_magic, sizeof(bad_magic));
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	/* Another version: REFUSED, then EOF. */
	fd = rdv_connect(24831);
	old.version = RDV_VERSION + 1;
	put(fd, &old, sizeof(old));
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(struct rdv_hdr));
	cr_assert_eq(((struct rdv_hdr *)buf)->type, RDV_REFUSED);
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	/* A short HELLO, a token of 0, a claim outside the space, an unknown type. */
	fd = rdv_connect(24831);
	put(fd, &(struct rdv_hdr){.magic = RDV_MAGIC, .version = RDV_VERSION, .type = RDV_HELLO},
	    sizeof(struct rdv_hdr));
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	fd = rdv_connect(24831);
	hello(fd, 0);
	cr_assert_eq(get(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	fd = rdv_connect(24831);
	hello(fd, 99);
	put(fd, &far, sizeof(far));
	cr_assert_eq(get(fd, buf, sizeof(buf), RDV_CLAIMED), 0);
	close(fd);
	fd = rdv_connect(24831);
	hello(fd, 100);
	put(fd, &(struct rdv_hdr){.magic = RDV_MAGIC, .version = RDV_VERSION, .type = 999},
	    sizeof(struct rdv_hdr));
	cr_assert_eq(get(fd, buf, sizeof(buf), RDV_CLAIMED), 0);
	close(fd);
	/* Still serving. */
	fd = rdv_connect(24831);
	hello(fd, 101);
	request(fd);
	close(fd);
}

/*
 * A takeover keeps the table: a peer process is the hub, we (a fake process) and a second peer
 * join; the hub is killed; the second peer becomes hub, still lists our block (we have not
 * re-registered) and frees it, and the dead hub's, after the grace period.
 */
Test(rdv, new_hub_keeps_the_table_until_the_grace_period)
{
	const uint64_t token = 0xABCDEFull;
	struct fabric_peer a, b;
	char line[64];
	size_t total;
	int fd, hub = 0;

	cr_assert_eq(fabric_peer_start(&a, FABRIC_PEER, 24832, NULL), 0);
	cr_assert_eq(fabric_peer_expect(&a, "READY ", line, sizeof(line), TIMEOUT_MS), 0);
	cr_assert_str_eq(line + strlen(line) - 2, " 1", "%s", line);
	fd = rdv_connect(24832);
	hello(fd, token);
	read_table(fd, token, &total);
	cr_assert_eq(total, 1);
	request(fd);
	cr_assert_eq(fabric_peer_start(&b, FABRIC_PEER, 24832, NULL), 0);
	cr_assert_eq(fabric_peer_expect(&b, "READY ", line, sizeof(line), TIMEOUT_MS), 0);
	fabric_peer_kill(&a, SIGKILL);
	close(fd);
	for (int i = 0; i < 100 && !hub; i++) {
		fabric_peer_cmd(&b, "hub");
		cr_assert_eq(fabric_peer_expect(&b, "HUB ", line, sizeof(line), TIMEOUT_MS), 0);
		hub = !strcmp(line, "HUB 1");
		usleep(20000);
	}
	cr_assert(hub, "the second peer did not take over");
	/* Within the grace period: the dead hub's block, ours, and b's. */
	fd = rdv_connect(24832);
	hello(fd, token + 1);
	cr_assert_eq(read_table(fd, token, &total), 1);
	cr_assert_eq(total, 3);
	close(fd);
	usleep(2500000); /* RDV_GRACE_NS */
	fd = rdv_connect(24832);
	hello(fd, token + 2);
	cr_assert_eq(read_table(fd, token, &total), 0);
	cr_assert_eq(total, 1, "only b's block is left");
	close(fd);
	cr_assert_eq(fabric_peer_finish(&b, TIMEOUT_MS), 0);
}
