/* SPDX-License-Identifier: MIT */
/*
 * The queue-pair core: what a RoCE HCA does for one RC, UC, UD or XRC (initiator or target) QP,
 * as a pure function of packets, work requests and time (ARCHITECTURE.md "Layers"). Three state
 * machines share it, as in rxe:
 *
 *   requester  (requester.c)  send WQEs -> request packets: opcodes, PSNs, segmentation
 *   responder  (responder.c)  request packets -> data placement, ACK/NAK, READ responses, atomics
 *   completer  (completer.c)  response packets and timeouts -> completions, retransmission
 *
 * The owner (the verbs layer) keeps the objects: it queues WQEs on the send ring it gives here,
 * and answers the callbacks of struct roce_qp_env (memory keys, receive WQEs, completions,
 * events). Driving it has the shape of a sans-I/O protocol library:
 *
 *   roce_qp_read_pkt()       a received packet for this QP, with "now"
 *   roce_qp_write_pkt()      pull the next packet to transmit into a caller buffer
 *   roce_qp_expiry()         the next deadline (ACK timeout, RNR wait, delayed ACK)
 *   roce_qp_handle_expiry()  it passed
 *
 * After any of them, and after queueing WQEs, the owner pulls packets until none is left.
 * Nothing here reads a clock, sleeps, locks or allocates per packet; the owner serialises all
 * calls on one QP (its QP lock) and callbacks run inside those calls.
 */
#ifndef UROCE_TRANSPORT_QP_H
#define UROCE_TRANSPORT_QP_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/ipudp.h"
#include "transport/wire.h"
#include "transport/wq.h"
#include "transport/wr_opcode.h"

enum {
	ROCE_MAX_SGE = 32,        /* scatter/gather entries per WQE */
	ROCE_MAX_RD_ATOMIC = 128, /* outstanding READ/atomic requests, either side */
	ROCE_GRH_LEN = 40,        /* UD: the GRH area at the start of a receive buffer */
	/* Room write_pkt needs: the longest headers, a full MTU, pad and ICRC. */
	ROCE_PKT_MAX = ROCE_BTH_LEN + ROCE_XRCETH_LEN + ROCE_DETH_LEN + ROCE_ATOMICETH_LEN +
		       ROCE_IMMDT_LEN + ROCE_MAX_PMTU + 3 + ROCE_ICRC_LEN,
};

/* A receive WQE taken off a receive queue or an SRQ. */
struct roce_recv {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length; /* sum of the scatter lengths */
	struct ibv_sge sge[ROCE_MAX_SGE];
};

/* Why a memory key did not cover an access. */
enum roce_mem_err {
	ROCE_MEM_OK = 0,
	ROCE_MEM_KEY,    /* no such key, a stale key byte, or another PD's region */
	ROCE_MEM_BOUNDS, /* the range is outside the region */
	ROCE_MEM_ACCESS, /* the region does not grant the access */
	ROCE_MEM_SHORT,  /* roce_sgl_copy: the scatter/gather list is shorter than the access */
};

