// SPDX-License-Identifier: MIT
/* Index tables (table.h). */
#include "verbs-shim/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct uroce_table *t)
{
	uint32_t size = t->size ? t->size * 2 : 64;
	void **slots;

	if (size > t->max + 1)
		size = t->max + 1;
	slots = realloc(t->slots, size * sizeof(*slots));
	if (!slots)
		return ENOMEM;
	memset(&slots[t->size], 0, (size - t->size) * sizeof(*slots));
	t->slots = slots;
	t->size = size;
	return 0;
}

int uroce_table_insert(struct uroce_table *t, void *obj, uint32_t *index)
{
	int err = ENOSPC;

	pthread_mutex_lock(&t->lock);
	for (int pass = 0; pass < 2 && err == ENOSPC; pass++) {
		for (uint32_t n = 1; n < t->size; n++) {
			uint32_t i = (t->cursor + n) % t->size;

			if (i && !t->slots[i]) {
				t->slots[i] = obj;
				t->cursor = i;
				*index = i;
				err = 0;
				break;
			}
		}
		/* Full (or never allocated): grow once, then search the new slots. */
		if (err && (t->size > t->max || grow(t)))
			break;
	}
	if (err == ENOSPC && t->size <= t->max)
		err = ENOMEM;
	pthread_mutex_unlock(&t->lock);
	return err;
}

void *uroce_table_get_if(struct uroce_table *t, uint32_t index,
			 bool (*match)(const void *obj, const void *arg), const void *arg)
{
	void *obj = NULL;

	pthread_mutex_lock(&t->lock);
	if (index < t->size && t->slots[index] && match(t->slots[index], arg))
		obj = t->slots[index];
	pthread_mutex_unlock(&t->lock);
	return obj;
}

bool uroce_table_with(struct uroce_table *t, uint32_t index, void (*fn)(void *obj, void *arg),
		      void *arg)
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	if (index < t->size && t->slots[index]) {
		fn(t->slots[index], arg);
		found = true;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

void uroce_table_remove(struct uroce_table *t, uint32_t index)
{
	pthread_mutex_lock(&t->lock);
	if (index < t->size)
		t->slots[index] = NULL;
	pthread_mutex_unlock(&t->lock);
}
