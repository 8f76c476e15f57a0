/* SPDX-License-Identifier: MIT */
/*
 * Where the data path plugs into the verbs shim. The shim keeps the objects, validates and
 * queues work requests, and completes them on flush; the engine (fabric/) turns queued WQEs
 * into packets and received packets into completions. These hooks are the shim's only calls
 * into the engine; each is called without any uroce lock held.
 *
 * What the engine uses in return:
 *   qpn_map.h                   QP by number, for received packets
 *   uroce_mr_lookup (mr.h)      MR by lkey/rkey
 *   qp->lock, qp->sq, qp->rq    WQE rings (wq.h); srq->lock, srq->rq for SRQ receives
 *   qp->attr                    path and transport attributes (objects.h)
 *   uroce_cq_push (cq.h)        completions, with solicited-event arming and channel events
 *   uroce_qp_to_error (qp.h)    a fatal transport error: ERR state + flush
 *   uroce_async_event (async.h) COMM_EST, SQ_DRAINED, SRQ_LIMIT_REACHED, QP_FATAL, ...
 */
#ifndef UROCE_VERBS_SHIM_ENGINE_H
#define UROCE_VERBS_SHIM_ENGINE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>

#include "transport/ipudp.h"
#include <stdint.h>

struct uroce_net;

struct uroce_qp;
struct uroce_stats;

/*
 * Give a new QP (qp->ctx, qp->sq and qp->sq_sig_all set) its number and transport core, starting
 * the process's engine on first use. Returns 0 and sets *@qpn, or an errno: that of starting the
 * engine (uroce_net_open), ENOSPC (no QP number left), ENOMEM.
 */
int uroce_qp_engine_init(struct uroce_qp *qp, enum ibv_qp_type type, uint32_t *qpn);

/* The state changed: send what is ready. Called without the QP's lock. */
void uroce_qp_kick(struct uroce_qp *qp);

/*
 * @posted new WQEs were queued on the send queue (post_send, wr_complete): send them, or, while
 * threads busy-poll and the post is part of a burst, hold them for the next poll so that the
 * packets of many posts leave together. qp->lock held.
 */
void uroce_qp_posted(struct uroce_qp *qp, uint32_t posted);

/*
 * ibv_modify_qp is applying ATTR/ATTR_MASK (already validated), with qp->lock held: on a move
 * to RESET the queues were just emptied; on a move to ERR the queues are flushed right after.
 */
void uroce_qp_modified(struct uroce_qp *qp, const struct ibv_qp_attr *attr, int attr_mask);

/* The QP is about to be freed: no packet or timer uses it once this returns. No lock held. */
void uroce_qp_destroying(struct uroce_qp *qp);

/*
 * Return once every QP lock held when it was called has been released: whatever a packet,
 * timer or post was doing with an object it found before the caller took that object away
 * (an MR out of its table) is done. Locks each QP in turn; no lock held by the caller.
 */
void uroce_engine_quiesce(void);

/* Start the process's engine if it is not running: 0 or the errno of uroce_net_open. */
int uroce_engine_start(void);

/* The process's endpoint, started if needed; NULL with errno if it cannot be had. */
struct uroce_net *uroce_engine_net(void);

/*
 * A CQ was polled empty: receive on this thread if the engine lets polling threads receive
 * (uroce_net_poll). Returns the packets handled (completions may have come), or -1 if the
 * engine's progress thread receives (or none runs yet): the caller should give the CPU away.
 */
int uroce_engine_poll(void);

/*
 * @qp joined (@join) or left multicast @group: the first join of a group on the QP's interface
 * takes the IP membership there, the last leave drops it (uroce_net_mcast_join).
 */
void uroce_engine_mcast(struct uroce_qp *qp, const union ibv_gid *group, bool join);

/* The process's counters (include/uroce/uroce.h); zeros for the endpoint before it starts. */
void uroce_engine_stats(struct uroce_stats *st);

/* The endpoint's capture file (uroce_net_capture_path), NULL before it starts. */
const char *uroce_engine_capture_path(void);

/* A CQ was armed for an event: the thread will sleep, the progress thread must receive. */
void uroce_engine_unpoll(void);

/*
 * The thread blocks until @fd is readable or @ready(@arg) (a completion channel): it receives
 * meanwhile (uroce_net_wait), after sending the posts held for a burst. Returns 0 when the
 * caller should look, also at once when no engine runs (the caller then blocks as usual), or
 * EINTR when a signal interrupted the wait, or ppoll's errno.
 */
int uroce_engine_wait(int fd, bool (*ready)(void *arg), void *arg);

#endif
