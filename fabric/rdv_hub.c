/* SPDX-License-Identifier: MIT */
/*
 * The hub's side of the rendezvous: the processes connected to it, the QPN blocks it grants
 * them (with each owner's UDP ports, which forwarding needs), and the control messages it
 * answers. Progress thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "fabric/rdv_int.h"
#include "transport/wire.h"

void rdv_add_own_block(struct uroce_rdv *r, uint32_t block)
{
	int err = uroce_qpn_add_block(r->qpn, block);

	rdv_cm_own_block(r, block);
	if (err)
		uroce_log(UROCE_LOG_ERROR, "rendezvous: QPN block %u: %s", block, strerror(err));
}

uint32_t rdv_pack_ports(const uint16_t ports[2])
{
	return ports ? ports[0] | (uint32_t)ports[1] << 16 : 0;
}

/*
 * Record @block's new owner, whose own UDP ports are @ports (NULL: none, a freed block), and tell
 * every other process (not @skip, which is told apart).
 */
void rdv_set_owner(struct uroce_rdv *r, uint32_t block, uint64_t token, const uint16_t *ports,
		   struct conn *route, struct conn *skip)
{
	struct rdv_owner_msg m = {.hdr = rdv_header(RDV_OWNER),
				  .owner = {.block = block, .token = token}};

	if (ports)
		memcpy(m.owner.ports, ports, sizeof(m.owner.ports));
	r->owner[block] = token;
	atomic_store_explicit(&r->ports[block], rdv_pack_ports(ports), memory_order_relaxed);
	r->route[block] = route;
	rdv_broadcast(r, skip, &m, sizeof(m));
}

/* The next free block after the last one handed out. */
static bool find_free(struct uroce_rdv *r, uint32_t *block)
{
	for (uint32_t i = 0; i < UROCE_QPN_BLOCKS; i++) {
		uint32_t b = (r->next_block + i) % UROCE_QPN_BLOCKS;

		if (!r->owner[b]) {
			r->next_block = (b + 1) % UROCE_QPN_BLOCKS;
			*block = b;
			return true;
		}
	}
	return false;
}

int rdv_hub_self_grant(struct uroce_rdv *r)
{
	uint32_t block;
	int err;

	if (!find_free(r, &block)) {
		rdv_answered(r, false);
		return ENOSPC;
	}
	rdv_set_owner(r, block, r->token, r->my_ports, NULL, NULL);
	rdv_cm_own_block(r, block);
	err = uroce_qpn_add_block(r->qpn, block);
	rdv_answered(r, !err);
	return err;
}

