/* SPDX-License-Identifier: MIT */
/*
 * The C library's own definition of a function liburoce-preload.so interposes, found once with
 * dlsym(RTLD_NEXT) and kept: REAL(open)(path, flags). A function the C library does not have
 * (an older one without statx) gives NULL; the caller then fails with ENOSYS.
 */
#ifndef UROCE_PRELOAD_REAL_H
#define UROCE_PRELOAD_REAL_H

#include <dlfcn.h>

#define REAL(fn)                                                                                   \
	({                                                                                         \
		static __typeof__(fn) *uroce_real_fn_;                                             \
		__typeof__(fn) *p_ = __atomic_load_n(&uroce_real_fn_, __ATOMIC_ACQUIRE);           \
		if (!p_) {                                                                         \
			p_ = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn);                              \
			__atomic_store_n(&uroce_real_fn_, p_, __ATOMIC_RELEASE);                   \
		}                                                                                  \
		p_;                                                                                \
	})

#endif
