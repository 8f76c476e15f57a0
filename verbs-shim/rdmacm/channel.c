// SPDX-License-Identifier: MIT
/*
 * Event channels (rdma_create_event_channel(3), rdma_get_cm_event(3)): a queue of events and an
 * eventfd that is readable exactly while the queue holds some, so that an application can poll
 * channel->fd, or make it non-blocking and get EAGAIN from rdma_get_cm_event, as with the
 * kernel's rdma_cm file. The fd is written when the queue stops being empty and read when it
 * becomes empty again (both under the queue's lock), not once per event each: a burst of events
 * (a thousand connections set up at once) costs two system calls, not two per event.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/nocancel.h"
#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

/* Events taken and not yet acked, counted per id (struct cma_id.events_out). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t done;
} acks = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

/* NULL with errno ENOMEM, or eventfd's errno (EMFILE, ...). */
UROCE_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->tail = &c->head;
	return &c->ch;
}

/*
 * Destroyed channels, kept a while before their memory goes: programs call rdma_get_cm_event
 * on a channel another thread has just destroyed (rping 44's CM thread at every exit: its main
 * thread destroys the channel as soon as the last event is acked). With the channel kept, its
 * fd -1 tells that call to wait for ever (destroyed_wait), where freed memory would have given
 * it any fd, or a freed lock.
 */
#define CHANNELS_KEPT 64
static struct {
	pthread_mutex_t lock;
	struct cma_channel *c[CHANNELS_KEPT];
	unsigned int next;
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Events not yet taken are dropped; the ids reporting here must be gone (rdma-core's rule). */
UROCE_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *c = to_channel(channel), *old;
	int fd;

	pthread_mutex_lock(&c->lock);
	while (c->head) {
		struct cma_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	c->tail = &c->head;
	fd = c->ch.fd;
	__atomic_store_n(&c->ch.fd, -1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	close(fd);
	pthread_mutex_lock(&kept.lock);
	old = kept.c[kept.next];
	kept.c[kept.next] = c;
	kept.next = (kept.next + 1) % CHANNELS_KEPT;
	pthread_mutex_unlock(&kept.lock);
	if (old) {
		pthread_mutex_destroy(&old->lock);
		free(old);
	}
}

/* Queue @e on @c: the fd is readable until the queue is empty again. */
static void push(struct cma_channel *c, struct cma_event *e)
{
	uint64_t one = 1;

	pthread_mutex_lock(&c->lock);
	if (!c->head)
		(void)!nc_write(c->ch.fd, &one, sizeof(one)); /* the count is 0: cannot fail */
	*c->tail = e;
	c->tail = &e->next;
	pthread_mutex_unlock(&c->lock);
}

/* The queue of @c has just become empty: the fd stops being readable. Locked. */
static void emptied(struct cma_channel *c)
{
	uint64_t v;

	/* Written when the queue stopped being empty: the count is not 0 and the read is quick
	 * even on a blocking fd. */
	(void)!nc_read(c->ch.fd, &v, sizeof(v));
}

/*
 * A thread waiting on a channel destroyed under it: it waits for ever (a cancellation point),
 * as a thread blocked in a read of the kernel's rdma_cm file does when another closes it,
 * whether it came before the destroy or just after. rping 44's CM thread comes just after at
 * the end of every run, now and then; with EBADF (what a read begun after the close gets) it
 * exits 255 after a complete run, before main returns 0.
 */
static void destroyed_wait(void)
{
	for (;;)
		pause();
}

/*
 * Wait until the channel's fd @fd is readable: 0, or -1 with errno EAGAIN (the application
 * made the fd non-blocking). In poll(), a cancellation point, holding no lock: a thread waiting
 * here can be cancelled, as one blocked in the kernel's rdma_cm read. A signal does not end the
 * wait (a read of the kernel's file restarts under SA_RESTART; poll would not).
 */
static int wait_event(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		destroyed_wait(); /* EBADF: closed since the caller read it */
	if (flags & O_NONBLOCK) {
		errno = EAGAIN;
		return -1;
	}
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	if (p.revents & POLLNVAL)
		destroyed_wait();
	return 0;
}

int cma_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status)
{
	return cma_conn_event(id, type, status, NULL, NULL, NULL, 0);
}

int cma_conn_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		   struct rdma_cm_id *listen, const struct rdma_conn_param *param, const void *pd,
		   size_t len)
{
	struct cma_channel *c = to_channel(listen ? listen->channel : id->channel);
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	e->ev.id = id;
	e->ev.listen_id = listen;
	e->ev.event = type;
	e->ev.status = status;
	if (param)
		e->ev.param.conn = *param;
	if (len > sizeof(e->private_data))
		len = sizeof(e->private_data);
	if (len) {
		memcpy(e->private_data, pd, len);
		e->ev.param.conn.private_data = e->private_data;
	}
	e->ev.param.conn.private_data_len = (uint8_t)(len > 255 ? 255 : len);
	push(c, e);
	return 0;
}

int cma_ud_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, int status,
		 struct rdma_cm_id *listen, const struct cma_event_ud *ud, const void *pd,
		 size_t len)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	e->ev.id = id;
	e->ev.listen_id = listen;
	e->ev.event = type;
	e->ev.status = status;
	e->ev.param.ud.ah_attr = ud->ah_attr;
	e->ev.param.ud.qp_num = ud->qp_num;
	e->ev.param.ud.qkey = ud->qkey;
	if (len > sizeof(e->private_data))
		len = sizeof(e->private_data);
	if (len) {
		memcpy(e->private_data, pd, len);
		e->ev.param.ud.private_data = e->private_data;
	}
	e->ev.param.ud.private_data_len = (uint8_t)(len > 255 ? 255 : len);
	push(to_channel(id->channel), e);
	return 0;
}

