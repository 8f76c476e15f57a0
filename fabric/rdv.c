/* SPDX-License-Identifier: MIT */
#include "fabric/rdv.h"

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

#define MS              1000000ull
#define MEET_TIMEOUT_NS (2000 * MS) /* a bound name nobody listens on, for this long */
#define BIND_TIMEOUT_NS (1000 * MS) /* the UDP port still held, for this long */
#define BIND_RETRY_NS   (100 * MS)
#define SEND_TIMEOUT_MS 1000 /* a control message to a process that does not read */
#define SOCK_BUF        (4 << 20)

/*
 * Send one record. With @wait, wait up to SEND_TIMEOUT_MS for room once. Returns 0 or errno.
 */
static int send_record(int fd, const struct iovec *iov, size_t iovcnt, bool wait)
{
	struct msghdr msg = {.msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt};

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int n;

		if (nc_sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN || !wait)
			return errno;
		n = nc_poll(&pfd, 1, SEND_TIMEOUT_MS);
		if (n == 0)
			return ETIMEDOUT;
		if (n < 0 && errno != EINTR)
			return errno;
		wait = false;
	}
}

static int send_msg(int fd, const void *msg, size_t len)
{
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};

	return send_record(fd, &iov, 1, true);
}

/* Hub: a control message to @c; a process that cannot take it is dropped (it will rejoin). */
void rdv_conn_send(struct conn *c, const void *msg, size_t len)
{
	int err;

	if (c->dead)
		return;
	err = send_msg(c->fd, msg, len);
	if (err) {
		/* EPIPE, ECONNRESET: it has just gone, and its EOF is on the way. */
		uroce_log(err == EPIPE || err == ECONNRESET ? UROCE_LOG_DEBUG : UROCE_LOG_ERROR,
			  "rendezvous: cannot reach process %d (%s); dropping it", (int)c->pid,
			  strerror(err));
		c->dead = true;
		c->r->have_dead = true;
	}
}

void rdv_broadcast(struct uroce_rdv *r, const struct conn *skip, const void *msg, size_t len)
{
	for (struct conn *c = r->conns; c; c = c->next)
		if (c != skip && c->token)
			rdv_conn_send(c, msg, len);
}

/* Not hub: a message to the hub. If it has gone, its EOF starts the takeover. */
void rdv_up_send(struct uroce_rdv *r, const void *msg, size_t len)
{
	int err = r->up ? send_msg(r->up->fd, msg, len) : ENOTCONN;

	if (err)
		uroce_log(UROCE_LOG_DEBUG, "rendezvous: send to the hub: %s", strerror(err));
}

/*
 * Read one record into r->buf. Returns its length; 0 at EOF; -1 with errno EAGAIN (none
 * waiting), EMSGSIZE (a record too long: discarded) or another recvmsg error.
 */
static ssize_t recv_record(struct uroce_rdv *r, int fd)
{
	struct iovec iov = {.iov_base = r->buf, .iov_len = sizeof(r->buf)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	do
		n = recvmsg(fd, &msg, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0 && (msg.msg_flags & MSG_TRUNC)) {
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

static void set_buffers(int fd)
{
	int size = SOCK_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) ? errno : 0;
}

static struct ucred peer_cred(int fd)
{
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);

	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
	return cred;
}

/*
 * Whether a process of @uid may share this process's rendezvous: one user's processes, and
 * root, which may see any traffic anyway. The hub sees every datagram of the processes joined
 * to it, and forwards them: another user's hub could read or alter them, which the kernel's
 * rxe does not allow between users. Checked both ways, by the hub of each process that joins
 * and by each process of the hub it meets (SO_PEERCRED).
 */
static bool same_user(uid_t uid)
{
	uid_t me = geteuid();

	return uid == me || uid == 0 || me == 0;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ns};

	nanosleep(&ts, NULL);
}

static void set_fatal(struct uroce_rdv *r, int err)
{
	uroce_log(UROCE_LOG_ERROR,
		  "rendezvous of UDP port %u failed (%s): no more QP numbers can be allocated",
		  r->port, strerror(err));
	pthread_mutex_lock(&r->lock);
	r->fatal = err;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	rdv_cm_fail(r, err);
}

