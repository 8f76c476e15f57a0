/* SPDX-License-Identifier: MIT */
/*
 * The progress thread's two receive backends (progress.h), and what they share: the thread's
 * state, and handing a received buffer to the datagram callback. Internal to fabric/.
 *
 * progress.c runs the thread: timers, watched descriptors (an epoll set), wake-ups, the start
 * and stop handshakes. A backend waits for the next event and receives:
 *   progress_uring.c   io_uring: multishot recvmsg over a provided-buffer ring, and a poll of
 *                      the epoll set, in one io_uring_submit_and_wait_timeout
 *   progress_epoll.c   the UDP sockets in the epoll set too, epoll_wait, recvmmsg in batches
 */
#ifndef UROCE_FABRIC_PROGRESS_INT_H
#define UROCE_FABRIC_PROGRESS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fabric/progress.h"

#define PROGRESS_MAX_UDP 4

struct uroce_watch {
	int fd; /* -1 once unwatched: an event still in the batch is skipped */
	void (*ready)(void *arg);
	void *arg;
	struct uroce_watch *next;
};

struct udp_slot {
	struct uroce_udp sock;
	struct msghdr msg; /* io_uring: lengths of the name and control areas of each buffer */
	bool armed;        /* progress thread only: the backend receives on it */
};

struct progress_backend;

struct uroce_progress {
	const struct uroce_progress_ops *ops;
	void *arg;
	const struct progress_backend *backend;
	void *be; /* the backend's state, made and freed on the thread */
	pthread_t thread;
	pthread_t self; /* written by the thread itself before ops->init */
	bool has_self;
	int epfd; /* the watched descriptors (and, for epoll, the sockets) */
	int evfd; /* wakes the thread: timers armed earlier, stop, a new socket */
	atomic_bool stop;
	struct uroce_timers timers;
	unsigned int nbufs;

	pthread_mutex_t lock; /* udp_count, watches; start handshake */
	pthread_cond_t started_cond;
	bool started;
	int start_err;
	struct udp_slot udp[PROGRESS_MAX_UDP];
	unsigned int udp_count;
	struct uroce_watch *watches;
	struct uroce_watch *dead; /* unwatched, freed after the batch */

	_Atomic uint64_t rx_oversize;
	_Atomic uint64_t rearms;
};

struct progress_backend {
	const char *name;
	/* On the thread, before anything else: 0 or an errno (the backend is not available). */
	int (*setup)(struct uroce_progress *p);
	void (*teardown)(struct uroce_progress *p);
	/*
	 * Receive on the sockets not yet armed, wait at most until @deadline (uroce_now() clock,
	 * UINT64_MAX: no limit) for datagrams or watched descriptors, and dispatch what came:
	 * datagrams through progress_received(), ready descriptors through progress_on_epoll().
	 */
	bool (*wait)(struct uroce_progress *p, uint64_t deadline); /* whether anything came */
};

extern const struct progress_backend progress_uring_backend;
extern const struct progress_backend progress_epoll_backend;

/*
 * Hand what one receive returned to the datagram callback: @len bytes at @data from @ip (as
 * uroce_udp_rx_source() and the control messages describe it), several datagrams of @seg bytes
 * each but the last if UDP GRO coalesced them (@seg 0: one).
 */
void progress_received(struct uroce_progress *p, const struct roce_ipudp *ip, uint16_t seg,
		       const uint8_t *data, size_t len, uint64_t now);

/* Call the ready callbacks of the watched descriptors that epoll reports now (no waiting). */
void progress_on_epoll(struct uroce_progress *p);

/* Call the ready callback of the watch an epoll event of the watch set names. */
void progress_on_watch(void *watch);

/* The sockets added so far (the slots below it are set for good). */
unsigned int progress_udp_count(struct uroce_progress *p);

#endif