static void drop_conn(struct uroce_rdv *r, struct conn *c)
{
	struct conn **pp;

	uroce_progress_unwatch(r->progress, c->watch);
	pthread_mutex_lock(&r->fwd_lock);
	for (pp = &r->conns; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	close(c->fd);
	pthread_mutex_unlock(&r->fwd_lock);
	if (c->token)
		uroce_log(UROCE_LOG_INFO, "rendezvous: process %d has left", (int)c->pid);
	for (uint32_t b = 0; c->token && b < UROCE_QPN_BLOCKS; b++)
		if (r->owner[b] == c->token)
			rdv_set_owner(r, b, 0, NULL, NULL, NULL);
	rdv_cm_conn_gone(r, c);
	free(c);
}

/* Drop the connections found dead (dropping one may find another dead). */
void rdv_reap(struct uroce_rdv *r)
{
	while (r->have_dead) {
		struct conn *c = r->conns;

		while (c && !c->dead)
			c = c->next;
		if (c)
			drop_conn(r, c);
		else
			r->have_dead = false;
	}
}

void rdv_protocol_error(struct conn *c, const char *what)
{
	uroce_log(UROCE_LOG_ERROR, "rendezvous: process %d sent %s; dropping it", (int)c->pid,
		  what);
	c->dead = true;
	c->r->have_dead = true;
}

static void send_table(struct uroce_rdv *r, struct conn *c)
{
	_Alignas(8)
		uint8_t buf[sizeof(struct rdv_table) + RDV_TABLE_MAX * sizeof(struct rdv_owner)];
	struct rdv_table *t = (struct rdv_table *)buf;

	t->hdr = rdv_header(RDV_TABLE);
	t->pad = 0;
	t->count = 0;
	for (uint32_t b = 0; b < UROCE_QPN_BLOCKS; b++) {
		if (r->owner[b])
			t->entry[t->count++] =
				(struct rdv_owner){.block = b,
						   .ports = {atomic_load(&r->ports[b]) & 0xFFFF,
							     atomic_load(&r->ports[b]) >> 16},
						   .token = r->owner[b]};
		/* The last record is sent even if empty: it is what replaces the process's copy. */
		if (t->count == RDV_TABLE_MAX || b == UROCE_QPN_BLOCKS - 1) {
			rdv_conn_send(c, t, sizeof(*t) + t->count * sizeof(t->entry[0]));
			t->count = 0;
		}
	}
}

static void hub_hello(struct uroce_rdv *r, struct conn *c, const struct rdv_hello *m)
{
	struct ucred cred = rdv_peer_cred(c->fd);

	if (!m->token || m->token == r->token) {
		rdv_protocol_error(c, "a bad token");
		return;
	}
	for (struct conn *o = r->conns; o; o = o->next) {
		if (o != c && o->token == m->token) {
			rdv_protocol_error(c, "the token of another process");
			return;
		}
	}
	pthread_mutex_lock(&r->fwd_lock);
	c->token = m->token;
	pthread_mutex_unlock(&r->fwd_lock);
	memcpy(c->ports, m->ports, sizeof(c->ports));
	uroce_log(UROCE_LOG_INFO, "rendezvous: process %d (uid %u, pid %u in its namespace) joined",
		  (int)cred.pid, (unsigned int)cred.uid, m->pid);
	send_table(r, c);
	rdv_cm_hub_joined(r, c);
	/* After a takeover: the blocks the process held under the old hub are routed to it. */
	for (uint32_t b = 0; b < UROCE_QPN_BLOCKS; b++)
		if (r->owner[b] == c->token)
			r->route[b] = c;
}

static void hub_request(struct uroce_rdv *r, struct conn *c)
{
	struct rdv_block_msg m = {.hdr = rdv_header(RDV_GRANT)};
	uint32_t block;

	if (!find_free(r, &block)) {
		struct rdv_hdr full = rdv_header(RDV_FULL);

		rdv_conn_send(c, &full, sizeof(full));
		return;
	}
	/* The others first: once the requester has the block, every survivor knows it is taken. */
	rdv_set_owner(r, block, c->token, c->ports, c, c);
	m.block = block;
	rdv_conn_send(c, &m, sizeof(m));
}

static void hub_claim(struct uroce_rdv *r, struct conn *c, uint32_t block)
{
	struct rdv_block_msg m = {.hdr = rdv_header(RDV_CLAIMED), .block = block, .ok = 1};

	if (block >= UROCE_QPN_BLOCKS) {
		rdv_protocol_error(c, "a claim outside the QPN space");
		return;
	}
	if (!r->owner[block]) {
		rdv_set_owner(r, block, c->token, c->ports, c, c);
	} else if (r->owner[block] == c->token) {
		r->route[block] = c;
	} else {
		uroce_log(UROCE_LOG_ERROR,
			  "rendezvous: process %d claims QPN block %u, which another process holds",
			  (int)c->pid, block);
		m.ok = 0;
	}
	rdv_conn_send(c, &m, sizeof(m));
}

static void hub_mcast(struct uroce_rdv *r, struct conn *from, size_t n);

static void hub_message(struct uroce_rdv *r, struct conn *c, size_t n)
{
	const struct rdv_hdr *h = (const struct rdv_hdr *)r->buf;

	if (n < sizeof(*h) || h->magic != RDV_MAGIC) {
		rdv_protocol_error(c, "a record that is not of this protocol");
		return;
	}
	if (h->version != RDV_VERSION) {
		struct rdv_hdr refused = rdv_header(RDV_REFUSED);

		uroce_log(UROCE_LOG_ERROR, "rendezvous: a process speaks version %u, not %u",
			  h->version, RDV_VERSION);
		rdv_conn_send(c, &refused, sizeof(refused));
		c->dead = true;
		r->have_dead = true;
		return;
	}
	if (!c->token && h->type != RDV_HELLO) {
		rdv_protocol_error(c, "a record before HELLO");
		return;
	}
	switch (h->type) {
	case RDV_HELLO:
		if (n < sizeof(struct rdv_hello) || c->token)
			rdv_protocol_error(c, "a bad HELLO");
		else
			hub_hello(r, c, (const struct rdv_hello *)r->buf);
		break;
	case RDV_REQUEST:
		hub_request(r, c);
		break;
	case RDV_CLAIM:
		if (n < sizeof(struct rdv_block_msg))
			rdv_protocol_error(c, "a short CLAIM");
		else
			hub_claim(r, c, ((const struct rdv_block_msg *)r->buf)->block);
		break;
	case RDV_MCAST:
		if (n < sizeof(struct rdv_frame) + ROCE_BTH_LEN)
			rdv_protocol_error(c, "a short MCAST");
		else
			hub_mcast(r, c, n);
		break;
	case RDV_SERVICE:
		rdv_cm_hub_service(r, c, n);
		rdv_cm_retry_held(r, false);
		break;
	case RDV_CONN:
		rdv_cm_hub_conn(r, c, n);
		break;
	default:
		rdv_protocol_error(c, "a record of an unknown type");
	}
}

static void on_conn(void *arg)
{
	struct conn *c = arg;
	struct uroce_rdv *r = c->r;

	while (!c->dead) {
		ssize_t n = rdv_recv_record(r, c->fd);

		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0 && errno == EMSGSIZE) {
			rdv_protocol_error(c, "a record too long");
			break;
		}
		if (n <= 0) {
			c->dead = true;
			r->have_dead = true;
			break;
		}
		hub_message(r, c, (size_t)n);
	}
	rdv_reap(r);
}

