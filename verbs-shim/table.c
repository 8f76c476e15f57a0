// SPDX-License-Identifier: MIT
/* Index tables (table.h). */
#include "verbs-shim/table.h"

#include <errno.h>
#include <stdlib.h>

/* What a reserved or hidden index holds: taken, but nothing to find there. */
static char hidden;

/* The slots, allocated on first use (under the lock): NULL if they cannot be. */
static _Atomic(void *) *slots_of(struct uroce_table *t)
{
	_Atomic(void *) *s = atomic_load_explicit(&t->slots, memory_order_relaxed);

	if (!s) {
		s = calloc((size_t)t->max + 1, sizeof(*s));
		if (s)
			atomic_store_explicit(&t->slots, s, memory_order_release);
	}
	return s;
}

int uroce_table_insert(struct uroce_table *t, void *obj, uint32_t *index)
{
	_Atomic(void *) *s;
	int err = ENOSPC;

	pthread_mutex_lock(&t->lock);
	s = slots_of(t);
	if (!s)
		err = ENOMEM;
	for (uint32_t n = 1; s && n <= t->max; n++) {
		uint32_t i = (t->cursor + n - 1) % t->max + 1;

		if (!atomic_load_explicit(&s[i], memory_order_relaxed)) {
			atomic_store_explicit(&s[i], obj ? obj : &hidden, memory_order_release);
			t->cursor = i;
			*index = i;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

void *uroce_table_get_if(struct uroce_table *t, uint32_t index,
			 bool (*match)(const void *obj, const void *arg), const void *arg)
{
	void *obj;

	pthread_mutex_lock(&t->lock);
	obj = uroce_table_peek(t, index);
	if (obj && !match(obj, arg))
		obj = NULL;
	pthread_mutex_unlock(&t->lock);
	return obj;
}

void *uroce_table_peek(struct uroce_table *t, uint32_t index)
{
	_Atomic(void *) *s = atomic_load_explicit(&t->slots, memory_order_acquire);
	void *obj;

	if (!s || index < 1 || index > t->max)
		return NULL;
	obj = atomic_load_explicit(&s[index], memory_order_acquire);
	return obj == &hidden ? NULL : obj;
}

/* Store @obj at INDEX if the index is in use. */
static void replace(struct uroce_table *t, uint32_t index, void *obj)
{
	_Atomic(void *) *s;

	pthread_mutex_lock(&t->lock);
	s = atomic_load_explicit(&t->slots, memory_order_relaxed);
	if (s && index >= 1 && index <= t->max &&
	    atomic_load_explicit(&s[index], memory_order_relaxed))
		atomic_store_explicit(&s[index], obj, memory_order_release);
	pthread_mutex_unlock(&t->lock);
}

void uroce_table_hide(struct uroce_table *t, uint32_t index)
{
	replace(t, index, &hidden);
}

void uroce_table_show(struct uroce_table *t, uint32_t index, void *obj)
{
	replace(t, index, obj);
}

void uroce_table_remove(struct uroce_table *t, uint32_t index)
{
	replace(t, index, NULL);
}
