/* SPDX-License-Identifier: MIT */
/*
 * Fault injection (UROCE_FAULTS): loss, reordering, duplication, corruption and delay of the
 * packets this process sends and/or receives, decided by a seeded generator, so that the
 * transport's recovery can be exercised where no netem qdisc exists. For a given seed and the
 * same sequence of packets the same faults happen.
 *
 *   UROCE_FAULTS=loss=0.05,reorder=0.02,dup=0.01,corrupt=0.001,delay=200us,seed=7,dir=tx
 *
 *   loss, reorder, dup, corrupt   probability per packet, 0..1 (each decided on its own)
 *   delay                         every packet is held this long (ns, us, ms or s; default 0)
 *   seed                          of the generator (default 1)
 *   dir                           tx (default), rx or both: where the faults apply
 *   spare=acks                    RC ACKs (opcode 0x11) meet no fault but the delay, as the
 *                                 netns tests' nftables rules spare them: a program that ends
 *                                 without a closing handshake (ibv_rc_pingpong) can otherwise
 *                                 lose the last ACK of a peer that has already exited, which
 *                                 no retransmission brings back (the program's race, which a
 *                                 lossy wire to a real RNIC has too)
 *
 * A lost packet is not sent (tx) or not delivered (rx), and not captured; a corrupted one has a
 * byte flipped after its ICRC was computed, so the receiver's ICRC check drops it (tx: the
 * capture shows the corrupted frame); a duplicated one goes out twice; a reordered one is held
 * ROCE_FAULTS_REORDER_NS longer than the others, so that later packets overtake it.
 */
#ifndef UROCE_FABRIC_FAULTS_H
#define UROCE_FABRIC_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/ipudp.h"

struct uroce_timer;

/* How much longer than the others a reordered packet is held. */
#define UROCE_FAULTS_REORDER_NS 100000u

struct uroce_faults_cfg {
	bool on;                                              /* a spec was given */
	uint32_t loss_ppm, reorder_ppm, dup_ppm, corrupt_ppm; /* parts per million */
	uint64_t delay_ns;
	uint64_t seed;
	bool tx, rx;     /* the directions they apply to */
	bool spare_acks; /* RC ACKs meet no fault (spare=acks) */
};

/*
 * Parse a UROCE_FAULTS value into @cfg. Returns 0, or EINVAL after logging what is wrong
 * (an unknown key, a probability outside 0..1, a delay without a unit, a repeated key).
 */
int uroce_faults_parse(const char *spec, struct uroce_faults_cfg *cfg);

struct uroce_faults;

/* What the faults need of their endpoint, given at creation (the endpoint is above them). */
struct uroce_faults_ops {
	/*
	 * Where packets a fault held back go when their time comes (on the progress thread):
	 * @tx says which direction they were taken from; @roce (@len bytes) may be changed.
	 */
	void (*emit)(void *arg, bool tx, const struct roce_ipudp *ip, uint8_t *roce, size_t len);
	/*
	 * Arm (or move) the delay line's timer @t to @deadline on the endpoint's progress thread
	 * (uroce_timers_arm), from any thread. The thread starts after the faults are created, so
	 * they are given this rather than its timers.
	 */
	void (*arm)(void *arg, struct uroce_timer *t, uint64_t deadline);
};

/* Faults calling @ops with @arg (both kept): NULL with errno ENOMEM. */
struct uroce_faults *uroce_faults_new(const struct uroce_faults_cfg *cfg,
				      const struct uroce_faults_ops *ops, void *arg);
/*
 * Drop what the delay line holds (lost, as on a wire) and free @f. Only once the endpoint's
 * progress thread has stopped: its timers, the delay line's among them, are gone then.
 */
void uroce_faults_free(struct uroce_faults *f);

/*
 * Apply the faults of direction @tx to one packet. Returns how many copies the caller passes on
 * now: 0 (lost or held back: a held copy comes back through emit), 1, or 2 (duplicated). A
 * corrupted packet is changed in @roce, which must be writable. Thread-safe.
 */
unsigned int uroce_faults_apply(struct uroce_faults *f, bool tx, const struct roce_ipudp *ip,
				uint8_t *roce, size_t len);

/* Whether faults apply to direction @tx at all. */
bool uroce_faults_on(const struct uroce_faults *f, bool tx);

/* What the faults did to the packets so far (uroce_net_get_stats). */
struct uroce_faults_stats {
	uint64_t lost, duplicated, corrupted, reordered, delayed;
};

/* Zeros for a NULL @f. */
void uroce_faults_get_stats(struct uroce_faults *f, struct uroce_faults_stats *out);

#endif