void rdv_on_accept(void *arg)
{
	struct uroce_rdv *r = arg;

	for (;;) {
		int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred cred;
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				uroce_log(UROCE_LOG_ERROR, "rendezvous: accept: %s",
					  strerror(errno));
			break;
		}
		cred = rdv_peer_cred(fd);
		if (!rdv_same_user(cred.uid)) {
			uroce_log(UROCE_LOG_INFO,
				  "rendezvous: refused process %d of uid %u: another user's",
				  (int)cred.pid, (unsigned int)cred.uid);
			close(fd);
			continue;
		}
		rdv_set_buffers(fd);
		c = calloc(1, sizeof(*c));
		if (c) {
			c->r = r;
			c->fd = fd;
			c->pid = cred.pid;
			c->watch = uroce_progress_watch(r->progress, fd, on_conn, c);
		}
		if (!c || !c->watch) {
			uroce_log(UROCE_LOG_ERROR, "rendezvous: cannot take a process: %s",
				  strerror(errno));
			free(c);
			close(fd);
			continue;
		}
		pthread_mutex_lock(&r->fwd_lock);
		c->next = r->conns;
		r->conns = c;
		pthread_mutex_unlock(&r->fwd_lock);
	}
	rdv_reap(r);
}

/* Hub: a multicast datagram process @from sent: to this process and every other. */
static void hub_mcast(struct uroce_rdv *r, struct conn *from, size_t n)
{
	struct uroce_rx rx = rdv_rx_of_frame(r, n);

	rx.host_sent = true;
	for (struct conn *c = r->conns; c; c = c->next)
		if (c != from && c->token)
			rdv_forward(r, c, &rx);
	r->ops->forwarded(r->arg, &rx);
}
