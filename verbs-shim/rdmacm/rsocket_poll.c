// SPDX-License-Identifier: MIT
/*
 * rsockets: rpoll and rselect, with the semantics of poll(2) and select(2) over any mix of
 * rsockets and ordinary file descriptors (rsocket(7)).
 *
 * An rsocket's readiness is a state of the library, not of a descriptor, so rpoll first looks
 * at every entry without waiting (processing completions: credits go out, data is queued), and
 * only then sleeps in poll(2) on a descriptor for each rsocket that becomes readable when its
 * state may have changed: its CQ's completion channel (armed first, then looked at once more,
 * so that no completion slips between), its accept queue, its rdma_cm channel while it
 * connects, a datagram socket's epoll set. A change made by the service thread (a connection
 * established or ended) wakes sleepers through an eventfd of each sleeping thread
 * (rs_poll_signal), which rdma-core does with one shared eventfd and a gate.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

/* The threads sleeping in rpoll, each with its eventfd. */
struct rs_waiter {
	int fd;
	struct rs_waiter *next;
	bool listed;
};
static pthread_mutex_t waiters_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs_waiter *waiters;
static __thread struct rs_waiter me = {.fd = -1};
static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;

static void waiter_gone(void *p)
{
	struct rs_waiter *w = p;

	close(w->fd);
	w->fd = -1;
}

static void waiter_init(void)
{
	pthread_key_create(&waiter_key, waiter_gone);
}

/* This thread's eventfd, made on first use (closed when the thread exits). -1 with errno. */
int rs_poll_waiter_fd(void)
{
	if (me.fd < 0) {
		pthread_once(&waiter_once, waiter_init);
		me.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (me.fd >= 0)
			pthread_setspecific(waiter_key, &me);
	}
	return me.fd;
}

/* This thread starts or stops sleeping in rpoll; stopping clears its eventfd. */
void rs_poll_waiting(bool on)
{
	uint64_t v;

	pthread_mutex_lock(&waiters_lock);
	if (on && !me.listed) {
		me.next = waiters;
		waiters = &me;
		me.listed = true;
	} else if (!on && me.listed) {
		for (struct rs_waiter **pp = &waiters; *pp; pp = &(*pp)->next)
			if (*pp == &me) {
				*pp = me.next;
				break;
			}
		me.listed = false;
	}
	pthread_mutex_unlock(&waiters_lock);
	if (!on)
		(void)!read(me.fd, &v, sizeof(v));
}

void rs_poll_signal(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&waiters_lock);
	for (struct rs_waiter *w = waiters; w; w = w->next)
		(void)!write(w->fd, &one, sizeof(one));
	pthread_mutex_unlock(&waiters_lock);
}

static bool rs_always(struct rs *rs)
{
	(void)rs;
	return true;
}

/*
 * What @rs is ready for among @events (rdma-core's rs_poll_rs), without waiting; with @arm, its
 * CQ is armed first so that a completion after this look wakes the sleeper.
 */
