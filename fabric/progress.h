/* SPDX-License-Identifier: MIT */
/*
 * The progress thread (ARCHITECTURE.md "The data path"): the receiver, unless a thread busy
 * polling a CQ has been handed the sockets (below). Two backends
 * (progress_int.h), chosen at start:
 * - io_uring (created on the thread, so IORING_SETUP_SINGLE_ISSUER and DEFER_TASKRUN are legal
 *   where the kernel has them): a multishot recvmsg on each UDP socket, taking buffers from one
 *   provided-buffer ring and re-armed whenever the kernel ends it (ENOBUFS when every buffer is
 *   in use, CQ overflow), and a poll on an epoll instance holding the other descriptors it
 *   watches (the rendezvous sockets, its own eventfd for wake-ups);
 * - epoll: the sockets in that epoll instance too, received with recvmmsg in batches. Where
 *   io_uring is refused (Docker's default seccomp profile, kernel.io_uring_disabled) this is the
 *   one that works.
 * Either waits until the earliest timer (fabric/timer.h). Each turn hands each datagram of the
 * batch to the datagram callback (a receive coalesced by UDP GRO is cut into its datagrams).
 * All signals are blocked on the thread.
 *
 * Busy polling (uroce_progress_poll): an application thread that keeps finding nothing to do is
 * handed the sockets. The progress thread stops receiving on them and sleeps until its timers;
 * the polling thread receives itself, without a wake-up or a second thread per message (on two
 * CPUs shared by two busy-polling processes, a spinning progress thread would be a fifth and
 * sixth busy thread). When no thread has polled for an idle window (100 us after a hand-over,
 * doubling up to 1 ms while the polls keep going), or one is about to sleep
 * (uroce_progress_unpoll), the progress thread takes the sockets back; hand-overs that end that
 * soon make the next one wait for more empty polls. Callbacks run on one thread at a time
 * whichever receives.
 */
#ifndef UROCE_FABRIC_PROGRESS_H
#define UROCE_FABRIC_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/rx.h"
#include "fabric/timer.h"
#include "fabric/udp.h"

/* The largest UDP payload received whole; a larger datagram is dropped (rx_oversize). */
#define UROCE_PROGRESS_PAYLOAD_MAX 8192

struct uroce_progress;
struct uroce_watch;

struct uroce_progress_ops {
	/*
	 * First thing on the new thread @p, once the ring exists: returns 0, or an errno that
	 * uroce_progress_start() returns after stopping the thread.
	 */
	int (*init)(void *arg, struct uroce_progress *p);
	/*
	 * A datagram from a socket added with uroce_progress_add_udp(): rx->ip as
	 * uroce_udp_rx_source() and the control messages describe it. On the progress thread or a
	 * polling thread, never concurrently with another callback or a timer.
	 */
	void (*datagram)(void *arg, const struct uroce_rx *rx);
	/*
	 * The segments of one received datagram have all been passed to datagram, on the same
	 * thread: what was kept from one to the next is let go here (NULL: nothing to do).
	 */
	void (*datagram_end)(void *arg);
	/*
	 * The datagram at the head of a socket is of @total bytes in UDP GRO segments of @seg
	 * bytes, and its first packet's BTH is @bth: true (with @plan filled) to have the
	 * payloads of its first plan->count segments received at plan->at, pmtu apart
	 * (transport/wire.h: struct roce_steer). Each such packet that roce_steer_fits() is then
	 * passed to datagram with rx->gap over its payload, the others whole; datagram_end
	 * follows, also if the receive fails. False: the datagram is received as usual. Asked
	 * only of a datagram that follows one roce_datagram_steerable() finds so. NULL: none is.
	 */
	bool (*steer)(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
		      struct roce_steer *plan);
	/*
	 * The datagrams (and watched descriptors) of one turn of the thread have been handed out:
	 * a place to act once for many of them (NULL: nothing to do).
	 */
	void (*batch_end)(void *arg);
	/*
	 * The progress thread took the sockets back from polling threads (none polled for a
	 * while, or one is going to sleep): a place to do what their next poll would have done
	 * (NULL: nothing to do). On the progress thread.
	 */
	void (*polling_ended)(void *arg);
};

/*
 * Receive buffers an endpoint uses: enough for a burst between two turns of the thread. Each
 * holds a whole receive (UROCE_UDP_RECV_MAX: several datagrams coalesced by UDP GRO).
 */
#define UROCE_PROGRESS_BUFFERS 64

