/* SPDX-License-Identifier: MIT */
/*
 * Symbol export for the drop-in libibverbs.so.1.
 *
 * Everything is built with -fvisibility=hidden; a function or object that rdma-core's
 * libibverbs exports is marked UROCE_EXPORT, and the generated version script
 * (gen/version-script.sh) puts it into rdma-core's version node (ABI.md §1.2).
 */
#ifndef UROCE_VERBS_SHIM_EXPORT_H
#define UROCE_VERBS_SHIM_EXPORT_H

#define UROCE_EXPORT __attribute__((visibility("default")))

#endif
