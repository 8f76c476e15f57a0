/* SPDX-License-Identifier: MIT */
/*
 * Port state events (ibv_get_async_event(3)): IBV_EVENT_PORT_ACTIVE when a device's interface
 * gets its link (IFF_RUNNING), IBV_EVENT_PORT_ERR when it loses it, queued on every context open
 * on that device, with the port snapshot ibv_query_port reads updated first. A thread with all
 * signals blocked listens to the kernel's link messages (rtnetlink RTMGRP_LINK); it starts with
 * the first registered context and blocks in recv() until the process exits.
 */
#ifndef UROCE_VERBS_SHIM_PORT_EVENTS_H
#define UROCE_VERBS_SHIM_PORT_EVENTS_H

#include "verbs-shim/objects.h"

/*
 * Deliver port events to @ctx from now on. Returns 0, or the errno of the netlink socket or
 * the thread (reported on stderr once; the context then gets no port events) or ENOMEM.
 */
int uroce_port_events_register(struct uroce_context *ctx);

/* Stop delivering to @ctx (before it is freed). */
void uroce_port_events_unregister(struct uroce_context *ctx);

#endif
