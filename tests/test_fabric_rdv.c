/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous protocol (fabric/rdv.h) as a process other than uroce's would speak it: this
 * test connects to a hub's abstract socket and sends the records of fabric/rdv_proto.h itself,
 * checking the table, grants, claims, forwarding, the CM directory (bindings, routing of CM
 * MADs, the host's answers), the refusal of bad records, the freeing of a leaving process's
 * blocks, and what a new hub keeps after a takeover.
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

#include "cm/route.h"
#include "fabric/net.h"
#include "fabric/qpn.h"
#include "fabric/rdv_proto.h"
#include "tests/fabric/common.h"
#include "transport/wire.h"

#define TIMEOUT_MS 2000

static struct uroce_net *net;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int hub_got_qp1;
static uint8_t hub_last_mad[CM_MAD_LEN]; /* the last whole MAD to QP 1 the hub took */

static void on_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	if (rx->roce[7] == 1 && rx->roce[6] == 0 && rx->roce[5] == 0) {
		hub_got_qp1++;
		if (rx->len >= ROCE_BTH_LEN + ROCE_DETH_LEN + CM_MAD_LEN)
			memcpy(hub_last_mad, rx->roce + ROCE_BTH_LEN + ROCE_DETH_LEN, CM_MAD_LEN);
	}
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
	/* To QP 1 but no CM MAD: the hub's own GSI has it (and drops it). */
	udp_to_port(24830, ROCE_GSI_QPN);
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

/* A SERVICE request of the fake process on @fd: the hub's answer's error; *@port its port. */
static int service(int fd, uint32_t seq, uint16_t op, uint16_t port, uint16_t *bound)
{
	static const uint8_t lo[16] = {[10] = 0xff, 0xff, 127, 0, 0, 1};
	struct rdv_service_msg m = {.hdr = hdr(RDV_SERVICE),
				    .seq = seq,
				    .op = op,
				    .ps = CM_PS_TCP,
				    .port = port},
			       done;

	memcpy(m.gid, lo, 16);
	put(fd, &m, sizeof(m));
	cr_assert_eq(get(fd, &done, sizeof(done), RDV_SERVICE_DONE), (ssize_t)sizeof(done));
	cr_assert_eq(done.seq, seq);
	if (bound)
		*bound = done.port;
	return done.err;
}

/* The fake process on @fd says a connection is established (@up) or no longer is. */
static void conn_note(int fd, bool up, uint32_t local_id, uint32_t remote_id)
{
	static const uint8_t lo[16] = {[10] = 0xff, 0xff, 127, 0, 0, 1};
	struct rdv_conn_msg m = {.hdr = hdr(RDV_CONN),
				 .up = up,
				 .local_id = local_id,
				 .remote_id = remote_id,
				 .remote_qpn = 0x99};

	memcpy(m.sgid, lo, 16);
	memcpy(m.dgid, lo, 16);
	put(fd, &m, sizeof(m));
}

/* The hub sends a CM message to QP 1 of this host (127.0.0.1 -> 127.0.0.1). */
/* The hub sends @m from and to @gid. */
static void send_cm_at(struct cm_msg *m, const uint8_t gid[16])
{
	uint8_t mad[CM_MAD_LEN];

	cr_assert_eq(cm_encode(m, mad), CM_MAD_LEN);
	cr_assert_eq(uroce_net_send_mad(net, gid, gid, 0, 64, mad), 0);
}

static void send_cm(struct cm_msg *m)
{
	static const uint8_t lo[16] = {[10] = 0xff, 0xff, 127, 0, 0, 1};

	send_cm_at(m, lo);
}

/* The hub's own GSI got MAD number @n (waiting for it); it decodes into @m. */
static void hub_got(int n, struct cm_msg *m)
{
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&lock);
		if (hub_got_qp1 >= n) {
			cr_assert_eq(cm_decode(hub_last_mad, CM_MAD_LEN, m), CM_OK);
			pthread_mutex_unlock(&lock);
			return;
		}
		pthread_mutex_unlock(&lock);
		usleep(10000);
	}
	cr_assert_fail("the hub got no MAD number %d", n);
}

static void open_24833(void)
{
	open_hub("24833");
}

/*
 * The CM directory: a (fake) process binds and listens; the hub routes a REQ to it by service
 * ID and a REP by the tag of its comm ID, answers a REQ nobody listens for with REJ 8, a REQ
 * for the listener's service at an address it does not listen on with REJ 28, and a
 * DREQ for nobody with DREP (both to the hub itself, whose comm IDs they carry), refuses
 * overlapping bindings, and when the process dies sends a DREQ for each connection it had
 * established and frees its bindings.
 */
