/* SPDX-License-Identifier: MIT */
/*
 * fabric/progress on both backends: the thread's receive path (with io_uring, very few buffers,
 * so that the multishot receive runs out of them and must be re-armed), UDP GSO trains received
 * whole (GRO) and cut into their datagrams, each datagram's end (datagram_end), the hand-over to a
 * polling thread and back, watched descriptors, init errors; and the automatic fall back to epoll
 * where io_uring is refused (a seccomp filter, as Docker's profile does).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fabric/progress.h"
#include "fabric/progress_int.h"
#include "fabric/udp.h"

static struct uroce_udp sock, sock2; /* sock2: a second socket, added by some tests */
static atomic_int received, ready_calls, bad_payload;
static atomic_int stall_us;
static int pipe_fd[2];
static atomic_int sigmask_ok;

static int init(void *arg, struct uroce_progress *p)
{
	sigset_t mask;

	(void)arg;
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	atomic_store(&sigmask_ok, sigismember(&mask, SIGALRM) && sigismember(&mask, SIGINT));
	return uroce_progress_add_udp(p, &sock);
}

static pthread_t test_thread;
static atomic_int on_test_thread, overlapping;
static atomic_bool inside;

/*
 * datagram_end follows each received datagram's segments, once: datagram() leaves one open,
 * datagram_end closes it (bad_end: an end with none open).
 */
static atomic_bool segments_open;
static atomic_int ends, bad_end;

static int notify_fd = -1; /* written for each datagram, if open */
#define RECORDED 256
static atomic_bool by_test_thread[RECORDED]; /* the k-th datagram was received by test_thread */

static void datagram(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	if (atomic_exchange(&inside, true))
		atomic_fetch_add(&overlapping, 1);
	if (pthread_equal(pthread_self(), test_thread))
		atomic_fetch_add(&on_test_thread, 1);
	if (rx->len != 12 || memcmp(rx->roce, "0123456789ab", 12))
		atomic_fetch_add(&bad_payload, 1);
	else if ((rx->ip.dport != sock.port && rx->ip.dport != sock2.port) || rx->ip.ttl == 0)
		atomic_fetch_add(&bad_payload, 1); /* each datagram's header values, GRO or not */
	int k = atomic_fetch_add(&received, 1);

	if (k < RECORDED)
		atomic_store(&by_test_thread[k], pthread_equal(pthread_self(), test_thread));
	if (k == 0)
		usleep((useconds_t)atomic_load(&stall_us));
	if (notify_fd >= 0) { /* as a completion channel's eventfd is written */
		uint64_t one = 1;

		if (write(notify_fd, &one, sizeof(one)) != sizeof(one))
			atomic_fetch_add(&bad_payload, 1);
	}
	atomic_store(&inside, false);
	atomic_store(&segments_open, true);
}

static void datagram_end(void *arg)
{
	(void)arg;
	if (atomic_exchange(&segments_open, false))
		atomic_fetch_add(&ends, 1);
	else
		atomic_fetch_add(&bad_end, 1);
}

/* Every datagram received so far ended, each once; at least @min ends. */
static void check_ends(int min)
{
	for (int i = 0; i < 200 && atomic_load(&segments_open); i++)
		usleep(1000);
	cr_assert_not(atomic_load(&segments_open), "a datagram's segments were never ended");
	cr_assert_eq(atomic_load(&bad_end), 0, "datagram_end without a datagram");
	cr_assert_geq(atomic_load(&ends), min);
	cr_assert_leq(atomic_load(&ends), atomic_load(&received));
}

static const struct uroce_progress_ops ops = {
	.init = init, .datagram = datagram, .datagram_end = datagram_end};

/* An IPv4 socket whose datagrams report their TTL, which datagram() checks. */
static void open_sock(struct uroce_udp *s)
{
	cr_assert_eq(uroce_udp_open(s, AF_INET, 0), 0);
	cr_assert_eq(uroce_udp_recv_ip_fields(s), 0);
}

static void send_to(uint16_t port, int n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sendto(fd, "0123456789ab", 12, 0, (struct sockaddr *)&to, sizeof(to)),
			     12);
	close(fd);
}

static void send_n(int n)
{
	send_to(sock.port, n);
}

