/* SPDX-License-Identifier: MIT */
/*
 * The data path's engine: the process's network endpoint (fabric/net.h) and the QPs' transport
 * cores (transport/qp.h) driven over it. The shim keeps the objects, validates and queues work
 * requests, and completes them on flush; the engine turns queued WQEs into packets and
 * received packets into completions. These are the shim's calls into the engine. Each says
 * which lock its caller holds: uroce_qp_posted and uroce_qp_modified run under qp->lock (the
 * WQEs just queued, the attributes being applied), the others with no uroce lock held.
 *
 * The engine is below the modules that use it (scripts/check-layers): it knows the objects
 * (objects.h) and the QP numbers (qpn_map.h), and reaches the rest through what they give it:
 *   struct roce_qp_env (core_env.h)   per QP, at uroce_qp_engine_init: MRs, receive queues,
 *                                     CQs, async events, the moves to SQE and ERR
 *   uroce_engine_set_mad (mad.c)      the MADs received on QP 1, ICMP errors for MADs sent
 *   uroce_engine_set_mcast (mcast.c)  the QPs attached to a multicast group
 */
#ifndef UROCE_VERBS_SHIM_ENGINE_H
#define UROCE_VERBS_SHIM_ENGINE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "transport/ipudp.h"

struct roce_pkt;
struct roce_qp_env;
struct uroce_net;
struct uroce_qp;
struct uroce_stats;

/*
 * Give a new QP (qp->ctx, qp->sq and qp->sq_sig_all set) its number and transport core, which
 * reaches the QP's objects through @env (ctx: the QP), starting the process's engine on first
 * use. Returns 0 and sets *@qpn, or an errno: that of starting the engine (uroce_net_open),
 * ENOSPC (no QP number left), ENOMEM.
 */
int uroce_qp_engine_init(struct uroce_qp *qp, enum ibv_qp_type type, const struct roce_qp_env *env,
			 uint32_t *qpn);

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

/*
 * The QP is about to be freed: it sends what it has ready, leaves its multicast groups
 * (uroce_engine_set_mcast), and no packet or timer uses it once this returns. No lock held.
 */
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

/* What a packet to QP 1 becomes: true if a MAD handler took it (mad.h uroce_mad_received). */
typedef bool (*uroce_engine_mad_fn)(const struct roce_pkt *pkt, const struct roce_ipudp *ip);
/* An ICMP error @err for a MAD sent to @gid (fabric/net.h ops->unreachable). */
typedef void (*uroce_engine_unreachable_fn)(void *arg, const uint8_t gid[16], int err);
/* The numbers of the QPs attached to @group, at most @max into @qpn; how many (mcast.h). */
typedef unsigned int (*uroce_engine_members_fn)(const uint8_t group[16], uint32_t *qpn,
						unsigned int max);
/* Detach a QP being destroyed from every multicast group (mcast.h). */
typedef void (*uroce_engine_detach_fn)(struct uroce_qp *qp);

/*
 * Hand the packets received for QP 1 to @received and the ICMP errors for MADs sent to
 * @unreachable (@arg NULL). The MAD module is above the engine (it starts it), so it plugs in
 * here before it takes MADs; until then packets to QP 1 are dropped as unsupported and the
 * errors ignored, as with no MAD handler. Any thread; calls after the first change nothing.
 */
void uroce_engine_set_mad(uroce_engine_mad_fn received, uroce_engine_unreachable_fn unreachable);

/*
 * Deliver a datagram sent to a multicast group to the QPs @members names, and detach a QP
 * being destroyed with @detach_all. The multicast module plugs in before its first attachment;
 * until then no QP belongs to a group. Any thread; calls after the first change nothing.
 */
void uroce_engine_set_mcast(uroce_engine_members_fn members, uroce_engine_detach_fn detach_all);

#endif
