/* SPDX-License-Identifier: MIT */
/*
 * The functions uroce plugs into a context's function tables: ibv_context.ops (called by the
 * inline verbs with no NULL check, ABI.md §2.1) and the struct verbs_context extension ops.
 * Each follows the convention of the inline verb that calls it (verbs.h): the post/poll ops
 * return an errno value (post_*: and set *bad_wr), poll_cq the number of completions or -1.
 */
#ifndef UROCE_VERBS_SHIM_OPS_H
#define UROCE_VERBS_SHIM_OPS_H

#include <infiniband/verbs.h>

/* cq.c. poll_cq: >= 0 completions taken. req_notify_cq: 0. create_cq_ex: NULL + errno
 * EINVAL (bad size, vector, mask), EOPNOTSUPP (unsupported wc_flags or flags), ENOMEM. */
int uroce_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int uroce_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *uroce_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);

/* qp_post.c. EINVAL (state, opcode, sizes, foreign AH), ENOMEM (queue full). */
int uroce_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int uroce_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* srq.c. EINVAL (num_sge), ENOMEM (queue full). create_srq_ex: NULL + errno as
 * ibv_create_srq, EINVAL for an XRC SRQ without its domain and CQ, EOPNOTSUPP for
 * tag-matching SRQs. */
int uroce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_srq *uroce_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
/* ibv_get_srq_num: 0 and the SRQ's number (any SRQ has one; XRC senders name XRC SRQs by it). */
int uroce_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct uroce_xrc_domain;
/*
 * The XRC SRQ numbered @srqn in domain @dom, or NULL. It stays valid while the caller holds the
 * lock of a target QP of @dom (ibv_destroy_srq waits for those, xrcd.h).
 */
struct uroce_srq *uroce_xrc_srq_find(uint32_t srqn, const struct uroce_xrc_domain *dom);

/* qp.c. create_qp_ex: NULL + errno as ibv_create_qp, EOPNOTSUPP for masks, types or send
 * ops uroce does not implement. */
struct ibv_qp *uroce_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);

/* query.c. EINVAL for a port other than 1; query_device_ex also for a non-zero comp_mask. */
int uroce_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		     size_t attr_len);
int uroce_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);

/*
 * mw.c: memory windows. alloc_mw: NULL with errno EINVAL (a type other than 1 or 2) or ENOMEM
 * (none left); bind_mw (type 1, posts a BIND_MW WR as rxe's provider does): 0, or EINVAL (a
 * length or address without a region, a zero-based window, a post ibv_post_send refuses) or
 * EPERM (the region is of another PD); dealloc_mw: 0.
 */
struct ibv_mw *uroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int uroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
int uroce_dealloc_mw(struct ibv_mw *mw);

#endif