/* The receive backend (UROCE_BACKEND): auto is io_uring if the kernel allows it, else epoll. */
enum uroce_backend {
	UROCE_BACKEND_AUTO,
	UROCE_BACKEND_IO_URING,
	UROCE_BACKEND_EPOLL,
};

/*
 * Start the thread with @buffers receive buffers (a power of two, at most 32768) on @backend
 * and run ops->init on it. Returns 0 and sets *@out, or EINVAL (@buffers, @backend), ENOMEM,
 * the errno of io_uring setup for UROCE_BACKEND_IO_URING (ENOSYS, EPERM where io_uring is
 * disabled; reported on stderr), of epoll, eventfd or pthread_create, or what ops->init
 * returned.
 */
int uroce_progress_start(struct uroce_progress **out, const struct uroce_progress_ops *ops,
			 void *arg, unsigned int buffers, enum uroce_backend backend);

/* The backend running: "io_uring" or "epoll". */
const char *uroce_progress_backend(const struct uroce_progress *p);

/*
 * Stop and join the thread, free the watches and the ring. Threads in uroce_progress_wait()
 * return 0 first (it waits for them). @p must not be used afterwards.
 */
void uroce_progress_stop(struct uroce_progress *p);

/* True in a callback: on the progress thread's turn, or a thread receiving in uroce_progress_poll.
 */
bool uroce_progress_on_thread(const struct uroce_progress *p);

/*
 * From an application thread that found nothing to do (a CQ polled empty): the busy polling
 * above. Consecutive calls ask the progress thread for the sockets; once it has let them go,
 * each call receives what they hold now and hands it to the callbacks as the progress thread
 * would (if another thread is receiving, it returns at once). Returns the datagrams handled,
 * or -1 while the sockets are still the progress thread's (the caller's CPU is better given
 * away then). Not from a callback.
 */
int uroce_progress_poll(struct uroce_progress *p);

/*
 * The calling thread is about to sleep (armed a CQ for an event): the progress thread takes
 * the sockets back now if polling threads had them. From any thread.
 */
void uroce_progress_unpoll(struct uroce_progress *p);

/*
 * The calling thread blocks until @fd is readable or @ready(@arg) is true (ibv_get_cq_event on
 * a blocking completion channel) and receives meanwhile, as a polling thread does: it asks for
 * the sockets and waits in ppoll on them and @fd, so that a datagram completing what it waits
 * for wakes it directly rather than through the progress thread and then @fd (one wake-up a
 * message instead of two). While a thread waits so, it counts as polling all the time; an
 * unpoll (uroce_progress_unpoll) that a wait follows keeps the sockets with the application.
 * @ready runs under the receive lock after each receive: a quick look at the caller's queue.
 * Cancellation: ppoll is a cancellation point, the receives are not. Returns 0 when the caller
 * should look (@ready, or @fd readable, or @p stopping: uroce_progress_stop), EINTR when a
 * signal interrupted the wait, or ppoll's errno (ENOMEM; logged).
 */
int uroce_progress_wait(struct uroce_progress *p, int fd, bool (*ready)(void *arg), void *arg);

/* Whether polling threads have the sockets now (they will poll again within microseconds). */
bool uroce_progress_polled(const struct uroce_progress *p);

/*
 * Receive on @s (which must stay open until uroce_progress_stop()) from the next turn on. From
 * any thread. Returns 0 or ENOSPC (at most 4 sockets).
 */
int uroce_progress_add_udp(struct uroce_progress *p, const struct uroce_udp *s);

/*
 * Call @ready on the progress thread whenever @fd is readable or has hung up (level-triggered:
 * @ready should read until EAGAIN). From any thread. Returns the watch, or NULL with errno set
 * (ENOMEM, or epoll_ctl's).
 */
struct uroce_watch *uroce_progress_watch(struct uroce_progress *p, int fd, void (*ready)(void *arg),
					 void *arg);

/* Stop watching (before closing the descriptor). On the progress thread only. */
void uroce_progress_unwatch(struct uroce_progress *p, struct uroce_watch *w);

/* The thread's timers: arm and cancel from any thread. */
struct uroce_timers *uroce_progress_timers(struct uroce_progress *p);

/* Datagrams lost: dropped by the sockets' full buffers, and too big for a buffer. */
uint64_t uroce_progress_rx_lost(struct uroce_progress *p);
uint64_t uroce_progress_rx_oversize(const struct uroce_progress *p);

/* Times a multishot receive ended and was armed again (ENOBUFS, CQ overflow, ...). */
uint64_t uroce_progress_rearms(const struct uroce_progress *p);

#endif