/* Wake the threads waiting in uroce_rdv_request_block(): a grant, or no block left. */
static void answered(struct uroce_rdv *r, bool granted)
{
	pthread_mutex_lock(&r->lock);
	if (granted)
		r->grants++;
	else
		r->fulls++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void add_own_block(struct uroce_rdv *r, uint32_t block)
{
	int err = uroce_qpn_add_block(r->qpn, block);

	rdv_cm_own_block(r, block);
	if (err)
		uroce_log(UROCE_LOG_ERROR, "rendezvous: QPN block %u: %s", block, strerror(err));
}

/* Hub side. */

static uint32_t pack_ports(const uint16_t ports[2])
{
	return ports ? ports[0] | (uint32_t)ports[1] << 16 : 0;
}

/*
 * Record @block's new owner, whose own UDP ports are @ports (NULL: none, a freed block), and tell
 * every other process (not @skip, which is told apart).
 */
static void set_owner(struct uroce_rdv *r, uint32_t block, uint64_t token, const uint16_t *ports,
		      struct conn *route, struct conn *skip)
{
	struct rdv_owner_msg m = {.hdr = rdv_header(RDV_OWNER),
				  .owner = {.block = block, .token = token}};

	if (ports)
		memcpy(m.owner.ports, ports, sizeof(m.owner.ports));
	r->owner[block] = token;
	atomic_store_explicit(&r->ports[block], pack_ports(ports), memory_order_relaxed);
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

static int hub_self_grant(struct uroce_rdv *r)
{
	uint32_t block;
	int err;

	if (!find_free(r, &block)) {
		answered(r, false);
		return ENOSPC;
	}
	set_owner(r, block, r->token, r->my_ports, NULL, NULL);
	rdv_cm_own_block(r, block);
	err = uroce_qpn_add_block(r->qpn, block);
	answered(r, !err);
	return err;
}

static void drop_conn(struct uroce_rdv *r, struct conn *c)
{
	struct conn **pp;

	for (pp = &r->conns; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	uroce_progress_unwatch(r->progress, c->watch);
	close(c->fd);
	if (c->token)
		uroce_log(UROCE_LOG_INFO, "rendezvous: process %d has left", (int)c->pid);
	for (uint32_t b = 0; c->token && b < UROCE_QPN_BLOCKS; b++)
		if (r->owner[b] == c->token)
			set_owner(r, b, 0, NULL, NULL, NULL);
	rdv_cm_conn_gone(r, c);
	free(c);
}

/* Drop the connections found dead (dropping one may find another dead). */
static void reap(struct uroce_rdv *r)
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
	struct ucred cred = peer_cred(c->fd);

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
	c->token = m->token;
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
	set_owner(r, block, c->token, c->ports, c, c);
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
		set_owner(r, block, c->token, c->ports, c, c);
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
		ssize_t n = recv_record(r, c->fd);

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
	reap(r);
}

static void on_accept(void *arg)
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
		cred = peer_cred(fd);
		if (!same_user(cred.uid)) {
			uroce_log(UROCE_LOG_INFO,
				  "rendezvous: refused process %d of uid %u: another user's",
				  (int)cred.pid, (unsigned int)cred.uid);
			close(fd);
			continue;
		}
		set_buffers(fd);
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
		c->next = r->conns;
		r->conns = c;
	}
	reap(r);
}

/* The header of a datagram @rx handed on as a record of @type. */
static struct rdv_frame frame_of(enum rdv_type type, const struct uroce_rx *rx)
{
	struct rdv_frame f = {
		.hdr = rdv_header(type),
		.sport = rx->ip.sport,
		.dport = rx->ip.dport,
		.tos = rx->ip.tos,
		.ttl = rx->ip.ttl,
		.flags = rx->host_sent ? RDV_FRAME_LOCAL : 0,
		.flow_label = rx->ip.flow_label,
	};

	memcpy(f.sgid, rx->ip.sgid, 16);
	memcpy(f.dgid, rx->ip.dgid, 16);
	return f;
}

void rdv_forward(struct uroce_rdv *r, struct conn *c, const struct uroce_rx *rx)
{
	struct rdv_frame f = frame_of(RDV_FRAME, rx);
	struct iovec iov[2] = {
		{.iov_base = &f, .iov_len = sizeof(f)},
		{.iov_base = (void *)rx->roce, .iov_len = rx->len},
	};

	if (c->dead)
		return;
	/* Never wait: a process that does not read its socket loses datagrams, as on a wire. */
	if (send_record(c->fd, iov, 2, false))
		atomic_fetch_add(&r->forward_lost, 1);
	else
		atomic_fetch_add(&r->forwarded, 1);
}

