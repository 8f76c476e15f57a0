/* SPDX-License-Identifier: MIT */
/*
 * XRC domains (IBA A14, ibv_open_xrcd(3)). An XRC domain groups XRC SRQs and the XRC target
 * (XRC_RECV) QPs that may deliver into them. Each ibv_open_xrcd returns a new handle; handles
 * opened with the same file (same inode) on the same device share one domain, as the kernel's
 * do. The sharing is within this process: another process opening the same file gets its own
 * domain (its SRQs live in its memory), see docs/UNSUPPORTED.md.
 */
#ifndef UROCE_VERBS_SHIM_XRCD_H
#define UROCE_VERBS_SHIM_XRCD_H

#include <infiniband/verbs.h>

#include "transport/container.h"
#include "verbs-shim/objects.h"

struct uroce_xrc_domain;

/* rdma-core's struct verbs_xrcd starts with the ibv_xrcd; nothing reads past it. */
struct uroce_xrcd {
	struct ibv_xrcd xrcd; /* first; applications hold &xrcd */
	struct uroce_xrc_domain *dom;
};

static inline struct uroce_xrcd *to_uxrcd(struct ibv_xrcd *xrcd)
{
	return uroce_container_of(xrcd, struct uroce_xrcd, xrcd);
}

/* verbs_context ops (ibv_open_xrcd(3)): see xrcd.c for the errors. */
struct ibv_xrcd *uroce_open_xrcd(struct ibv_context *context,
				 struct ibv_xrcd_init_attr *xrcd_init_attr);
int uroce_close_xrcd(struct ibv_xrcd *xrcd);

/* An XRC SRQ or target QP is created in (get) or destroyed from (put) domain @dom. */
void uroce_xrc_domain_get(struct uroce_xrc_domain *dom);
void uroce_xrc_domain_put(struct uroce_xrc_domain *dom);

/* Target QPs of the domain, so that a dying SRQ can be unhooked from them. */
void uroce_xrc_domain_add_tgt(struct uroce_xrc_domain *dom, struct uroce_qp *qp);
void uroce_xrc_domain_del_tgt(struct uroce_xrc_domain *dom, struct uroce_qp *qp);

/*
 * @srq leaves its domain: once this returns, no target QP is using it or will select it
 * again (the caller removed it from the SRQ-number table first). Takes each QP's lock.
 */
void uroce_xrc_domain_forget_srq(struct uroce_xrc_domain *dom, struct uroce_srq *srq);

#endif
