/* ix_scenario: one side of a scripted RC exchange, for comparing how two RoCE stacks behave
 * on the wire (tests/interop/behaviour.py). The same binary runs on Debian's rdma-core in the
 * interop VM (the kernel's rxe) and under uroce-run on the host, so both stacks get exactly
 * the same verbs calls; what differs in the captures is the stacks' own doing.
 *
 *   ix_scenario -s -a ADDR -p PORT -t SCENARIO     the server (passive side)
 *   ix_scenario -c -a ADDR -p PORT -t SCENARIO     the client (active side)
 *
 * Scenarios (the client is the requester; the loss is the harness's, on the bridge):
 *   rnr          the server posts its receive 200 ms after the connection is up, so the
 *                client's SEND meets an empty receive queue: RNR NAK, then the retry after
 *                the NAK's timer (IBTA 9.7.5.2.8)
 *   write_long   a 1 MiB WRITE: how the requester asks for ACKs and the responder coalesces
 *                them (9.7.5.1.2, 9.7.6.1.1)
 *   gbn          a 64 KiB WRITE of which the harness drops one middle packet: the
 *                responder's PSN sequence error NAK and the requester's go-back-N (9.7.5.1.4)
 *   read_lost    a 64 KiB READ of which the harness drops one response packet: the
 *                requester asks again from the missing PSN (9.7.5.2.2, 9.7.4.1.5)
 *   atomic_retry a FETCH_ADD whose ATOMIC ACKNOWLEDGE the harness drops: the requester
 *                retries after its timer and the responder answers from its saved result
 *                without adding twice (9.4.5, 9.7.5.2.4)
 *   send_inv     the server binds a type 2 memory window over 64 KiB of its buffer and SENDs
 *                its R_Key; the client WRITEs 4 KiB through it, then SENDs 3000 B with
 *                invalidate of it (SEND FIRST, MIDDLE, LAST WITH INVALIDATE and its IETH,
 *                IBA 9.2.6): the server's receive reports the key invalidated, and binding
 *                the window again succeeds, which only a free window does (o10-37.2.30)
 *   dreq_exit    the client exits without disconnecting: its stack sends the DREQ
 *   rej          the client connects to a port nobody listens on: REJ
 *
 * Each side prints one line "ix_scenario: SIDE SCENARIO ok ..." and exits 0 when the
 * scenario's own checks pass (data compared byte for byte, the atomic's old and new value,
 * the completion statuses), 1 with the reason otherwise. Every wait is bounded.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_LEN    (1u << 20)
#define ATOMIC_OFF BUF_LEN /* one 8-byte word after the data area */
#define WAIT_MS    30000

struct remote { /* the server's buffer, in the accept's private data (big-endian) */
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static const char *side = "?", *scenario = "?";

static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ix_scenario: %s %s FAILED: ", side, scenario);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint8_t server_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}
static uint8_t client_byte(size_t i)
{
	return (uint8_t)(i * 13 + 5);
}

/* Next CM event of the channel, which must be `want`; acked before returning. */
static void expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			 struct rdma_cm_event *copy)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1)
		die("no CM event in %d ms (waiting for %s)", WAIT_MS, rdma_event_str(want));
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want)
		die("CM event %s (status %d), expected %s", rdma_event_str(ev->event), ev->status,
		    rdma_event_str(want));
	if (copy)
		*copy = *ev;
	rdma_ack_cm_event(ev);
}

static struct ibv_wc wait_wc(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	double deadline = now_ms() + WAIT_MS;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		if (now_ms() > deadline)
			die("no completion for %s in %d ms", what, WAIT_MS);
		usleep(100);
	}
	if (n < 0)
		die("ibv_poll_cq: %d", n);
	if (wc.status != IBV_WC_SUCCESS)
		die("%s completed with %s", what, ibv_wc_status_str(wc.status));
	return wc;
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf; /* BUF_LEN data bytes, then the 8-byte atomic word */
};

static void setup_qp(struct conn *c)
{
	struct ibv_qp_init_attr qa = {0};

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, 16, NULL, NULL, 0) : NULL;
	if (!c->cq)
		die("ibv_alloc_pd/ibv_create_cq: %s", strerror(errno));
	if (posix_memalign((void **)&c->buf, 4096, BUF_LEN + 8))
		die("out of memory");
	memset(c->buf, 0, BUF_LEN + 8);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUF_LEN + 8,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_MW_BIND);
	if (!c->mr)
		die("ibv_reg_mr: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		die("rdma_create_qp: %s", strerror(errno));
}