Test(rdv, cm_directory_binds_and_routes, .init = open_24833, .fini = close_hub)
{
	const uint32_t hub_tag = uroce_net_comm_tag(net);
	struct uroce_service mine = {.ps = CM_PS_TCP,
				     .port = 0x4853,
				     .gid = {[10] = 0xff, 0xff, 127, 0, 0, 1}},
			     any = {.ps = CM_PS_TCP, .port = 0x4853, .gid = {[10] = 0xff, 0xff}};
	_Alignas(8) uint8_t buf[512];
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, 1)};
	uint16_t port;
	uint32_t block;
	int fd = rdv_connect(24833);

	hello(fd, 0x5EED);
	read_table(fd, 0x5EED, &(size_t){0});
	block = request(fd);
	cr_assert_eq(service(fd, 1, UROCE_SERVICE_BIND, 0x4853, &port), 0);
	cr_assert_eq(port, 0x4853);
	cr_assert_eq(service(fd, 2, UROCE_SERVICE_BIND, 0x4853, NULL), EADDRINUSE);
	cr_assert_eq(service(fd, 3, UROCE_SERVICE_BIND, 0, &port), 0);
	cr_assert(port >= 32768 && port <= 60999, "ephemeral port %u", port);
	cr_assert_eq(service(fd, 4, UROCE_SERVICE_LISTEN, 0x4853, NULL), 0);
	cr_assert_eq(service(fd, 5, UROCE_SERVICE_LISTEN, 9, NULL), EINVAL);
	/* The hub's own bindings meet the process's: the same address or the wildcard. */
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &mine), EADDRINUSE);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any), EADDRNOTAVAIL);

	/* REQ to the listener's service: to the process. */
	m.u.req.local_comm_id = cm_comm_id(hub_tag, 7);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 0x4853);
	send_cm(&m);
	cr_assert_eq(get(fd, buf, sizeof(buf), RDV_FRAME),
		     (ssize_t)(sizeof(struct rdv_frame) + ROCE_BTH_LEN + ROCE_DETH_LEN +
			       CM_MAD_LEN + ROCE_ICRC_LEN));
	/* REP naming the process's comm ID: to the process. */
	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_REP, 2);
	m.u.rep.local_comm_id = cm_comm_id(hub_tag, 8);
	m.u.rep.remote_comm_id = cm_comm_id(block, 9);
	send_cm(&m);
	cr_assert_eq(get(fd, buf, sizeof(buf), RDV_FRAME) > 0, 1);
	cr_assert_eq(cm_route_of(buf + sizeof(struct rdv_frame) + ROCE_BTH_LEN + ROCE_DETH_LEN,
				 CM_MAD_LEN)
			     .comm_id,
		     cm_comm_id(block, 9));

	/* REQ to a service nobody listens on: REJ 8, back to the sender (the hub). */
	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_REQ, 3);
	m.u.req.local_comm_id = cm_comm_id(hub_tag, 10);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 0x9999);
	send_cm(&m);
	hub_got(1, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_REJ);
	cr_assert_eq(m.hdr.tid, 3);
	cr_assert_eq(m.u.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	cr_assert_eq(m.u.rej.remote_comm_id, cm_comm_id(hub_tag, 10));
	/* REQ to the listener's service at ::1, where it does not listen: REJ 28, as the
	 * kernel's rdma_cm answers when no id of the service matches the address. */
	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_REQ, 5);
	m.u.req.local_comm_id = cm_comm_id(hub_tag, 13);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 0x4853);
	send_cm_at(&m, (const uint8_t[16]){[15] = 1});
	hub_got(2, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_REJ);
	cr_assert_eq(m.hdr.tid, 5);
	cr_assert_eq(m.u.rej.reason, CM_REJ_CONSUMER);
	/* DREQ for a block nobody holds: DREP. */
	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_DREQ, 4);
	m.u.dreq.local_comm_id = cm_comm_id(hub_tag, 11);
	m.u.dreq.remote_comm_id = cm_comm_id((block + 100) % UROCE_QPN_BLOCKS, 12);
	send_cm(&m);
	hub_got(3, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_DREP);
	cr_assert_eq(m.u.drep.remote_comm_id, cm_comm_id(hub_tag, 11));

	/* Two connections established, one of them closed again; then the process dies: the
	 * hub sends a DREQ for the other one on its behalf, to its peer (the hub itself). */
	conn_note(fd, true, cm_comm_id(block, 20), cm_comm_id(hub_tag, 21));
	conn_note(fd, true, cm_comm_id(block, 22), cm_comm_id(hub_tag, 23));
	conn_note(fd, false, cm_comm_id(block, 22), cm_comm_id(hub_tag, 23));
	usleep(50000);
	close(fd);
	hub_got(4, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_DREQ);
	cr_assert_eq(m.u.dreq.local_comm_id, cm_comm_id(block, 20));
	cr_assert_eq(m.u.dreq.remote_comm_id, cm_comm_id(hub_tag, 21));
	cr_assert_eq(m.u.dreq.remote_qpn, 0x99);
	usleep(200000);
	pthread_mutex_lock(&lock);
	cr_assert_eq(hub_got_qp1, 4, "a DREQ for the connection that was closed");
	pthread_mutex_unlock(&lock);

	/* Its port is free for the hub. */
	for (int i = 0; i < 100 && uroce_net_service(net, UROCE_SERVICE_BIND, &mine); i++)
		usleep(10000);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any), EADDRNOTAVAIL);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_UNBIND, &mine), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any), 0);
}

