// SPDX-License-Identifier: MIT
/*
 * rsockets: the service thread, which does what no application call is there to do, as
 * rdma-core's listen, connect, TCP and UDP service threads do (one thread here, started with
 * the first socket that needs it):
 * - a listening socket's connection requests are accepted (rs_do_accept) and, once established,
 *   queued for raccept, so that a client's rconnect completes before the server calls raccept,
 *   as TCP's backlog does;
 * - the CM events of a socket's own id: a non-blocking connect steps on, an accepted
 *   connection's ESTABLISHED, a connection's DISCONNECTED (rs_cm_event);
 * - keepalives (SO_KEEPALIVE): every keepalive_time seconds a zero-length RDMA WRITE, which
 *   the peer's RNIC acknowledges without its application (rdma-core's tcp_svc_send_keepalive);
 *   a peer gone makes it fail, and the socket with it;
 * - a datagram socket's UDP socket, where peers announce their QP (rsocket_dgram.c).
 *
 * svc.lock guards the set and is held while the thread handles a socket, so that once
 * rs_svc_remove returns the thread no longer touches it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs-shim/rdmacm/rsocket_int.h"

static struct {
	pthread_mutex_t lock;
	bool running;
	int ctl; /* eventfd: the set or a deadline changed */
	struct rs **set;
	int n, cap;
	unsigned int gen; /* bumped by every change of the set */
} svc = {.lock = PTHREAD_MUTEX_INITIALIZER, .ctl = -1};

void rs_svc_kick(void)
{
	uint64_t one = 1;

	if (svc.ctl >= 0)
		(void)!write(svc.ctl, &one, sizeof(one));
}

/* The descriptor the thread watches for @rs. */
static int rs_svc_fd(const struct rs *rs)
{
	if (rs->type == SOCK_DGRAM)
		return rs->index;
	return rs->cm_id->channel->fd;
}

/* A keepalive is due (rsocket_int.h RS_CTRL_KEEPALIVE). */
static void rs_send_keepalive(struct rs *rs)
{
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RS_CONNECTED && rs->cq) {
		rs_poll_cq(rs); /* give back the control slots of keepalives done */
		if (rs_ctrl_avail(rs)) {
			rs->ctrl_seqno++;
			rs_post_write(rs, NULL, 0, rs_msg(RS_OP_CTRL, RS_CTRL_KEEPALIVE), 0, 0, 0);
		}
	}
	pthread_mutex_unlock(&rs->lock);
}