static void post_recv_len(struct conn *c, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)c->buf, len, c->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		die("ibv_post_recv: %s", strerror(errno));
}

static void post_recv(struct conn *c)
{
	post_recv_len(c, 64);
}

/* One signaled work request of `len` bytes at local offset `off`, and its completion. */
static struct ibv_wc post_wait(struct conn *c, enum ibv_wr_opcode op, size_t off, uint32_t len,
			       const struct remote *r, uint64_t roff, const char *what)
{
	struct ibv_sge sge = {(uintptr_t)c->buf + off, len, c->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	if (op == IBV_WR_SEND_WITH_INV) {
		wr.invalidate_rkey = r->rkey;
	} else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = r->addr + roff;
		wr.wr.atomic.rkey = r->rkey;
		wr.wr.atomic.compare_add = 1;
	} else if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = r->addr + roff;
		wr.wr.rdma.rkey = r->rkey;
	}
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send (%s): %s", what, strerror(errno));
	return wait_wc(c->cq, what);
}

/*
 * send_inv: bind type 2 window @mw over the 64 KiB at MW_OFF to a new key, and wait for it.
 * With @closing, the client's closing SEND may complete first: *@closing says it did.
 */
#define MW_OFF (64u * 1024)
static uint32_t bind_window(struct conn *c, struct ibv_mw *mw, int *closing)
{
	struct ibv_send_wr wr = {.wr_id = 3,
				 .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = c->mr,
		.addr = (uintptr_t)c->buf + MW_OFF,
		.length = MW_OFF,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send (BIND_MW): %s", strerror(errno));
	wc = wait_wc(c->cq, "the bind");
	if (closing && wc.opcode == IBV_WC_RECV) {
		*closing = 1;
		wc = wait_wc(c->cq, "the bind");
	}
	if (wc.opcode != IBV_WC_BIND_MW)
		die("completion of opcode %d, expected the bind's", wc.opcode);
	/* The window is named by its current key in the next bind (rxe_bind_mw). */
	mw->rkey = wr.bind_mw.rkey;
	return mw->rkey;
}

/*
 * send_inv, the server: the window, its key to the client, the SEND that invalidates it.
 * Returns whether the client's closing SEND already completed.
 */
static int serve_window(struct conn *c)
{
	struct ibv_mw *mw = ibv_alloc_mw(c->pd, IBV_MW_TYPE_2);
	uint32_t rkey, be;
	struct ibv_wc wc;
	int sent = 0, got = 0, closing = 0;

	if (!mw)
		die("ibv_alloc_mw: %s", strerror(errno));
	rkey = bind_window(c, mw, NULL);
	post_recv(c); /* for the closing SEND */
	be = htobe32(rkey);
	memcpy(c->buf + BUF_LEN - 64, &be, 4);
	{
		struct ibv_sge sge = {(uintptr_t)c->buf + BUF_LEN - 64, 4, c->mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 2,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;
		if (ibv_post_send(c->id->qp, &wr, &bad))
			die("ibv_post_send (the key): %s", strerror(errno));
	}
	/* The key's SEND and the client's SEND with invalidate complete in either order. */
	while (!sent || !got) {
		wc = wait_wc(c->cq, "the key's SEND or the SEND with invalidate");
		if (wc.opcode == IBV_WC_SEND) {
			sent = 1;
			continue;
		}
		if (wc.opcode != IBV_WC_RECV || wc.byte_len != 3000)
			die("a completion of opcode %d, %u bytes", wc.opcode, wc.byte_len);
		/* rxe (Linux 6.1) writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the
		 * completion user space reads, where verbs.h has IBV_WC_IP_CSUM_OK; uroce sets
		 * IBV_WC_WITH_INV (docs/INTEROP.md). */
		if (!(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)) ||
		    wc.invalidated_rkey != rkey)
			die("the receive says flags %#x, key %#x invalidated; expected %#x",
			    wc.wc_flags, wc.invalidated_rkey, rkey);
		got = 1;
	}
	for (size_t i = 0; i < 4096; i++)
		if (c->buf[MW_OFF + i] != client_byte(i))
			die("byte %zu of the WRITE through the window is %#x, expected %#x", i,
			    c->buf[MW_OFF + i], client_byte(i));
	bind_window(c, mw, &closing); /* binds only if the SEND freed it */
	return closing;
}

static void resolve(const char *addr, const char *port, struct addrinfo **ai)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
	int e = getaddrinfo(addr, port, &hints, ai);

	if (e)
		die("address %s port %s: %s", addr, port, gai_strerror(e));
}

