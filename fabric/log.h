/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics on stderr, one line each: "uroce[PID]: message". Errors are always printed; info
 * and debug lines only at the level UROCE_LOG asks for (fabric/config.h).
 */
#ifndef UROCE_FABRIC_LOG_H
#define UROCE_FABRIC_LOG_H

enum uroce_log_level {
	UROCE_LOG_ERROR, /* something failed; always printed */
	UROCE_LOG_INFO,  /* rare events: which process is the hub, takeovers */
	UROCE_LOG_DEBUG, /* more detail on the same events */
};

/* Print from now on the lines at @level and below. Thread-safe. */
void uroce_log_set_level(enum uroce_log_level level);

/* True if lines at @level are printed (to skip gathering what such a line would say). */
int uroce_log_enabled(enum uroce_log_level level);

/* Print one line at @level (a newline is added). Thread-safe; keeps errno. */
void uroce_log(enum uroce_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