static void wait_received(int n)
{
	for (int i = 0; i < 200 && atomic_load(&received) < n; i++)
		usleep(10000);
}

/* 200 datagrams, the first one stalling the thread 100 ms so that they pile up. */
static struct uroce_progress *receive_200(enum uroce_backend backend)
{
	struct uroce_progress *p;

	open_sock(&sock);
	atomic_store(&stall_us, 100000);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	cr_assert(atomic_load(&sigmask_ok), "signals are not blocked on the thread");
	send_n(200);
	wait_received(200);
	cr_assert_eq(atomic_load(&received), 200);
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_eq(uroce_progress_rx_lost(p), 0);
	return p;
}

Test(progress, io_uring_rearmed_after_running_out_of_buffers)
{
	struct uroce_progress *p = receive_200(UROCE_BACKEND_IO_URING);

	cr_assert_str_eq(uroce_progress_backend(p), "io_uring");
	cr_assert_gt(uroce_progress_rearms(p), 0, "the 4 buffers never ran out");
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

Test(progress, epoll_receives_in_batches)
{
	struct uroce_progress *p = receive_200(UROCE_BACKEND_EPOLL);

	cr_assert_str_eq(uroce_progress_backend(p), "epoll");
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

/* A UDP GSO train of 30 datagrams arrives in one receive (GRO) and is cut apart. */
static void gro_train(enum uroce_backend backend)
{
	uint8_t buf[30 * 12];
	struct uroce_udp tx;
	struct roce_ipudp f = {0};
	uint8_t lo[4] = {127, 0, 0, 1};
	struct uroce_progress *p;

	for (int i = 0; i < 30; i++)
		memcpy(buf + 12 * i, "0123456789ab", 12);
	open_sock(&sock);
	cr_assert_eq(uroce_udp_open(&tx, AF_INET, 0), 0);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, lo);
	f.dport = sock.port;
	f.ttl = 64;
	cr_assert_eq(uroce_udp_send_gso(&tx, &f, buf, sizeof(buf), 12), 0);
	wait_received(30);
	cr_assert_eq(atomic_load(&received), 30);
	cr_assert_eq(atomic_load(&bad_payload), 0);
	check_ends(1);
	uroce_progress_stop(p);
	uroce_udp_close(&tx);
	uroce_udp_close(&sock);
}

/*
 * A thread that keeps polling is handed the sockets and receives itself; when it stops, the
 * progress thread takes them back. Callbacks never overlap.
 */
static void polling_thread_receives(enum uroce_backend backend)
{
	struct uroce_progress *p;
	int n = -1, polled, sent = 0;

	test_thread = pthread_self();
	open_sock(&sock);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	send_n(10);
	wait_received(10);
	cr_assert_eq(atomic_load(&on_test_thread), 0);
	for (time_t end = time(NULL) + 10; n < 0 && time(NULL) < end;)
		n = uroce_progress_poll(p);
	cr_assert_geq(n, 0, "the progress thread never handed the sockets over");
	/*
	 * One at a time between polls (the idle window after a hand-over is 100 us), at least 50
	 * and until this thread received some: all of them unless it was descheduled past the
	 * idle window, which on a loaded machine can take the sockets back a few times.
	 */
	for (time_t end = time(NULL) + 10;
	     (sent < 50 || !atomic_load(&on_test_thread)) && time(NULL) < end; sent++) {
		send_n(1);
		while (atomic_load(&received) < 11 + sent && time(NULL) < end)
			uroce_progress_poll(p);
	}
	cr_assert_eq(atomic_load(&received), 10 + sent);
	polled = atomic_load(&on_test_thread);
	cr_assert_gt(polled, 0, "the polling thread received none");
	usleep(20000); /* no poll for far longer than the hand-back time */
	send_n(10);
	wait_received(20 + sent);
	cr_assert_eq(atomic_load(&received), 20 + sent, "nobody received after polling stopped");
	cr_assert_eq(atomic_load(&on_test_thread), polled);
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_eq(atomic_load(&overlapping), 0);
	check_ends(1);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

Test(progress, io_uring_polling_thread_receives)
{
	polling_thread_receives(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_polling_thread_receives)
{
	polling_thread_receives(UROCE_BACKEND_EPOLL);
}

/*
 * A polling thread receives on every socket, not only the one that last brought datagrams:
 * datagrams alternate between two sockets, one at a time, each received before the next is
 * sent, each sent while the polling thread holds the sockets. A poller descheduled past the
 * idle window loses them to the progress thread (which then receives), so before each send
 * the thread polls until it holds them again.
 */
static void polling_thread_receives_on_every_socket(enum uroce_backend backend)
{
	struct uroce_progress *p;
	int n = -1, sent = 0;

	test_thread = pthread_self();
	open_sock(&sock);
	open_sock(&sock2);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	cr_assert_eq(uroce_progress_add_udp(p, &sock2), 0);
	for (time_t end = time(NULL) + 10; n < 0 && time(NULL) < end;)
		n = uroce_progress_poll(p);
	cr_assert_geq(n, 0, "the progress thread never handed the sockets over");
	for (time_t end = time(NULL) + 10; sent < 40 && time(NULL) < end; sent++) {
		while (uroce_progress_poll(p) < 0 && time(NULL) < end)
			;
		send_to(sent & 1 ? sock2.port : sock.port, 1);
		while (atomic_load(&received) < 1 + sent && time(NULL) < end)
			uroce_progress_poll(p);
	}
	cr_assert_eq(sent, 40, "a datagram was not received within 10 s");
	cr_assert_eq(atomic_load(&received), 40);
	cr_assert_gt(atomic_load(&on_test_thread), 0, "the polling thread received none");
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_eq(atomic_load(&overlapping), 0);
	uroce_progress_stop(p);
	uroce_udp_close(&sock2);
	uroce_udp_close(&sock);
}

Test(progress, io_uring_polling_thread_receives_on_every_socket)
{
	polling_thread_receives_on_every_socket(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_polling_thread_receives_on_every_socket)
{
	polling_thread_receives_on_every_socket(UROCE_BACKEND_EPOLL);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * A watchdog: after @seconds, SIGALRM to the thread that started it, whose wait then ends with
 * EINTR (alarm() would signal any thread of the process, criterion's among them); a wait that
 * spins rather than sleeps is not interrupted so, and 5 s later the test aborts.
 */
static pthread_t watchdog, watched_thread;
static unsigned int watchdog_seconds;

static void *watchdog_main(void *arg)
{
	(void)arg;
	sleep(watchdog_seconds);
	pthread_kill(watched_thread, SIGALRM);
	sleep(5);
	fprintf(stderr, "a wait neither ended nor was interrupted\n");
	abort();
}

static void watchdog_start(unsigned int seconds)
{
	cr_assert_eq(sigaction(SIGALRM, &(struct sigaction){.sa_handler = on_alarm}, NULL), 0);
	watched_thread = pthread_self();
	watchdog_seconds = seconds;
	cr_assert_eq(pthread_create(&watchdog, NULL, watchdog_main, NULL), 0);
}

static void watchdog_stop(void)
{
	pthread_cancel(watchdog);
	pthread_join(watchdog, NULL);
}

static atomic_int ready_at; /* waited_ready() is true once this many have come */

static bool waited_ready(void *arg)
{
	(void)arg;
	return atomic_load(&received) >= atomic_load(&ready_at);
}

static pthread_t sender_thread;

static void *send_20_slowly(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		usleep(5000);
		send_n(1);
	}
	return NULL;
}

/*
 * A thread blocked in uroce_progress_wait() receives itself: first, datagrams sent one at a
 * time, each waited for on the eventfd the callback writes (as ibv_get_cq_event does), until
 * the waiting thread receives one; then 20 more sent 5 ms apart (50 times the shortest idle
 * window) within one wait, which ends only when all have come: the progress thread never
 * takes the sockets back from a thread blocked so, so once the waiting thread has received
 * one of them it receives every later one.
 */
static void waiting_thread_receives(enum uroce_backend backend)
{
	struct uroce_progress *p;
	int sent = 0, before;

	uint64_t v;

	test_thread = pthread_self();
	watchdog_start(20); /* a wait that never ends fails with EINTR */
	notify_fd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(notify_fd, 0);
	open_sock(&sock);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	for (time_t end = time(NULL) + 10; !atomic_load(&on_test_thread) && time(NULL) < end;) {
		send_n(1);
		atomic_store(&ready_at, ++sent);
		cr_assert_eq(uroce_progress_wait(p, notify_fd, waited_ready, NULL), 0,
			     "datagram %d never came", sent);
		cr_assert_eq(read(notify_fd, &v, sizeof(v)), sizeof(v));
	}
	cr_assert_gt(atomic_load(&on_test_thread), 0, "the waiting thread received none");
	before = atomic_load(&on_test_thread);
	atomic_store(&ready_at, sent + 20);
	cr_assert_eq(pthread_create(&sender_thread, NULL, send_20_slowly, NULL), 0);
	cr_assert_eq(uroce_progress_wait(p, -1, waited_ready, NULL), 0,
		     "the 20 datagrams did not all come");
	watchdog_stop();
	pthread_join(sender_thread, NULL);
	cr_assert_eq(atomic_load(&received), sent + 20);
	/*
	 * Until the progress thread has handed the sockets over again (the waiter left them for
	 * an idle window between the two phases) it receives; from the first datagram the waiter
	 * receives on, every one is the waiter's.
	 */
	cr_assert_gt(atomic_load(&on_test_thread), before, "the waiting thread received none");
	cr_assert_leq(sent + 20, RECORDED);
	for (int k = sent, mine = 0; k < sent + 20; k++) {
		mine |= atomic_load(&by_test_thread[k]);
		cr_assert(!mine || atomic_load(&by_test_thread[k]),
			  "datagram %d: the progress thread received while a thread waited", k);
	}
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_eq(atomic_load(&overlapping), 0);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
	close(notify_fd);
	notify_fd = -1;
}

Test(progress, io_uring_waiting_thread_receives)
{
	waiting_thread_receives(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_waiting_thread_receives)
{
	waiting_thread_receives(UROCE_BACKEND_EPOLL);
}

static bool never_ready(void *arg)
{
	(void)arg;
	return false;
}

static void *wait_for_ever(void *arg)
{
	uroce_progress_wait(arg, -1, never_ready, NULL);
	return NULL;
}

/*
 * A waiting thread cancelled (rping cancels its CQ thread in ibv_get_cq_event) gives the
 * sockets back: the progress thread receives again.
 */
static void cancelled_waiter_gives_the_sockets_back(enum uroce_backend backend)
{
	struct uroce_progress *p;
	pthread_t t;

	open_sock(&sock);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	cr_assert_eq(pthread_create(&t, NULL, wait_for_ever, p), 0);
	usleep(20000);
	send_n(1);
	wait_received(1);
	cr_assert_eq(atomic_load(&received), 1, "neither the waiter nor the thread received");
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	usleep(20000); /* past the idle window */
	send_n(10);
	wait_received(11);
	cr_assert_eq(atomic_load(&received), 11, "nobody received after the waiter was cancelled");
	cr_assert_eq(atomic_load(&bad_payload), 0);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

Test(progress, io_uring_cancelled_waiter_gives_the_sockets_back)
{
	cancelled_waiter_gives_the_sockets_back(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_cancelled_waiter_gives_the_sockets_back)
{
	cancelled_waiter_gives_the_sockets_back(UROCE_BACKEND_EPOLL);
}

static struct uroce_progress *adding; /* add_on_thread adds sock2 to it */
static atomic_int add_err = -1;

/* A watch's callback on the progress thread adds a socket, as a takeover binds the hub's. */
static void add_on_thread(void *arg)
{
	uint64_t v;

	if (read(*(int *)arg, &v, sizeof(v)) == sizeof(v))
		atomic_store(&add_err, uroce_progress_add_udp(adding, &sock2));
}

/*
 * A socket added while a thread blocked in uroce_progress_wait() holds the sockets (a
 * takeover makes a process the hub, whose CQ thread sleeps in ibv_get_cq_event): its ppoll
 * does not have the new socket, so the progress thread takes the sockets back and receives
 * on it. The waiter waits for ever, before and after.
 */
static void socket_added_while_a_thread_waits(enum uroce_backend backend)
{
	struct uroce_progress *p;
	struct uroce_watch *add_watch;
	int add_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t one = 1;
	pthread_t t;

	cr_assert_geq(add_fd, 0);
	open_sock(&sock);
	open_sock(&sock2);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	adding = p;
	add_watch = uroce_progress_watch(p, add_fd, add_on_thread, &add_fd);
	cr_assert_not_null(add_watch);
	test_thread = 0;
	cr_assert_eq(pthread_create(&t, NULL, wait_for_ever, p), 0);
	test_thread = t;
	/* Until the waiter holds the sockets: it receives one of these. */
	for (int sent = 0; sent < 200 && !atomic_load(&on_test_thread); sent++) {
		send_n(1);
		wait_received(sent + 1);
	}
	cr_assert_gt(atomic_load(&on_test_thread), 0, "the waiter never received");
	cr_assert_eq(write(add_fd, &one, sizeof(one)), sizeof(one));
	for (int i = 0; i < 200 && atomic_load(&add_err) < 0; i++)
		usleep(1000);
	cr_assert_eq(atomic_load(&add_err), 0, "the socket was not added");
	int before = atomic_load(&received);

	send_to(sock2.port, 1);
	wait_received(before + 1);
	cr_assert_eq(atomic_load(&received), before + 1,
		     "nobody received on the socket added while a thread waited");
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	uroce_progress_unwatch(p, add_watch);
	uroce_progress_stop(p);
	close(add_fd);
	uroce_udp_close(&sock2);
	uroce_udp_close(&sock);
}

Test(progress, io_uring_socket_added_while_a_thread_waits)
{
	socket_added_while_a_thread_waits(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_socket_added_while_a_thread_waits)
{
	socket_added_while_a_thread_waits(UROCE_BACKEND_EPOLL);
}

/* A signal handler interrupts the wait: EINTR, for the caller to decide (SA_RESTART). */
Test(progress, signal_interrupts_a_wait)
{
	struct uroce_progress *p;

	open_sock(&sock);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, UROCE_BACKEND_AUTO), 0);
	watchdog_start(1);
	cr_assert_eq(uroce_progress_wait(p, -1, never_ready, NULL), EINTR);
	watchdog_stop();
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

static void *wait_and_report(void *arg)
{
	return (void *)(intptr_t)uroce_progress_wait(arg, -1, never_ready, NULL);
}

/*
 * uroce_progress_stop with a thread waiting (a program exits while its CQ thread sleeps in
 * ibv_get_cq_event): the waiter returns 0 before the object goes, and stop returns.
 */
Test(progress, stop_sends_the_waiters_away)
{
	struct uroce_progress *p;
	pthread_t t;
	void *ret;

	open_sock(&sock);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, UROCE_BACKEND_AUTO), 0);
	cr_assert_eq(pthread_create(&t, NULL, wait_and_report, p), 0);
	usleep(50000);
	uroce_progress_stop(p);
	cr_assert_eq(pthread_join(t, &ret), 0);
	cr_assert_eq((intptr_t)ret, 0);
	uroce_udp_close(&sock);
}

Test(progress, io_uring_gro_train)
{
	gro_train(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_gro_train)
{
	gro_train(UROCE_BACKEND_EPOLL);
}

/*
 * A thread that busy polls holds no lock the progress thread needs while it receives: when the
 * scheduler sets it aside in its receive (a signal handler that sleeps 300 ms stands for that:
 * the signal comes as one of its receive's system calls returns), the progress thread still
 * serves its watched descriptors (the frames a hub forwards come so) and timers at once.
 */
static pthread_t poller;
static atomic_bool poller_stop, poller_holds;
static atomic_uint_fast64_t served_at;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_aside(int sig)
{
	(void)sig;
	usleep(300000);
}

static void *poll_until_stopped(void *arg)
{
	struct uroce_progress *p = arg;

	while (!atomic_load(&poller_stop))
		if (uroce_progress_poll(p) >= 0)
			atomic_store(&poller_holds, true);
	return NULL;
}

static void on_served(void *arg)
{
	uint64_t v;

	if (read(*(int *)arg, &v, sizeof(v)) == sizeof(v))
		atomic_store(&served_at, now_ns());
}

static void set_aside_poller_blocks_nothing(enum uroce_backend backend)
{
	struct uroce_progress *p;
	struct uroce_watch *w;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t one = 1, worst = 0;

	cr_assert_geq(efd, 0);
	open_sock(&sock);
	cr_assert_eq(sigaction(SIGUSR1, &(struct sigaction){.sa_handler = set_aside}, NULL), 0);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	w = uroce_progress_watch(p, efd, on_served, &efd);
	cr_assert_not_null(w);
	cr_assert_eq(pthread_create(&poller, NULL, poll_until_stopped, p), 0);
	for (int i = 0; i < 1000 && !atomic_load(&poller_holds); i++)
		usleep(1000);
	cr_assert(atomic_load(&poller_holds), "the progress thread never handed the sockets over");
	for (int round = 0; round < 5; round++) {
		uint64_t sent;

		usleep(20000); /* polls go on: the sockets are the poller's */
		cr_assert_eq(pthread_kill(poller, SIGUSR1), 0);
		usleep(20000); /* it sleeps in its handler now */
		atomic_store(&served_at, 0);
		sent = now_ns();
		cr_assert_eq(write(efd, &one, sizeof(one)), sizeof(one));
		for (int i = 0; i < 1000 && !atomic_load(&served_at); i++)
			usleep(1000);
		cr_assert_neq(atomic_load(&served_at), 0, "the watch was never served");
		if (atomic_load(&served_at) - sent > worst)
			worst = atomic_load(&served_at) - sent;
	}
	/* 300 ms if it waited for the poller: well under it otherwise, even on a busy host. */
	cr_assert_lt(worst, 150000000u, "a watch waited %.1f ms for a poller set aside",
		     (double)worst / 1e6);
	atomic_store(&poller_stop, true);
	pthread_join(poller, NULL);
	uroce_progress_unwatch(p, w);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
	close(efd);
}

Test(progress, io_uring_set_aside_poller_blocks_nothing)
{
	set_aside_poller_blocks_nothing(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_set_aside_poller_blocks_nothing)
{
	set_aside_poller_blocks_nothing(UROCE_BACKEND_EPOLL);
}

Test(progress, bad_arguments)
{
	struct uroce_progress *p;

	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 0, UROCE_BACKEND_AUTO), EINVAL);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 3, UROCE_BACKEND_AUTO), EINVAL);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 65536, UROCE_BACKEND_AUTO), EINVAL);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, (enum uroce_backend)7), EINVAL);
}