uint16_t uroce_rdv_block_port(const struct uroce_rdv *r, uint32_t block, bool v6)
{
	uint32_t ports;

	if (block >= UROCE_QPN_BLOCKS)
		return 0;
	ports = atomic_load_explicit(&r->ports[block], memory_order_relaxed);
	return (uint16_t)(v6 ? ports >> 16 : ports & 0xFFFF);
}

uint16_t uroce_rdv_direct_port(const struct uroce_rdv *r, uint32_t qpn, bool v6)
{
	if (qpn == ROCE_GSI_QPN || qpn == ROCE_MCAST_QPN || qpn > ROCE_MCAST_QPN)
		return 0;
	return uroce_rdv_block_port(r, uroce_qpn_block(qpn), v6);
}

enum uroce_rdv_route uroce_rdv_route(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	/* DestQP: BTH bytes 5..7 (PROTOCOL.md §1.5). */
	uint32_t qpn = (uint32_t)rx->roce[5] << 16 | (uint32_t)rx->roce[6] << 8 | rx->roce[7];
	uint32_t block = uroce_qpn_block(qpn);

	if (qpn == ROCE_GSI_QPN)
		return r->hub ? rdv_cm_route(r, rx) : UROCE_RDV_DELIVER;
	if (qpn == ROCE_MCAST_QPN) {
		for (struct conn *c = r->hub ? r->conns : NULL; c; c = c->next)
			if (c->token)
				rdv_forward(r, c, rx);
		return UROCE_RDV_DELIVER;
	}
	if (r->owner[block] == r->token)
		return UROCE_RDV_DELIVER;
	if (r->hub && r->route[block]) {
		rdv_forward(r, r->route[block], rx);
		return UROCE_RDV_FORWARDED;
	}
	return UROCE_RDV_UNKNOWN;
}

void uroce_rdv_mcast_sent(struct uroce_rdv *r, const struct uroce_rx *rx)
{
	struct rdv_frame f;
	struct iovec iov[2];

	if (r->hub) {
		for (struct conn *c = r->conns; c; c = c->next)
			if (c->token)
				rdv_forward(r, c, rx);
		return;
	}
	f = frame_of(RDV_MCAST, rx);
	iov[0] = (struct iovec){.iov_base = &f, .iov_len = sizeof(f)};
	iov[1] = (struct iovec){.iov_base = (void *)rx->roce, .iov_len = rx->len};
	/* As rdv_forward(): never wait; a full hub loses it, as a switch would. */
	if (!r->up || send_record(r->up->fd, iov, 2, false))
		atomic_fetch_add(&r->forward_lost, 1);
}

/* The datagram in r->buf (@n bytes, struct rdv_frame first) as a struct uroce_rx. */
static struct uroce_rx rx_of_frame(struct uroce_rdv *r, size_t n)
{
	const struct rdv_frame *f = (const struct rdv_frame *)r->buf;
	struct uroce_rx rx = {.now = uroce_now()};

	rx.ip.sport = f->sport;
	rx.ip.dport = f->dport;
	rx.ip.tos = f->tos;
	rx.ip.ttl = f->ttl;
	rx.ip.flow_label = f->flow_label;
	memcpy(rx.ip.sgid, f->sgid, 16);
	memcpy(rx.ip.dgid, f->dgid, 16);
	rx.ip.ip_frag = roce_ipudp_is_v4(&rx.ip) ? ROCE_IPV4_DF : 0;
	rx.roce = r->buf + sizeof(*f);
	rx.len = n - sizeof(*f);
	rx.host_sent = f->flags & RDV_FRAME_LOCAL;
	return rx;
}

/* Hub: a multicast datagram process @from sent: to this process and every other. */
static void hub_mcast(struct uroce_rdv *r, struct conn *from, size_t n)
{
	struct uroce_rx rx = rx_of_frame(r, n);

	rx.host_sent = true;
	for (struct conn *c = r->conns; c; c = c->next)
		if (c != from && c->token)
			rdv_forward(r, c, &rx);
	r->ops->forwarded(r->arg, &rx);
}

/* Process side. */

