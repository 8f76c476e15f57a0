// SPDX-License-Identifier: MIT
/* uroce's own public functions (include/uroce/uroce.h), at the version node UROCE_1.0. */
#include "uroce/uroce.h"

#include <errno.h>
#include <string.h>

#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"

UROCE_EXPORT const char *uroce_version(void)
{
	return UROCE_VERSION;
}

UROCE_EXPORT const char *uroce_capture_path(void)
{
	return uroce_engine_capture_path();
}

UROCE_EXPORT int uroce_get_stats(struct uroce_stats *out, size_t size)
{
	struct uroce_stats st;

	if (!out || size < sizeof(st.tx_packets))
		return EINVAL;
	uroce_engine_stats(&st);
	if (size > sizeof(st)) {
		memset((char *)out + sizeof(st), 0, size - sizeof(st));
		size = sizeof(st);
	}
	memcpy(out, &st, size);
	return 0;
}
