/* SPDX-License-Identifier: MIT */
/*
 * A process-wide index table: QP handles, SRQ numbers and memory keys are indexes into one
 * (the data path finds an MR by its key and an SRQ by its number; QPs are found by number
 * through qpn_map.h). Indexes are handed out round-robin, so a freed index is not reused at
 * once (a late packet for a destroyed object finds nothing). The slots are allocated whole on
 * first use and never move, so that the data path can read one without the lock
 * (uroce_table_peek).
 */
#ifndef UROCE_VERBS_SHIM_TABLE_H
#define UROCE_VERBS_SHIM_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct uroce_table {
	pthread_mutex_t lock;
	_Atomic(void *) *_Atomic slots; /* max + 1 of them once allocated, never freed */
	uint32_t max;                   /* indexes are 1..max */
	uint32_t cursor;                /* where the next search starts */
};

#define UROCE_TABLE_INIT(max_index)                                                                \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, NULL, (max_index), 0                                    \
	}

/*
 * Store OBJ under a free index 1..max: 0 and *index, ENOSPC when full, ENOMEM. A NULL @obj
 * reserves the index, hidden (uroce_table_show makes an object visible there).
 */
int uroce_table_insert(struct uroce_table *t, void *obj, uint32_t *index);
/*
 * The object at INDEX if @match(object, @arg) says so, or NULL; @match runs under the table's
 * lock, so the object cannot be removed while it looks.
 */
void *uroce_table_get_if(struct uroce_table *t, uint32_t index,
			 bool (*match)(const void *obj, const void *arg), const void *arg);
/*
 * The object at INDEX, or NULL (none, or hidden), read without the lock: the caller must know
 * by other means that the object it gets is not freed while it uses it.
 */
void *uroce_table_peek(struct uroce_table *t, uint32_t index);
/* Hide the object at INDEX, keeping the index reserved; uroce_table_show shows @obj there. */
void uroce_table_hide(struct uroce_table *t, uint32_t index);
void uroce_table_show(struct uroce_table *t, uint32_t index, void *obj);
/* Free INDEX (no-op for an index that is not in use). */
void uroce_table_remove(struct uroce_table *t, uint32_t index);

#endif