/* What the owner provides. @ctx is roce_qp.ctx. Called inside roce_qp_* calls only. */
struct roce_qp_env {
	/*
	 * Host address of [@addr, @addr + @len) under @key, a local key (lkey) or, with @remote,
	 * an rkey, for an access needing the IBV_ACCESS_* bits of @access (0: local read).
	 * The region must belong to the QP's PD. Returns NULL and sets *@err if not allowed.
	 * @len 0 is valid and checks only the key. An rkey of a memory window
	 * (roce_key_is_mw(), transport/mw.h) is checked through the window (roce_mw_check()
	 * with the QP's number and PD), then the range it gives in its region.
	 */
	uint8_t *(*mem)(void *ctx, uint32_t key, bool remote, uint64_t addr, uint64_t len,
			int access, enum roce_mem_err *err);
	/* Take the next receive WQE (from the QP's receive queue or its SRQ). False if none. */
	bool (*recv_take)(void *ctx, struct roce_recv *out);
	/*
	 * A completion for the send (@recv false) or receive queue's CQ. @solicited: the message
	 * carried the solicited-event bit (for ibv_req_notify_cq(cq, 1)).
	 */
	void (*complete)(void *ctx, bool recv, const struct ibv_wc *wc, bool solicited);
	/*
	 * A BIND_MW WQE: bind the window its wr.bind names to its region, by roce_mw_bind() with
	 * the QP's number and PD. Returns IBV_WC_SUCCESS, or IBV_WC_MW_BIND_ERR if the window or
	 * the region does not exist or roce_mw_bind() refuses.
	 */
	enum ibv_wc_status (*bind_mw)(void *ctx, const struct roce_send_wqe *wqe);
	/*
	 * Invalidate the window of R_Key @rkey (roce_key_is_mw() is true) by roce_mw_invalidate()
	 * with the QP's PD: a local invalidate the QP posted, or a SEND with invalidate it
	 * received. True if done, false if no such window or roce_mw_invalidate() refuses.
	 */
	bool (*invalidate_mw)(void *ctx, uint32_t rkey);
	/* An affiliated asynchronous event: COMM_EST, SQ_DRAINED, QP_REQ_ERR, QP_ACCESS_ERR. */
	void (*event)(void *ctx, enum ibv_event_type type);
	/*
	 * XRC target QPs only (IBA A14): the request being handled names XRC SRQ @srqn in its
	 * XRCETH. Select it: until the next call, mem() checks regions against that SRQ's PD,
	 * recv_take() takes from it and receive completions go to its CQ. Returns false if
	 * @srqn is not an XRC SRQ of the QP's XRC domain.
	 */
	bool (*xrc_srq)(void *ctx, uint32_t srqn);
	/*
	 * The QP hit an error that moves it to the Error state (IBA 10.3.1): the owner sets the
	 * state, flushes every outstanding WQE and then calls roce_qp_modify() with IBV_QPS_ERR.
	 * The WQE that failed has already completed with its error status.
	 */
	void (*to_error)(void *ctx);
	/*
	 * UC or UD: a send WQE completed in error, so the QP entered the Send Queue Error state
	 * (IBA 10.3.1): the owner sets the state and flushes the rest of its send queue (and WQEs
	 * posted later) with IBV_WC_WR_FLUSH_ERR; receiving goes on. Leaving SQE for RTS with
	 * roce_qp_modify() resumes sending after the flushed WQEs.
	 */
	void (*sq_error)(void *ctx);
};

/* Where a packet goes: the destination of the QP (RC, UC, XRC) or of the WQE's address (UD). */
struct roce_dest {
	const struct ibv_ah_attr *ah; /* GID, source GID index, hop limit, traffic class, flow */
};

/* Requester: which WQE is being transmitted and why it waits (IBA 9.7.4). */
enum roce_req_state {
	ROCE_REQ_IDLE,           /* no WQE to start */
	ROCE_REQ_SEND,           /* transmitting req.wqe from req.psn */
	ROCE_REQ_WAIT_FENCE,     /* IBV_SEND_FENCE: earlier READ/atomics still outstanding */
	ROCE_REQ_WAIT_LOCAL,     /* a bind or invalidate: earlier WQEs outstanding */
	ROCE_REQ_WAIT_RD_ATOMIC, /* max_rd_atomic READ/atomics outstanding */
	ROCE_REQ_WAIT_WINDOW,    /* the unacknowledged window is full */
	ROCE_REQ_WAIT_RNR,       /* an RNR NAK: retransmit when the RNR timer expires */
	ROCE_REQ_DRAINED,        /* SQD: nothing new starts */
	ROCE_REQ_ERROR,
};

/* Completer: the oldest unacknowledged WQE and the timers (IBA 9.7.5.1, 9.9). */
enum roce_comp_state {
	ROCE_COMP_IDLE,     /* nothing outstanding */
	ROCE_COMP_WAIT_ACK, /* packets outstanding, ACK timer running */
	ROCE_COMP_ERROR,
};

