/* SPDX-License-Identifier: MIT */
/*
 * The process's RoCEv2 network endpoint: UDP sockets, the host-local rendezvous that lets
 * several processes share UDP port 4791, the progress thread and its timers.
 *
 * One struct uroce_net per process (ARCHITECTURE.md "The data path"). Received datagrams are
 * handed to the owner's recv callback on the progress thread, already routed to this process by
 * destination QP number; the owner transmits from any thread with uroce_net_send(), which
 * finishes the frame (UDP port, IPv4 ID 0 + DF, ICRC) and records it in the capture.
 *
 * Several processes on one host (ARCHITECTURE.md "Devices, GIDs and several processes"): the
 * processes of one network namespace meet at an abstract AF_UNIX socket. The first to bind it is
 * the hub: it holds UDP 4791 and forwards each datagram whose DestQP belongs to another process
 * to that process, with the original addresses (the ICRC covers them). Every other process sends
 * from its own socket on an ephemeral port. QP numbers come from ranges the hub hands out, so
 * they are unique on the host. When the hub exits, another process takes over.
 */
#ifndef UROCE_FABRIC_NET_H
#define UROCE_FABRIC_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/faults.h"
#include "fabric/rx.h"
#include "fabric/service.h"
#include "fabric/timer.h"
#include "transport/ipudp.h"
#include "transport/wire.h"

struct uroce_net;

struct uroce_net_ops {
	/*
	 * A datagram whose DestQP this process owns, a CM MAD to QP 1 routed to this process
	 * (rdv.h), or one to multicast DestQP 0xFFFFFF (every process gets those). Called on the
	 * progress thread or a thread in uroce_net_poll(), never concurrently with itself or a
	 * timer callback. rx->icrc says whether the ICRC holds; a bad one is delivered (and
	 * captured) all the same, for the owner to count and drop.
	 */
	void (*recv)(void *arg, const struct uroce_rx *rx);
	/*
	 * The packets of one datagram (the segments of a GRO receive, or a single packet the hub
	 * forwarded, the faults delayed or a multicast of this host) have all been passed to recv,
	 * on the same thread: what was kept from one to the next is let go here, before any other
	 * callback. May be NULL.
	 */
	void (*recv_end)(void *arg);
	/*
	 * The datagrams of one batch have all been passed to recv (by the same thread): work
	 * worth doing once per batch rather than per datagram goes here. May be NULL.
	 */
	void (*batch_end)(void *arg);
	/*
	 * The datagram of @total bytes in UDP GRO segments of @seg bytes, whose first packet's BTH
	 * is @bth, is for a QP of this process, and may be received straight into place: fill
	 * @plan and return true to have the payloads of its first plan->count packets received at
	 * plan->at (transport/qp.h: roce_qp_steer); each of those that roce_steer_fits() then
	 * comes to recv with rx->gap set over its payload. After true, the datagram's packets go
	 * to recv and recv_end follows, also when the receive fails; false keeps nothing. Never
	 * asked while packets are captured or put through receive faults. May be NULL.
	 */
	bool (*steer)(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
		      struct roce_steer *plan);
	/* Threads stopped polling (uroce_net_poll): on the progress thread. May be NULL. */
	void (*polling_ended)(void *arg);
	/*
	 * The network answered a CM MAD this process sent to @gid with an ICMP error @err:
	 * ECONNREFUSED (no RoCE port open there: no uroce, RNIC or rxe on that host),
	 * EHOSTUNREACH, ENETUNREACH, ... On the progress thread. May be NULL.
	 */
	void (*unreachable)(void *arg, const uint8_t gid[16], int err);
};

/*
 * Start the endpoint: join (or become) the host's hub, take a first QPN range, open the sockets,
 * start the progress thread (all signals blocked). Reads the capture configuration (UROCE_PCAP).
 * Returns 0 and sets *@out, or a positive errno: EINVAL (a bad UROCE_* value, reported on stderr
 * naming the variable), ENOMEM, or the errno of the capture file, socket, io_uring or thread call
 * that failed (also reported on stderr), e.g. EADDRINUSE when another program holds the UDP port.
 */
int uroce_net_open(struct uroce_net **out, const struct uroce_net_ops *ops, void *arg);

/*
 * Stop the progress thread, leave the rendezvous (handing the hub over if this process is it),
 * close the sockets and the capture. No callback runs after it returns. NULL is a no-op.
 */
void uroce_net_close(struct uroce_net *net);

/*
 * A QP number unique on this host, from this process's ranges (never 0, 1 or 0xFFFFFF); asks the
 * hub for another range when they are used up. Returns 0, ENOSPC (the 24-bit space is taken),
 * ETIMEDOUT (the hub did not answer within 10 s), EAGAIN (called from a callback of a process
 * that is not the hub, which cannot wait there for the answer), ENOMEM, or the error that made
 * the rendezvous unusable (reported on stderr when it happened).
 */
