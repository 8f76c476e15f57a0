/* SPDX-License-Identifier: MIT */
/*
 * fabric/progress: the thread's receive path with very few buffers, so that the multishot
 * receive runs out of them (ENOBUFS) and must be re-armed; and its watched descriptors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/progress.h"
#include "fabric/udp.h"

static struct uroce_udp sock;
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

static void datagram(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	if (rx->len != 12 || memcmp(rx->roce, "0123456789ab", 12))
		atomic_fetch_add(&bad_payload, 1);
	if (atomic_fetch_add(&received, 1) == 0)
		usleep((useconds_t)atomic_load(&stall_us));
}

static const struct uroce_progress_ops ops = {.init = init, .datagram = datagram};

static void send_n(int n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(sock.port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sendto(fd, "0123456789ab", 12, 0, (struct sockaddr *)&to, sizeof(to)),
			     12);
	close(fd);
}

static void wait_received(int n)
{
	for (int i = 0; i < 200 && atomic_load(&received) < n; i++)
		usleep(10000);
}

Test(progress, rearmed_after_running_out_of_buffers)
{
	struct uroce_progress *p;

	cr_assert_eq(uroce_udp_open(&sock, AF_INET, 0), 0);
	atomic_store(&stall_us, 100000);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4), 0);
	cr_assert(atomic_load(&sigmask_ok), "signals are not blocked on the thread");
	send_n(200);
	wait_received(200);
	cr_assert_eq(atomic_load(&received), 200);
	cr_assert_eq(atomic_load(&bad_payload), 0);
	cr_assert_gt(uroce_progress_rearms(p), 0, "the 4 buffers never ran out");
	cr_assert_eq(uroce_progress_rx_lost(p), 0);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

Test(progress, bad_buffer_counts)
{
	struct uroce_progress *p;

	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 0), EINVAL);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 3), EINVAL);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 65536), EINVAL);
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

Test(progress, watch_and_unwatch)
{
	cr_assert_eq(pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK), 0);
	cr_assert_eq(uroce_progress_start(&watched, &quiet_ops, NULL, 4), 0);
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

	cr_assert_eq(uroce_progress_start(&p, &failing_ops, NULL, 4), EADDRINUSE);
	cr_assert_null(p);
}
