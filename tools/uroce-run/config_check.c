// SPDX-License-Identifier: MIT
/*
 * uroce-config-check: load uroce's configuration from the environment the way the library
 * does when it starts (fabric/config.h), so that uroce-run refuses a bad UROCE_* value or an
 * unknown UROCE_* variable before the program runs, with the library's own message.
 * Exit status: 0 valid, 2 refused (the message is on stderr), 1 out of memory.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fabric/config.h"

int main(int argc, char **argv)
{
	struct uroce_config cfg;
	int err;

	if (argc > 1) {
		fprintf(stderr, "usage: %s (checks the UROCE_* environment; no arguments)\n",
			argv[0]);
		return 2;
	}
	err = uroce_config_load(&cfg);
	if (err == EINVAL)
		return 2;
	if (err) {
		fprintf(stderr, "uroce-config-check: %s\n", strerror(err));
		return 1;
	}
	uroce_config_free(&cfg);
	return 0;
}
