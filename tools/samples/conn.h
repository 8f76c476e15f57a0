/* SPDX-License-Identifier: MIT */
/*
 * One rdma_cm RC connection of uroce-sample, set up and torn down step by step so that a
 * scenario can act between the steps (post a receive before connecting, reject instead of
 * accepting). Every function returns 0, or -1 after printing what failed on stderr.
 */
#ifndef UROCE_TOOLS_SAMPLES_CONN_H
#define UROCE_TOOLS_SAMPLES_CONN_H

#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The server's buffer as its accept announces it (private data, big-endian on the wire). */
struct sample_remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* An rdma_cm event as the scenarios need it, copied out before the event was acked. */
struct sample_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t priv[256];
	uint8_t priv_len;
};

struct sample_conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener; /* the server's */
	struct rdma_cm_id *id;       /* the connection's */
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp; /* rdma_create_qp's, or the scenario's own (own_qp) */
	bool own_qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* registered for local and remote access */
	size_t len;
	struct sample_remote peer; /* the client's view of the server's buffer */
};

/* Print "uroce-sample: WHAT: MESSAGE" on stderr; returns -1. */
int sample_fail(const char *what, const char *msg);

/* The next event of @c's channel (acked), or the next one of type @want (anything else fails). */
int sample_next_event(struct sample_conn *c, struct sample_event *ev);
int sample_expect(struct sample_conn *c, enum rdma_cm_event_type want, struct sample_event *ev);

/* Server: listen on ADDR:PORT and wait for a connection request; c->id is the request's id. */
int sample_listen(struct sample_conn *c, const char *addr, const char *port);
/* Client: resolve ADDR:PORT (address and route); c->id is ready for sample_setup. */
int sample_resolve(struct sample_conn *c, const char *addr, const char *port);
/* Both: PD, CQ and a registered buffer of @len zeroed bytes for c->id. */
int sample_setup_mem(struct sample_conn *c, size_t len);
/* Both: sample_setup_mem and an RC QP made by rdma_create_qp on c->id. */
int sample_setup(struct sample_conn *c, size_t len);

/*
 * Server: accept, announcing c->buf to the client, and wait until the connection is up. An own
 * QP (c->own_qp) must be in RTS already (rdma_init_qp_attr, as rping -q does).
 */
int sample_accept(struct sample_conn *c);
/* Client: connect and wait until it is up; c->peer is the server's buffer. */
int sample_connect(struct sample_conn *c);

/* Client: disconnect (DREQ) and wait for the DREP. Server: wait for the DREQ and answer it. */
int sample_disconnect(struct sample_conn *c);
int sample_await_disconnect(struct sample_conn *c);

/* Free whatever @c holds. */
void sample_close(struct sample_conn *c);

#endif