static void open_24834(void)
{
	open_hub("24834");
}

/* rdma_set_option's REUSEADDR and AFONLY in the directory, as the kernel's cma_check_port. */
Test(rdv, cm_directory_reuseaddr_and_afonly, .init = open_24834, .fini = close_hub)
{
	struct uroce_service a = {.ps = CM_PS_UDP,
				  .port = 5000,
				  .gid = {[10] = 0xff, 0xff, 127, 0, 0, 1},
				  .flags = UROCE_SERVICE_REUSEADDR},
			     b = a, any6 = {.ps = CM_PS_UDP, .port = 5000}, any4 = any6;

	any4.gid[10] = any4.gid[11] = 0xff;
	/* Two REUSEADDR bindings share the port until one listens. */
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &a), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &b), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_LISTEN, &a), EADDRINUSE);
	b.flags = 0;
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &b), EADDRINUSE);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_UNBIND, &a), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_UNBIND, &a), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &b), 0, "both unbound");
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_LISTEN, &b), 0);
	a.flags = UROCE_SERVICE_REUSEADDR;
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &a), EADDRINUSE, "b listens");
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_UNBIND, &b), 0);
	/* AFONLY: the IPv4 and IPv6 wildcards coexist only if both have it. */
	any4.flags = UROCE_SERVICE_AFONLY;
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any4), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any6), EADDRNOTAVAIL);
	any6.flags = UROCE_SERVICE_AFONLY;
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &any6), 0);
	cr_assert_eq(uroce_net_service(net, UROCE_SERVICE_BIND, &a), EADDRNOTAVAIL,
		     "any4 holds it");
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

/*
 * After a takeover, a connection request for a service nobody listens on yet is held, not
 * rejected: the other processes are registering their listens with the new hub again. A peer
 * is the hub, we join and it dies; we take over. A REQ for a service arrives before the (fake)
 * process listening on it has registered: nothing is answered; once it registers, the REQ is
 * forwarded to it. A REQ for a service nobody ever registers is answered with REJ 8 when the
 * hold ends.
 */
Test(rdv, new_hub_holds_requests_until_listens_register, .fini = close_hub)
{
	const uint64_t token = 0x4E1Dull;
	_Alignas(8) uint8_t buf[512];
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, 1)};
	struct fabric_peer a;
	char line[64];
	int fd;

	cr_assert_eq(fabric_peer_start(&a, FABRIC_PEER, 24835, NULL), 0);
	cr_assert_eq(fabric_peer_expect(&a, "READY ", line, sizeof(line), TIMEOUT_MS), 0);
	setenv("UROCE_UDP_PORT", "24835", 1);
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), 0);
	cr_assert_eq(uroce_net_is_hub(net), 0);
	fabric_peer_kill(&a, SIGKILL);
	for (int i = 0; i < 200 && !uroce_net_is_hub(net); i++)
		usleep(10000);
	cr_assert_eq(uroce_net_is_hub(net), 1, "we did not take over");

	m.u.req.local_comm_id = cm_comm_id(uroce_net_comm_tag(net), 7);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 0x4854);
	send_cm(&m);
	memset(&m, 0, sizeof(m));
	m.hdr = cm_hdr(CM_ATTR_REQ, 2);
	m.u.req.local_comm_id = cm_comm_id(uroce_net_comm_tag(net), 8);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, 0x9998);
	send_cm(&m);

	/* Within the hold (no TABLE read: service() skips those records). */
	fd = rdv_connect(24835);
	hello(fd, token);
	cr_assert_eq(service(fd, 1, UROCE_SERVICE_BIND, 0x4854, NULL), 0);
	cr_assert_eq(service(fd, 2, UROCE_SERVICE_LISTEN, 0x4854, NULL), 0);
	cr_assert_eq(get(fd, buf, sizeof(buf), RDV_FRAME) > 0, 1, "the held REQ was not forwarded");
	cr_assert_eq(cm_route_of(buf + sizeof(struct rdv_frame) + ROCE_BTH_LEN + ROCE_DETH_LEN,
				 CM_MAD_LEN)
			     .service_id,
		     cm_service_id(CM_PS_TCP, 0x4854));
	pthread_mutex_lock(&lock);
	cr_assert_eq(hub_got_qp1, 0, "a request was rejected during the hold");
	pthread_mutex_unlock(&lock);

	/* The other one: REJ 8 when the hold ends (RDV_HOLD_NS, 500 ms after the takeover). */
	for (int i = 0; i < 300; i++) {
		pthread_mutex_lock(&lock);
		if (hub_got_qp1) {
			pthread_mutex_unlock(&lock);
			break;
		}
		pthread_mutex_unlock(&lock);
		usleep(10000);
	}
	hub_got(1, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_REJ);
	cr_assert_eq(m.hdr.tid, 2);
	cr_assert_eq(m.u.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	close(fd);
}