/* Responder: the message being received (IBA 9.7.5.2, C9-28..C9-31 opcode sequence). */
enum roce_resp_state {
	ROCE_RESP_IDLE,       /* between messages */
	ROCE_RESP_IN_SEND,    /* after SEND FIRST/MIDDLE: MIDDLE or LAST must follow */
	ROCE_RESP_IN_WRITE,   /* after WRITE FIRST/MIDDLE */
	ROCE_RESP_UC_DISCARD, /* UC: a gap lost this message; drop until a FIRST or ONLY */
	ROCE_RESP_ERROR,
};

/* A READ or atomic a responder has accepted: replayed for a duplicate (IBA 9.7.5.2.8). */
struct roce_resp_res {
	uint8_t type;       /* 0: free, ROCE_OP_READ_REQUEST, ROCE_OP_CMP_SWAP, ROCE_OP_FETCH_ADD */
	uint32_t first_psn; /* the request's PSN */
	uint32_t last_psn;  /* the last response PSN */
	uint64_t va;        /* READ: remote address, length and key of the whole request */
	uint32_t rkey;
	uint32_t len;
	uint32_t psn;  /* READ: next response PSN to send */
	uint32_t sent; /* READ: bytes sent so far */
	bool begun;    /* READ: a response of this (re)execution went out */
	uint64_t orig; /* atomic: the value before the operation */
	uint32_t srqn; /* XRC: the XRCETH of the request, whose SRQ's PD guards the READ */
};

/* Packets a QP dropped, by reason; what a HCA's hw counters show. */
struct roce_qp_counters {
	uint64_t rx_state;      /* QP not in a receiving state */
	uint64_t rx_transport;  /* opcode of another transport (RC on a UD QP, ...) */
	uint64_t rx_duplicate;  /* duplicate requests answered again */
	uint64_t rx_out_of_seq; /* requests beyond the expected PSN (sequence NAK or UC drop) */
	uint64_t rx_qkey;       /* UD: wrong Q_Key */
	uint64_t rx_no_recv;    /* UD: no receive WQE (RC answers with an RNR NAK) */
	uint64_t rx_bad_resp;   /* responses that match nothing outstanding */
	uint64_t rnr_naks_sent;
	uint64_t seq_naks_sent;
	uint64_t retransmits; /* go-back-N restarts (timeout, sequence NAK, RNR) */
	uint64_t timeouts;
};

struct roce_qp {
	const struct roce_qp_env *env;
	void *ctx;
	enum ibv_qp_type type;
	uint32_t qpn;
	bool sq_sig_all;
	struct roce_wq *sq; /* struct roce_send_wqe slots, owned and filled by the owner */
	enum ibv_qp_state state;
	struct ibv_qp_attr attr; /* as last set by roce_qp_modify() */
	uint32_t mtu;            /* path MTU in bytes */
	uint32_t window;         /* max PSNs outstanding before the requester waits */
	uint32_t window_bytes;   /* the bytes the receiver absorbs (0: no limit but the default) */

	struct {
		enum roce_req_state state;
		uint32_t wqe;          /* SQ counter of the WQE being (or next to be) sent */
		uint32_t psn;          /* next PSN */
		uint32_t psn_end;      /* PSN after the last ever sent (go-back-N leaves it) */
		uint32_t offset;       /* bytes of req.wqe sent */
		uint32_t rd_atomic;    /* READ/atomic WQEs started and not completed */
		uint32_t ackreq_psn;   /* last PSN that asked for an ACK */
		uint64_t rnr_deadline; /* ROCE_REQ_WAIT_RNR */
		bool drained_event;    /* SQD: SQ_DRAINED raised */
	} req;

	struct {
		enum roce_comp_state state;
		uint32_t psn;       /* oldest unacknowledged PSN */
		uint8_t retry_left; /* transport retries left (retry_cnt) */
		uint8_t rnr_left;   /* RNR retries left (rnr_retry; 7 = infinite) */
		bool restarted;     /* resending from comp.psn (go-back-N or RNR) until progress */
		uint64_t deadline;  /* ACK timeout, when ROCE_COMP_WAIT_ACK (0: infinite) */
	} comp;