int uroce_net_alloc_qpn(struct uroce_net *net, uint32_t *qpn);

/* Give back a QP number: it is not reused before the rest of the process's ranges. */
void uroce_net_free_qpn(struct uroce_net *net, uint32_t qpn);

/*
 * Transmit one RoCEv2 datagram from any thread. @f gives sgid (which must be an address of
 * this host), dgid, tos, ttl and flow_label; the rest is filled in here: sport (this process's
 * socket), dport (the RoCEv2 port), ip_id 0, ip_frag DF. @roce holds @len bytes, BTH .. ICRC;
 * its last 4 bytes are overwritten with the ICRC. The frame is recorded in the capture.
 * Returns 0 or a positive errno: EAFNOSUPPORT (sgid and dgid of different families, or no IPv6
 * on this host), EINVAL (@len below a BTH and ICRC), EMSGSIZE, EADDRNOTAVAIL (sgid not local),
 * or what sendmsg reports (ENOBUFS, EAGAIN, ECONNREFUSED from an ICMP error, ...). A datagram
 * that could not be sent is simply lost, as on a wire.
 */
int uroce_net_send(struct uroce_net *net, const struct roce_ipudp *f, uint8_t *roce, size_t len);

/*
 * Transmit @n RoCEv2 datagrams to one destination @f, laid out back to back in @buf: the first
 * lens[0] bytes, then lens[1], ... Each is finished as uroce_net_send() does; runs of equal
 * length (the last of a run may be shorter, as a message's LAST packet) leave in one UDP GSO
 * send, with the IPv4 IDs the kernel gives the segments in their ICRCs, and the runs in one
 * sendmmsg. To a process of this host, an RC ACK ahead of requests of one length is moved
 * behind them in @buf (transport/wire.h: roce_train_ack_last). Where the path cannot do GSO they
 * go one by one. With @gaps (NULL: none), datagram j's payload gaps[j] stayed in the sender's
 * memory (transport/wire.h: struct roce_pkt_gap): the GSO send gathers it from there, with no
 * copy; a path that reads the bytes (faults, multicast, a capture, one by one) copies it into
 * @buf first. Returns 0 or the first error (as uroce_net_send); the others of the train are
 * still attempted.
 */
int uroce_net_send_train(struct uroce_net *net, const struct roce_ipudp *f, uint8_t *buf,
			 const uint16_t *lens, const struct roce_pkt_gap *gaps, unsigned int n);

/*
 * Multicast (fabric/mcast.h): a QP of this process joins (@join) or leaves @group on interface
 * @ifindex. Datagrams sent to a group reach this host's members through the rendezvous and
 * other hosts' by IP multicast (the membership taken here lets the host receive theirs).
 * Returns 0, or the errno of taking the IP membership (reported at info level; the host's own
 * members are reached all the same), ENOMEM.
 */
int uroce_net_mcast_join(struct uroce_net *net, const uint8_t group[16], unsigned int ifindex,
			 bool join);

/*
 * From now on, packets this process receives on its own sockets carry the traffic class, hop
 * limit and IPv6 flow label of their IP header (else those are 0; the RoCE port's always carry
 * them): for a UD QP's GRH (verbs-shim: at its creation), the CM's answers (at its start), a
 * capture (at open). Costs each receive two control messages (udp.h: uroce_udp_recv_ip_fields).
 * Idempotent, from any thread; a setsockopt failure is logged and leaves those fields 0.
 */
void uroce_net_want_ip_fields(struct uroce_net *net);

/*
 * From an application thread that found nothing to do, e.g. an empty CQ: receive here rather
 * than wait for the progress thread (uroce_progress_poll, fabric/progress.h). Returns the
 * datagrams handled, or -1 while the progress thread still receives (better yield the CPU).
 * Not from a callback.
 */
int uroce_net_poll(struct uroce_net *net);

/* The calling thread will sleep until an event: the progress thread receives again. */
void uroce_net_unpoll(struct uroce_net *net);

/*
 * Block until @fd is readable or @ready(@arg), receiving meanwhile (uroce_progress_wait): 0,
 * EINTR, or ppoll's errno. Not from a callback.
 */
int uroce_net_wait(struct uroce_net *net, int fd, bool (*ready)(void *arg), void *arg);

/*
 * The bytes of RoCE packets one sender may have in flight to this host: half this process's
 * smallest socket receive buffer as SO_RCVBUF reports it (twice what was asked, for the
 * kernel's accounting of each datagram's whole buffer). With root that is 8 MiB, more than the
 * largest window; without, net.core.rmem_max caps it (often 208 KiB: 26 packets of 4 KiB).
 * Peers are assumed to be configured alike.
 */
uint32_t uroce_net_rx_budget(const struct uroce_net *net);

/* Whether threads busy-poll the endpoint now (uroce_progress_polled). */
bool uroce_net_polled(const struct uroce_net *net);

