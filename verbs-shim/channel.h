/* SPDX-License-Identifier: MIT */
/*
 * Completion channels (channel.c): what uroce's librdmacm.so.1 asks of them beyond the verbs,
 * exported at UROCE_PRIVATE_1 (gen/uroce-private.map).
 */
#ifndef UROCE_VERBS_SHIM_CHANNEL_H
#define UROCE_VERBS_SHIM_CHANNEL_H

#include <infiniband/verbs.h>

#include "verbs-shim/export.h"

/*
 * Block until @channel has an event to read, whatever O_NONBLOCK its fd has, receiving
 * meanwhile as a blocking ibv_get_cq_event does (uroce_engine_wait): the datagram that
 * completes the CQE wakes this thread, not the progress thread and then this one. For a
 * caller that keeps the fd non-blocking for its own poll(2) yet waits on this channel alone
 * (rsockets' blocking calls, rdma-core's rs_get_cq_event). A cancellation point. Returns 0
 * when the caller should look (an event, or the engine stopping), EINTR when a signal
 * interrupted the wait, or poll's or ppoll's errno.
 */
UROCE_EXPORT int uroce_channel_wait(struct ibv_comp_channel *channel);

#endif
