/* SPDX-License-Identifier: MIT */
#include "fabric/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int log_level = UROCE_LOG_ERROR;

void uroce_log_set_level(enum uroce_log_level level)
{
	atomic_store(&log_level, (int)level);
}

int uroce_log_enabled(enum uroce_log_level level)
{
	return (int)level <= atomic_load(&log_level);
}

void uroce_log(enum uroce_log_level level, const char *fmt, ...)
{
	int saved = errno;
	char line[512];
	va_list ap;
	int n;

	if (!uroce_log_enabled(level))
		return;
	n = snprintf(line, sizeof(line), "uroce[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fprintf per line, so that lines of several threads do not interleave. */
	fprintf(stderr, "%s\n", line);
	errno = saved;
}