int cma_complete(struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;

	if (!to_cma_id(id)->sync)
		return 0;
	if (id->event)
		rdma_ack_cm_event(id->event);
	if (rdma_get_cm_event(id->channel, &ev))
		return -1;
	if (!ev->status)
		return 0;
	/* librdmacm's ucma_complete: a rejection is ECONNREFUSED, a status its errno. */
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		errno = ECONNREFUSED;
	else
		errno = ev->status < 0 ? -ev->status : ev->status;
	return -1;
}

int cma_join_event(struct rdma_cm_id *id, const struct cma_event_ud *ud, void *context, bool attach)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	e->ev.id = id;
	e->ev.event = RDMA_CM_EVENT_MULTICAST_JOIN;
	e->ev.param.ud.ah_attr = ud->ah_attr;
	e->ev.param.ud.qp_num = ud->qp_num;
	e->ev.param.ud.qkey = ud->qkey;
	e->ev.param.ud.private_data = context; /* librdmacm: the join's context */
	e->attach = attach;
	push(to_channel(id->channel), e);
	return 0;
}

/*
 * 0 and *@event, or -1 with errno: EINVAL (NULL arguments), EAGAIN (the fd was made
 * non-blocking and no event waits). On a channel destroyed under it, the call waits for ever
 * (destroyed_wait). A MULTICAST_JOIN whose QP cannot be attached to the group is turned into
 * MULTICAST_ERROR with status -1, as librdmacm does.
 */
UROCE_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_channel *c;
	struct cma_event *e;
	int fd;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	c = to_channel(channel);
	fd = __atomic_load_n(&c->ch.fd, __ATOMIC_ACQUIRE); /* -1 once destroyed (kept, above) */
	if (fd < 0)
		destroyed_wait();
	pthread_mutex_lock(&c->lock);
	while (!c->head) {
		pthread_mutex_unlock(&c->lock);
		if (wait_event(fd))
			return -1;
		pthread_mutex_lock(&c->lock);
	}
	e = c->head;
	c->head = e->next;
	if (!c->head) {
		c->tail = &c->head;
		emptied(c);
	}
	/*
	 * Counted as taken before the queue lets it go: an rdma_destroy_id in between would find
	 * it neither queued nor taken and free the id under it (cma_events_drain). Lock order:
	 * queue, then acks; nothing takes them the other way round.
	 */
	pthread_mutex_lock(&acks.lock);
	if (e->ev.id)
		to_cma_id(e->ev.id)->events_out++;
	pthread_mutex_unlock(&acks.lock);
	pthread_mutex_unlock(&c->lock);
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id) {
		atomic_fetch_sub(&to_cma_id(e->ev.listen_id)->requests_waiting, 1);
		if (to_cma_id(e->ev.listen_id)->sync)
			cma_request_taken(e->ev.id);
	}
	if (e->attach && e->ev.id->qp) {
		int err = ibv_attach_mcast(e->ev.id->qp, &e->ev.param.ud.ah_attr.grh.dgid, 0);

		if (err) {
			e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
			e->ev.status = -1;
		}
	}
	*event = &e->ev;
	if (e->ev.id && to_cma_id(e->ev.id)->sync)
		e->ev.id->event = &e->ev; /* the last event, for synchronous use (ABI.md §2) */
	return 0;
}

/* 0, or -1 with errno EINVAL for NULL. */
UROCE_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	if (event->id && event->id->event == event)
		event->id->event = NULL;
	if (event->id) {
		pthread_mutex_lock(&acks.lock);
		to_cma_id(event->id)->events_out--;
		pthread_cond_broadcast(&acks.done);
		pthread_mutex_unlock(&acks.lock);
	}
	free((struct cma_event *)event);
	return 0;
}

void cma_events_drain(struct rdma_cm_id *id)
{
	struct cma_channel *c = to_channel(id->channel);
	struct cma_event **pp, *dropped = NULL;
	bool had = false;

	/* Those not taken yet go (the kernel's rdma_cm drops them too); */
	pthread_mutex_lock(&c->lock);
	had = c->head != NULL;
	for (pp = &c->head; *pp;) {
		struct cma_event *e = *pp;

		/* Its own, and (a listener's) the requests the application has not taken. */
		if (e->ev.id == id || e->ev.listen_id == id) {
			*pp = e->next;
			e->next = dropped;
			dropped = e;
		} else {
			pp = &e->next;
		}
	}
	c->tail = &c->head;
	while (*c->tail)
		c->tail = &(*c->tail)->next;
	if (had && !c->head)
		emptied(c);
	pthread_mutex_unlock(&c->lock);
	while (dropped) {
		struct cma_event *e = dropped;

		dropped = e->next;
		/* A request nobody will answer: refused, as the kernel's rdma_cm does. */
		if (e->ev.id != id && e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_reject(e->ev.id, NULL, 0);
			rdma_destroy_id(e->ev.id);
		}
		free(e);
	}
	/* those taken are waited for, until acked (librdmacm's rdma_destroy_id). */
	if (id->event)
		rdma_ack_cm_event(id->event);
	pthread_mutex_lock(&acks.lock);
	while (to_cma_id(id)->events_out)
		pthread_cond_wait(&acks.done, &acks.lock);
	pthread_mutex_unlock(&acks.lock);
}