/*
 * Timers (struct uroce_timer, and uroce_now(), in fabric/timer.h) on the endpoint's progress
 * thread. Arm @t to fire at @deadline (uroce_now() clock), or move it if armed. From any thread; a
 * deadline in the past fires as soon as the progress thread gets to it.
 */
void uroce_timer_arm(struct uroce_net *net, struct uroce_timer *t, uint64_t deadline);

/*
 * Whether the calling thread is the progress thread, which runs the timers: a deadline armed
 * from any other thread that comes before the progress thread's next wake-up costs a wake-up.
 */
bool uroce_net_on_timer_thread(struct uroce_net *net);

/*
 * Disarm @t. When it returns, @t's callback is not running and will not run (unless re-armed),
 * so the object around @t can be freed; called from @t's own callback it just disarms.
 */
void uroce_timer_cancel(struct uroce_net *net, struct uroce_timer *t);

/* Counters of the endpoint, for statistics and tests. */
struct uroce_net_stats {
	uint64_t rx_packets;      /* delivered to recv */
	uint64_t tx_packets;      /* sent by uroce_net_send */
	uint64_t tx_errors;       /* uroce_net_send failures */
	uint64_t forwarded;       /* as hub: handed to another process */
	uint64_t rx_short;        /* dropped: shorter than a BTH */
	uint64_t rx_unknown_qpn;  /* dropped: DestQP owned by no process */
	uint64_t rx_buffers_lost; /* datagrams lost because receive buffers ran out */
	uint64_t rx_oversize;     /* dropped: longer than a receive buffer (no RoCE packet is) */
	struct uroce_faults_stats faults; /* what UROCE_FAULTS did (fabric/faults.h) */
};
void uroce_net_get_stats(struct uroce_net *net, struct uroce_net_stats *out);

/* The capture file being written (UROCE_PCAP, %p expanded), or NULL when none is. */
const char *uroce_net_capture_path(const struct uroce_net *net);

/* True while this process is the hub (holds UDP 4791). For tests and diagnostics. */
int uroce_net_is_hub(struct uroce_net *net);

/*
 * Send the 256-byte CM MAD @mad to QP 1 at @dgid from @sgid (an address of this host) with @tos
 * and @ttl: a UD SEND Only from QP 1 with QP 1's Q_Key and P_Key 0xFFFF (PROTOCOL.md §4.1).
 * Any thread. Returns what uroce_net_send returns.
 */
int uroce_net_send_mad(struct uroce_net *net, const uint8_t sgid[16], const uint8_t dgid[16],
		       uint8_t tos, uint8_t ttl, const uint8_t mad[256]);

/*
 * @op on @s in the host's CM directory, waiting for the hub's answer (an application thread;
 * the progress thread gets EAGAIN unless it is the hub's). BIND fills s->port when it was 0.
 * Bindings meet as the kernel's rdma_cm has them meet (cma_check_port): of one port space and
 * port, two REUSEADDR ones that do not listen share it; two AFONLY ones of different families
 * do not meet; a wildcard meets everything else (EADDRNOTAVAIL); the same address is taken
 * (EADDRINUSE). LISTEN checks a REUSEADDR binding again as if it had not the flag.
 * Returns 0, or EADDRINUSE or EADDRNOTAVAIL (BIND: the port is taken as above, or no ephemeral
 * port is free; LISTEN of a REUSEADDR binding: likewise), EINVAL (LISTEN: not bound by this
 * process), ETIMEDOUT (no answer within 10 s), or
 * the error that made the rendezvous unusable.
 */
int uroce_net_service(struct uroce_net *net, enum uroce_service_op op, struct uroce_service *s);

/*
 * @op on @s as uroce_net_service, without waiting: @fn (if not NULL) gets the answer later.
 * Requests of a process reach the hub in the order they were made, waiting or not, so a BIND
 * made after an UNBIND of the same port is answered after it. One made by another process may
 * still find the port taken for the moment the UNBIND is on its way. Returns 0 (queued), or
 * ENOMEM or the error that made the rendezvous unusable (nothing queued, @fn not called).
 */
int uroce_net_service_async(struct uroce_net *net, enum uroce_service_op op,
			    const struct uroce_service *s, uroce_service_done_fn fn, void *arg);

/*
 * Tell the host that @c is established (@up) or no longer is, so that if this process dies
 * the host disconnects it on its behalf (a DREQ to the peer, as the kernel does for a killed
 * process). Any thread; never waits (a lost note costs only that DREQ). The hub's own are
 * known to the host's other processes, and the one that takes the port over disconnects them;
 * with no other uroce process left on the host, nobody does.
 */
void uroce_net_cm_conn(struct uroce_net *net, bool up, const struct uroce_cm_conn *c);

/*
 * The tag of this process's CM communication IDs (cm/route.h cm_comm_id): fixed while the
 * process lives, unique among the host's processes.
 */
uint32_t uroce_net_comm_tag(struct uroce_net *net);

#endif