/* The sockets whose keepalive is due get one; the time to the next, in ms (-1: none). */
static int rs_svc_keepalives(void)
{
	uint64_t now = rs_now_ms(), next = UINT64_MAX;

	for (int i = 0; i < svc.n; i++) {
		struct rs *rs = svc.set[i];

		if (!rs->keepalive || rs->type != SOCK_STREAM)
			continue;
		if (rs->keepalive_due <= now) {
			rs_send_keepalive(rs);
			rs->keepalive_due = now + (uint64_t)rs->keepalive_time * 1000;
		}
		if (rs->keepalive_due < next)
			next = rs->keepalive_due;
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

/* Take @rs out of the set. svc.lock held. */
static void rs_svc_unlink(struct rs *rs)
{
	for (int i = 0; i < svc.n; i++)
		if (svc.set[i] == rs) {
			svc.set[i] = svc.set[--svc.n];
			svc.gen++;
			break;
		}
	rs->in_svc = false;
}

/* Accepted connections that failed before raccept could take them go. svc.lock held. */
static struct rs *rs_svc_take_failed(void)
{
	struct rs *list = NULL;

	for (int i = 0; i < svc.n; i++) {
		struct rs *rs = svc.set[i];

		if (rs->listener && rs->state == RS_CONNECT_ERROR) {
			rs_svc_unlink(rs);
			rs->accept_next = list;
			list = rs;
			i--;
		}
	}
	return list;
}

static void *rs_svc_run(void *arg)
{
	struct pollfd *pfds = NULL;
	struct rs **snap = NULL;
	int cap = 0;

	(void)arg;
	for (;;) {
		unsigned int gen;
		int n, timeout;
		struct rs *failed;
		uint64_t v;

		pthread_mutex_lock(&svc.lock);
		timeout = rs_svc_keepalives();
		if (svc.n + 1 > cap) {
			cap = svc.n + 16;
			pfds = realloc(pfds, sizeof(*pfds) * (size_t)cap);
			snap = realloc(snap, sizeof(*snap) * (size_t)cap);
			if (!pfds || !snap)
				abort(); /* a few bytes per socket; nothing sensible is left to do
					  */
		}
		pfds[0] = (struct pollfd){.fd = svc.ctl, .events = POLLIN};
		for (n = 0; n < svc.n; n++) {
			snap[n] = svc.set[n];
			pfds[n + 1] = (struct pollfd){.fd = rs_svc_fd(snap[n]), .events = POLLIN};
		}
		gen = svc.gen;
		pthread_mutex_unlock(&svc.lock);

		if (poll(pfds, (nfds_t)n + 1, timeout) < 0 && errno != EINTR)
			continue;
		if (pfds[0].revents)
			(void)!read(svc.ctl, &v, sizeof(v));

		pthread_mutex_lock(&svc.lock);
		for (int i = 0; gen == svc.gen && i < n; i++) {
			struct rs *rs = snap[i];

			if (!pfds[i + 1].revents)
				continue;
			if (rs->type == SOCK_DGRAM)
				ds_svc_input(rs);
			else if (rs->state == RS_LISTENING)
				rs_do_accept(rs);
			else
				rs_cm_event(rs);
		}
		failed = rs_svc_take_failed();
		pthread_mutex_unlock(&svc.lock);
		while (failed) {
			struct rs *rs = failed;

			failed = rs->accept_next;
			rs_free(rs);
		}
	}
	return NULL;
}

/* Start the thread if it is not running. svc.lock held. 0 or an errno. */
static int rs_svc_start(void)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int err;

	if (svc.running)
		return 0;
	if (svc.ctl < 0) {
		svc.ctl = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (svc.ctl < 0)
			return errno;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* Signals are the application's threads' (as every uroce thread: ARCHITECTURE.md). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &a, rs_svc_run, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (!err)
		svc.running = true;
	return err;
}

int rs_svc_add_locked(struct rs *rs)
{
	int err;

	if (rs->in_svc)
		return 0;
	err = rs_svc_start();
	if (err)
		return err;
	if (svc.n == svc.cap) {
		int cap = svc.cap ? svc.cap * 2 : 16;
		struct rs **set = realloc(svc.set, sizeof(*set) * (size_t)cap);

		if (!set)
			return ENOMEM;
		svc.set = set;
		svc.cap = cap;
	}
	svc.set[svc.n++] = rs;
	svc.gen++;
	rs->in_svc = true;
	rs_svc_kick();
	return 0;
}

/* Watch @rs (its kind says for what: see the top). 0 or an errno. */
int rs_svc_add(struct rs *rs)
{
	int err;

	pthread_mutex_lock(&svc.lock);
	err = rs_svc_add_locked(rs);
	pthread_mutex_unlock(&svc.lock);
	return err;
}

/*
 * Stop watching @rs; when it listens, its connections being accepted go too. Once this
 * returns, the thread does not touch @rs.
 */
void rs_svc_remove(struct rs *rs)
{
	struct rs *orphans = NULL;

	pthread_mutex_lock(&svc.lock);
	if (rs->in_svc)
		rs_svc_unlink(rs);
	if (rs->state == RS_LISTENING) {
		for (int i = 0; i < svc.n; i++) {
			struct rs *c = svc.set[i];

			if (c->listener == rs && c->state != RS_CONNECTED) {
				rs_svc_unlink(c);
				c->accept_next = orphans;
				orphans = c;
				i--;
			}
		}
	}
	pthread_mutex_unlock(&svc.lock);
	while (orphans) {
		struct rs *c = orphans;

		orphans = c->accept_next;
		rs_free(c);
	}
}
