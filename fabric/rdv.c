/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous (rdv.h): meeting the host's other processes on the abstract socket
 * \0uroce/<port>, as the hub that binds it and holds the RoCE port or as a process connected
 * to it; taking over when the hub goes; QPN blocks asked of the hub and granted; the
 * process's side of the control messages. The hub's side is rdv_hub.c, forwarding
 * rdv_forward.c, the records on the socket rdv_link.c, the CM directory rdv_cm.c (with
 * rdv_cm_req.c and rdv_cm_conn.c); rdv_int.h is what they share.
 */
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
void rdv_answered(struct uroce_rdv *r, bool granted)
{
	pthread_mutex_lock(&r->lock);
	if (granted)
		r->grants++;
	else
		r->fulls++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Process side. */

/* The hub says @block is @token's, whose own UDP ports are @ports. */
static void take(struct uroce_rdv *r, uint32_t block, uint64_t token, const uint16_t ports[2])
{
	if (block >= UROCE_QPN_BLOCKS)
		return;
	atomic_store_explicit(&r->ports[block], token ? rdv_pack_ports(ports) : 0,
			      memory_order_relaxed);
	if (r->owner[block] == r->token && token != r->token)
		uroce_log(UROCE_LOG_ERROR,
			  "rendezvous: the hub gave QPN block %u of this process to another",
			  block);
	r->owner[block] = token;
	/* Also a grant whose GRANT was lost with the old hub: the new hub's table names us. */
	if (token == r->token)
		rdv_add_own_block(r, block);
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
		rdv_answered(r, true);
		return;
	case RDV_FULL:
		r->outstanding -= r->outstanding > 0;
		rdv_answered(r, false);
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
		rdv_process_frame(r, n);
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
	pthread_mutex_lock(&r->fwd_lock);
	close(r->up->fd);
	free(r->up);
	r->up = NULL;
	pthread_mutex_unlock(&r->fwd_lock);
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
		ssize_t n = rdv_recv_record(r, r->up->fd);

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
			rdv_hub_self_grant(r);
		} else {
			rdv_up_send(r, &req, sizeof(req));
			r->outstanding++;
		}
	}
	rdv_cm_serve(r);
	rdv_cm_retry_held(r, false);
	rdv_reap(r);
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

/* A held request's deadline: those past theirs are answered (rdv_int.h: rdv_held_req). */
static void on_hold_end(struct uroce_timer *t, uint64_t now)
{
	(void)now;
	rdv_cm_retry_held(uroce_container_of(t, struct uroce_rdv, hold_end), true);
}

static void on_grace(struct uroce_timer *t, uint64_t now)
{
	struct uroce_rdv *r = uroce_container_of(t, struct uroce_rdv, grace);

	(void)now;
	for (uint32_t b = 0; r->hub && b < UROCE_QPN_BLOCKS; b++) {
		if (r->owner[b] && r->owner[b] != r->token && !r->route[b]) {
			uroce_log(UROCE_LOG_DEBUG, "rendezvous: QPN block %u was not claimed", b);
			rdv_set_owner(r, b, 0, NULL, NULL, NULL);
		}
	}
	rdv_reap(r);
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
	struct uroce_rdv *r = uroce_container_of(t, struct uroce_rdv, bind_retry);
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
	if (listen(fd, SOMAXCONN) || rdv_set_nonblock(fd))
		return errno;
	r->listen_watch = uroce_progress_watch(r->progress, fd, rdv_on_accept, r);
	if (!r->listen_watch)
		return errno;
	err = bind_port(r);
	if (err && !takeover) {
		uroce_log(UROCE_LOG_ERROR, "rendezvous: cannot become the hub of UDP port %u: %s",
			  r->port, strerror(err));
		return err;
	}
	pthread_mutex_lock(&r->fwd_lock);
	r->hub = true;
	pthread_mutex_unlock(&r->fwd_lock);
	atomic_store(&r->is_hub, true);
	uroce_log(UROCE_LOG_INFO, "rendezvous: this process is the hub of UDP port %u", r->port);
	if (!takeover)
		return 0;
	/* rdv_int.h: RDV_HELD_REQS; each held request arms hold_end (rdv_cm.c: hold_request). */
	r->hold_until = uroce_now() + RDV_HOLD_NS;
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
	struct conn *up;
	int err = rdv_set_nonblock(fd);

	if (err)
		return err;
	rdv_set_buffers(fd);
	up = calloc(1, sizeof(*up));
	if (!up)
		return ENOMEM;
	up->r = r;
	up->fd = fd;
	up->watch = uroce_progress_watch(r->progress, fd, on_up, r);
	if (!up->watch) {
		err = errno;
		free(up);
		return err;
	}
	pthread_mutex_lock(&r->fwd_lock);
	r->up = up;
	pthread_mutex_unlock(&r->fwd_lock);
	cred = rdv_peer_cred(fd);
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
			struct ucred hub = rdv_peer_cred(fd);

			if (!rdv_same_user(hub.uid)) {
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
	pthread_mutex_destroy(&r->fwd_lock);
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
	pthread_mutex_init(&r->fwd_lock, NULL);
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
		return r->hub ? rdv_hub_self_grant(r) : EAGAIN;
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