static short rs_poll_rs(struct rs *rs, short events, bool arm)
{
	short rev = 0;

	if (rs->type == SOCK_DGRAM)
		return (short)ds_poll_events(rs, events, arm);
	if (rs->state >= RS_RESOLVING_ADDR && rs->state <= RS_ACCEPTING) {
		if (rs_do_connect(rs) && errno == EINPROGRESS)
			return 0;
	}
	switch (rs->state) {
	case RS_LISTENING: {
		struct pollfd p = {.fd = rs->accept_fd, .events = POLLIN};

		return poll(&p, 1, 0) > 0 ? (short)(events & POLLIN) : 0;
	}
	case RS_CONNECT_ERROR:
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	case RS_CONNECTED:
	case RS_DISCONNECTED:
	case RS_ERROR:
		break;
	default:
		return 0;
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->cq) {
		if (arm && rs->state == RS_CONNECTED)
			rs_arm_cq(rs);
		rs_process_cq(rs, true, rs_always);
	}
	if ((events & POLLIN) && rs_conn_have_rdata(rs))
		rev |= POLLIN;
	if ((events & POLLOUT) && rs->state == RS_CONNECTED && rs_can_send(rs))
		rev |= POLLOUT;
	/* Closed: POLLHUP once the data before the close is read (TCP reports the peer's FIN
	 * as POLLIN; rdma-core reports POLLHUP at once, and a poller that takes POLLHUP for an
	 * error, as rstream -T a, would lose the last data). */
	if (rs->state == RS_DISCONNECTED && !rs_have_rdata(rs))
		rev |= POLLHUP;
	else if (rs->state == RS_ERROR)
		rev |= POLLERR;
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

/* Every entry looked at once, without waiting; the number ready. */
static int rs_poll_check(struct pollfd *fds, nfds_t nfds, bool arm)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rs *rs = rs_lookup(fds[i].fd);

		if (rs) {
			fds[i].revents = rs_poll_rs(rs, fds[i].events, arm);
		} else if (fds[i].fd < 0) {
			fds[i].revents = 0;
		} else {
			fds[i].revents = 0;
			poll(&fds[i], 1, 0);
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* The descriptor rpoll sleeps on for @rs, or -1 for none (its state changes wake us). */
static int rs_wait_fd(struct rs *rs)
{
	if (rs->type == SOCK_DGRAM)
		return ds_wait_fd(rs);
	if (rs->state == RS_LISTENING)
		return rs->accept_fd;
	if (rs->state == RS_CONNECTED && rs->cq_channel)
		return rs->cq_channel->fd;
	if (rs->state >= RS_RESOLVING_ADDR && rs->state <= RS_ACCEPTING)
		return rs->cm_id->channel->fd;
	return -1;
}

static int rs_elapsed_ms(uint64_t start)
{
	return (int)(rs_now_ms() - start);
}

/*
 * rpoll: as poll(2) over rsockets and other descriptors (for an rsocket: POLLIN data, an EOF
 * or a connection to accept; POLLOUT room to send or a connect finished; POLLHUP closed;
 * POLLERR failed). The number of entries with events, 0 on time-out, or -1 with errno EINVAL
 * (NULL with entries), ENOMEM, EINTR, or poll's.
 */
UROCE_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	static __thread struct pollfd *rfds;
	static __thread nfds_t rcap;
	uint64_t start = rs_now_ms();
	struct timespec t0, t;
	int cnt, wfd, left;

	if (!fds && nfds)
		return rs_fail(EINVAL);
	/* rdma-core's rpoll: look again for polling_time microseconds before sleeping. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		cnt = rs_poll_check(fds, nfds, false);
		if (cnt || !timeout)
			return cnt;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 >=
		    rs_conf()->polling_us)
			break;
	}
	if (nfds + 1 > rcap) {
		struct pollfd *n = realloc(rfds, sizeof(*n) * (nfds + 1));

		if (!n)
			return rs_fail(ENOMEM);
		rfds = n;
		rcap = nfds + 1;
	}
	wfd = rs_poll_waiter_fd();
	if (wfd < 0)
		return -1;
	for (;;) {
		rs_poll_waiting(true);
		cnt = rs_poll_check(fds, nfds, true);
		if (cnt) {
			rs_poll_waiting(false);
			return cnt;
		}
		for (nfds_t i = 0; i < nfds; i++) {
			struct rs *rs = rs_lookup(fds[i].fd);

			rfds[i].fd = rs ? rs_wait_fd(rs) : fds[i].fd;
			rfds[i].events = rs ? POLLIN : fds[i].events;
			rfds[i].revents = 0;
		}
		rfds[nfds] = (struct pollfd){.fd = wfd, .events = POLLIN};
		left = -1;
		if (timeout > 0) {
			left = timeout - rs_elapsed_ms(start);
			if (left < 0)
				left = 0;
		}
		cnt = poll(rfds, nfds + 1, left);
		rs_poll_waiting(false);
		if (cnt < 0)
			return -1;
		for (nfds_t i = 0; i < nfds; i++) {
			struct rs *rs = rs_lookup(fds[i].fd);

			if (rs && rfds[i].revents && rs->type == SOCK_STREAM && rs->cq_channel &&
			    rfds[i].fd == rs->cq_channel->fd)
				rs_consume_cq_event(rs);
			else if (rs && rfds[i].revents && rs->type == SOCK_DGRAM)
				ds_consume_event(rs);
		}
		cnt = rs_poll_check(fds, nfds, false);
		if (cnt || (timeout >= 0 && rs_elapsed_ms(start) >= timeout))
			return cnt;
	}
}

/*
 * rselect: as select(2), through rpoll. The number of bits set, 0 on time-out, or -1 with
 * errno EINVAL (@nfds out of range), ENOMEM, EINTR.
 */
UROCE_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			 struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, cnt = 0, ms = -1;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rs_fail(EINVAL);
	fds = calloc((size_t)nfds + 1, sizeof(*fds));
	if (!fds)
		return rs_fail(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;
		bool ex = exceptfds && FD_ISSET(fd, exceptfds);

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (ev || ex) {
			fds[n].fd = fd;
			fds[n++].events = ev | (ex ? POLLPRI : 0);
		}
	}
	if (timeout)
		ms = (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
	ret = rpoll(fds, (nfds_t)n, ms);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	for (int i = 0; ret > 0 && i < n; i++) {
		short r = fds[i].revents;

		if (readfds && (r & (POLLIN | POLLHUP | POLLERR)) && (fds[i].events & POLLIN)) {
			FD_SET(fds[i].fd, readfds);
			cnt++;
		}
		if (writefds && (r & (POLLOUT | POLLERR)) && (fds[i].events & POLLOUT)) {
			FD_SET(fds[i].fd, writefds);
			cnt++;
		}
		if (exceptfds && (r & POLLPRI)) {
			FD_SET(fds[i].fd, exceptfds);
			cnt++;
		}
	}
	free(fds);
	return ret < 0 ? ret : cnt;
}