/* The hub says @block is @token's, whose own UDP ports are @ports. */
static void take(struct uroce_rdv *r, uint32_t block, uint64_t token, const uint16_t ports[2])
{
	if (block >= UROCE_QPN_BLOCKS)
		return;
	atomic_store_explicit(&r->ports[block], token ? pack_ports(ports) : 0,
			      memory_order_relaxed);
	if (r->owner[block] == r->token && token != r->token)
		uroce_log(UROCE_LOG_ERROR,
			  "rendezvous: the hub gave QPN block %u of this process to another",
			  block);
	r->owner[block] = token;
	/* Also a grant whose GRANT was lost with the old hub: the new hub's table names us. */
	if (token == r->token)
		add_own_block(r, block);
}

static void process_frame(struct uroce_rdv *r, size_t n)
{
	struct uroce_rx rx = rx_of_frame(r, n);

	r->ops->forwarded(r->arg, &rx);
}

static void process_message(struct uroce_rdv *r, size_t n)
{
	const struct rdv_hdr *h = (const struct rdv_hdr *)r->buf;
	const struct rdv_table *t = (const struct rdv_table *)r->buf;
	const struct rdv_owner_msg *o = (const struct rdv_owner_msg *)r->buf;
	const struct rdv_block_msg *b = (const struct rdv_block_msg *)r->buf;

	if (n < sizeof(*h) || h->magic != RDV_MAGIC || h->version != RDV_VERSION)
		goto bad;
	switch (h->type) {
	case RDV_REFUSED:
		set_fatal(r, EPROTO);
		return;
	case RDV_TABLE:
		if (n < sizeof(*t) || t->count > (n - sizeof(*t)) / sizeof(t->entry[0]))
			goto bad;
		/* The hub's table replaces ours, except for the blocks we hold, which we claim. */
		for (uint32_t i = 0; r->table_pending && i < UROCE_QPN_BLOCKS; i++)
			if (r->owner[i] != r->token)
				r->owner[i] = 0;
		r->table_pending = false;
		for (uint32_t i = 0; i < t->count; i++)
			take(r, t->entry[i].block, t->entry[i].token, t->entry[i].ports);
		return;
	case RDV_OWNER:
		if (n < sizeof(*o))
			goto bad;
		take(r, o->owner.block, o->owner.token, o->owner.ports);
		return;
	case RDV_GRANT:
		if (n < sizeof(*b) || b->block >= UROCE_QPN_BLOCKS)
			goto bad;
		take(r, b->block, r->token, r->my_ports);
		r->outstanding -= r->outstanding > 0;
		answered(r, true);
		return;
	case RDV_FULL:
		r->outstanding -= r->outstanding > 0;
		answered(r, false);
		return;
	case RDV_CLAIMED:
		if (n < sizeof(*b))
			goto bad;
		if (!b->ok)
			uroce_log(
				UROCE_LOG_ERROR,
				"rendezvous: the hub refused QPN block %u of this process: its QPs "
				"will not receive",
				b->block);
		return;
	case RDV_FRAME:
		if (n < sizeof(struct rdv_frame))
			goto bad;
		process_frame(r, n);
		return;
	case RDV_SERVICE_DONE:
		rdv_cm_done(r, n);
		return;
	case RDV_CONN:
		rdv_cm_process_conn(r, n);
		return;
	}
bad:
	uroce_log(UROCE_LOG_ERROR, "rendezvous: ignoring a bad record from the hub");
}

static int meet(struct uroce_rdv *r, bool takeover);

static void hub_gone(struct uroce_rdv *r)
{
	int err, fatal;

	uroce_progress_unwatch(r->progress, r->up->watch);
	close(r->up->fd);
	free(r->up);
	r->up = NULL;
	pthread_mutex_lock(&r->lock);
	fatal = r->fatal;
	pthread_mutex_unlock(&r->lock);
	if (fatal)
		return;
	uroce_log(UROCE_LOG_INFO, "rendezvous: the hub has gone");
	err = meet(r, true);
	if (err)
		set_fatal(r, err);
}

static void on_up(void *arg)
{
	struct uroce_rdv *r = arg;

	while (r->up) {
		ssize_t n = recv_record(r, r->up->fd);

		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0 && errno == EMSGSIZE) {
			uroce_log(UROCE_LOG_ERROR,
				  "rendezvous: a record from the hub was too long");
			continue;
		}
		if (n <= 0) {
			hub_gone(r);
			return;
		}
		process_message(r, (size_t)n);
	}
}

