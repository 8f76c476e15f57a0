// SPDX-License-Identifier: MIT
/*
 * The device contexts the rdma_cm shares: one per uroce device, opened the first time the
 * device is seen and kept for the process's life, as librdmacm keeps its cma_dev_list. The
 * contexts rdma_get_devices(3) returns are the ones the ids point at (id->verbs), and
 * rdma_free_devices frees only the array: programs compare them by pointer (libfabric's verbs
 * provider finds a domain's context so) and keep using them after rdma_free_devices.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/rdmacm/cma.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context **opened; /* every context opened so far, never closed */
static int nopened, cap;

/* The shared context of @dev, opened the first time. NULL with errno on failure. Locked. */
static struct ibv_context *context_of(struct ibv_device *dev)
{
	struct ibv_context *ctx;

	for (int i = 0; i < nopened; i++)
		if (opened[i]->device == dev) /* uroce's devices are never freed */
			return opened[i];
	if (nopened == cap) {
		int ncap = cap ? 2 * cap : 8;
		struct ibv_context **grown = realloc(opened, (size_t)ncap * sizeof(*grown));

		if (!grown) {
			errno = ENOMEM;
			return NULL;
		}
		opened = grown;
		cap = ncap;
	}
	ctx = ibv_open_device(dev);
	if (ctx)
		opened[nopened++] = ctx;
	return ctx;
}

/* The contexts of the devices listed now, NULL-terminated (count in *@n). Locked. */
static struct ibv_context **listed(int *n)
{
	int ndev = 0, k = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	struct ibv_context **out;

	if (!list)
		return NULL;
	out = calloc((size_t)ndev + 1, sizeof(*out));
	for (int i = 0; out && i < ndev; i++)
		if ((out[k] = context_of(list[i])))
			k++;
	ibv_free_device_list(list);
	if (!out)
		errno = ENOMEM;
	*n = k;
	return out;
}

struct ibv_context **cma_devices(int *n)
{
	struct ibv_context **out;

	pthread_mutex_lock(&lock);
	out = listed(n);
	pthread_mutex_unlock(&lock);
	return out;
}

/* Whether port 1 of @ctx holds @gid. */
static bool holds(struct ibv_context *ctx, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return false;
	for (int k = 0; k < pa.gid_tbl_len; k++) {
		union ibv_gid g;

		if (!ibv_query_gid(ctx, 1, k, &g) && !memcmp(&g, gid, sizeof(g)))
			return true;
	}
	return false;
}

struct ibv_context *cma_device_of(const uint8_t gid[16])
{
	struct ibv_context *found = NULL, **now;
	union ibv_gid g;
	int n;

	memcpy(g.raw, gid, 16);
	pthread_mutex_lock(&lock);
	/* The contexts known already first: a device list is a scan of the interfaces. */
	for (int i = 0; !found && i < nopened; i++)
		if (holds(opened[i], &g))
			found = opened[i];
	if (!found && (now = listed(&n))) {
		for (int i = 0; !found && i < n; i++)
			if (holds(now[i], &g))
				found = now[i];
		free(now);
	}
	pthread_mutex_unlock(&lock);
	return found;
}
