/* SPDX-License-Identifier: MIT */
/*
 * uroce's librdmacm.so.1 as far as it is built (verbs-shim/rdmacm/cma.h): event channels with
 * a pollable, optionally non-blocking fd; ids of each port space, synchronous ones with a
 * channel of their own, migration; device lists; event names; and the calls not built yet
 * failing with ENOSYS rather than pretending.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <string.h>

Test(rdmacm, channel_fd_is_pollable_and_nonblocking)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd p;
	struct rdma_cm_event *ev;

	cr_assert_not_null(ch);
	p = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 0), 0, "readable with no event");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(rdma_get_cm_event(NULL, &ev), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_ack_cm_event(NULL), -1);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, ids_of_each_port_space)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *other;
	struct rdma_cm_id *id;
	int ctx;

	cr_assert_eq(rdma_create_id(ch, &id, &ctx, RDMA_PS_TCP), 0);
	cr_assert_eq(id->channel, ch);
	cr_assert_eq(id->context, &ctx);
	cr_assert_eq(id->ps, RDMA_PS_TCP);
	cr_assert_eq(id->qp_type, IBV_QPT_RC);
	cr_assert_null(id->verbs);
	cr_assert_eq(rdma_get_src_port(id), 0);
	((struct sockaddr_in *)&id->route.addr.src_addr)->sin_family = AF_INET;
	((struct sockaddr_in *)&id->route.addr.src_addr)->sin_port = htons(7471);
	cr_assert_eq(rdma_get_src_port(id), htons(7471));
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(id->qp_type, IBV_QPT_UD);
	/* Synchronous from here: a channel of its own. */
	cr_assert_eq(rdma_migrate_id(id, NULL), 0);
	cr_assert(id->channel && id->channel != ch);
	other = rdma_create_event_channel();
	cr_assert_eq(rdma_migrate_id(id, other), 0);
	cr_assert_eq(id->channel, other);
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_IB), 0);
	cr_assert_not_null(id->channel, "a synchronous id has a channel");
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x0999), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), -1);
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, devices_and_event_names)
{
	int n = -1;
	struct ibv_context **list = rdma_get_devices(&n);
	bool lo = false;

	cr_assert_not_null(list);
	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_not_null(list[i]);
		lo |= !strcmp(ibv_get_device_name(list[i]->device), "uroce_lo");
	}
	cr_assert_null(list[n]);
	cr_assert(lo, "no uroce_lo among the rdma_cm devices");
	rdma_free_devices(list);
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
	cr_assert_str_eq(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT),
			 "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	cr_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT");
}

Test(rdmacm, calls_not_built_fail_with_enosys)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 1000), -1);
	cr_assert_eq(errno, ENOSYS);
	cr_assert_eq(rdma_listen(id, 1), -1);
	cr_assert_eq(errno, ENOSYS);
	cr_assert_eq(rdma_destroy_id(id), 0);
	cr_assert_eq(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	cr_assert_eq(errno, ENOSYS);
}