static void open_24836(void)
{
	open_hub("24836");
}

/* Whether the fake process on @fd gets a frame within @ms (records of other types skipped). */
static bool frame_within(int fd, int ms)
{
	_Alignas(8) uint8_t buf[512];

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		if (poll(&pfd, 1, ms) != 1)
			return false;
		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			return false;
		if (((struct rdv_hdr *)buf)->type == RDV_FRAME)
			return true;
	}
}

static uint64_t ms_now(void)
{
	return uroce_now() / 1000000u;
}

/* The hub sends a REQ numbered @tid for TCP port @port of this host. */
static void send_req(uint64_t tid, uint16_t port, uint32_t id)
{
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, tid)};

	m.u.req.local_comm_id = cm_comm_id(uroce_net_comm_tag(net), id);
	m.u.req.service_id = cm_service_id(CM_PS_TCP, port);
	send_cm(&m);
}

/*
 * The hub sends REQ @tid for @port and gets REJ 8 back as the @n-th MAD to its own GSI: the
 * milliseconds that took.
 */
static uint64_t rej8_after(int n, uint64_t tid, uint16_t port)
{
	uint64_t t0 = ms_now();
	struct cm_msg m;

	send_req(tid, port, (uint32_t)tid);
	hub_got(n, &m);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_REJ);
	cr_assert_eq(m.hdr.tid, tid);
	cr_assert_eq(m.u.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	return ms_now() - t0;
}

/*
 * A REQ waits for its listener when one is probably on its way (fabric/rdv_int.h,
 * rdv_held_req): for a service bound but not yet listening (qperf sends its port before it
 * listens), and for one whose listener closed a moment ago (programs that listen anew for each
 * connection); it is forwarded when the listen registers, or rejected with REJ 8 when the wait
 * ends (RDV_LISTEN_WAIT_NS, 500 ms). A REQ for a service nobody bound or listened on is
 * rejected at once.
 */
Test(rdv, requests_wait_for_a_listener_on_its_way, .init = open_24836, .fini = close_hub)
{
	int fd = rdv_connect(24836);

	hello(fd, 0x3A17);
	read_table(fd, 0x3A17, &(size_t){0});
	/* Bound, then listening. */
	cr_assert_eq(service(fd, 1, UROCE_SERVICE_BIND, 0x4860, NULL), 0);
	send_req(1, 0x4860, 1);
	cr_assert_not(frame_within(fd, 100), "a REQ reached a service that does not listen");
	pthread_mutex_lock(&lock);
	cr_assert_eq(hub_got_qp1, 0, "the REQ for a bound service was rejected");
	pthread_mutex_unlock(&lock);
	cr_assert_eq(service(fd, 2, UROCE_SERVICE_LISTEN, 0x4860, NULL), 0);
	cr_assert(frame_within(fd, TIMEOUT_MS), "the held REQ did not reach the listener");
	/* The listener closes; a REQ comes before the service listens again. */
	cr_assert_eq(service(fd, 3, UROCE_SERVICE_UNBIND, 0x4860, NULL), 0);
	send_req(2, 0x4860, 2);
	cr_assert_not(frame_within(fd, 100), "a REQ reached a closed listener");
	cr_assert_eq(service(fd, 4, UROCE_SERVICE_BIND, 0x4860, NULL), 0);
	cr_assert_eq(service(fd, 5, UROCE_SERVICE_LISTEN, 0x4860, NULL), 0);
	cr_assert(frame_within(fd, TIMEOUT_MS), "the REQ did not reach the new listener");
	pthread_mutex_lock(&lock);
	cr_assert_eq(hub_got_qp1, 0, "a REQ was rejected while its listener was on its way");
	pthread_mutex_unlock(&lock);

	/* Nobody bound or listened: REJ 8 at once, well before a wait would have ended. */
	cr_assert_lt(rej8_after(1, 3, 0x9997), 400, "REJ 8 for nobody's service came late");
	/* Bound and never listening: REJ 8 when the wait ends. */
	cr_assert_eq(service(fd, 6, UROCE_SERVICE_BIND, 0x4861, NULL), 0);
	cr_assert_geq(rej8_after(2, 4, 0x4861), 450,
		      "a REQ for a bound service was rejected before the wait ended");
	close(fd);
}