/* Refuse io_uring_setup with EPERM in this process, as Docker's default seccomp profile does. */
static void forbid_io_uring(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
}

Test(progress, auto_falls_back_to_epoll_without_io_uring)
{
	struct uroce_progress *p;

	forbid_io_uring();
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, UROCE_BACKEND_IO_URING), EPERM,
		     "io_uring asked for and refused: the error");
	p = receive_200(UROCE_BACKEND_AUTO);
	cr_assert_str_eq(uroce_progress_backend(p), "epoll");
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

static struct uroce_progress *watched;
static struct uroce_watch *w;

static void on_ready(void *arg)
{
	char c;

	cr_assert(uroce_progress_on_thread(watched));
	while (read(*(int *)arg, &c, 1) == 1)
		atomic_fetch_add(&ready_calls, 1);
	if (atomic_load(&ready_calls) >= 3) {
		uroce_progress_unwatch(watched, w);
		w = NULL;
	}
}

static int init_nothing(void *arg, struct uroce_progress *p)
{
	(void)arg;
	(void)p;
	return 0;
}

static const struct uroce_progress_ops quiet_ops = {.init = init_nothing, .datagram = datagram};

static void watch_and_unwatch(enum uroce_backend backend)
{
	cr_assert_eq(pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK), 0);
	cr_assert_eq(uroce_progress_start(&watched, &quiet_ops, NULL, 4, backend), 0);
	cr_assert(!uroce_progress_on_thread(watched));
	w = uroce_progress_watch(watched, pipe_fd[0], on_ready, &pipe_fd[0]);
	cr_assert_not_null(w);
	cr_assert_eq(write(pipe_fd[1], "a", 1), 1);
	for (int i = 0; i < 100 && atomic_load(&ready_calls) < 1; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&ready_calls), 1);
	cr_assert_eq(write(pipe_fd[1], "bc", 2), 2);
	for (int i = 0; i < 100 && atomic_load(&ready_calls) < 3; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&ready_calls), 3);
	/* Unwatched from its own callback: no more calls. */
	cr_assert_eq(write(pipe_fd[1], "d", 1), 1);
	usleep(50000);
	cr_assert_eq(atomic_load(&ready_calls), 3);
	uroce_progress_stop(watched);
	close(pipe_fd[0]);
	close(pipe_fd[1]);
}

