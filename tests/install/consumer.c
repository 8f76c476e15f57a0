/* SPDX-License-Identifier: MIT */
/*
 * A program built against an installed uroce (pkg-config uroce, or find_package(uroce)) and run
 * without uroce-run: it must load uroce's libibverbs through its run path, see uroce_lo, and
 * reach uroce's extras. Prints "consumer: uroce VERSION, uroce_lo" and exits 0.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <uroce/uroce.h>

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct uroce_stats st;
	int found = 0;

	for (int i = 0; list && list[i]; i++)
		found |= !strcmp(ibv_get_device_name(list[i]), "uroce_lo");
	ibv_free_device_list(list);
	if (!found || uroce_get_stats(&st, sizeof(st))) {
		fprintf(stderr, "consumer: %s\n", found ? "uroce_get_stats failed" : "no uroce_lo");
		return 1;
	}
	printf("consumer: uroce %s, uroce_lo\n", uroce_version());
	return 0;
}