	struct {
		enum roce_resp_state state;
		uint32_t psn;         /* expected PSN */
		uint32_t msn;         /* messages completed, 24 bits */
		bool comm_est;        /* COMM_EST raised */
		bool seq_nak_sent;    /* one sequence NAK per gap (IBA 9.7.5.2.2) */
		struct roce_recv wqe; /* the receive WQE of the SEND in progress */
		bool have_wqe;
		uint32_t recv_off; /* bytes of it filled */
		uint64_t write_va; /* WRITE in progress: next address, bytes left, key */
		uint32_t write_left;
		uint32_t write_rkey;
		uint32_t write_len; /* its RETH length: byte_len of a WRITE with immediate */
		/* Pending ACK/NAK: at most one, the newest (coalesced). */
		bool ack_pending;
		uint8_t ack_syndrome;
		uint32_t ack_psn;
		uint64_t ack_deadline; /* delayed ACK without AckReq (0: send at once) */
		/*
		 * Accepted READ/atomics: slots, oldest unanswered, next free (counters). The slots
		 * are res_one until max_dest_rd_atomic asks for more (roce_qp_modify): most QPs
		 * take one READ at a time or none, and 128 slots were 8 KiB to fault in for each
		 * QP made (cmtime's thousand connections).
		 */
		struct roce_resp_res *res;
		struct roce_resp_res res_one;
		uint32_t res_cap;   /* slots of res: a power of two (roce_ring_size) */
		uint32_t res_slots; /* max_dest_rd_atomic, at most res_cap */
		uint32_t res_tail;  /* first not fully answered (a replay moves it back) */
		uint32_t res_head;  /* next to use */
		uint32_t res_fresh; /* first never answered: res_tail's furthest point */
	} resp;

	struct roce_qp_counters counters;
};

/* Make @qp a RESET QP of @type and number @qpn whose send WQEs the owner queues on @sq. */
void roce_qp_init(struct roce_qp *qp, enum ibv_qp_type type, uint32_t qpn, bool sq_sig_all,
		  struct roce_wq *sq, const struct roce_qp_env *env, void *ctx);

/* Free what roce_qp_init() allocated. */
void roce_qp_fini(struct roce_qp *qp);

/*
 * The owner's ibv_modify_qp succeeded (it validated the transition and the mask): take the
 * attributes of @mask from @attr and enter attr->qp_state if IBV_QP_STATE is set. Entering
 * RESET clears all protocol state; RTR arms the responder at rq_psn; RTS the requester at
 * sq_psn; SQD stops new WQEs (SQ_DRAINED is raised once nothing is outstanding); ERR stops
 * everything (the owner flushes the queues). In ERR, a receive WQE the responder was filling
 * completes with IBV_WC_WR_FLUSH_ERR first.
 */
void roce_qp_modify(struct roce_qp *qp, const struct ibv_qp_attr *attr, int mask);

/*
 * Flow control: the requester keeps at most @bytes in flight (unacknowledged), in packets of
 * the path MTU, between ROCE_WINDOW_MIN and ROCE_WINDOW_MAX packets -- what the receiver's
 * socket can hold, so that a stream does not overrun it into drops and go-back-N. 0: the
 * largest window. The largest is 512 packets (2 MiB at a 4096-byte MTU): a smaller one stalls
 * a stream until the ACK of its first half window comes back, and a larger one gains nothing
 * on loopback (docs/PERFORMANCE.md).
 */
void roce_qp_set_window_bytes(struct roce_qp *qp, uint32_t bytes);
#define ROCE_WINDOW_MIN 16u
#define ROCE_WINDOW_MAX 512u

/*
 * A packet for this QP (pkt->bth.dqpn == qpn, already decoded and ICRC-verified; @ip gives its
 * addresses, needed for a UD receive's GRH). Packets the QP cannot take are counted and dropped.
 */
void roce_qp_read_pkt(struct roce_qp *qp, const struct roce_pkt *pkt, const struct roce_ipudp *ip,
		      uint64_t now);