/* Requests from application threads (and ones a lost hub did not answer). */
static void serve_requests(struct uroce_rdv *r)
{
	struct rdv_hdr req = rdv_header(RDV_REQUEST);
	uint32_t n;

	pthread_mutex_lock(&r->lock);
	n = r->wanted;
	r->wanted = 0;
	pthread_mutex_unlock(&r->lock);
	while (n--) {
		if (r->hub) {
			hub_self_grant(r);
		} else {
			rdv_up_send(r, &req, sizeof(req));
			r->outstanding++;
		}
	}
	rdv_cm_serve(r);
	rdv_cm_retry_held(r, false);
	reap(r);
}

static void on_request(void *arg)
{
	struct uroce_rdv *r = arg;
	uint64_t v;

	while (read(r->evfd, &v, sizeof(v)) > 0)
		;
	serve_requests(r);
}

/* Requests sent to a hub that has gone are asked again of the next. */
static void requeue_outstanding(struct uroce_rdv *r)
{
	pthread_mutex_lock(&r->lock);
	r->wanted += r->outstanding;
	pthread_mutex_unlock(&r->lock);
	r->outstanding = 0;
	rdv_cm_requeue(r);
}

/* The hold after a takeover is over: what no listener took is answered (rdv_int.h). */
static void on_hold_end(struct uroce_timer *t, uint64_t now)
{
	(void)now;
	rdv_cm_retry_held(container_of(t, struct uroce_rdv, hold_end), true);
}

static void on_grace(struct uroce_timer *t, uint64_t now)
{
	struct uroce_rdv *r = container_of(t, struct uroce_rdv, grace);

	(void)now;
	for (uint32_t b = 0; r->hub && b < UROCE_QPN_BLOCKS; b++) {
		if (r->owner[b] && r->owner[b] != r->token && !r->route[b]) {
			uroce_log(UROCE_LOG_DEBUG, "rendezvous: QPN block %u was not claimed", b);
			set_owner(r, b, 0, NULL, NULL, NULL);
		}
	}
	reap(r);
}

/* Bind the UDP port, retrying for a while if the old hub's socket is still there. */
static int bind_port(struct uroce_rdv *r)
{
	uint64_t deadline = uroce_now() + BIND_TIMEOUT_NS;
	int err;

	while ((err = r->ops->bind_port(r->arg)) == EADDRINUSE && uroce_now() < deadline)
		sleep_ns(5 * MS);
	return err;
}

static void on_bind_retry(struct uroce_timer *t, uint64_t now)
{
	struct uroce_rdv *r = container_of(t, struct uroce_rdv, bind_retry);
	int err = r->ops->bind_port(r->arg);

	if (err == EADDRINUSE)
		uroce_timers_arm(uroce_progress_timers(r->progress), t, now + BIND_RETRY_NS);
	else if (err)
		uroce_log(UROCE_LOG_ERROR, "rendezvous: cannot bind UDP port %u: %s", r->port,
			  strerror(err));
	else
		uroce_log(UROCE_LOG_INFO, "rendezvous: bound UDP port %u at last", r->port);
}

static int become_hub(struct uroce_rdv *r, int fd, bool takeover)
{
	int err;

	err = rdv_cm_became_hub(r);
	if (err)
		return err;
	r->listen_fd = fd;
	if (listen(fd, SOMAXCONN) || set_nonblock(fd))
		return errno;
	r->listen_watch = uroce_progress_watch(r->progress, fd, on_accept, r);
	if (!r->listen_watch)
		return errno;
	err = bind_port(r);
	if (err && !takeover) {
		uroce_log(UROCE_LOG_ERROR, "rendezvous: cannot become the hub of UDP port %u: %s",
			  r->port, strerror(err));
		return err;
	}
	r->hub = true;
	atomic_store(&r->is_hub, true);
	uroce_log(UROCE_LOG_INFO, "rendezvous: this process is the hub of UDP port %u", r->port);
	if (!takeover)
		return 0;
	r->hold_until = uroce_now() + RDV_HOLD_NS; /* rdv_int.h: RDV_HELD_REQS */
	uroce_timers_arm(uroce_progress_timers(r->progress), &r->hold_end, r->hold_until);
	/* A takeover cannot be undone: without the port, keep trying (datagrams are lost). */
	if (err == EADDRINUSE) {
		uroce_log(UROCE_LOG_ERROR, "rendezvous: UDP port %u is still in use; retrying",
			  r->port);
		uroce_timers_arm(uroce_progress_timers(r->progress), &r->bind_retry,
				 uroce_now() + BIND_RETRY_NS);
	} else if (err) {
		uroce_log(UROCE_LOG_ERROR, "rendezvous: cannot bind UDP port %u: %s", r->port,
			  strerror(err));
	}
	rdv_cm_old_hub_gone(r, true);
	/* Hand out blocks after the ones in use, and free the unclaimed ones later. */
	for (uint32_t b = 0; b < UROCE_QPN_BLOCKS; b++)
		if (r->owner[b])
			r->next_block = (b + 1) % UROCE_QPN_BLOCKS;
	uroce_timers_arm(uroce_progress_timers(r->progress), &r->grace, uroce_now() + RDV_GRACE_NS);
	requeue_outstanding(r);
	serve_requests(r);
	return 0;
}