Test(progress, io_uring_watch_and_unwatch)
{
	watch_and_unwatch(UROCE_BACKEND_IO_URING);
}

Test(progress, epoll_watch_and_unwatch)
{
	watch_and_unwatch(UROCE_BACKEND_EPOLL);
}

static int init_fails(void *arg, struct uroce_progress *p)
{
	(void)arg;
	(void)p;
	return EADDRINUSE;
}

static const struct uroce_progress_ops failing_ops = {.init = init_fails, .datagram = datagram};

Test(progress, init_error_is_returned)
{
	struct uroce_progress *p = NULL;

	cr_assert_eq(uroce_progress_start(&p, &failing_ops, NULL, 4, UROCE_BACKEND_IO_URING),
		     EADDRINUSE);
	cr_assert_eq(uroce_progress_start(&p, &failing_ops, NULL, 4, UROCE_BACKEND_EPOLL),
		     EADDRINUSE);
	cr_assert_null(p);
}

static int init_reads_nice(void *arg, struct uroce_progress *p)
{
	(void)p;
	errno = 0;
	*(int *)arg = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	return errno ? errno : ECANCELED; /* the start ends here: no sockets needed */
}

static const struct uroce_progress_ops nice_ops = {.init = init_reads_nice, .datagram = datagram};

