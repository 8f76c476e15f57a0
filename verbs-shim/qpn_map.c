// SPDX-License-Identifier: MIT
/* QP number map (qpn_map.h). */
#include "verbs-shim/qpn_map.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "verbs-shim/caps.h"

/* Twice the most QPs, a power of two: probes stay short at half load. */
#define SLOTS (2u * UROCE_MAX_QP)

static struct {
	uint32_t qpn; /* 0: empty (QP 0 is never a verbs QP) */
	struct uroce_qp *qp;
} slots[SLOTS];
static uint32_t used;
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;

static uint32_t home(uint32_t qpn)
{
	return (qpn * 2654435761u) & (SLOTS - 1); /* Knuth's multiplicative hash */
}

int uroce_qpn_map_add(uint32_t qpn, struct uroce_qp *qp)
{
	uint32_t i;

	pthread_rwlock_wrlock(&lock);
	if (used == UROCE_MAX_QP) {
		pthread_rwlock_unlock(&lock);
		return ENOSPC;
	}
	for (i = home(qpn); slots[i].qpn; i = (i + 1) & (SLOTS - 1))
		;
	slots[i].qpn = qpn;
	slots[i].qp = qp;
	used++;
	pthread_rwlock_unlock(&lock);
	return 0;
}

void uroce_qpn_map_remove(uint32_t qpn)
{
	uint32_t i, j;

	pthread_rwlock_wrlock(&lock);
	for (i = home(qpn); slots[i].qpn && slots[i].qpn != qpn; i = (i + 1) & (SLOTS - 1))
		;
	if (!slots[i].qpn) {
		pthread_rwlock_unlock(&lock);
		return;
	}
	/* Backward-shift deletion: pull later entries of the probe run into the hole. */
	for (j = (i + 1) & (SLOTS - 1); slots[j].qpn; j = (j + 1) & (SLOTS - 1)) {
		uint32_t h = home(slots[j].qpn);

		/* Move j to i if its home is not cyclically within (i, j]. */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			slots[i] = slots[j];
			i = j;
		}
	}
	slots[i].qpn = 0;
	slots[i].qp = NULL;
	used--;
	pthread_rwlock_unlock(&lock);
}

void uroce_qpn_map_read_lock(void)
{
	pthread_rwlock_rdlock(&lock);
}

struct uroce_qp *uroce_qpn_map_find(uint32_t qpn)
{
	for (uint32_t i = home(qpn); slots[i].qpn; i = (i + 1) & (SLOTS - 1))
		if (slots[i].qpn == qpn)
			return slots[i].qp;
	return NULL;
}

void uroce_qpn_map_read_unlock(void)
{
	pthread_rwlock_unlock(&lock);
}

void uroce_qpn_map_for_each(void (*fn)(struct uroce_qp *qp, void *arg), void *arg)
{
	pthread_rwlock_rdlock(&lock);
	for (uint32_t i = 0; i < SLOTS; i++)
		if (slots[i].qpn)
			fn(slots[i].qp, arg);
	pthread_rwlock_unlock(&lock);
}
