/* SPDX-License-Identifier: MIT */
/*
 * Deterministic simulation of the transport core (transport/qp.h): simulated hosts, each with
 * memory regions and a key table, completion queues, receive queues and SRQs, and the QPs they
 * own, joined by a simulated wire with a virtual clock and seeded faults (loss, reordering,
 * duplication, corruption, delay).
 *
 * The harness plays the verbs layer (verbs-shim/): it fills send WQEs as ibv_post_send does,
 * answers the core's env callbacks, and on a fatal error moves the QP to Error and flushes its
 * queues with IBV_WC_WR_FLUSH_ERR. It plays the fabric too: each packet a QP writes gets its
 * ICRC, may be lost, delayed, duplicated or have a byte flipped; the receiving host verifies the
 * ICRC (a flipped byte fails it and the packet is dropped), decodes it with roce_decode() and
 * hands it to the QP its DestQP names.
 *
 * Everything runs on one thread in virtual time: sim_run() advances the clock to the next packet
 * delivery or QP deadline. Given the same seed and the same calls, a run is the same run.
 */
#ifndef UROCE_TESTS_SIM_H
#define UROCE_TESTS_SIM_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "transport/mw.h"
#include "transport/qp.h"

/* Faults of the wire, in parts per million of packets, and its delay. */
struct sim_wire_cfg {
	uint32_t loss_ppm;
	uint32_t dup_ppm;     /* a second copy arrives up to reorder_ns later */
	uint32_t corrupt_ppm; /* one byte flipped after the ICRC: the receiver drops it */
	uint32_t reorder_ppm; /* held back up to reorder_ns: later packets overtake it */
	uint64_t delay_ns;    /* one-way latency */
	uint64_t jitter_ns;   /* plus 0..jitter_ns, in order (a path is FIFO) */
	uint64_t reorder_ns;
	uint32_t rate_mbps; /* each host's egress link: packets queue behind it (0: no limit) */
};

struct sim_prng {
	uint64_t s;
};

/* splitmix64: a seeded, well-mixed 64-bit sequence. */
uint64_t sim_rand(struct sim_prng *r);
/* Uniform in [0, n) (n > 0). */
uint64_t sim_rand_below(struct sim_prng *r, uint64_t n);
/* True with probability ppm / 10^6. */
bool sim_chance(struct sim_prng *r, uint32_t ppm);

struct sim_wc {
	struct ibv_wc wc;
	bool solicited;
	uint64_t time;
};

/* A completion queue: every completion ever pushed, in order; sim_poll() reads them. */
struct sim_cq {
	struct sim_wc *wc;
	uint32_t n, cap;
	uint32_t polled;
};

/* A shared receive queue (as verbs SRQs: roce_recv_wqe slots). */
struct sim_srq {
	struct roce_wq rq;
	uint32_t max_sge;
	uint32_t limit; /* armed limit: SRQ_LIMIT_REACHED once fewer remain */
	uint32_t limit_events;
	/* XRC SRQs (sim_xrc_srq_new): number, domain, PD and the CQ its receives complete on */
	uint32_t srqn;
	uint32_t xrcd;
	uint32_t pd;
	struct sim_cq *cq;
};

struct sim_mr {
	bool valid;
	uint32_t key;
	uint32_t pd;
	uint64_t iova;
	uint64_t len;
	int access;
	uint8_t *addr;
	uint32_t windows; /* memory windows bound to it: deregistration waits for none */
};

enum {
	SIM_MAX_MR = 64,
	SIM_MAX_QP = 32,
	SIM_MAX_HOST = 8,
	SIM_MAX_EVENTS = 64,
	SIM_MAX_XRC_SRQ = 8,
	SIM_MAX_MW = 16,
};

struct sim;

struct sim_host {
	struct sim *sim;
	uint32_t id;
	uint8_t gid[16];    /* ::ffff:10.0.0.(id + 1) */
	bool down;          /* drops everything it would receive or send (a dead peer) */
	uint64_t link_free; /* when its egress link is next idle (sim_wire_cfg.rate_mbps) */
	uint64_t path_last[SIM_MAX_HOST]; /* latest arrival so far of a packet to each host */
	struct sim_mr mr[SIM_MAX_MR];
	uint32_t nmr;
	struct sim_srq *xrc_srq[SIM_MAX_XRC_SRQ]; /* by SRQ number - 1 */
	uint32_t nxrc_srq;
	struct roce_mw mw[SIM_MAX_MW]; /* memory windows by number (roce_mw_index) */
	uint32_t nmw;
};

