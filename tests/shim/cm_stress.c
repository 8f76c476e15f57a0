// SPDX-License-Identifier: MIT
/*
 * Threads against uroce's rdma_cm in one process, for the ThreadSanitizer tree (no Criterion,
 * no system program: both are out of reach there): a listener whose events a thread of its own
 * takes (accept, then answer each disconnect), and client threads each making and tearing
 * down connections through synchronous ids, while the engine's progress thread delivers the
 * MADs and the CM thread keeps their deadlines. Exits 0 when every connection was accepted,
 * established by its client and torn down on both sides.
 *
 *   cm_stress PORT
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENTS     2
#define CONNECTIONS 100 /* per client */

static struct sockaddr_in at;
static atomic_int accepted, gone, failed;

static void fail(const char *what)
{
	fprintf(stderr, "cm_stress: %s: %s\n", what, strerror(errno));
	atomic_fetch_add(&failed, 1);
}

/* The listener's events until every connection has gone. */
static void *serve(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_conn_param p = {
		.qp_num = 0x123, .responder_resources = 1, .initiator_depth = 1};

	while (atomic_load(&gone) < CLIENTS * CONNECTIONS && !atomic_load(&failed)) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		if (poll(&pfd, 1, 10000) != 1) {
			errno = ETIMEDOUT;
			fail("server: no event");
			break;
		}
		if (rdma_get_cm_event(ch, &ev)) {
			fail("server: rdma_get_cm_event");
			break;
		}
		id = ev->id;
		type = ev->event;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (rdma_accept(id, &p))
				fail("server: rdma_accept");
			atomic_fetch_add(&accepted, 1);
		} else if (type == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_disconnect(id);
			rdma_destroy_id(id);
			atomic_fetch_add(&gone, 1);
		}
	}
	return NULL;
}

/* CONNECTIONS connections, one after another, through synchronous ids. */
static void *client(void *arg)
{
	struct rdma_conn_param p = {
		.qp_num = 0x456, .responder_resources = 1, .initiator_depth = 1};

	(void)arg;
	for (int i = 0; i < CONNECTIONS && !atomic_load(&failed); i++) {
		struct rdma_cm_id *id;

		if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
			fail("client: rdma_create_id");
			break;
		}
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&at, 2000) ||
		    rdma_resolve_route(id, 2000) || rdma_connect(id, &p) ||
		    id->event->event != RDMA_CM_EVENT_CONNECT_RESPONSE || rdma_establish(id) ||
		    rdma_disconnect(id))
			fail("client: a connection");
		rdma_destroy_id(id);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener;
	pthread_t server, clients[CLIENTS];

	if (argc != 2) {
		fprintf(stderr, "usage: cm_stress PORT\n");
		return 2;
	}
	at.sin_family = AF_INET;
	at.sin_port = htons((uint16_t)atoi(argv[1]));
	at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!ch || rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listener, (struct sockaddr *)&at) || rdma_listen(listener, 0)) {
		fail("listener");
		return 1;
	}
	pthread_create(&server, NULL, serve, ch);
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&clients[i], NULL, client, NULL);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(clients[i], NULL);
	pthread_join(server, NULL);
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
	printf("cm_stress: %d accepted, %d torn down, %d failures\n", atomic_load(&accepted),
	       atomic_load(&gone), atomic_load(&failed));
	return !atomic_load(&failed) && atomic_load(&accepted) == CLIENTS * CONNECTIONS &&
			       atomic_load(&gone) == CLIENTS * CONNECTIONS
		       ? 0
		       : 1;
}
