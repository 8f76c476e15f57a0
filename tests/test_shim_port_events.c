/* SPDX-License-Identifier: MIT */
/*
 * Port events: a device's link going down and up raises IBV_EVENT_PORT_ERR and
 * IBV_EVENT_PORT_ACTIVE on its contexts, and ibv_query_port follows. The test runs in a network
 * namespace of its own (root only) with a veth pair: taking the peer down takes v0's carrier.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/lo.h"

/* The next async event within 5 s. */
static enum ibv_event_type next_event(struct ibv_context *ctx)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;

	cr_assert_eq(poll(&pfd, 1, 5000), 1, "no async event within 5 s");
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.element.port_num, 1);
	ibv_ack_async_event(&ev);
	return ev.event_type;
}

static enum ibv_port_state port_state(struct ibv_context *ctx)
{
	struct ibv_port_attr attr;

	cr_assert_eq(ibv_query_port(ctx, 1, &attr), 0);
	return attr.state;
}

Test(shim_port_events, link_down_and_up, .timeout = 30)
{
	struct ibv_context *a, *b;

	if (geteuid() != 0)
		cr_skip_test("needs root for a network namespace");
	cr_assert_eq(unshare(CLONE_NEWNET), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(system("ip link add v0 type veth peer name v1 && "
			    "ip addr add 10.77.0.1/24 dev v0 && ip link set v1 up && "
			    "ip link set v0 up"),
		     0);
	/* veth reports its carrier a moment after both ends are up. */
	for (int i = 0; i < 100 && system("ip link show v0 | grep -q LOWER_UP"); i++)
		usleep(10000);
	a = open_device_named("uroce_v0");
	b = open_device_named("uroce_v0");
	cr_assert_eq(port_state(a), IBV_PORT_ACTIVE);
	cr_assert_eq(system("ip link set v1 down"), 0);
	cr_assert_eq(next_event(a), IBV_EVENT_PORT_ERR);
	cr_assert_eq(next_event(b), IBV_EVENT_PORT_ERR, "every context of the device hears it");
	cr_assert_eq(port_state(a), IBV_PORT_DOWN);
	cr_assert_eq(system("ip link set v1 up"), 0);
	cr_assert_eq(next_event(a), IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(port_state(b), IBV_PORT_ACTIVE);
	/* An address change is not a port event. */
	cr_assert_eq(system("ip addr add 10.77.0.2/24 dev v0"), 0);
	usleep(200000);
	struct pollfd pfd = {.fd = a->async_fd, .events = POLLIN};

	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(ibv_close_device(a), 0);
	cr_assert_eq(ibv_close_device(b), 0);
}