/* What sim_qp_new() needs: the ibv_qp_init_attr of a verbs QP. */
struct sim_qp_init {
	enum ibv_qp_type type;
	uint32_t pd;
	uint32_t sq_slots, rq_slots;
	uint32_t max_sge, max_inline;
	bool sig_all;
	struct sim_cq *send_cq, *recv_cq;
	struct sim_srq *srq; /* NULL: the QP has its own receive queue */
	uint32_t xrcd;       /* XRC_RECV: its XRC domain (it has no PD, CQs or queues) */
};

struct sim_qp {
	struct roce_qp core;
	struct sim_host *host;
	struct sim_qp_init init;
	struct roce_wq sq;
	struct roce_wq rq;
	enum ibv_qp_state state; /* as the owner sees it */
	bool destroyed;
	uint32_t to_error_calls;
	uint32_t sq_error_calls;
	struct sim_srq *xrc_cur;   /* XRC_RECV: the SRQ the request being handled names */
	uint32_t late_completions; /* completions after destroy: must stay 0 */
	enum ibv_event_type events[SIM_MAX_EVENTS];
	uint64_t event_time[SIM_MAX_EVENTS];
	uint32_t nevents;
	uint64_t tx_pkts;
};

/* An address handle for UD sends: struct ibv_ah so a WR can name it. */
struct sim_ah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

/* What one fault or delivery did; sim->stats counts them. */
struct sim_stats {
	uint64_t sent, delivered, lost, duplicated, corrupted, reordered;
	uint64_t bad_icrc, malformed, no_qp, host_down;
	uint64_t steps;
	uint64_t gapped;  /* sent with the payload left in the sender's memory (qp.h) */
	uint64_t steered; /* received with the payload straight into place (qp.h) */
};

/* Called for each packet leaving a QP, after its ICRC: return false to lose it. */
typedef bool (*sim_filter_fn)(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt);
/* Called for each packet that goes on the wire: extra nanoseconds to hold it (others overtake). */
typedef uint64_t (*sim_hold_fn)(void *arg, const struct sim_qp *from, const struct roce_pkt *pkt);

struct sim_pkt;

struct sim {
	struct sim_wire_cfg wire;
	struct sim_prng rng;
	uint64_t seed;
	uint64_t now;
	struct sim_host *host[SIM_MAX_HOST];
	uint32_t nhosts;
	struct sim_qp *qp[SIM_MAX_QP * SIM_MAX_HOST];
	uint32_t nqps;
	uint32_t next_qpn;
	/* Packets in flight: a binary heap on (arrival, sequence). */
	struct sim_pkt **heap;
	uint32_t nheap, heap_cap;
	uint64_t seq;
	struct sim_stats stats;
	struct sim_ah **ahs;
	uint32_t nahs;
	sim_filter_fn filter;
	sim_hold_fn hold;
	void *filter_arg;   /* of both */
	FILE *trace;        /* each packet and its fate, when set (SIM_TRACE=1 sets it to stderr) */
	uint64_t max_steps; /* sim_run() gives up after this many clock steps in all (0: never) */
	/*
	 * Receive in batches, as an engine that drains once per receive batch: every packet due at
	 * one instant goes in before the QPs send what they have (a pending NAK leaves before
	 * its QP's next packet, roce_qp_nak_due); otherwise each packet is followed by its QP's
	 * output.
	 */
	bool batch;
	const char *fail; /* why a run stopped early: livelock, step limit */
};

/* Make a simulation with wire faults @wire and PRNG @seed. Aborts on out of memory. */
struct sim *sim_new(uint64_t seed, const struct sim_wire_cfg *wire);
/* Free everything, QPs included (destroyed first if still live). */
void sim_free(struct sim *s);

struct sim_host *sim_host_new(struct sim *s);

/*
 * Register [@addr, @addr + @len) for protection domain @pd with IBV_ACCESS_* @access; the
 * region's IOVA is its address. Returns the key (lkey and rkey: slot index and a key byte).
 */
uint32_t sim_mr_reg(struct sim_host *h, uint32_t pd, void *addr, uint64_t len, int access);
/*
 * Deregister: the key no longer works (a stale key fails with ROCE_MEM_KEY). 0, or EBUSY while
 * a memory window is bound to the region (rxe_dereg_mr, IBA 10.6.7.2.6), which stays.
 */
int sim_mr_dereg(struct sim_host *h, uint32_t key);

