/* SPDX-License-Identifier: MIT */
/*
 * The host's CM directory as the endpoint's users see it (ARCHITECTURE.md "The host's CM
 * directory"): rdma_cm bindings and established CM connections. The rendezvous keeps them
 * (rdv_cm.c) and the endpoint passes them through (net.h: uroce_net_service, uroce_net_cm_conn);
 * types only, in a header of their own so that the rendezvous does not include the endpoint's.
 */
#ifndef UROCE_FABRIC_SERVICE_H
#define UROCE_FABRIC_SERVICE_H

#include <stdint.h>

/*
 * An rdma_cm address bound on the host: ports are reserved, and REQs routed to listeners,
 * across the processes of a host, as the kernel's rdma_cm does across the programs of a machine.
 */
struct uroce_service {
	uint16_t ps;     /* rdma_cm port space (cm/wire.h enum cm_port_space) */
	uint16_t port;   /* 0 in UROCE_SERVICE_BIND: a free one of 32768..60999, filled in */
	uint8_t gid[16]; /* the address as a GID; ::ffff:0.0.0.0 is any IPv4, :: any address */
	uint8_t flags;   /* UROCE_SERVICE_REUSEADDR, _AFONLY (rdma_set_option) */
};

#define UROCE_SERVICE_REUSEADDR 1u /* shares the port with others that have it, until listening */
#define UROCE_SERVICE_AFONLY    2u /* meets only bindings of its own address family */

enum uroce_service_op {
	UROCE_SERVICE_BIND = 1, /* reserve the port at the address */
	UROCE_SERVICE_LISTEN,   /* REQs and SIDR_REQs for it come to this process */
	UROCE_SERVICE_UNBIND,   /* give it up (listening too) */
};

/*
 * The hub's answer to an asynchronous request: uroce_net_service's error and, after a BIND,
 * the binding with its port. Called on the progress thread, with no lock of the engine held.
 */
typedef void (*uroce_service_done_fn)(void *arg, int err, const struct uroce_service *s);

/* An established CM connection of this process (uroce_net_cm_conn). */
struct uroce_cm_conn {
	uint32_t local_id, remote_id; /* communication IDs: this process's, the peer's */
	uint32_t remote_qpn;          /* the peer's QP */
	uint8_t sgid[16], dgid[16];   /* this end's address and the peer's */
	uint8_t tos;
};

#endif
