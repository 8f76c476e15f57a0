// SPDX-License-Identifier: MIT
/* Port state events from rtnetlink link messages (port_events.h). */
#include "verbs-shim/port_events.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs-shim/async.h"

/* The contexts that get port events. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_context **ctxs;
static size_t nctx, cap;
static int nl_fd = -1;
static int start_err; /* why the listener could not start, once it tried */
static bool started;

/* A link message for interface @ifindex with flags @flags: update the port, raise the event. */
static void link_changed(unsigned int ifindex, unsigned int flags)
{
	struct uroce_device *dev = NULL;
	bool was, now = flags & IFF_RUNNING;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nctx && !dev; i++)
		if (ctxs[i]->dev->ifindex == ifindex)
			dev = ctxs[i]->dev;
	if (dev) {
		pthread_mutex_lock(&dev->lock);
		was = dev->port.ifflags & IFF_RUNNING;
		dev->port.ifflags = flags;
		pthread_mutex_unlock(&dev->lock);
		/* Only a change of the link is an event; address or MTU messages are not. */
		for (size_t i = 0; i < nctx && was != now; i++)
			if (ctxs[i]->dev == dev)
				uroce_async_event(ctxs[i],
						  now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR,
						  ctxs[i]);
	}
	pthread_mutex_unlock(&lock);
}

static void *listen_links(void *arg)
{
	union {
		struct nlmsghdr h;
		char buf[16384];
	} u;

	(void)arg;
	for (;;) {
		ssize_t n = recv(nl_fd, u.buf, sizeof(u.buf), 0);

		if (n < 0) {
			if (errno == EINTR || errno == ENOBUFS)
				continue; /* ENOBUFS: messages were lost; the next ones still count
					   */
			return NULL;
		}
		for (struct nlmsghdr *h = &u.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const struct ifinfomsg *ifi = NLMSG_DATA(h);

			if (h->nlmsg_type == RTM_NEWLINK &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifi)))
				link_changed((unsigned int)ifi->ifi_index, ifi->ifi_flags);
			else if (h->nlmsg_type == RTM_DELLINK &&
				 h->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifi)))
				link_changed((unsigned int)ifi->ifi_index, 0);
		}
	}
}

/* Open the socket and start the thread (lock held). Returns 0 or an errno. */
static int start(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl_fd < 0)
		return errno;
	if (bind(nl_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno;
		close(nl_fd);
		nl_fd = -1;
		return err;
	}
	/* The thread inherits a mask of every signal: the application's handlers never run on it.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, listen_links, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(nl_fd);
		nl_fd = -1;
	}
	return err;
}

int uroce_port_events_register(struct uroce_context *ctx)
{
	int err = 0;

	pthread_mutex_lock(&lock);
	if (!started) {
		started = true;
		start_err = start();
		if (start_err)
			fprintf(stderr, "uroce: no port events (link up/down): %s\n",
				strerror(start_err));
	}
	if (start_err) {
		err = start_err;
	} else if (nctx == cap) {
		size_t ncap = cap ? 2 * cap : 8;
		struct uroce_context **n = realloc(ctxs, ncap * sizeof(*n));

		if (n) {
			ctxs = n;
			cap = ncap;
		} else {
			err = ENOMEM;
		}
	}
	if (!err)
		ctxs[nctx++] = ctx;
	pthread_mutex_unlock(&lock);
	return err;
}

void uroce_port_events_unregister(struct uroce_context *ctx)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nctx; i++) {
		if (ctxs[i] == ctx) {
			ctxs[i] = ctxs[--nctx];
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}
