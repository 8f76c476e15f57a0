// SPDX-License-Identifier: MIT
/* Device list and contexts: ibv_get_device_list ... ibv_open_device, ibv_close_device. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/device.h"
#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"
#include "verbs-shim/ops.h"
#include "verbs-shim/port_events.h"
#include "verbs-shim/resreg.h"
#include "verbs-shim/xrcd.h"

UROCE_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct uroce_device **devs;
	struct ibv_device **list;
	int n, err;

	/* Interfaces may have appeared or gone since the last call: scan every time. */
	err = uroce_devices_scan(&devs, &n);
	if (err) {
		errno = err;
		return NULL;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list) {
		free(devs);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		list[i] = &devs[i]->ibdev;
	free(devs);
	if (num_devices)
		*num_devices = n;
	return list;
}

UROCE_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list); /* the devices themselves stay registered (device.h) */
}

UROCE_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

UROCE_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return to_udev(device)->guid;
}

UROCE_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return to_udev(device)->index;
}

static void context_ops(struct uroce_context *ctx)
{
	struct verbs_context *vctx = &ctx->vctx;
	struct ibv_context_ops *ops = &vctx->context.ops;

	/* Called by the inline verbs without a NULL check (ABI.md §2.1). */
	ops->poll_cq = uroce_poll_cq;
	ops->req_notify_cq = uroce_req_notify_cq;
	ops->post_send = uroce_post_send;
	ops->post_recv = uroce_post_recv;
	ops->post_srq_recv = uroce_post_srq_recv;
	ops->alloc_mw = uroce_alloc_mw;
	ops->bind_mw = uroce_bind_mw;
	ops->dealloc_mw = uroce_dealloc_mw;
	/* The two legacy slots rdma-core itself fills (ABI.md §2.1). */
	ops->_compat_query_device = ibv_query_device;
	ops->_compat_query_port = ibv_query_port;

	/* Extension ops; the ones left NULL make the inline verb fail with EOPNOTSUPP. */
	vctx->query_port = uroce_query_port;
	vctx->query_device_ex = uroce_query_device_ex;
	vctx->create_cq_ex = uroce_create_cq_ex;
	vctx->create_qp_ex = uroce_create_qp_ex;
	vctx->create_srq_ex = uroce_create_srq_ex;
	vctx->get_srq_num = uroce_get_srq_num;
	vctx->open_xrcd = uroce_open_xrcd;
	vctx->close_xrcd = uroce_close_xrcd;
}

UROCE_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct uroce_context *ctx = calloc(1, sizeof(*ctx));
	struct ibv_context *context;
	int err;

	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	err = uroce_evq_init(&ctx->async);
	if (err) {
		free(ctx);
		errno = err;
		return NULL;
	}
	context = &ctx->vctx.context;
	/* No kernel command channel: a valid descriptor nothing is sent on (pyverbs shows it). */
	context->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (context->cmd_fd < 0) {
		err = errno;
		uroce_evq_destroy(&ctx->async);
		free(ctx);
		errno = err;
		return NULL;
	}
	ctx->dev = to_udev(device);
	context->device = device;
	context->async_fd = ctx->async.fd;
	context->num_comp_vectors = UROCE_NUM_COMP_VECTORS;
	pthread_mutex_init(&context->mutex, NULL);
	/* The extended-context magic and size that make the vctx ops visible (ABI.md §2.2). */
	context->abi_compat = (void *)UINTPTR_MAX;
	ctx->vctx.sz = sizeof(struct verbs_context);
	context_ops(ctx);
	/* Without a link listener the context works, only without port events (reported). */
	ctx->port_events = !uroce_port_events_register(ctx);
	ctx->res_tag = uroce_res_add(context, UROCE_RES_CTX);
	return context;
}

UROCE_EXPORT uint32_t uroce_res_add(struct ibv_context *context, enum uroce_res r)
{
	return uroce_resreg_add(to_uctx(context)->dev->ibdev.name, r);
}

UROCE_EXPORT void uroce_res_del(struct ibv_context *context, enum uroce_res r, uint32_t tag)
{
	uroce_resreg_del(to_uctx(context)->dev->ibdev.name, r, tag);
}

UROCE_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct uroce_context *ctx = to_uctx(context);

	/* Like rdma-core, objects still open on the context are the application's leak. */
	if (ctx->port_events)
		uroce_port_events_unregister(ctx);
	uroce_res_del(context, UROCE_RES_CTX, ctx->res_tag);
	close(context->cmd_fd);
	uroce_evq_destroy(&ctx->async);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}
