/* SPDX-License-Identifier: MIT */
/*
 * Memory windows: the verbs objects behind transport/mw.h's rules. The windows' state changes
 * (bind, invalidate, deallocate) and is read (a remote access through one) under one lock of
 * the process, a leaf taken inside a QP's lock; a region's count of bound windows changes
 * under it too. The functions below are the transport core's callbacks for a QP (core_env.c);
 * the caller holds the QP's lock.
 */
#ifndef UROCE_VERBS_SHIM_MW_H
#define UROCE_VERBS_SHIM_MW_H

#include <stdint.h>

#include "verbs-shim/objects.h"

/*
 * A remote access of @access to [@addr, @addr + @len) through window R_Key @rkey for @qp
 * (roce_mw_check with the QP's number and PD): ROCE_MEM_OK with the key of the region and the
 * address in it the access goes to, or why not (ROCE_MEM_KEY also for no such window).
 */
enum roce_mem_err uroce_mw_resolve(struct uroce_qp *qp, uint32_t rkey, uint64_t addr, uint64_t len,
				   int access, uint32_t *mr_key, uint64_t *mr_addr);

/* A BIND_MW WQE of @qp (roce_mw_bind): IBV_WC_SUCCESS or IBV_WC_MW_BIND_ERR. */
enum ibv_wc_status uroce_mw_bind(struct uroce_qp *qp, const struct roce_send_wqe *wqe);

/* Invalidate the window of R_Key @rkey for @qp (roce_mw_invalidate): true if done. */
bool uroce_mw_invalidate(struct uroce_qp *qp, uint32_t rkey);

#endif
