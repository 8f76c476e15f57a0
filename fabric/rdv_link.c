/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous's records on its Unix sockets (SOCK_SEQPACKET: one message a record): sending
 * with a bounded wait, receiving into the rendezvous's buffer, the sockets' options, and who is
 * at the other end (SO_PEERCRED: only processes of this user, or root, may meet).
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

#define SEND_TIMEOUT_MS 1000 /* a control message to a process that does not read */
#define SOCK_BUF        (4 << 20)

/*
 * Send one record. With @wait, wait up to SEND_TIMEOUT_MS for room once. Returns 0 or errno.
 */
int rdv_send_record(int fd, const struct iovec *iov, size_t iovcnt, bool wait)
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

	return rdv_send_record(fd, &iov, 1, true);
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
ssize_t rdv_recv_record(struct uroce_rdv *r, int fd)
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

void rdv_set_buffers(int fd)
{
	int size = SOCK_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

int rdv_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) ? errno : 0;
}

struct ucred rdv_peer_cred(int fd)
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
bool rdv_same_user(uid_t uid)
{
	uid_t me = geteuid();

	return uid == me || uid == 0 || me == 0;
}
