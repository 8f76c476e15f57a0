/* SPDX-License-Identifier: MIT */
/*
 * A process-wide index table: QP handles, SRQ numbers and memory keys are indexes into one
 * (the data path finds an MR by its key and an SRQ by its number; QPs are found by number
 * through qpn_map.h). Indexes are handed out round-robin, so a freed index is not reused at
 * once (a late packet for a destroyed object finds nothing).
 */
#ifndef UROCE_VERBS_SHIM_TABLE_H
#define UROCE_VERBS_SHIM_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct uroce_table {
	pthread_mutex_t lock;
	void **slots;
	uint32_t size;   /* allocated slots */
	uint32_t max;    /* indexes are 1..max */
	uint32_t cursor; /* where the next search starts */
};

#define UROCE_TABLE_INIT(max_index)                                                                \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, NULL, 0, (max_index), 0                                 \
	}

/* Store OBJ under a free index 1..max: 0 and *index, ENOSPC when full, ENOMEM. */
int uroce_table_insert(struct uroce_table *t, void *obj, uint32_t *index);
/*
 * The object at INDEX if @match(object, @arg) says so, or NULL; @match runs under the table's
 * lock, so the object cannot be removed while it looks.
 */
void *uroce_table_get_if(struct uroce_table *t, uint32_t index,
			 bool (*match)(const void *obj, const void *arg), const void *arg);
/*
 * Run @fn(object, @arg) under the table's lock if INDEX holds an object: true, or false if it
 * holds none. Readers and writers of an object's fields that change after insertion (an MR's
 * translation) use it, so that neither sees the other's half-done work.
 */
bool uroce_table_with(struct uroce_table *t, uint32_t index, void (*fn)(void *obj, void *arg),
		      void *arg);
/* Free INDEX (no-op for an index that is not in use). */
void uroce_table_remove(struct uroce_table *t, uint32_t index);

#endif
