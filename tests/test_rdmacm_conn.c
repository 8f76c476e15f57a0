/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm connections between two processes through uroce's librdmacm.so.1 (a forked server
 * and the test as client, on loopback): private data both ways as rdma_cm delivers it (the
 * cma header stripped), a rejection with private data, disconnection from the passive side,
 * a synchronous listener's children each on a channel of its own,
 * the private data budgets, 1,000 connections set up and torn down without leaking memory or
 * descriptors, and connections made and torn down while UROCE_FAULTS drops 10 % of all
 * packets (CM MADs included: the CM's retries recover them). The client's capture of the first
 * two is read back with tshark: the CM messages, the service ID, the addresses of the rdma_cm
 * header and the private data as sent, no malformed frame.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/host_address.h"

#define WAIT_MS 30000

/* Set in the forked server, whose failures are its exit status (Criterion knows no child). */
static bool in_child;

/* An assertion for code that runs in the server too. */
#define need(cond, ...)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (in_child) {                                                            \
				fprintf(stderr, "server: " __VA_ARGS__);                           \
				fputc('\n', stderr);                                               \
				_exit(1);                                                          \
			}                                                                          \
			cr_assert_fail(__VA_ARGS__);                                               \
		}                                                                                  \
	} while (0)

static const char client_pd[] = "hello from the client";
static const char server_pd[] = "hello from the server";
static const char reject_pd[] = "not today";

static struct sockaddr_in lo4(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/* The next event on @ch, failing after WAIT_MS. */
static struct rdma_cm_event *next(struct rdma_event_channel *ch)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	need(poll(&pfd, 1, WAIT_MS) == 1, "no event for %d ms", WAIT_MS);
	need(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
	return ev;
}

/* The next event on @ch, which must be @type. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next(ch);

	need(ev->event == type, "%s (status %d), not %s", rdma_event_str(ev->event), ev->status,
	     rdma_event_str(type));
	return ev;
}

/* A listener of port space @ps on 127.0.0.1:@port reporting on @ch. */
static struct rdma_cm_id *listen_ps(struct rdma_event_channel *ch, uint16_t port,
				    enum rdma_port_space ps)
{
	struct sockaddr_in at = lo4(port);
	struct rdma_cm_id *l;

	need(rdma_create_id(ch, &l, NULL, ps) == 0, "rdma_create_id: %s", strerror(errno));
	need(rdma_bind_addr(l, (struct sockaddr *)&at) == 0, "rdma_bind_addr: %s", strerror(errno));
	need(rdma_listen(l, 1024) == 0, "rdma_listen: %s", strerror(errno));
	return l;
}

static struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, uint16_t port)
{
	return listen_ps(ch, port, RDMA_PS_TCP);
}

/* An id of port space @ps resolved to 127.0.0.1:@port (address and route), reporting on @ch. */
static struct rdma_cm_id *resolved_ps(struct rdma_event_channel *ch, uint16_t port,
				      enum rdma_port_space ps)
{
	struct sockaddr_in to = lo4(port);
	struct rdma_cm_id *id;

	need(rdma_create_id(ch, &id, NULL, ps) == 0, "rdma_create_id: %s", strerror(errno));
	need(rdma_resolve_addr(id, NULL, (struct sockaddr *)&to, 2000) == 0,
	     "rdma_resolve_addr: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	need(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	return id;
}

static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, uint16_t port)
{
	return resolved_ps(ch, port, RDMA_PS_TCP);
}

static struct rdma_conn_param param(const void *pd, size_t len, uint32_t qpn)
{
	return (struct rdma_conn_param){.private_data = pd,
					.private_data_len = (uint8_t)len,
					.responder_resources = 1,
					.initiator_depth = 1,
					.retry_count = 7,
					.rnr_retry_count = 7,
					.qp_num = qpn};
}

static int ready_fd = -1;