/*
 * A receive straight into place: the UDP datagram of @total bytes in GRO segments of @seg
 * bytes whose first packet's BTH is @bth (ROCE_BTH_LEN bytes) is for this QP. If its packets
 * are likely the MIDDLE packets that continue the RDMA WRITE in progress (the one the responder
 * expects next first), or the MIDDLE responses of the RDMA READ the completer works on (into a
 * READ's one scatter entry), fill @plan (wire.h: struct roce_steer) with where each whole
 * segment's payload would be placed and return true; the owner may then receive the payloads
 * there and pass each packet that roce_steer_fits() with a gap (struct roce_pkt_gap) over its
 * payload: roce_qp_read_pkt() places nothing that is in place already. False when no packet
 * would go to memory (another operation, a state that takes none, a key that refuses) and for
 * the packet that ends the WRITE or READ, which is always placed by the core itself: programs
 * poll a buffer's last byte, and it must be written last and only with the byte the message
 * carries. Bytes steered for packets that then fail a check land only where the message in
 * progress writes: its target is undefined until it completes (IBA 9.4.3.1, o9-22 for RDMA
 * WRITE; a READ's local buffer until its completion) and a correct packet writes them again.
 */
bool roce_qp_steer(struct roce_qp *qp, const uint8_t *bth, uint16_t seg, size_t total,
		   struct roce_steer *plan);

/*
 * The next packet to transmit, written into @buf (at least ROCE_PKT_MAX bytes) as BTH ..
 * payload, pad and 4 bytes for the ICRC, which the caller fills once it knows the IP and UDP
 * headers. Sets @dest. Returns the length, or 0 when nothing is ready. Completions of UD and UC
 * sends are delivered from here, as the last packet leaves.
 */
size_t roce_qp_write_pkt(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now);

/*
 * roce_qp_write_pkt(), but the payload of an RC or XRC request that lies in one entry of its
 * scatter/gather list is not copied: @gap (wire.h: struct roce_pkt_gap) says where it is in
 * the application's registered memory, and @buf leaves room for it; gap->len is 0 when @buf
 * holds the whole packet (any other packet). gap->src is valid until the next call on the QP
 * (its owner sends the packet before): the application may not change or free those bytes
 * before the request's completion, which comes after the ACK. A UD or UC send completes as
 * it leaves, so its payload is always copied; so is one of fewer than ROCE_GAP_MIN bytes,
 * which costs the kernel more as a piece of its own than the copy costs.
 */
#define ROCE_GAP_MIN 1024u
size_t roce_qp_write_pkt_gap(struct roce_qp *qp, uint8_t *buf, struct roce_dest *dest, uint64_t now,
			     struct roce_pkt_gap *gap);

/*
 * A NAK is waiting to go out. The responder keeps one ACK or NAK, the newest replacing it (an
 * ACK acknowledges everything before its PSN, so a newer ACK says all an older one did): an
 * owner that lets several packets in before pulling what is ready (once per receive batch)
 * pulls before the next packet when this is true, so that no NAK is replaced by a later
 * duplicate's ACK. ACKs of a batch coalesce into one (IBA 9.7.5.1.2).
 */
bool roce_qp_nak_due(const struct roce_qp *qp);

/*
 * An ACK the responder holds back to coalesce (after a packet without AckReq it waits
 * ROCE_ACK_DELAY_NS, qp_int.h, for more) is due now: the next roce_qp_write_pkt sends it. For an
 * owner whose thread could only keep that deadline by waking another (verbs-shim/engine_tx.c,
 * uroce_engine_drain): there the wake-up costs more than the ACKs it saves.
 */
void roce_qp_ack_now(struct roce_qp *qp);

/* The next deadline, or UINT64_MAX if none. */
uint64_t roce_qp_expiry(const struct roce_qp *qp);

/* Act on every deadline at or before @now (retransmit, RNR retry, delayed ACK). */
void roce_qp_handle_expiry(struct roce_qp *qp, uint64_t now);

/* The local ACK timeout of attribute @timeout: 4.096 us * 2^timeout, 0 = infinite (IBA 9.7.6.1.3).
 */
uint64_t roce_ack_timeout_ns(uint8_t timeout);

/* The RNR NAK timer of a 5-bit code (IBA table 45: 0 = 655.36 ms, 1 = 0.01 ms, ... 31 = 491.52 ms).
 */
uint64_t roce_rnr_timer_ns(uint8_t code);

#endif