static int run_server(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event ev;
	struct rdma_conn_param cp = {0};
	struct remote r;
	struct conn c = {0};
	struct addrinfo *ai;
	double t0;
	int closing = 0;

	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	resolve(addr, port, &ai);
	if (rdma_bind_addr(listen_id, ai->ai_addr) || rdma_listen(listen_id, 4))
		die("bind/listen %s:%s: %s", addr, port, strerror(errno));
	printf("ix_scenario: server listening\n");
	fflush(stdout);

	expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	c.id = ev.id;
	setup_qp(&c);
	for (size_t i = 0; i < BUF_LEN; i++)
		c.buf[i] = server_byte(i);
	if (!strcmp(scenario, "send_inv"))
		post_recv_len(&c, 4096); /* for the SEND with invalidate */
	else if (strcmp(scenario, "rnr") != 0)
		post_recv(&c); /* for the client's closing SEND */
	r.addr = htobe64((uintptr_t)c.buf);
	r.rkey = htobe32(c.mr->rkey);
	r.len = htobe32(BUF_LEN);
	cp.private_data = &r;
	cp.private_data_len = sizeof(r);
	cp.responder_resources = cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	if (rdma_accept(c.id, &cp))
		die("rdma_accept: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL);
	t0 = now_ms();

	if (!strcmp(scenario, "dreq_exit")) {
		expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
		printf("ix_scenario: server dreq_exit ok: DISCONNECTED %.0f ms after ESTABLISHED\n",
		       now_ms() - t0);
		return 0;
	}
	if (!strcmp(scenario, "send_inv"))
		closing = serve_window(&c);
	if (!strcmp(scenario, "rnr")) {
		usleep(200000);
		post_recv(&c); /* the SEND the client retried */
		post_recv(&c); /* the closing SEND */
		wait_wc(c.cq, "the client's SEND");
	}
	/* Data a WRITE brought is checked after the receive of the SEND that follows it:
	 * the responder executes in PSN order (IBTA 9.5). */
	if (!closing)
		wait_wc(c.cq, "the client's closing SEND");
	if (!strcmp(scenario, "write_long") || !strcmp(scenario, "gbn")) {
		size_t len = !strcmp(scenario, "gbn") ? 65536 : BUF_LEN;
		for (size_t i = 64; i < len; i++) /* bytes 0..63 took the SEND */
			if (c.buf[i] != client_byte(i))
				die("byte %zu of the WRITE is %#x, expected %#x", i, c.buf[i],
				    client_byte(i));
	}
	if (!strcmp(scenario, "atomic_retry")) {
		uint64_t v;
		memcpy(&v, c.buf + ATOMIC_OFF, 8);
		if (v != 1)
			die("the atomic word is %" PRIu64 ", expected 1 (added once)", v);
	}
	expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	printf("ix_scenario: server %s ok\n", scenario);
	return 0;
}

static int run_client(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event ev;
	struct rdma_conn_param cp = {0};
	struct remote r;
	struct conn c = {0};
	struct addrinfo *ai;
	char detail[160] = "";
	double t0;

	if (!ch || rdma_create_id(ch, &c.id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	resolve(addr, port, &ai);
	if (rdma_resolve_addr(c.id, NULL, ai->ai_addr, 2000))
		die("rdma_resolve_addr: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	if (rdma_resolve_route(c.id, 2000))
		die("rdma_resolve_route: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	setup_qp(&c);
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(c.id, &cp))
		die("rdma_connect: %s", strerror(errno));
	if (!strcmp(scenario, "rej")) {
		expect_event(ch, RDMA_CM_EVENT_REJECTED, &ev);
		printf("ix_scenario: client rej ok: REJECTED, status %d\n", ev.status);
		return ev.status == 8 ? 0 : 1; /* IB_CM_REJ_INVALID_SERVICE_ID */
	}
	expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, &ev);
	if (ev.param.conn.private_data_len < sizeof(r))
		die("the accept carried %u bytes of private data", ev.param.conn.private_data_len);
	memcpy(&r, ev.param.conn.private_data, sizeof(r));
	r.addr = be64toh(r.addr);
	r.rkey = be32toh(r.rkey);
	r.len = be32toh(r.len);
	if (r.len != BUF_LEN)
		die("the server's buffer is %u bytes", r.len);
	t0 = now_ms();

	if (!strcmp(scenario, "dreq_exit")) {
		printf("ix_scenario: client dreq_exit ok: exiting connected\n");
		fflush(stdout);
		exit(0); /* no rdma_disconnect, no rdma_destroy_id: the stack's exit path */
	} else if (!strcmp(scenario, "rnr")) {
		post_wait(&c, IBV_WR_SEND, 0, 64, &r, 0, "the SEND");
		snprintf(detail, sizeof(detail), ": SEND completed %.0f ms after ESTABLISHED",
			 now_ms() - t0);
	} else if (!strcmp(scenario, "write_long") || !strcmp(scenario, "gbn")) {
		uint32_t len = !strcmp(scenario, "gbn") ? 65536 : BUF_LEN;
		for (size_t i = 0; i < len; i++)
			c.buf[i] = client_byte(i);
		post_wait(&c, IBV_WR_RDMA_WRITE, 0, len, &r, 0, "the WRITE");
		snprintf(detail, sizeof(detail), ": WRITE of %u B in %.0f ms", len, now_ms() - t0);
	} else if (!strcmp(scenario, "read_lost")) {
		post_wait(&c, IBV_WR_RDMA_READ, 0, 65536, &r, 0, "the READ");
		for (size_t i = 0; i < 65536; i++)
			if (c.buf[i] != server_byte(i))
				die("byte %zu of the READ is %#x, expected %#x", i, c.buf[i],
				    server_byte(i));
		snprintf(detail, sizeof(detail), ": READ of 65536 B in %.0f ms", now_ms() - t0);
	} else if (!strcmp(scenario, "send_inv")) {
		struct remote w;
		uint32_t be;

		post_recv(&c);
		wait_wc(c.cq, "the window's key");
		memcpy(&be, c.buf, 4);
		w.addr = r.addr + MW_OFF;
		w.rkey = be32toh(be);
		for (size_t i = 0; i < 4096; i++)
			c.buf[4096 + i] = client_byte(i);
		post_wait(&c, IBV_WR_RDMA_WRITE, 4096, 4096, &w, 0, "the WRITE through the window");
		post_wait(&c, IBV_WR_SEND_WITH_INV, 0, 3000, &w, 0, "the SEND with invalidate");
		snprintf(detail, sizeof(detail), ": window %#x written and invalidated", w.rkey);
	} else if (!strcmp(scenario, "atomic_retry")) {
		uint64_t old;
		post_wait(&c, IBV_WR_ATOMIC_FETCH_AND_ADD, BUF_LEN, 8, &r, ATOMIC_OFF,
			  "the FETCH_ADD");
		memcpy(&old, c.buf + BUF_LEN, 8);
		if (old != 0)
			die("FETCH_ADD returned %" PRIu64 ", expected 0", old);
		snprintf(detail, sizeof(detail), ": FETCH_ADD returned 0 after %.0f ms",
			 now_ms() - t0);
	} else {
		die("unknown scenario");
	}
	for (size_t i = 0; i < 64; i++) /* the closing SEND overwrites bytes 0..63 alike */
		c.buf[i] = client_byte(i);
	post_wait(&c, IBV_WR_SEND, 0, 64, &r, 0, "the closing SEND");
	if (rdma_disconnect(c.id))
		die("rdma_disconnect: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	printf("ix_scenario: client %s ok%s\n", scenario, detail);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const known[] = {"rnr",          "write_long", "gbn",       "read_lost",
					    "atomic_retry", "send_inv",   "dreq_exit", "rej"};
	const char *addr = NULL, *port = NULL;
	int server = -1, opt, ok = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "sca:p:t:")) != -1) {
		switch (opt) {
		case 's':
			server = 1;
			break;
		case 'c':
			server = 0;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 't':
			scenario = optarg;
			break;
		default:
			goto usage;
		}
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= !strcmp(scenario, known[i]);
	if (server < 0 || !addr || !port || !ok || optind != argc)
		goto usage;
	side = server ? "server" : "client";
	return server ? run_server(addr, port) : run_client(addr, port);
usage:
	fprintf(stderr,
		"usage: ix_scenario -s|-c -a ADDR -p PORT -t SCENARIO\n"
		"scenarios: rnr write_long gbn read_lost atomic_retry send_inv dreq_exit rej\n");
	return 2;
}
