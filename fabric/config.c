/* SPDX-License-Identifier: MIT */
#include "fabric/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/wire.h"

struct config_var {
	const char *name;
	/* Store the value parsed from @value in @field. Returns 0, EINVAL or ENOMEM. */
	int (*parse)(const char *value, void *field);
	size_t offset;      /* of the field in struct uroce_config */
	const char *expect; /* what a valid value is, for the message */
};

static int parse_port(const char *value, void *field)
{
	return uroce_config_parse_port(value, field);
}

/*
 * A path with every "%p" replaced by the process id. "-" (standard output, to a tool's user) is
 * refused: the program owns its standard output; uroce-run --pcap - streams it instead.
 */
static int parse_path_pid(const char *value, void *field)
{
	char pid[16];
	size_t n = 0, pid_len, len = 0;
	char *out;
	const char *s;

	if (!*value || !strcmp(value, "-"))
		return EINVAL;
	pid_len = (size_t)snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (s = value; *s; s++)
		n += s[0] == '%' && s[1] == 'p';
	out = malloc(strlen(value) + n * pid_len + 1);
	if (!out)
		return ENOMEM;
	for (s = value; *s; s++) {
		if (s[0] == '%' && s[1] == 'p') {
			memcpy(out + len, pid, pid_len);
			len += pid_len;
			s++;
		} else {
			out[len++] = *s;
		}
	}
	out[len] = '\0';
	*(char **)field = out;
	return 0;
}

/* The index of @value in @names (an enum's value names), or -1. */
static int name_index(const char *value, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(value, names[i]))
			return (int)i;
	return -1;
}

static int parse_log_level(const char *value, void *field)
{
	static const char *const names[] = {
		[UROCE_LOG_ERROR] = "error",
		[UROCE_LOG_INFO] = "info",
		[UROCE_LOG_DEBUG] = "debug",
	};
	int i = name_index(value, names, sizeof(names) / sizeof(names[0]));

	if (i < 0)
		return EINVAL;
	*(enum uroce_log_level *)field = (enum uroce_log_level)i;
	return 0;
}

static int parse_backend(const char *value, void *field)
{
	static const char *const names[] = {
		[UROCE_BACKEND_AUTO] = "auto",
		[UROCE_BACKEND_IO_URING] = "io_uring",
		[UROCE_BACKEND_EPOLL] = "epoll",
	};
	int i = name_index(value, names, sizeof(names) / sizeof(names[0]));

	if (i < 0)
		return EINVAL;
	*(enum uroce_backend *)field = (enum uroce_backend)i;
	return 0;
}

static int parse_faults(const char *value, void *field)
{
	return uroce_faults_parse(value, field);
}

static const struct config_var vars[] = {
	{"UROCE_UDP_PORT", parse_port, offsetof(struct uroce_config, udp_port),
	 "a UDP port number, 1..65535"},
	{"UROCE_PCAP", parse_path_pid, offsetof(struct uroce_config, pcap_path),
	 "a file name (%p becomes the process id) or a FIFO; not \"-\": the program owns its "
	 "standard output, uroce-run --pcap - PROGRAM streams the capture there"},
	{"UROCE_LOG", parse_log_level, offsetof(struct uroce_config, log_level),
	 "error, info or debug"},
	{"UROCE_BACKEND", parse_backend, offsetof(struct uroce_config, backend),
	 "auto, io_uring or epoll"},
	{"UROCE_FAULTS", parse_faults, offsetof(struct uroce_config, faults),
	 "KEY=VALUE,... with keys loss, reorder, dup, corrupt, delay, seed, dir, spare"},
};

enum { NVARS = sizeof(vars) / sizeof(vars[0]) };

/* Refuse a UROCE_* variable of the environment that is not in vars[]. Returns 0 or EINVAL. */
static int check_unknown(void)
{
	extern char **environ;

	for (char **e = environ; e && *e; e++) {
		size_t n = strcspn(*e, "=");
		size_t i;

		if (strncmp(*e, "UROCE_", 6))
			continue;
		for (i = 0; i < NVARS; i++)
			if (strlen(vars[i].name) == n && !strncmp(*e, vars[i].name, n))
				break;
		if (i == NVARS) {
			char known[256] = "";

			for (i = 0; i < NVARS; i++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known),
					 "%s%s", i ? ", " : "", vars[i].name);
			uroce_log(UROCE_LOG_ERROR, "%.*s is not a uroce variable (known: %s)",
				  (int)n, *e, known);
			return EINVAL;
		}
	}
	return 0;
}

int uroce_config_load(struct uroce_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->udp_port = ROCE_UDP_PORT;
	cfg->log_level = UROCE_LOG_ERROR;
	if (check_unknown())
		return EINVAL;
	for (size_t i = 0; i < NVARS; i++) {
		const char *value = secure_getenv(vars[i].name);
		int err;

		if (!value)
			continue;
		err = vars[i].parse(value, (char *)cfg + vars[i].offset);
		if (err == EINVAL)
			uroce_log(UROCE_LOG_ERROR, "%s=\"%s\" is not valid: expected %s",
				  vars[i].name, value, vars[i].expect);
		if (err) {
			uroce_config_free(cfg);
			return err;
		}
	}
	return 0;
}

void uroce_config_free(struct uroce_config *cfg)
{
	free(cfg->pcap_path);
	cfg->pcap_path = NULL;
}
