/* SPDX-License-Identifier: MIT */
/*
 * The UROCE_* environment variables the fabric reads, parsed from one table (config.c) so that
 * each variable is described once: its name, what a valid value is and where it goes.
 *
 *   UROCE_UDP_PORT=N   the RoCEv2 UDP port, 1..65535 (default 4791). Processes meet per port, so
 *                      tests can run side by side on different ports.
 *   UROCE_PCAP=FILE    record every frame sent and received in a pcap file; each "%p" in FILE
 *                      becomes the process id, so that several processes write separate files.
 *   UROCE_LOG=LEVEL    error (default), info or debug (fabric/log.h).
 *   UROCE_BACKEND=B    the receive backend: auto (default: io_uring where the kernel allows it,
 *                      else epoll), io_uring or epoll (fabric/progress.h).
 *   UROCE_FAULTS=SPEC  fault injection: loss, reordering, duplication, corruption, delay
 *                      (fabric/faults.h).
 *
 * A set but invalid value is refused, never ignored; so is a variable named UROCE_ that is
 * none of these (a misspelt one would otherwise be silently ignored). Read with secure_getenv(), so
 * a set-user-ID program does not write captures where its caller says.
 */
#ifndef UROCE_FABRIC_CONFIG_H
#define UROCE_FABRIC_CONFIG_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "fabric/faults.h"
#include "fabric/log.h"
#include "fabric/progress.h"

struct uroce_config {
	uint16_t udp_port;
	char *pcap_path; /* with %p expanded; NULL: no capture */
	enum uroce_log_level log_level;
	enum uroce_backend backend;
	struct uroce_faults_cfg faults; /* faults.on: UROCE_FAULTS was given */
};

/*
 * Fill @cfg from the environment (defaults for unset variables). Returns 0, EINVAL (a bad value,
 * reported on stderr with the variable's name, its value and what was expected, or an unknown
 * UROCE_* variable, reported with the known ones; @cfg holds nothing to free) or ENOMEM. Free with
 * uroce_config_free().
 */
int uroce_config_load(struct uroce_config *cfg);

void uroce_config_free(struct uroce_config *cfg);

/*
 * UROCE_UDP_PORT's rule, for the code that needs the port without the rest of the
 * configuration (the resource registries, verbs-shim/resreg.h): decimal digits only (strtoul
 * alone would take " 1", "+1" and "-1"), 1..65535. Returns 0 with *@port set, or EINVAL.
 */
static inline int uroce_config_parse_port(const char *value, uint16_t *port)
{
	unsigned long v;
	char *end;

	if (value[0] < '0' || value[0] > '9')
		return EINVAL;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return EINVAL;
	*port = (uint16_t)v;
	return 0;
}

#endif
