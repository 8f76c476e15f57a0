/* SPDX-License-Identifier: MIT */
/*
 * fabric/config: the UROCE_* variables: defaults, valid values, and refusals that name the
 * variable and the value.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/config.h"
#include "fabric/net.h"

static int saved_stderr = -1;
static FILE *captured;

/* Send stderr to a temporary file until stderr_end(). */
static void stderr_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	cr_assert_not_null(captured);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fileno(captured), STDERR_FILENO);
}

/* Restore stderr and return what was written meanwhile (static storage). */
static const char *stderr_end(void)
{
	static char text[4096];
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	rewind(captured);
	n = fread(text, 1, sizeof(text) - 1, captured);
	text[n] = '\0';
	fclose(captured);
	return text;
}

static void clean_env(void)
{
	unsetenv("UROCE_UDP_PORT");
	unsetenv("UROCE_PCAP");
	unsetenv("UROCE_LOG");
	unsetenv("UROCE_BACKEND");
	unsetenv("UROCE_FAULTS");
}

TestSuite(config, .init = clean_env);

Test(config, defaults)
{
	struct uroce_config cfg;

	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_eq(cfg.udp_port, 4791);
	cr_assert_null(cfg.pcap_path);
	cr_assert_eq(cfg.log_level, UROCE_LOG_ERROR);
	uroce_config_free(&cfg);
}

Test(config, valid_ports)
{
	static const struct {
		const char *value;
		uint16_t port;
	} cases[] = {{"1", 1}, {"4791", 4791}, {"65535", 65535}, {"024791", 24791}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct uroce_config cfg;

		setenv("UROCE_UDP_PORT", cases[i].value, 1);
		cr_assert_eq(uroce_config_load(&cfg), 0, "%s", cases[i].value);
		cr_assert_eq(cfg.udp_port, cases[i].port, "%s", cases[i].value);
		uroce_config_free(&cfg);
	}
}

Test(config, bad_ports_are_refused_by_name)
{
	static const char *const bad[] = {"0",  "65536", "abc", "",   "-1",
					  "+5", " 5",    "5x",  "5 ", "99999999999999999999"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct uroce_config cfg;
		char expect[128];
		const char *err;

		setenv("UROCE_UDP_PORT", bad[i], 1);
		stderr_begin();
		cr_assert_eq(uroce_config_load(&cfg), EINVAL, "\"%s\"", bad[i]);
		err = stderr_end();
		snprintf(expect, sizeof(expect), "UROCE_UDP_PORT=\"%s\" is not valid", bad[i]);
		cr_assert(strstr(err, expect), "\"%s\" gave: %s", bad[i], err);
		cr_assert(strstr(err, "1..65535"), "%s", err);
	}
}

Test(config, pcap_path_gets_the_pid)
{
	struct uroce_config cfg;
	char expect[128];

	setenv("UROCE_PCAP", "/tmp/a-%p/b%p.pcap", 1);
	cr_assert_eq(uroce_config_load(&cfg), 0);
	snprintf(expect, sizeof(expect), "/tmp/a-%d/b%d.pcap", (int)getpid(), (int)getpid());
	cr_assert_str_eq(cfg.pcap_path, expect);
	uroce_config_free(&cfg);

	setenv("UROCE_PCAP", "100%.pcap", 1);
	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_str_eq(cfg.pcap_path, "100%.pcap");
	uroce_config_free(&cfg);

	setenv("UROCE_PCAP", "", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	cr_assert(strstr(stderr_end(), "UROCE_PCAP=\"\" is not valid"));
}

/* "-" would be a file named "-": refused, pointing at uroce-run's stream to standard output. */
Test(config, pcap_dash_is_refused)
{
	struct uroce_config cfg;
	const char *err;

	setenv("UROCE_PCAP", "-", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	err = stderr_end();
	cr_assert(strstr(err, "UROCE_PCAP=\"-\" is not valid"), "%s", err);
	cr_assert(strstr(err, "uroce-run --pcap - PROGRAM"), "%s", err);
	cr_assert_null(cfg.pcap_path);
}

Test(config, log_level)
{
	struct uroce_config cfg;

	setenv("UROCE_LOG", "debug", 1);
	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_eq(cfg.log_level, UROCE_LOG_DEBUG);
	uroce_config_free(&cfg);

	setenv("UROCE_LOG", "loud", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	cr_assert(strstr(stderr_end(), "UROCE_LOG=\"loud\" is not valid: expected error, info or "
				       "debug"));
}

Test(config, backend)
{
	struct uroce_config cfg;

	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_eq(cfg.backend, UROCE_BACKEND_AUTO);
	setenv("UROCE_BACKEND", "epoll", 1);
	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_eq(cfg.backend, UROCE_BACKEND_EPOLL);
	setenv("UROCE_BACKEND", "io_uring", 1);
	cr_assert_eq(uroce_config_load(&cfg), 0);
	cr_assert_eq(cfg.backend, UROCE_BACKEND_IO_URING);
	setenv("UROCE_BACKEND", "uring", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	cr_assert(strstr(stderr_end(), "UROCE_BACKEND=\"uring\" is not valid: expected auto, "
				       "io_uring or epoll"));
}

Test(config, unknown_variable_is_refused_by_name)
{
	struct uroce_config cfg;

	setenv("UROCE_UDP_PROT", "5000", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	cr_assert(strstr(stderr_end(), "UROCE_UDP_PROT is not a uroce variable (known: "
				       "UROCE_UDP_PORT"));
	unsetenv("UROCE_UDP_PROT");
}

/* A bad value after a good one that allocated: nothing leaks (ASan), nothing is returned. */
Test(config, bad_value_after_pcap)
{
	struct uroce_config cfg;

	setenv("UROCE_PCAP", "/tmp/x.pcap", 1);
	setenv("UROCE_LOG", "nope", 1);
	stderr_begin();
	cr_assert_eq(uroce_config_load(&cfg), EINVAL);
	stderr_end();
	cr_assert_null(cfg.pcap_path);
}

static void no_recv(void *arg, const struct uroce_rx *rx)
{
	(void)arg;
	(void)rx;
}

Test(config, net_open_refuses_a_bad_port)
{
	static const struct uroce_net_ops ops = {.recv = no_recv};
	struct uroce_net *net = NULL;
	const char *err;

	setenv("UROCE_UDP_PORT", "70000", 1);
	stderr_begin();
	cr_assert_eq(uroce_net_open(&net, &ops, NULL), EINVAL);
	err = stderr_end();
	cr_assert_null(net);
	cr_assert(strstr(err, "UROCE_UDP_PORT=\"70000\""), "%s", err);
}
