/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous: how the processes of one host share the RoCEv2 UDP port (ARCHITECTURE.md
 * "Devices, GIDs and several processes on one host").
 *
 * Meeting point: the abstract AF_UNIX SOCK_SEQPACKET name "\0uroce/<port>" (abstract names are
 * scoped to the network namespace, like the addresses; a process's death closes its sockets,
 * which its peers see as EOF). The first process to bind it is the hub: it listens there and
 * binds the UDP port; every other process connects, and logs who the hub is (SO_PEERCRED).
 *
 * QP numbers: the 24-bit space is cut into 4096 blocks of 4096 (fabric/qpn.h). The hub keeps the
 * owner of each block, naming processes by a random 64-bit token (pids are ambiguous across pid
 * namespaces). Every process keeps a copy of that table, so that whoever becomes the next hub
 * knows which blocks are taken.
 *
 * Messages (fabric/rdv_proto.h):
 *   HELLO   process -> hub, first: token, pid and the ports of its own UDP sockets (the
 *           others send datagrams for its QPs from this host's own address straight to those,
 *           past the hub: uroce_rdv_direct_port). The hub answers with the table (one or more
 *           TABLE records), which replaces the process's copy once it arrives, or REFUSED if
 *           the version differs.
 *   REQUEST process -> hub: a block please. The hub picks the next free block after the last
 *           one it handed out (so a freed block is reused late), sends OWNER to every other
 *           process first, then GRANT to the requester: by the time the requester may use the
 *           block, every survivor of a hub crash knows it is taken. No block left: FULL.
 *   OWNER   hub -> processes: a block's new owner and its ports (token 0 when its owner has
 *           gone).
 *   CLAIM   process -> new hub, after HELLO: a block it owns. Honoured (CLAIMED ok) if the block
 *           is free or already the claimant's; refused otherwise (logged: cannot happen unless
 *           a process was cut off longer than the grace period).
 *   FRAME   hub -> process: a datagram received on the UDP port whose DestQP (BTH bytes 5..7)
 *           is in one of the process's blocks, with the addresses and IP values it arrived with
 *           (the ICRC covers them); a CM MAD to QP 1 for the process (below); or a datagram
 *           to 0xFFFFFF, which goes to every process (IBA 9.2: multicast). Sent without
 *           blocking: a process whose socket buffer is full loses the datagram, as on a wire.
 *           Flag LOCAL: a multicast datagram a process of this host sent
 *           (uroce_rdv_mcast_sent).
 *   MCAST   process -> hub: a multicast datagram the process sent; the hub hands it to itself
 *           and, as FRAME with LOCAL, to every other process. (IP multicast with loopback
 *           would do it where the interface has a multicast route; a loopback-only namespace
 *           has none.)
 *   SERVICE process -> hub: bind, listen on or unbind an rdma_cm address (uroce_rdv_service);
 *           the hub answers SERVICE_DONE with the outcome. With sequence number 0, a claim a
 *           process makes of its bindings after a takeover (not answered).
 *   CONN    process -> hub: a CM connection of the process is established, or no longer is
 *           (uroce_rdv_cm_conn); when the process dies, the hub sends each peer a DREQ. A
 *           process repeats its established ones to a new hub.
 *           hub -> process: the same for the hub's own connections, all of them after HELLO;
 *           when the hub dies, the process that takes the port over sends their DREQs.
 * The hub serves its own requests from the same table, and delivers its own datagrams directly.
 *
 * The host's CM directory (rdv_cm.c, rdv_cm_req.c, rdv_cm_conn.c; ARCHITECTURE.md): the hub
 * keeps every process's rdma_cm bindings, so ports are reserved host-wide, and routes the CM
 * MADs to QP 1: REQ and SIDR_REQ to the process listening on the service ID at the destination
 * address, the others to the process whose tag their communication ID carries (cm/route.h).
 * What nobody takes is answered as a Linux CM answers it (REJ "invalid service ID", SIDR_REP
 * "unsupported", DREP).
 *
 * The hub leaving forwards what its port has queued before it closes the port.
 * A process leaving: the hub sees EOF, frees the process's blocks and tells the others (OWNER,
 * token 0). The hub leaving or dying: every process sees EOF and races to bind the name; the
 * winner listens, binds the UDP port (retrying while the old hub's socket is still being
 * closed) and becomes the hub with its copy of the table; the others connect to it, send HELLO
 * and CLAIM each of their blocks, and repeat requests left unanswered. QP numbers therefore stay
 * the same across a takeover. Blocks nobody claims within RDV_GRACE_NS of a takeover (the old hub's
 * own, and those of processes that died meanwhile) are freed. Datagrams that arrive while
 * nobody holds the port are lost, as on a wire.
 *
 * Threads: the rendezvous runs on the progress thread (its sockets are watched there), except
 * the calls that say otherwise: uroce_rdv_request_block() and the CM directory's calls
 * (uroce_rdv_service, _async, uroce_rdv_cm_conn), which other threads make too, and those
 * marked "any thread".
 */
#ifndef UROCE_FABRIC_RDV_H
#define UROCE_FABRIC_RDV_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/progress.h"
#include "fabric/qpn.h"
#include "fabric/rx.h"
#include "fabric/service.h"

/* How long a new hub keeps the blocks of processes that have not re-registered. */
#define RDV_GRACE_NS (2 * 1000000000ull)

struct uroce_rdv;

