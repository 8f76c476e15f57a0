// SPDX-License-Identifier: MIT
/* Multicast on the host (mcast.h): the queue of copies to deliver, and group membership. */
#include "fabric/mcast.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fabric/log.h"
#include "fabric/nocancel.h"
#include "transport/qp.h"

#define QUEUE_LEN 64 /* copies waiting for the receiving thread */

struct copy {
	struct roce_ipudp ip;
	uint16_t len;
	uint8_t roce[ROCE_PKT_MAX];
};

struct membership {
	uint8_t group[16];
	unsigned int ifindex;
	unsigned int count;
};

struct uroce_mcast {
	struct uroce_progress *progress;
	struct uroce_watch *watch;
	int evfd;
	void (*deliver)(void *arg, const struct uroce_rx *rx);
	void *arg;

	pthread_mutex_t lock; /* the queue and the memberships */
	struct copy *queue;   /* QUEUE_LEN slots, a ring */
	unsigned int head, tail;
	struct membership *joined;
	unsigned int njoined;
};

/* Watch callback (receive lock held): deliver every queued copy. */
static void on_ready(void *arg)
{
	struct uroce_mcast *m = arg;
	struct copy c;
	uint64_t v;

	while (read(m->evfd, &v, sizeof(v)) > 0)
		;
	for (;;) {
		struct uroce_rx rx = {.icrc = ROCE_ICRC_OK, .host_sent = true};

		pthread_mutex_lock(&m->lock);
		if (m->tail == m->head) {
			pthread_mutex_unlock(&m->lock);
			return;
		}
		c = m->queue[m->tail++ % QUEUE_LEN];
		pthread_mutex_unlock(&m->lock);
		rx.ip = c.ip;
		rx.roce = c.roce;
		rx.len = c.len;
		rx.now = uroce_now();
		m->deliver(m->arg, &rx);
	}
}

struct uroce_mcast *uroce_mcast_new(struct uroce_progress *p,
				    void (*deliver)(void *arg, const struct uroce_rx *rx),
				    void *arg)
{
	struct uroce_mcast *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return NULL;
	m->progress = p;
	m->deliver = deliver;
	m->arg = arg;
	pthread_mutex_init(&m->lock, NULL);
	m->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->evfd < 0 || !(m->watch = uroce_progress_watch(p, m->evfd, on_ready, m))) {
		err = errno;
		if (m->evfd >= 0)
			close(m->evfd);
		pthread_mutex_destroy(&m->lock);
		free(m);
		errno = err;
		return NULL;
	}
	return m;
}

void uroce_mcast_free(struct uroce_mcast *m)
{
	if (!m)
		return;
	close(m->evfd);
	pthread_mutex_destroy(&m->lock);
	free(m->queue);
	free(m->joined);
	free(m);
}

bool uroce_mcast_sent(struct uroce_mcast *m, const struct roce_ipudp *ip, const uint8_t *roce,
		      size_t len)
{
	uint64_t one = 1;
	bool queued = false;

	if (len > ROCE_PKT_MAX)
		return false;
	pthread_mutex_lock(&m->lock);
	if (!m->queue)
		m->queue = malloc(QUEUE_LEN * sizeof(*m->queue)); /* on first use: 270 KiB */
	if (m->queue && m->head - m->tail < QUEUE_LEN) {
		struct copy *c = &m->queue[m->head++ % QUEUE_LEN];

		c->ip = *ip;
		c->len = (uint16_t)len;
		memcpy(c->roce, roce, len);
		queued = true;
	}
	pthread_mutex_unlock(&m->lock);
	if (queued)
		(void)!nc_write(m->evfd, &one, sizeof(one)); /* fails only when saturated: awake */
	return queued;
}

int uroce_mcast_join(struct uroce_mcast *m, const struct uroce_udp *s, const uint8_t group[16],
		     unsigned int ifindex, bool join)
{
	struct membership *e = NULL;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < m->njoined && !e; i++)
		if (!memcmp(m->joined[i].group, group, 16) && m->joined[i].ifindex == ifindex)
			e = &m->joined[i];
	if (join && !e) {
		struct membership *grown =
			realloc(m->joined, (m->njoined + 1) * sizeof(*m->joined));

		if (!grown) {
			pthread_mutex_unlock(&m->lock);
			return ENOMEM;
		}
		m->joined = grown;
		e = &m->joined[m->njoined++];
		memcpy(e->group, group, 16);
		e->ifindex = ifindex;
		e->count = 0;
	}
	if (e && (join ? e->count++ == 0 : e->count && --e->count == 0)) {
		err = s->fd >= 0 ? uroce_udp_join(s, group, ifindex, join) : EAFNOSUPPORT;
		if (err)
			uroce_log(UROCE_LOG_INFO,
				  "multicast %s on interface %u: %s (members on this host are "
				  "reached all the same)",
				  join ? "join" : "leave", ifindex, strerror(err));
		if (!e->count)
			*e = m->joined[--m->njoined];
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}
