/* SPDX-License-Identifier: MIT */
/*
 * Multicast on the host (issue "Fabric engine", point 5): what a process sends to a group
 * reaches the members on other hosts by IP multicast, and the members on this host -- its own
 * QPs and other processes' -- through the process itself and the rendezvous, because a
 * loopback-only namespace has no multicast route and IP multicast loopback would reach only
 * the process holding the RoCE port. Internal to fabric/.
 *
 * The sending thread queues a copy (uroce_mcast_sent); the receiving thread (the progress
 * thread, woken by an eventfd it watches) hands each copy to the deliver callback, under the
 * receive lock like any datagram. Group membership on the interfaces is counted per group and
 * interface, so that the last leave drops it.
 */
#ifndef UROCE_FABRIC_MCAST_H
#define UROCE_FABRIC_MCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/progress.h"
#include "fabric/rx.h"
#include "fabric/udp.h"

struct uroce_mcast;

/*
 * The queue and its eventfd, watched by @p; @deliver gets each queued copy (rx->host_sent set)
 * in a callback of @p. Returns NULL with errno (ENOMEM, eventfd's, epoll_ctl's).
 */
struct uroce_mcast *uroce_mcast_new(struct uroce_progress *p,
				    void (*deliver)(void *arg, const struct uroce_rx *rx),
				    void *arg);

/* Stop watching and free. After the progress thread has stopped. NULL is a no-op. */
void uroce_mcast_free(struct uroce_mcast *m);

/*
 * A multicast datagram (@len bytes, ICRC filled, @ip as on the wire) was sent: queue a copy for
 * the host's members. From any thread. A full queue (a burst the receiving thread has not
 * caught up with) loses the copy, as a switch would; returns false then.
 */
bool uroce_mcast_sent(struct uroce_mcast *m, const struct roce_ipudp *ip, const uint8_t *roce,
		      size_t len);

/*
 * Join (@join) or leave @group on interface @ifindex through socket @s, counting: the
 * membership is taken on the first join and dropped on the last leave. Returns 0, or the
 * errno of uroce_udp_join (the membership is counted all the same: this host's members are
 * reached without it), ENOMEM.
 */
int uroce_mcast_join(struct uroce_mcast *m, const struct uroce_udp *s, const uint8_t group[16],
		     unsigned int ifindex, bool join);

#endif