/* A memory window of @type on PD @pd (ibv_alloc_mw); returns its R_Key. */
uint32_t sim_mw_alloc(struct sim_host *h, uint32_t pd, enum ibv_mw_type type);
/* ibv_dealloc_mw: the window grants nothing more, and leaves its region. */
void sim_mw_dealloc(struct sim_host *h, uint32_t rkey);
/* The window of R_Key @rkey's number (whatever its key byte), or NULL. */
struct roce_mw *sim_mw(struct sim_host *h, uint32_t rkey);

struct sim_cq *sim_cq_new(void);
void sim_cq_free(struct sim_cq *cq);
/* The next completion not yet polled: true and *@out, or false if none. */
bool sim_poll(struct sim_cq *cq, struct sim_wc *out);

struct sim_srq *sim_srq_new(uint32_t slots, uint32_t max_sge);
void sim_srq_free(struct sim_srq *srq);
/*
 * An XRC SRQ on @h (ibv_create_srq_ex with IBV_SRQT_XRC) in domain @xrcd, PD @pd, completing on
 * @cq; its number is srq->srqn. Freed by sim_free().
 */
struct sim_srq *sim_xrc_srq_new(struct sim_host *h, uint32_t slots, uint32_t max_sge, uint32_t xrcd,
				uint32_t pd, struct sim_cq *cq);
/* ibv_post_srq_recv: 0, EINVAL or ENOMEM. */
int sim_srq_post_recv(struct sim_srq *srq, struct ibv_recv_wr *wr);

/* A QP in RESET (ibv_create_qp). Aborts on out of memory. */
struct sim_qp *sim_qp_new(struct sim_host *h, const struct sim_qp_init *init);
/* ibv_destroy_qp: the QP stops; packets for it are dropped (no such QP). */
void sim_qp_destroy(struct sim_qp *qp);

/*
 * ibv_modify_qp as the verbs layer applies it (the caller gives a valid transition): RESET
 * empties the queues first, ERR flushes them after. Then the QP's output is sent.
 */
void sim_modify(struct sim_qp *qp, const struct ibv_qp_attr *attr, int mask);

/* Attributes of an RC/UC connection; sim_connect() takes both QPs RESET -> RTS. */
struct sim_conn {
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	int access;            /* qp_access_flags of both */
	uint32_t psn_a, psn_b; /* first PSN each side sends */
};

/* A sim_conn with common defaults: MTU 1024, timeout 14, retries 7, 16 READ/atomics, all access. */
struct sim_conn sim_conn_default(void);
/* Connect @a and @b (RESET -> INIT -> RTR -> RTS, each pointing at the other). */
void sim_connect(struct sim_qp *a, struct sim_qp *b, const struct sim_conn *c);
/* Reconnect one side only (after a reset): @qp RESET -> RTS towards @peer with PSNs as given. */
void sim_connect_one(struct sim_qp *qp, const struct sim_qp *peer, const struct sim_conn *c,
		     uint32_t sq_psn, uint32_t rq_psn);
/* UD QP: RESET -> INIT -> RTR -> RTS with @qkey and @mtu. */
void sim_ud_ready(struct sim_qp *qp, uint32_t qkey, enum ibv_mtu mtu);

/* An address handle from @h's port to @to (ibv_create_ah). Freed by sim_free(). */
struct ibv_ah *sim_ah_new(struct sim_host *h, const struct sim_host *to);

/*
 * ibv_post_send of one WR (wr->next ignored; XRC: wr->qp_type.xrc.remote_srqn; BIND_MW: the
 * window by wr->bind_mw.mw->rkey, the region by bind_info.mr->lkey), filled as
 * verbs-shim/qp_post.c does: 0, EINVAL
 * (bad SGE count, inline too long, state before RTS) or ENOMEM (queue full). Posting in SQE or
 * ERR flushes the WR at once. The QP's packets are then sent.
 */
int sim_post_send(struct sim_qp *qp, const struct ibv_send_wr *wr);
/* ibv_post_recv of one WR: 0, EINVAL or ENOMEM; flushed at once in ERR. */
int sim_post_recv(struct sim_qp *qp, struct ibv_recv_wr *wr);

enum sim_result {
	SIM_IDLE,  /* nothing in flight and no deadline left */
	SIM_TIME,  /* reached @until */
	SIM_STUCK, /* s->fail says why: a deadline that does not move, or the step limit */
};

/* Run until virtual time @until (UINT64_MAX: until idle). */
enum sim_result sim_run(struct sim *s, uint64_t until);
/* Run for @ns more nanoseconds of virtual time. */
enum sim_result sim_run_for(struct sim *s, uint64_t ns);

/* Number of events of @type raised on @qp. */
uint32_t sim_events(const struct sim_qp *qp, enum ibv_event_type type);

#endif