static int become_process(struct uroce_rdv *r, int fd)
{
	struct rdv_hello hello = {.hdr = rdv_header(RDV_HELLO),
				  .token = r->token,
				  .pid = (uint32_t)getpid(),
				  .ports = {r->my_ports[0], r->my_ports[1]}};
	struct ucred cred;
	int err = set_nonblock(fd);

	if (err)
		return err;
	set_buffers(fd);
	r->up = calloc(1, sizeof(*r->up));
	if (!r->up)
		return ENOMEM;
	r->up->r = r;
	r->up->fd = fd;
	r->up->watch = uroce_progress_watch(r->progress, fd, on_up, r);
	if (!r->up->watch) {
		err = errno;
		free(r->up);
		r->up = NULL;
		return err;
	}
	cred = peer_cred(fd);
	uroce_log(UROCE_LOG_INFO, "rendezvous: the hub of UDP port %u is process %d (uid %u)",
		  r->port, (int)cred.pid, (unsigned int)cred.uid);
	/* Another process took over, which disconnects the old hub's connections; a dying hub
	 * (its name not yet released) is the same one: they stay ours. */
	if (cred.pid != r->hub_conns_pid)
		rdv_cm_old_hub_gone(r, false);
	r->hub_conns_pid = cred.pid;
	/*
	 * Keep our copy of the table until the hub's arrives: if this hub dies first (we may have
	 * connected to a dying one), the copy is what the next hub needs.
	 */
	r->table_pending = true;
	rdv_up_send(r, &hello, sizeof(hello));
	for (uint32_t b = 0; b < UROCE_QPN_BLOCKS; b++) {
		if (r->owner[b] == r->token) {
			struct rdv_block_msg claim = {.hdr = rdv_header(RDV_CLAIM), .block = b};

			rdv_up_send(r, &claim, sizeof(claim));
		}
	}
	rdv_cm_claim_held(r);
	requeue_outstanding(r);
	serve_requests(r);
	return 0;
}

/*
 * Bind the name (become the hub) or connect to it. A name that is bound but refuses
 * connections belongs to a process between bind() and listen(): try again shortly.
 */
static int meet(struct uroce_rdv *r, bool takeover)
{
	uint64_t deadline = uroce_now() + MEET_TIMEOUT_NS;

	for (;;) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		int err;

		if (fd < 0)
			return errno;
		if (!bind(fd, (struct sockaddr *)&r->name, r->name_len)) {
			err = become_hub(r, fd, takeover);
			if (err) {
				if (r->listen_watch)
					uroce_progress_unwatch(r->progress, r->listen_watch);
				r->listen_watch = NULL;
				r->listen_fd = -1;
				close(fd);
			}
			return err;
		}
		err = errno;
		if (err != EADDRINUSE) {
			close(fd);
			return err;
		}
		if (!connect(fd, (struct sockaddr *)&r->name, r->name_len)) {
			struct ucred hub = peer_cred(fd);

			if (!same_user(hub.uid)) {
				uroce_log(UROCE_LOG_ERROR,
					  "rendezvous of UDP port %u: its hub is process %d of uid "
					  "%u, "
					  "another user, which would see this process's traffic; "
					  "give this user's processes a port of their own "
					  "(UROCE_UDP_PORT)",
					  r->port, (int)hub.pid, (unsigned int)hub.uid);
				close(fd);
				return EACCES;
			}
			err = become_process(r, fd);
			if (err)
				close(fd);
			return err;
		}
		err = errno;
		close(fd);
		if (err != ECONNREFUSED)
			return err;
		if (uroce_now() > deadline)
			return ETIMEDOUT;
		sleep_ns(MS);
	}
}