struct uroce_rdv_ops {
	/*
	 * This process became the hub: bind the UDP port. Returns 0 or an errno; EADDRINUSE (the
	 * old hub's socket is still open) is retried.
	 */
	int (*bind_port)(void *arg);
	/* A datagram the hub forwarded to this process. */
	void (*forwarded)(void *arg, const struct uroce_rx *rx);
	/* Hub: send the CM MAD @mad (an answer, or a DREQ for a dead process) to QP 1 at @dgid. */
	void (*send_mad)(void *arg, const uint8_t sgid[16], const uint8_t dgid[16], uint8_t tos,
			 const uint8_t mad[256]);
};

/*
 * Join the rendezvous of UDP port @port, as hub or not. On the progress thread of @p (from its
 * init). @own_ports are the ports of this process's own UDP sockets (IPv4, IPv6; 0: none), which
 * the others learn with its blocks (uroce_rdv_direct_port). Granted blocks are added to @qpn.
 * Returns 0 and sets *@out, or ENOMEM, ETIMEDOUT (the name stayed bound by a process that never
 * listened), EPROTO (the hub refused this version), what bind_port returned, or the errno of the
 * socket call that failed; reported on stderr.
 */
int uroce_rdv_join(struct uroce_rdv **out, uint16_t port, const uint16_t own_ports[2],
		   struct uroce_progress *p, struct uroce_qpn *qpn, const struct uroce_rdv_ops *ops,
		   void *arg);

/*
 * The own UDP port (@v6: of its IPv6 socket) of the process whose QPs @qpn belongs to, or 0 if
 * none is known (a free block, QP 1 or multicast). A datagram to that QP from an address of
 * this host can go straight there instead of through the hub. Any thread; a stale answer sends
 * a datagram where nobody reads it, lost as on a wire.
 */
uint16_t uroce_rdv_direct_port(const struct uroce_rdv *r, uint32_t qpn, bool v6);

/*
 * The same for the process that owns QPN block @block, which for a CM message after the REQ is
 * the tag of the receiver's communication ID (cm/route.h): such a MAD from an address of this
 * host can go straight to its process too. 0 if none is known or @block is out of range.
 */
uint16_t uroce_rdv_block_port(const struct uroce_rdv *r, uint32_t block, bool v6);

/*
 * This process is sending the multicast datagram @rx (rx->host_sent set): hand it to the host's
 * other processes (hub: FRAME to each; else MCAST to the hub), without waiting. From any thread,
 * in the send itself: an adapter's loopback to the host's members is done when its send
 * completes, so a process that exits right after a completed send (as _exit, with no
 * destructor) has still reached them.
 */
void uroce_rdv_mcast_sent(struct uroce_rdv *r, const struct uroce_rx *rx);

/*
 * Close the rendezvous sockets (the others see EOF: a hub's leaving starts a takeover) and free
 * @r. After uroce_progress_stop(). NULL is a no-op.
 */
void uroce_rdv_leave(struct uroce_rdv *r);

/*
 * Obtain one more block of QP numbers (added to the allocator). From an application thread:
 * waits for the hub's answer. Returns 0, ENOSPC (no block is free), ETIMEDOUT (no answer within
 * 10 s), ENOMEM, or the error that made the rendezvous unusable. On the progress thread only a
 * hub can answer at once; elsewhere it returns EAGAIN.
 */
int uroce_rdv_request_block(struct uroce_rdv *r);

enum uroce_rdv_route {
	UROCE_RDV_DELIVER,   /* this process's (or every process's): deliver it here */
	UROCE_RDV_FORWARDED, /* another process's: sent to it (or lost on its full socket) */
	UROCE_RDV_UNKNOWN,   /* nobody's */
	UROCE_RDV_ANSWERED,  /* a CM MAD nobody takes, answered for the host (cm/route.h) */
	UROCE_RDV_HELD,      /* a connection request the hub keeps for a while (rdv_int.h) */
};

/*
 * Where the datagram @rx (at least a BTH long) goes; as hub, forward it. On the progress thread,
 * or once it has stopped.
 */
enum uroce_rdv_route uroce_rdv_route(struct uroce_rdv *r, const struct uroce_rx *rx);

/*
 * Whether QP number @qpn (not QP 1 or the multicast QP) is this process's, so that
 * uroce_rdv_route() delivers its datagrams here without looking at them. As uroce_rdv_route().
 */
bool uroce_rdv_owns(const struct uroce_rdv *r, uint32_t qpn);

/* uroce_net_service(), through the hub. */
int uroce_rdv_service(struct uroce_rdv *r, enum uroce_service_op op, struct uroce_service *s);

/* uroce_net_service_async(), through the hub. */
int uroce_rdv_service_async(struct uroce_rdv *r, enum uroce_service_op op,
			    const struct uroce_service *s, uroce_service_done_fn fn, void *arg);

/* uroce_net_cm_conn(), through the hub. */
void uroce_rdv_cm_conn(struct uroce_rdv *r, bool up, const struct uroce_cm_conn *c);

/* uroce_net_comm_tag(): the first QPN block this process was granted. */
uint32_t uroce_rdv_comm_tag(const struct uroce_rdv *r);

/* True while this process is the hub. Any thread. */
bool uroce_rdv_is_hub(const struct uroce_rdv *r);

/* Datagrams forwarded to other processes, and those lost on a full socket. Any thread. */
uint64_t uroce_rdv_forwarded(const struct uroce_rdv *r);
uint64_t uroce_rdv_forward_lost(const struct uroce_rdv *r);

#endif