/*
 * The progress thread runs 10 nice levels above the thread that started it, at most -20, when
 * the process may lower a nice level (root here; RLIMIT_NICE is not raised in CI), and at that
 * thread's level otherwise (raise_nice). Levels are per thread on Linux.
 */
Test(progress, thread_runs_ten_nice_levels_above_its_starter)
{
	const int levels[] = {0, 5, 15, -15}; /* raising a level needs no privilege; -15 does */
	id_t tid = (id_t)syscall(SYS_gettid);
	bool root = geteuid() == 0;

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		struct uroce_progress *p = NULL;
		int want, seen = 100;

		if (levels[i] < 0 && !root)
			break;
		cr_assert_eq(setpriority(PRIO_PROCESS, tid, levels[i]), 0, "nice %d: %s", levels[i],
			     strerror(errno));
		want = !root ? levels[i] : levels[i] - 10 < -20 ? -20 : levels[i] - 10;
		cr_assert_eq(uroce_progress_start(&p, &nice_ops, &seen, 4, UROCE_BACKEND_EPOLL),
			     ECANCELED);
		cr_assert_eq(seen, want,
			     "starter at nice %d: the progress thread ran at %d, not %d", levels[i],
			     seen, want);
	}
}

/*
 * The idle window grows while polls go on: doubling up to 1 ms when they pause now and then
 * (a poller that also waits on memory), up to 8 ms when they never paused 50 us, and back to
 * 1 ms at the first look that finds such a pause.
 */
Test(progress, idle_window_grows_longest_for_steady_polls)
{
	uint64_t first = 100000, steady = 0, pausing = 0;

	for (int i = 0; i < 20; i++)
		steady = progress_idle_window_next(i ? steady : first, 1000);
	cr_assert_eq(steady, POLL_IDLE_STEADY_MAX_NS);
	for (int i = 0; i < 20; i++)
		pausing = progress_idle_window_next(i ? pausing : first, POLL_STEADY_GAP_NS);
	cr_assert_eq(pausing, POLL_IDLE_MAX_NS);
	cr_assert_eq(progress_idle_window_next(first, 0), 2 * first);
	cr_assert_eq(progress_idle_window_next(steady, POLL_STEADY_GAP_NS + 1), POLL_IDLE_MAX_NS,
		     "a pause brings a steady window back down at once");
	cr_assert_eq(progress_idle_window_next(600000, 0), 1200000);
	cr_assert_eq(progress_idle_window_next(600000, 60000), POLL_IDLE_MAX_NS);
}