/* The server listens: the client may go on (fork_server). */
static void listening(void)
{
	if (ready_fd >= 0)
		close(ready_fd);
	ready_fd = -1;
}

/* Run @server in a child process once it listens on @port; returns its pid. */
static pid_t fork_server(void (*server)(uint16_t port), uint16_t port)
{
	int ready[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		ready_fd = ready[1];
		in_child = true;
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed or timed-out test takes it along */
		/* The child reports through its exit status; its assertions abort it. */
		server(port);
		_exit(0);
	}
	close(ready[1]);
	(void)!read(ready[0], &c, 1); /* the server closes its end once it listens */
	close(ready[0]);
	return pid;
}

static void server_exits_cleanly(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server failed (status %#x)",
		  status);
}

/* Server: check the client's private data, accept with ours, wait for the client to go. */
static void accept_with_data(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_on(ch, port), *child;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p = param(server_pd, sizeof(server_pd), 0x123);

	listening();
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	/* librdmacm's ucma_get_device: the request's id comes with its device's PD. */
	need(child->verbs && child->pd && child->pd->context == child->verbs,
	     "the request's id has its device's PD");
	/* PS_TCP: the application's 56 of the REQ's 92 bytes, after the cma header. */
	need(ev->param.conn.private_data_len == 56, "ev->param.conn.private_data_len: %s",
	     strerror(errno));
	need(!strcmp(ev->param.conn.private_data, client_pd), "the client's private data");
	rdma_ack_cm_event(ev);
	need(rdma_accept(child, &p) == 0, "rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	need(rdma_disconnect(child) == 0, "rdma_disconnect: %s", strerror(errno));
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

/*
 * The values of tshark's @fields (comma-separated) in the frames of @pcap that match @filter,
 * one line per frame, fields separated by '|'.
 */
static char *tshark(const char *pcap, const char *filter, const char *fields)
{
	static char out[8192];
	char cmd[1024], *e = cmd + snprintf(cmd, sizeof(cmd),
					    "tshark --disable-heuristic rpcrdma_infiniband -r %s "
					    "-Y '%s' -T fields -E separator='|'",
					    pcap, filter);
	size_t n;
	FILE *f;

	for (const char *p = fields; *p;) {
		size_t len = strcspn(p, ",");

		e += snprintf(e, sizeof(cmd) - (size_t)(e - cmd), " -e %.*s", (int)len, p);
		p += len + (p[len] == ',');
	}
	snprintf(e, sizeof(cmd) - (size_t)(e - cmd), " 2>/dev/null");
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	return out;
}

/* @s as tshark prints bytes (lower-case hex, no separators), NUL included. */
static const char *hex(const char *s)
{
	static char out[256];
	size_t i = 0;

	do
		snprintf(out + 2 * i, sizeof(out) - 2 * i, "%02x", (unsigned char)s[i]);
	while (s[i++] && 2 * i + 2 < sizeof(out));
	return out;
}

/* The capture each process of the test writes (UROCE_PCAP with %p), for the client's. */
static void capture(char path[64])
{
	snprintf(path, 64, "/tmp/uroce-rdmacm-conn-%d.pcap", (int)getpid());
	setenv("UROCE_PCAP", "/tmp/uroce-rdmacm-conn-%p.pcap", 1);
}

/* Remove the captures of this process (@pcap) and of the server process @server. */
static void forget_captures(const char *pcap, pid_t server)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/uroce-rdmacm-conn-%d.pcap", (int)server);
	unlink(path);
	unlink(pcap);
}

/* No frame of @pcap is malformed, in tshark's eyes. */
static void clean(const char *pcap)
{
	cr_assert_str_empty(
		tshark(pcap, "_ws.malformed || _ws.expert.severity >= error", "frame.number"));
}

Test(rdmacm_conn, private_data_both_ways, .timeout = 60)
{
	char pcap[64], want[512], *out;
	pid_t server = (capture(pcap), fork_server(accept_with_data, 7501));
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved(ch, 7501);
	struct rdma_conn_param p = param(client_pd, sizeof(client_pd), 0x456);
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_connect(id, &p), 0);
	/* No QP of the id's own: CONNECT_RESPONSE, then rdma_establish sends the RTU. */
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	cr_assert_eq(ev->param.conn.private_data_len, 196);
	cr_assert_str_eq(ev->param.conn.private_data, server_pd);
	cr_assert_eq(ev->param.conn.qp_num, 0x123);
	rdma_ack_cm_event(ev);
	cr_assert_eq(rdma_establish(id), 0);
	cr_assert_eq(rdma_disconnect(id), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
	usleep(300000); /* the engine flushes its capture every 100 ms */
	clean(pcap);
	/* REQ (service ID of PS_TCP 7501, the cma header's addresses, our data), REP (theirs). */
	out = tshark(pcap, "infiniband.mad",
		     "infiniband.mad.attributeid,infiniband.cm.req.serviceid,"
		     "infiniband.cm.req.ip_cm.sip4,infiniband.cm.req.ip_cm.dip4,"
		     "infiniband.cm.req.ip_cm.private,infiniband.cm.rep.private");
	snprintf(want, sizeof(want), "0x0010|0x0000000001061d4d|127.0.0.1|127.0.0.1|%s",
		 hex(client_pd));
	cr_assert_not_null(strstr(out, want), "no REQ %s in:\n%s", want, out);
	snprintf(want, sizeof(want), "0x0013|||||%s", hex(server_pd));
	cr_assert_not_null(strstr(out, want), "no REP %s in:\n%s", want, out);
	for (const char *a = "0x0014\0"
			     "0x0015\0"
			     "0x0016\0";
	     *a; a += strlen(a) + 1)
		cr_assert_not_null(strstr(out, a), "no CM message %s (RTU, DREQ, DREP)", a);
	forget_captures(pcap, server);
}

/* Server: reject the request with private data. */
static void reject_with_data(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_on(ch, port), *child;
	struct rdma_cm_event *ev;

	listening();
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	need(rdma_reject(child, reject_pd, sizeof(reject_pd)) == 0, "rdma_reject: %s",
	     strerror(errno));
	rdma_ack_cm_event(ev); /* before destroying its id, which waits for that */
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_conn, reject_with_private_data, .timeout = 60)
{
	char pcap[64], want[512], *out;
	pid_t server = (capture(pcap), fork_server(reject_with_data, 7502));
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved(ch, 7502);
	struct rdma_conn_param p = param(client_pd, sizeof(client_pd), 0x456);
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_connect(id, &p), 0);
	ev = expect(ch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->status, 28, "consumer-defined rejection, status %d", ev->status);
	cr_assert_geq(ev->param.conn.private_data_len, sizeof(reject_pd));
	cr_assert_str_eq(ev->param.conn.private_data, reject_pd);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
	usleep(300000);
	clean(pcap);
	/* The REJ: rejecting the REQ (0), consumer-defined (28), with the server's data. */
	out = tshark(pcap, "infiniband.cm.rej.reason",
		     "infiniband.cm.rej.msgrej,infiniband.cm.rej.reason,infiniband.cm.rej.private");
	snprintf(want, sizeof(want), "0x00|0x001c|%s", hex(reject_pd));
	cr_assert_not_null(strstr(out, want), "no REJ %s in:\n%s", want, out);
	forget_captures(pcap, server);
}

