// SPDX-License-Identifier: MIT
/* The simulated hosts, owner and wire of the transport core (sim.h). */
#include "tests/sim/sim.h"

#include "transport/qp_state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/icrc.h"
#include "transport/qp_state.h"

/* A deadline that stays due this many times at one instant is a livelock. */
#define SIM_SAME_TIME_LIMIT 100000u
/* Packets one QP may write in a row before the harness calls it a livelock. */
#define SIM_PUMP_LIMIT 1000000u

struct sim_pkt {
	uint64_t time;
	uint64_t seq;
	struct sim_host *to;
	struct roce_ipudp ip;
	uint32_t len;
	uint8_t data[];
};

uint64_t sim_rand(struct sim_prng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

uint64_t sim_rand_below(struct sim_prng *r, uint64_t n)
{
	return sim_rand(r) % n;
}

bool sim_chance(struct sim_prng *r, uint32_t ppm)
{
	return ppm && sim_rand_below(r, 1000000) < ppm;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		abort();
	return p;
}

/* Packets in flight. */

static bool pkt_before(const struct sim_pkt *a, const struct sim_pkt *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct sim_pkt *p)
{
	uint32_t i;

	if (s->nheap == s->heap_cap) {
		s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	i = s->nheap++;
	while (i && pkt_before(p, s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = p;
}

static struct sim_pkt *heap_pop(struct sim *s)
{
	struct sim_pkt *top = s->heap[0];
	struct sim_pkt *last = s->heap[--s->nheap];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && pkt_before(s->heap[c + 1], s->heap[c]))
			c++;
		if (!pkt_before(s->heap[c], last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

/* Setup. */

struct sim *sim_new(uint64_t seed, const struct sim_wire_cfg *wire)
{
	struct sim *s = xcalloc(1, sizeof(*s));
	const char *trace = getenv("SIM_TRACE");

	s->seed = seed;
	s->rng.s = seed;
	s->wire = *wire;
	s->next_qpn = 0x11;
	if (trace && *trace && strcmp(trace, "0"))
		s->trace = stderr;
	return s;
}

void sim_free(struct sim *s)
{
	for (uint32_t i = 0; i < s->nqps; i++) {
		struct sim_qp *qp = s->qp[i];

		if (!qp->destroyed)
			sim_qp_destroy(qp);
		roce_wq_free(&qp->sq);
		roce_wq_free(&qp->rq);
		free(qp);
	}
	for (uint32_t i = 0; i < s->nhosts; i++) {
		for (uint32_t k = 0; k < s->host[i]->nxrc_srq; k++)
			sim_srq_free(s->host[i]->xrc_srq[k]);
		free(s->host[i]);
	}
	while (s->nheap)
		free(heap_pop(s));
	free(s->heap);
	for (uint32_t i = 0; i < s->nahs; i++)
		free(s->ahs[i]);
	free(s->ahs);
	free(s);
}

struct sim_host *sim_host_new(struct sim *s)
{
	struct sim_host *h = xcalloc(1, sizeof(*h));
	uint8_t v4[4] = {10, 0, 0, (uint8_t)(s->nhosts + 1)};

	if (s->nhosts == SIM_MAX_HOST)
		abort();
	h->sim = s;
	h->id = s->nhosts;
	roce_gid_from_v4(h->gid, v4);
	s->host[s->nhosts++] = h;
	return h;
}

uint32_t sim_mr_reg(struct sim_host *h, uint32_t pd, void *addr, uint64_t len, int access)
{
	uint32_t i;
	struct sim_mr *mr;

	for (i = 0; i < h->nmr && h->mr[i].valid; i++)
		;
	if (i == SIM_MAX_MR)
		abort();
	if (i == h->nmr)
		h->nmr++;
	mr = &h->mr[i];
	/* A fresh key byte each time, so a stale key of a reused slot fails (as verbs keys do). */
	mr->key = i << 8 | (uint8_t)((mr->key & 0xFF) + 1 + sim_rand_below(&h->sim->rng, 200));
	mr->valid = true;
	mr->pd = pd;
	mr->addr = addr;
	mr->iova = (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	return mr->key;
}

/* The valid region of key @key, or NULL. */
static struct sim_mr *mr_of(struct sim_host *h, uint32_t key)
{
	uint32_t i = key >> 8;
	struct sim_mr *mr = i < h->nmr ? &h->mr[i] : NULL;

	return mr && mr->valid && mr->key == key ? mr : NULL;
}

int sim_mr_dereg(struct sim_host *h, uint32_t key)
{
	struct sim_mr *mr = mr_of(h, key);

	if (mr && mr->windows)
		return EBUSY;
	if (mr)
		mr->valid = false;
	return 0;
}

uint32_t sim_mw_alloc(struct sim_host *h, uint32_t pd, enum ibv_mw_type type)
{
	uint32_t rkey = roce_mw_key(h->nmw, (uint8_t)(1 + sim_rand_below(&h->sim->rng, 200)));

	if (h->nmw == SIM_MAX_MW)
		abort();
	roce_mw_init(&h->mw[h->nmw++], type, rkey, pd);
	return rkey;
}

struct roce_mw *sim_mw(struct sim_host *h, uint32_t rkey)
{
	uint32_t i = roce_mw_index(rkey);

	return roce_key_is_mw(rkey) && i < h->nmw ? &h->mw[i] : NULL;
}

/* A window left region @key (0: none). */
static void mr_unbound(struct sim_host *h, uint32_t key)
{
	struct sim_mr *mr = key ? mr_of(h, key) : NULL;

	if (mr)
		mr->windows--;
}

void sim_mw_dealloc(struct sim_host *h, uint32_t rkey)
{
	struct roce_mw *mw = sim_mw(h, rkey);
	uint32_t old;

	if (!mw || mw->state == ROCE_MW_INVALID)
		return;
	roce_mw_dealloc(mw, &old);
	mr_unbound(h, old);
}

struct sim_cq *sim_cq_new(void)
{
	return xcalloc(1, sizeof(struct sim_cq));
}

void sim_cq_free(struct sim_cq *cq)
{
	if (cq)
		free(cq->wc);
	free(cq);
}

static void cq_push(struct sim_cq *cq, const struct ibv_wc *wc, bool solicited, uint64_t now)
{
	if (cq->n == cq->cap) {
		cq->cap = cq->cap ? 2 * cq->cap : 64;
		cq->wc = realloc(cq->wc, cq->cap * sizeof(*cq->wc));
		if (!cq->wc)
			abort();
	}
	cq->wc[cq->n].wc = *wc;
	cq->wc[cq->n].solicited = solicited;
	cq->wc[cq->n].time = now;
	cq->n++;
}

bool sim_poll(struct sim_cq *cq, struct sim_wc *out)
{
	if (cq->polled == cq->n)
		return false;
	*out = cq->wc[cq->polled++];
	return true;
}

struct sim_srq *sim_srq_new(uint32_t slots, uint32_t max_sge)
{
	struct sim_srq *srq = xcalloc(1, sizeof(*srq));

	if (roce_wq_init(&srq->rq, slots, roce_recv_wqe_size(max_sge)))
		abort();
	srq->max_sge = max_sge;
	return srq;
}

void sim_srq_free(struct sim_srq *srq)
{
	if (!srq)
		return;
	roce_wq_free(&srq->rq);
	free(srq);
}

struct sim_srq *sim_xrc_srq_new(struct sim_host *h, uint32_t slots, uint32_t max_sge, uint32_t xrcd,
				uint32_t pd, struct sim_cq *cq)
{
	struct sim_srq *srq = sim_srq_new(slots, max_sge);

	if (h->nxrc_srq == SIM_MAX_XRC_SRQ)
		abort();
	h->xrc_srq[h->nxrc_srq++] = srq;
	srq->srqn = h->nxrc_srq;
	srq->xrcd = xrcd;
	srq->pd = pd;
	srq->cq = cq;
	return srq;
}

int sim_srq_post_recv(struct sim_srq *srq, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad, one = *wr;
	unsigned posted = 0;

	one.next = NULL;
	return roce_wq_post_recv(&srq->rq, srq->max_sge, &one, &bad, &posted);
}

/* The owner's side of the core (struct roce_qp_env). */

static uint8_t *env_mem(void *ctx, uint32_t key, bool remote, uint64_t addr, uint64_t len,
			int access, enum roce_mem_err *err)
{
	struct sim_qp *qp = ctx;
	struct sim_host *h = qp->host;
	struct sim_mr *mr;
	/* XRC: the PD of the SRQ the request names guards the target's memory (IBA A14). */
	uint32_t pd = qp->xrc_cur ? qp->xrc_cur->pd : qp->init.pd;

	/* A window's R_Key: through the window, then its region with the range it gives. */
	if (roce_key_is_mw(key)) {
		struct roce_mw *mw = sim_mw(h, key);

		*err = remote && mw ? roce_mw_check(mw, key, qp->core.qpn, pd, addr, len, access,
						    &key, &addr)
				    : ROCE_MEM_KEY;
		if (*err != ROCE_MEM_OK)
			return NULL;
		access = 0; /* the window granted it */
	}
	/* one key serves as lkey and rkey of a region, as in verbs-shim */
	mr = mr_of(h, key);
	if (!mr || mr->pd != pd) {
		*err = ROCE_MEM_KEY;
		return NULL;
	}
	if (addr < mr->iova || len > mr->len || addr - mr->iova > mr->len - len) {
		*err = ROCE_MEM_BOUNDS;
		return NULL;
	}
	if ((mr->access & access) != access) {
		*err = ROCE_MEM_ACCESS;
		return NULL;
	}
	return mr->addr + (addr - mr->iova);
}

static void copy_recv(struct roce_recv *out, const struct roce_recv_wqe *wqe)
{
	out->wr_id = wqe->wr_id;
	out->num_sge = wqe->num_sge;
	out->length = wqe->length;
	memcpy(out->sge, wqe->sge, wqe->num_sge * sizeof(wqe->sge[0]));
}

static void add_event(struct sim_qp *qp, enum ibv_event_type type)
{
	if (qp->nevents < SIM_MAX_EVENTS) {
		qp->events[qp->nevents] = type;
		qp->event_time[qp->nevents] = qp->host->sim->now;
	}
	qp->nevents++;
}

static bool env_recv_take(void *ctx, struct roce_recv *out)
{
	struct sim_qp *qp = ctx;
	struct sim_srq *srq = qp->xrc_cur ? qp->xrc_cur : qp->init.srq;
	struct roce_wq *rq = srq ? &srq->rq : &qp->rq;

	if (!roce_wq_used(rq))
		return false;
	copy_recv(out, roce_wq_slot(rq, rq->tail++));
	if (srq && srq->limit && roce_wq_used(rq) < srq->limit) {
		srq->limit = 0;
		srq->limit_events++;
	}
	return true;
}

static void env_complete(void *ctx, bool recv, const struct ibv_wc *wc, bool solicited)
{
	struct sim_qp *qp = ctx;

	if (qp->destroyed) {
		qp->late_completions++;
		return;
	}
	if (recv && qp->xrc_cur)
		cq_push(qp->xrc_cur->cq, wc, solicited, qp->host->sim->now);
	else
		cq_push(recv ? qp->init.recv_cq : qp->init.send_cq, wc, solicited,
			qp->host->sim->now);
}

static bool env_xrc_srq(void *ctx, uint32_t srqn)
{
	struct sim_qp *qp = ctx;
	struct sim_host *h = qp->host;
	struct sim_srq *srq = srqn && srqn <= h->nxrc_srq ? h->xrc_srq[srqn - 1] : NULL;

	if (!srq || srq->xrcd != qp->init.xrcd)
		return false;
	qp->xrc_cur = srq;
	return true;
}

static enum ibv_wc_status env_bind_mw(void *ctx, const struct roce_send_wqe *wqe)
{
	struct sim_qp *qp = ctx;
	struct sim_host *h = qp->host;
	struct roce_mw *mw = sim_mw(h, wqe->wr.bind.mw_rkey);
	struct sim_mr *mr = wqe->wr.bind.length ? mr_of(h, wqe->wr.bind.mr_lkey) : NULL;
	struct roce_mw_region region;
	uint32_t old;

	if (!mw || (wqe->wr.bind.length && !mr))
		return IBV_WC_MW_BIND_ERR;
	if (mr)
		region = (struct roce_mw_region){
			.lkey = mr->key,
			.pd = mr->pd,
			.iova = mr->iova,
			.length = mr->len,
			.access = mr->access,
		};
	if (roce_mw_bind(mw, wqe, qp->core.qpn, qp->init.pd, mr ? &region : NULL, &old) !=
	    IBV_WC_SUCCESS)
		return IBV_WC_MW_BIND_ERR;
	mr_unbound(h, old);
	if (mr && mw->mr_key)
		mr->windows++;
	return IBV_WC_SUCCESS;
}

static bool env_invalidate_mw(void *ctx, uint32_t rkey)
{
	struct sim_qp *qp = ctx;
	struct roce_mw *mw = sim_mw(qp->host, rkey);
	uint32_t old;

	if (!mw || !roce_mw_invalidate(mw, rkey, qp->init.pd, &old))
		return false;
	mr_unbound(qp->host, old);
	return true;
}

static void env_event(void *ctx, enum ibv_event_type type)
{
	add_event(ctx, type);
}

static void flush_sq(struct sim_qp *qp)
{
	struct ibv_wc wc = {.status = IBV_WC_WR_FLUSH_ERR, .qp_num = qp->core.qpn};

	for (; qp->sq.tail != qp->sq.head; qp->sq.tail++) {
		const struct roce_send_wqe *wqe = roce_wq_slot(&qp->sq, qp->sq.tail);

		wc.wr_id = wqe->wr_id;
		cq_push(qp->init.send_cq, &wc, false, qp->host->sim->now);
	}
}

static void flush_rq(struct sim_qp *qp)
{
	struct ibv_wc wc = {
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->core.qpn,
	};

	if (qp->init.srq)
		return; /* WQEs of an SRQ belong to no QP */
	for (; qp->rq.tail != qp->rq.head; qp->rq.tail++) {
		const struct roce_recv_wqe *wqe = roce_wq_slot(&qp->rq, qp->rq.tail);

		wc.wr_id = wqe->wr_id;
		cq_push(qp->init.recv_cq, &wc, false, qp->host->sim->now);
	}
}

/* verbs-shim/qp.c uroce_qp_to_error(): ERR, flush, LAST_WQE_REACHED for an SRQ's QP. */
static void owner_to_error(struct sim_qp *qp)
{
	bool was_error = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	flush_sq(qp);
	flush_rq(qp);
	if (qp->init.srq && !was_error)
		add_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

static void env_to_error(void *ctx)
{
	struct sim_qp *qp = ctx;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	qp->to_error_calls++;
	roce_qp_modify(&qp->core, &attr, IBV_QP_STATE);
	owner_to_error(qp);
}

/* verbs-shim's SQE: the state, and the rest of the send queue flushed. */
static void env_sq_error(void *ctx)
{
	struct sim_qp *qp = ctx;

	qp->sq_error_calls++;
	qp->state = IBV_QPS_SQE;
	flush_sq(qp);
}

static const struct roce_qp_env sim_env = {
	.mem = env_mem,
	.recv_take = env_recv_take,
	.complete = env_complete,
	.bind_mw = env_bind_mw,
	.invalidate_mw = env_invalidate_mw,
	.event = env_event,
	.xrc_srq = env_xrc_srq,
	.to_error = env_to_error,
	.sq_error = env_sq_error,
};

/* The wire. */

static struct sim_host *host_of(struct sim *s, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!memcmp(s->host[i]->gid, gid, 16))
			return s->host[i];
	return NULL;
}

static void trace_pkt(struct sim *s, const char *what, const struct sim_host *from,
		      const struct sim_host *to, const uint8_t *data, uint32_t len)
{
	struct roce_pkt pkt;

	if (!s->trace)
		return;
	if (roce_decode(data, len, &pkt) != ROCE_OK) {
		fprintf(s->trace, "%12llu %-9s h%u->h%u (undecodable, %u bytes)\n",
			(unsigned long long)s->now, what, from ? from->id : 99, to ? to->id : 99,
			len);
		return;
	}
	fprintf(s->trace, "%12llu %-9s h%u->h%u qp%-4u %-28s psn %-8u%s len %u",
		(unsigned long long)s->now, what, from ? from->id : 99, to ? to->id : 99,
		pkt.bth.dqpn, pkt.info->name, pkt.bth.psn, pkt.bth.ack_req ? " A" : "  ",
		pkt.payload_len);
	if (pkt.hdrs & ROCE_HDR_AETH)
		fprintf(s->trace, " aeth %02x msn %u", pkt.aeth.syndrome, pkt.aeth.msn);
	fputc('\n', s->trace);
}

static void schedule(struct sim *s, struct sim_host *to, const struct roce_ipudp *ip,
		     const uint8_t *data, uint32_t len, uint64_t delay)
{
	struct sim_pkt *p = malloc(sizeof(*p) + len);

	if (!p)
		abort();
	p->time = s->now + delay;
	p->seq = s->seq++;
	p->to = to;
	p->ip = *ip;
	p->len = len;
	memcpy(p->data, data, len);
	heap_push(s, p);
}

/* A packet leaves @qp: ICRC, then the wire's faults decide what arrives when. */
/*
 * Send @len bytes at @buf: with @gap (its payload left in the sender's memory, transport/qp.h:
 * roce_qp_write_pkt_gap), the ICRC is computed over the gap's bytes, as the engine's GSO send
 * does, and only then are they copied in; the room the core left is spoilt first, so that an
 * ICRC over the wrong bytes shows as a packet the receiver refuses.
 */
static void transmit(struct sim_qp *qp, uint8_t *buf, size_t len, const struct roce_dest *dest,
		     const struct roce_pkt_gap *gap)
{
	struct sim *s = qp->host->sim;
	const struct sim_wire_cfg *w = &s->wire;
	struct sim_host *to = host_of(s, dest->ah->grh.dgid.raw);
	struct roce_ipudp ip = {0};
	uint64_t delay = w->delay_ns, hold = 0;

	memcpy(ip.sgid, qp->host->gid, 16);
	memcpy(ip.dgid, dest->ah->grh.dgid.raw, 16);
	ip.sport = (uint16_t)(0xC000 | (qp->core.qpn & 0x3FFF));
	ip.dport = ROCE_UDP_PORT;
	ip.ttl = 64;
	ip.ip_frag = ROCE_IPV4_DF;
	if (gap && gap->len) {
		s->stats.gapped++;
		memset(buf + gap->off, 0xA5, gap->len);
		roce_icrc_fill_gap(&ip, buf, len, gap);
		roce_pkt_gap_fill(buf, gap);
	} else {
		roce_icrc_fill(&ip, buf, len);
	}
	s->stats.sent++;
	qp->tx_pkts++;
	if (s->filter || s->hold) {
		struct roce_pkt pkt;

		if (roce_decode(buf, len, &pkt) != ROCE_OK)
			abort(); /* the core wrote a packet roce_decode() refuses */
		if (s->filter && !s->filter(s->filter_arg, qp, &pkt)) {
			s->stats.lost++;
			trace_pkt(s, "filtered", qp->host, to, buf, len);
			return;
		}
		if (s->hold)
			hold = s->hold(s->filter_arg, qp, &pkt);
	}
	if (!to || qp->host->down || sim_chance(&s->rng, w->loss_ppm)) {
		s->stats.lost++;
		trace_pkt(s, "lost", qp->host, to, buf, len);
		return;
	}
	if (w->rate_mbps) {
		/* Serialisation: IP, UDP and Ethernet framing (58 bytes) at the link rate. */
		uint64_t busy = (len + 58) * 8000ull / w->rate_mbps;
		struct sim_host *h = qp->host;

		h->link_free = (h->link_free > s->now ? h->link_free : s->now) + busy;
		delay += h->link_free - s->now;
	}
	if (w->jitter_ns)
		delay += sim_rand_below(&s->rng, w->jitter_ns + 1);
	/* A path is FIFO: jitter delays a packet and those behind it, but does not reorder. */
	if (s->now + delay < qp->host->path_last[to->id])
		delay = qp->host->path_last[to->id] - s->now;
	qp->host->path_last[to->id] = s->now + delay;
	if (w->reorder_ns && sim_chance(&s->rng, w->reorder_ppm)) {
		s->stats.reordered++;
		delay += 1 + sim_rand_below(&s->rng, w->reorder_ns);
	}
	delay += hold;
	if (sim_chance(&s->rng, w->corrupt_ppm)) {
		/* A flipped bit anywhere: the ICRC (CRC-32) catches every such error. */
		uint32_t at = (uint32_t)sim_rand_below(&s->rng, len);

		buf[at] ^= (uint8_t)(1u << sim_rand_below(&s->rng, 8));
		s->stats.corrupted++;
	}
	trace_pkt(s, "send", qp->host, to, buf, len);
	schedule(s, to, &ip, buf, (uint32_t)len, delay);
	if (sim_chance(&s->rng, w->dup_ppm)) {
		s->stats.duplicated++;
		schedule(s, to, &ip, buf, (uint32_t)len,
			 delay + 1 + sim_rand_below(&s->rng, w->reorder_ns + 1));
	}
}

/* Send everything @qp has ready (the engine's drain). */
static void pump(struct sim_qp *qp)
{
	struct sim *s = qp->host->sim;
	uint8_t buf[ROCE_PKT_MAX];
	struct roce_dest dest;
	uint32_t n = 0;
	size_t len;

	if (qp->destroyed)
		return;
	/* Every other packet through roce_qp_write_pkt_gap, as the engine's trains take them. */
	for (;;) {
		struct roce_pkt_gap gap = {0};
		bool gapped = s->stats.sent & 1;

		len = gapped ? roce_qp_write_pkt_gap(&qp->core, buf, &dest, s->now, &gap)
			     : roce_qp_write_pkt(&qp->core, buf, &dest, s->now);
		if (!len)
			break;
		if (len > sizeof(buf))
			abort(); /* the core wrote past ROCE_PKT_MAX */
		if (gap.len && (gap.off + gap.len > len || qp->core.type == IBV_QPT_UD ||
				qp->core.type == IBV_QPT_UC))
			abort(); /* a gap outside the packet, or one the application may reuse */
		transmit(qp, buf, len, &dest, &gap);
		if (++n == SIM_PUMP_LIMIT) {
			s->fail = "a QP writes packets without end";
			return;
		}
	}
}

/* Host @h's live QP @qpn, or NULL. */
static struct sim_qp *qp_of(struct sim *s, const struct sim_host *h, uint32_t qpn)
{
	struct sim_qp *qp = NULL;

	for (uint32_t i = 0; i < s->nqps; i++)
		if (s->qp[i]->host == h && s->qp[i]->core.qpn == qpn && !s->qp[i]->destroyed)
			qp = s->qp[i];
	return qp;
}

/*
 * Every other packet a QP would have received straight into place (transport/qp.h:
 * roce_qp_steer) is, as the engine's steered receive does (fabric/progress_steer.c): its payload
 * goes to the plan's memory before the ICRC is checked, the packet's buffer never holds it, and
 * the packet goes on with a gap over its payload. A corrupted packet so leaves its bytes in the
 * WRITE's target, which a correct copy must write again. Returns the gap (len 0: none).
 */
static struct roce_pkt_gap steer(struct sim *s, struct sim_qp *qp, struct sim_pkt *p)
{
	struct roce_steer plan;

	if (!qp || p->len < ROCE_BTH_LEN || !(s->stats.delivered & 1) ||
	    !roce_qp_steer(&qp->core, p->data, (uint16_t)p->len, p->len, &plan) ||
	    !roce_steer_fits(&plan, p->data, p->len, 0))
		return (struct roce_pkt_gap){0};
	s->stats.steered++;
	memcpy(plan.at, p->data + plan.hdr_len, plan.pmtu);
	memset(p->data + plan.hdr_len, 0xA5, plan.pmtu);
	return (struct roce_pkt_gap){
		.src = plan.at, .off = plan.hdr_len, .len = (uint16_t)plan.pmtu};
}

static void deliver(struct sim *s, struct sim_pkt *p)
{
	struct sim_host *h = p->to;
	struct roce_pkt pkt;
	struct sim_qp *qp = NULL;
	struct roce_pkt_gap gap;

	if (h->down) {
		s->stats.host_down++;
		trace_pkt(s, "host-down", NULL, h, p->data, p->len);
		return;
	}
	if (p->len >= ROCE_BTH_LEN)
		qp = qp_of(s, h, roce_get24(p->data + 5));
	gap = steer(s, qp, p);
	/* The harness sent with IP ID 0: only a direct match is good (full CRC-32 strength). */
	if (roce_icrc_verify_gap(&p->ip, p->data, p->len, &gap) != ROCE_ICRC_OK) {
		s->stats.bad_icrc++;
		trace_pkt(s, "bad-icrc", NULL, h, p->data, p->len);
		return;
	}
	if (roce_decode(p->data, p->len, &pkt) != ROCE_OK) {
		s->stats.malformed++;
		return;
	}
	if (gap.len)
		pkt.payload = gap.src;
	if (!qp) {
		s->stats.no_qp++;
		trace_pkt(s, "no-qp", NULL, h, p->data, p->len);
		return;
	}
	s->stats.delivered++;
	trace_pkt(s, "recv", NULL, h, p->data, p->len);
	if (s->batch && roce_qp_nak_due(&qp->core))
		pump(qp); /* as the engine: a NAK leaves before the next packet can replace it */
	roce_qp_read_pkt(&qp->core, &pkt, &p->ip, s->now);
	if (!s->batch)
		pump(qp);
}

/* QPs. */

struct sim_qp *sim_qp_new(struct sim_host *h, const struct sim_qp_init *init)
{
	struct sim *s = h->sim;
	struct sim_qp *qp = xcalloc(1, sizeof(*qp));

	qp->host = h;
	qp->init = *init;
	qp->state = IBV_QPS_RESET;
	if (roce_wq_init(&qp->sq, init->sq_slots,
			 roce_send_wqe_size(init->max_sge, init->max_inline)))
		abort();
	if (roce_wq_init(&qp->rq, init->srq ? 0 : init->rq_slots,
			 roce_recv_wqe_size(init->max_sge)))
		abort();
	roce_qp_init(&qp->core, init->type, s->next_qpn++, init->sig_all, &qp->sq, &sim_env, qp);
	if (s->nqps == SIM_MAX_QP * SIM_MAX_HOST)
		abort();
	s->qp[s->nqps++] = qp;
	return qp;
}

void sim_qp_destroy(struct sim_qp *qp)
{
	if (qp->destroyed)
		return;
	qp->destroyed = true;
	roce_qp_fini(&qp->core);
}

void sim_modify(struct sim_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : qp->state;

	if (next == IBV_QPS_RESET) {
		qp->sq.tail = qp->sq.head;
		qp->rq.tail = qp->rq.head;
	}
	roce_qp_modify(&qp->core, attr, mask);
	if (next == IBV_QPS_ERR)
		owner_to_error(qp);
	else
		qp->state = next;
	pump(qp);
}

struct sim_conn sim_conn_default(void)
{
	return (struct sim_conn){
		.mtu = IBV_MTU_1024,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE,
		.psn_a = 100,
		.psn_b = 0xFFFFF0, /* wraps through 0 soon */
	};
}

void sim_connect_one(struct sim_qp *qp, const struct sim_qp *peer, const struct sim_conn *c,
		     uint32_t sq_psn, uint32_t rq_psn)
{
	struct ibv_qp_attr a = {0};
	enum ibv_qp_type t = qp->init.type;
	bool rc = t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV;

	if (qp->state != IBV_QPS_RESET) {
		a.qp_state = IBV_QPS_RESET;
		sim_modify(qp, &a, IBV_QP_STATE);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.qp_access_flags = c->access;
	sim_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = peer->core.qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->host->gid, 16);
	a.ah_attr.grh.hop_limit = 64;
	/* XRC halves ignore the other half's attributes, as verbs-shim strips them. */
	sim_modify(qp, &a,
		   roce_qp_mask_used(
			   t, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN |
				      (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	sim_modify(qp, &a,
		   roce_qp_mask_used(t, IBV_QP_STATE | IBV_QP_SQ_PSN |
						(rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
								 IBV_QP_RNR_RETRY |
								 IBV_QP_MAX_QP_RD_ATOMIC
						    : 0)));
}

void sim_connect(struct sim_qp *a, struct sim_qp *b, const struct sim_conn *c)
{
	sim_connect_one(a, b, c, c->psn_a, c->psn_b);
	sim_connect_one(b, a, c, c->psn_b, c->psn_a);
}

void sim_ud_ready(struct sim_qp *qp, uint32_t qkey, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .qkey = qkey};

	sim_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu; /* the port's MTU: verbs-shim passes it for UD */
	sim_modify(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	sim_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

struct ibv_ah *sim_ah_new(struct sim_host *h, const struct sim_host *to)
{
	struct sim *s = h->sim;
	struct sim_ah *ah = xcalloc(1, sizeof(*ah));

	ah->attr.is_global = 1;
	ah->attr.port_num = 1;
	ah->attr.grh.hop_limit = 64;
	memcpy(ah->attr.grh.dgid.raw, to->gid, 16);
	s->ahs = realloc(s->ahs, (s->nahs + 1) * sizeof(*s->ahs));
	if (!s->ahs)
		abort();
	s->ahs[s->nahs++] = ah;
	return &ah->ah;
}

int sim_post_send(struct sim_qp *qp, const struct ibv_send_wr *wr)
{
	struct roce_send_wqe *wqe;
	uint64_t length = 0;

	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT || qp->state == IBV_QPS_RTR)
		return EINVAL;
	if (roce_wq_used(&qp->sq) == qp->sq.slots)
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.max_sge)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		length += wr->sg_list[i].length;
	wqe = roce_wq_slot(&qp->sq, qp->sq.head);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	wqe->signaled = qp->init.sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	wqe->imm_data = wr->imm_data;
	wqe->length = length > UINT32_MAX ? UINT32_MAX : (uint32_t)length;
	wqe->is_inline = wr->send_flags & IBV_SEND_INLINE;
	if (qp->init.type == IBV_QPT_XRC_SEND)
		wqe->xrc_remote_srqn = wr->qp_type.xrc.remote_srqn;
	wqe->inv_rkey = wr->invalidate_rkey; /* LOCAL_INV, SEND_WITH_INV */
	if (wr->opcode == IBV_WR_BIND_MW) {
		roce_wqe_set_bind(wqe, wr->bind_mw.mw->rkey, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info);
	} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
	} else if (qp->init.type != IBV_QPT_UD) {
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
	} else if (wr->wr.ud.ah) {
		wqe->ud.has_ah = true;
		wqe->ud.ah_attr = ((struct sim_ah *)wr->wr.ud.ah)->attr;
		wqe->ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->ud.remote_qkey = wr->wr.ud.remote_qkey;
	} else {
		return EINVAL;
	}
	if (wqe->is_inline) {
		if (length > qp->init.max_inline)
			return EINVAL;
		for (int i = 0, off = 0; i < wr->num_sge; off += wr->sg_list[i].length, i++)
			memcpy(wqe->data + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
	} else {
		wqe->num_sge = wr->num_sge;
		if (wr->num_sge) /* no SGE (a bind, an invalidate): sg_list may be NULL */
			memcpy(roce_send_wqe_sge(wqe), wr->sg_list,
			       wr->num_sge * sizeof(*wr->sg_list));
	}
	qp->sq.head++;
	if (qp->state == IBV_QPS_SQE || qp->state == IBV_QPS_ERR)
		flush_sq(qp);
	pump(qp);
	return 0;
}

int sim_post_recv(struct sim_qp *qp, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad, one = *wr;
	unsigned posted = 0;
	int err;

	if (qp->init.srq || qp->state == IBV_QPS_RESET)
		return EINVAL;
	one.next = NULL;
	err = roce_wq_post_recv(&qp->rq, qp->init.max_sge, &one, &bad, &posted);
	if (posted && qp->state == IBV_QPS_ERR)
		flush_rq(qp);
	if (posted)
		pump(qp);
	return err;
}

uint32_t sim_events(const struct sim_qp *qp, enum ibv_event_type type)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < qp->nevents && i < SIM_MAX_EVENTS; i++)
		n += qp->events[i] == type;
	return n;
}

/* The clock. */

static uint64_t next_deadline(struct sim *s)
{
	uint64_t t = s->nheap ? s->heap[0]->time : UINT64_MAX;

	for (uint32_t i = 0; i < s->nqps; i++) {
		uint64_t e;

		if (s->qp[i]->destroyed)
			continue;
		e = roce_qp_expiry(&s->qp[i]->core);
		if (e < t)
			t = e;
	}
	return t;
}

enum sim_result sim_run(struct sim *s, uint64_t until)
{
	uint32_t same = 0;

	if (until < s->now)
		until = s->now; /* the clock never goes back */
	for (uint32_t i = 0; i < s->nqps; i++)
		pump(s->qp[i]);
	for (;;) {
		uint64_t t;

		if (s->fail)
			return SIM_STUCK;
		t = next_deadline(s);
		if (t == UINT64_MAX)
			return SIM_IDLE;
		if (t > until) {
			s->now = until;
			return SIM_TIME;
		}
		if (t <= s->now) {
			t = s->now;
			if (++same == SIM_SAME_TIME_LIMIT) {
				s->fail = "a deadline stays due without progress (livelock)";
				return SIM_STUCK;
			}
		} else {
			same = 0;
		}
		s->now = t;
		if (++s->stats.steps == s->max_steps) {
			s->fail = "step limit: the run goes on without end (livelock)";
			return SIM_STUCK;
		}
		while (s->nheap && s->heap[0]->time <= s->now) {
			struct sim_pkt *p = heap_pop(s);

			deliver(s, p);
			free(p);
		}
		for (uint32_t i = 0; s->batch && i < s->nqps; i++)
			pump(s->qp[i]);
		for (uint32_t i = 0; i < s->nqps; i++) {
			struct sim_qp *qp = s->qp[i];

			if (qp->destroyed || roce_qp_expiry(&qp->core) > s->now)
				continue;
			roce_qp_handle_expiry(&qp->core, s->now);
			pump(qp);
		}
	}
}

enum sim_result sim_run_for(struct sim *s, uint64_t ns)
{
	return sim_run(s, s->now + ns);
}