static uint64_t new_token(void)
{
	uint64_t token = 0;

	while (!token) {
		if (getrandom(&token, sizeof(token), 0) != sizeof(token))
			token = uroce_now() ^ ((uint64_t)getpid() << 32);
	}
	return token;
}

static void free_rdv(struct uroce_rdv *r, bool unwatch)
{
	struct conn *c = r->conns;

	if (unwatch && r->ev_watch)
		uroce_progress_unwatch(r->progress, r->ev_watch);
	while (c) {
		struct conn *next = c->next;

		if (unwatch)
			uroce_progress_unwatch(r->progress, c->watch);
		close(c->fd);
		free(c->cm);
		free(c);
		c = next;
	}
	if (r->up) {
		if (unwatch)
			uroce_progress_unwatch(r->progress, r->up->watch);
		close(r->up->fd);
		free(r->up);
	}
	if (r->listen_fd >= 0) {
		if (unwatch)
			uroce_progress_unwatch(r->progress, r->listen_watch);
		close(r->listen_fd);
	}
	if (r->evfd >= 0)
		close(r->evfd);
	rdv_cm_free(r);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int uroce_rdv_join(struct uroce_rdv **out, uint16_t port, const uint16_t own_ports[2],
		   struct uroce_progress *p, struct uroce_qpn *qpn, const struct uroce_rdv_ops *ops,
		   void *arg)
{
	struct uroce_rdv *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	int err;

	if (!r)
		return ENOMEM;
	r->port = port;
	memcpy(r->my_ports, own_ports, sizeof(r->my_ports));
	r->progress = p;
	r->qpn = qpn;
	r->ops = ops;
	r->arg = arg;
	r->token = new_token();
	r->listen_fd = -1;
	r->grace.fire = on_grace;
	r->hold_end.fire = on_hold_end;
	r->bind_retry.fire = on_bind_retry;
	/* Abstract name (leading NUL): no file, scoped to the network namespace. */
	r->name.sun_family = AF_UNIX;
	r->name_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				  (size_t)snprintf(r->name.sun_path + 1,
						   sizeof(r->name.sun_path) - 1, "uroce/%u", port));
	pthread_mutex_init(&r->lock, NULL);
	r->notes_tail = &r->notes;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	r->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->evfd < 0 || !(r->ev_watch = uroce_progress_watch(p, r->evfd, on_request, r))) {
		err = errno;
		goto fail;
	}
	err = meet(r, false);
	if (err)
		goto fail;
	*out = r;
	return 0;

fail:
	uroce_log(UROCE_LOG_ERROR, "rendezvous of UDP port %u: %s", port, strerror(err));
	free_rdv(r, true);
	return err;
}

void uroce_rdv_leave(struct uroce_rdv *r)
{
	if (r)
		free_rdv(r, false);
}

int uroce_rdv_request_block(struct uroce_rdv *r)
{
	uint64_t grants, fulls;
	struct timespec deadline;
	uint64_t one = 1;
	int err;

	if (uroce_progress_on_thread(r->progress))
		return r->hub ? hub_self_grant(r) : EAGAIN;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += REQUEST_TIMEOUT_S;
	pthread_mutex_lock(&r->lock);
	err = r->fatal;
	if (!err) {
		grants = r->grants;
		fulls = r->fulls;
		r->wanted++;
		(void)!nc_write(r->evfd, &one, sizeof(one));
		while (!err && grants == r->grants && fulls == r->fulls && !r->fatal)
			err = pthread_cond_timedwait(&r->cond, &r->lock, &deadline);
		if (grants != r->grants)
			err = 0;
		else if (fulls != r->fulls)
			err = ENOSPC;
		else if (r->fatal)
			err = r->fatal;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

bool uroce_rdv_is_hub(const struct uroce_rdv *r)
{
	return atomic_load(&r->is_hub);
}

uint64_t uroce_rdv_forwarded(const struct uroce_rdv *r)
{
	return atomic_load(&r->forwarded);
}

uint64_t uroce_rdv_forward_lost(const struct uroce_rdv *r)
{
	return atomic_load(&r->forward_lost);
}