/* Server (UDP port space): destroy the id of a SIDR request without answering it. */
static void drop_sidr_request(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_ps(ch, port, RDMA_PS_UDP), *child;
	struct rdma_cm_event *ev;

	listening();
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	rdma_ack_cm_event(ev);
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

/*
 * A UD id destroyed with its SIDR request unanswered rejects it, as Linux's cm_destroy_id
 * does (cm_reject_sidr_req): the requester learns at once (UNREACHABLE, the SIDR_REP's status
 * 2, "rejected") instead of after its SIDR_REQ's retries, about a minute.
 */
Test(rdmacm_conn, destroyed_sidr_request_is_rejected, .timeout = 30)
{
	pid_t server = fork_server(drop_sidr_request, 7506);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved_ps(ch, 7506, RDMA_PS_UDP);
	struct rdma_conn_param p = param(NULL, 0, 0);
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_connect(id, &p), 0);
	ev = expect(ch, RDMA_CM_EVENT_UNREACHABLE);
	cr_assert_eq(ev->status, 2, "the SIDR_REP's status: rejected (2), not %d", ev->status);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}

/* Server: accept, then be the one to disconnect. */
static void disconnect_first(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_on(ch, port), *child;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p = param(NULL, 0, 0x123);

	listening();
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	rdma_ack_cm_event(ev);
	need(rdma_accept(child, &p) == 0, "rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	need(rdma_disconnect(child) == 0, "rdma_disconnect: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm_conn, passive_side_disconnects, .timeout = 60)
{
	pid_t server = fork_server(disconnect_first, 7503);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved(ch, 7503);
	struct rdma_conn_param p = param(NULL, 0, 0x456);

	cr_assert_eq(rdma_connect(id, &p), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	cr_assert_eq(rdma_establish(id), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	cr_assert_eq(rdma_disconnect(id), 0, "answers the DREQ (DREP)");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}

/*
 * Server, synchronous (librdmacm's "synchronous operation": ids made without a channel): each
 * child rdma_get_request returns has a channel of its own (librdmacm's ucma_process_conn_req
 * migrates it), rdma_accept returns once the connection is ESTABLISHED, which the child
 * holds in id->event, and each child's DISCONNECTED comes on its own channel, none on the
 * listener's.
 */
static void accept_two_synchronously(uint16_t port)
{
	struct sockaddr_in at = lo4(port);
	struct rdma_conn_param p = param(NULL, 0, 0x123);
	struct rdma_cm_id *l, *child[2];
	struct pollfd pfd;

	need(rdma_create_id(NULL, &l, NULL, RDMA_PS_TCP) == 0, "rdma_create_id: %s",
	     strerror(errno));
	need(rdma_bind_addr(l, (struct sockaddr *)&at) == 0, "rdma_bind_addr: %s", strerror(errno));
	need(rdma_listen(l, 4) == 0, "rdma_listen: %s", strerror(errno));
	listening();
	for (int i = 0; i < 2; i++) {
		need(rdma_get_request(l, &child[i]) == 0, "rdma_get_request: %s", strerror(errno));
		need(child[i]->channel && child[i]->channel != l->channel,
		     "child %d has a channel of its own", i);
		need(child[i]->event && child[i]->event->event == RDMA_CM_EVENT_CONNECT_REQUEST,
		     "child %d holds its CONNECT_REQUEST", i);
		need(rdma_accept(child[i], &p) == 0, "rdma_accept: %s", strerror(errno));
		need(child[i]->event && child[i]->event->event == RDMA_CM_EVENT_ESTABLISHED,
		     "child %d: rdma_accept returned with %s, not ESTABLISHED", i,
		     child[i]->event ? rdma_event_str(child[i]->event->event) : "no event");
	}
	for (int i = 0; i < 2; i++) {
		rdma_ack_cm_event(child[i]->event);
		rdma_ack_cm_event(expect(child[i]->channel, RDMA_CM_EVENT_DISCONNECTED));
		need(rdma_disconnect(child[i]) == 0, "rdma_disconnect: %s", strerror(errno));
	}
	pfd = (struct pollfd){.fd = l->channel->fd, .events = POLLIN};
	need(poll(&pfd, 1, 0) == 0, "an event waits on the listener's channel");
	for (int i = 0; i < 2; i++)
		rdma_destroy_id(child[i]);
	rdma_destroy_id(l);
}

Test(rdmacm_conn, synchronous_listener_children_have_own_channels, .timeout = 60)
{
	pid_t server = fork_server(accept_two_synchronously, 7508);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id[2];

	for (int i = 0; i < 2; i++) {
		struct rdma_conn_param p = param(NULL, 0, 0x456 + (uint32_t)i);

		id[i] = resolved(ch, 7508);
		cr_assert_eq(rdma_connect(id[i], &p), 0);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
		cr_assert_eq(rdma_establish(id[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		cr_assert_eq(rdma_disconnect(id[i]), 0);
	for (int i = 0; i < 2; i++)
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	for (int i = 0; i < 2; i++)
		rdma_destroy_id(id[i]);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}

/*
 * Server: bound to 127.0.0.1, which rdma_cm counts as "any" (cma_any_addr): no device comes
 * with the binding, and the listener takes a REQ sent to another of the host's addresses.
 */
static void listen_on_loopback_as_any(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_on(ch, port);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;
	struct rdma_conn_param p = param(NULL, 0, 0x789);

	need(l->verbs == NULL, "an id bound to 127.0.0.1 has no device (it has %s)",
	     ibv_get_device_name(l->verbs->device));
	listening();
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	need(child->verbs && strcmp(ibv_get_device_name(child->verbs->device), "uroce_lo"),
	     "the request came to a device other than uroce_lo");
	rdma_ack_cm_event(ev);
	need(rdma_accept(child, &p) == 0, "rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_id(child);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

/* An IPv4 address of this host on an interface other than lo, with @port. */
static struct sockaddr_in host4(uint16_t port)
{
	struct sockaddr_in sin;

	cr_assert(host_address4(port, &sin),
		  "this test needs an interface besides lo with an IPv4 address");
	return sin;
}

Test(rdmacm_conn, loopback_listener_listens_on_every_device, .timeout = 60)
{
	pid_t server = fork_server(listen_on_loopback_as_any, 7507);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in to = host4(7507);
	struct rdma_conn_param p = param(NULL, 0, 0x456);
	struct rdma_cm_id *id;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&to, 2000), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	cr_assert_eq(rdma_resolve_route(id, 2000), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	cr_assert_eq(rdma_connect(id, &p), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	cr_assert_eq(rdma_establish(id), 0);
	cr_assert_eq(rdma_disconnect(id), 0);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}

/* The budgets of private data (PROTOCOL.md §4.8): REQ 56, REP 196, REJ 148 bytes. */
Test(rdmacm_conn, private_data_budgets)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = resolved(ch, 7504);
	static char big[256];
	struct rdma_conn_param p = param(big, 57, 0x456);

	cr_assert_eq(rdma_connect(id, &p), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/*
 * Descriptors this process has open, but sockets: the rendezvous's come and go as the host's
 * hub changes (other tests' processes share it); an id's or channel's leak would be an eventfd.
 */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char target[64];
		ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);

		if (len > 0) {
			target[len] = 0;
			n += strncmp(target, "socket:", 7) != 0;
		}
	}
	closedir(d);
	return n;
}

#define MANY 1000
static int many = MANY; /* connections accept_many takes */

/* Server: accept @many connections; each client disconnects, the server answers. */
static void accept_many(uint16_t port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l = listen_on(ch, port);
	struct rdma_conn_param p = param(NULL, 0, 0x123);
	int established = 0, gone = 0;

	listening();
	while (gone < many) {
		struct rdma_cm_event *ev;
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

		need(poll(&pfd, 1, WAIT_MS) == 1, "%d established, %d gone", established, gone);
		need(rdma_get_cm_event(ch, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			need(rdma_accept(ev->id, &p) == 0, "rdma_accept: %s", strerror(errno));
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			gone++;
			rdma_disconnect(ev->id);
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT: /* of a connection destroyed already */
			break;
		default:
			need(false, "%s", rdma_event_str(ev->event));
		}
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			struct rdma_cm_id *child = ev->id;

			rdma_ack_cm_event(ev);
			rdma_destroy_id(child);
		} else {
			rdma_ack_cm_event(ev);
		}
	}
	/*
	 * Without loss every connection is established before it goes; with loss a DREQ may
	 * come while the RTU is lost, and a Linux passive side then reports DISCONNECTED only.
	 */
	need(established == many || getenv("UROCE_FAULTS"), "%d of %d established", established,
	     many);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

/* One connection: made, established, torn down, destroyed. */
static void one_connection(struct rdma_event_channel *ch, uint16_t port)
{
	struct rdma_cm_id *id = resolved(ch, port);
	struct rdma_conn_param p = param(NULL, 0, 0x456);

	cr_assert_eq(rdma_connect(id, &p), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE));
	cr_assert_eq(rdma_establish(id), 0);
	cr_assert_eq(rdma_disconnect(id), 0);
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_id(id);
}

Test(rdmacm_conn, thousand_connections_leak_nothing, .timeout = 120)
{
	pid_t server = fork_server(accept_many, 7505);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	size_t heap;
	int fds;

	/* The first connections start the engine and the CM: measure after them. */
	for (int i = 0; i < 10; i++)
		one_connection(ch, 7505);
	fds = open_fds();
	heap = mallinfo2().uordblks;
	for (int i = 10; i < MANY; i++)
		one_connection(ch, 7505);
	/* Time-wait (2^19 x 4.096 us, about 2 s) keeps each connection's state for a while. */
	sleep(3);
	cr_assert_eq(open_fds(), fds, "%d descriptors, %d before", open_fds(), fds);
	cr_assert_lt(mallinfo2().uordblks, heap + 64 * 1024, "heap grew from %zu to %zu bytes",
		     heap, mallinfo2().uordblks);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}

#define LOSSY 16

/*
 * UROCE_FAULTS drops 10 % of every packet both processes send and receive, CM MADs included:
 * LOSSY connections made at once all become established and are all torn down, the CM's
 * retries (REQ, REP, DREQ, at their IBTA intervals) recovering what was lost.
 */
Test(rdmacm_conn, connections_under_ten_percent_loss, .timeout = 120)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ids[LOSSY];
	struct rdma_conn_param p = param(client_pd, sizeof(client_pd), 0x456);
	int responses = 0, gone = 0;
	pid_t server;

	setenv("UROCE_FAULTS", "loss=0.1,dir=both,seed=11", 1);
	many = LOSSY;
	server = fork_server(accept_many, 7506);
	ch = rdma_create_event_channel();
	for (int i = 0; i < LOSSY; i++)
		ids[i] = resolved(ch, 7506);
	for (int i = 0; i < LOSSY; i++)
		cr_assert_eq(rdma_connect(ids[i], &p), 0);
	while (responses < LOSSY) {
		struct rdma_cm_event *ev = expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE);

		cr_assert_eq(rdma_establish(ev->id), 0);
		rdma_ack_cm_event(ev);
		responses++;
	}
	for (int i = 0; i < LOSSY; i++)
		cr_assert_eq(rdma_disconnect(ids[i]), 0);
	while (gone < LOSSY) {
		struct rdma_cm_event *ev = next(ch);

		/* A connection whose DREP came is in time-wait: its exit may come first. */
		if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			cr_assert_eq(ev->event, RDMA_CM_EVENT_DISCONNECTED, "%s",
				     rdma_event_str(ev->event));
			gone++;
		}
		rdma_ack_cm_event(ev);
	}
	for (int i = 0; i < LOSSY; i++)
		rdma_destroy_id(ids[i]);
	rdma_destroy_event_channel(ch);
	server_exits_cleanly(server);
}
