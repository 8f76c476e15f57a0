// SPDX-License-Identifier: MIT
/*
 * rsockets: a stream socket's data path -- completions, credits, and rsend, rsendv, rrecv and
 * their variants -- by rdma-core's rules (rsocket_int.h has the protocol). Every send is an
 * RDMA WRITE with immediate into the part of the peer's receive buffer its last credit update
 * named (our target SGL); every message received is a completion of a receive with its
 * immediate, whose data is already in our receive buffer, in order.
 *
 * A send WR's wr_id is the message it carries (op and length), so that its completion gives
 * back what it held: a send WR and its bytes of the send buffer for data, a control slot for
 * credits and control messages. A receive's wr_id has bit 63 set.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

#define RS_WR_RECV (UINT64_C(1) << 63)

/* Post one send WR. 0 or ibv_post_send's errno. */
static int rs_post(struct rs *rs, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return ibv_post_send(rs->cm_id->qp, wr, &bad);
}

/* A message without data: a zero-length RDMA WRITE with immediate @msg (rs_post_msg). */
int rs_post_msg(struct rs *rs, uint32_t msg)
{
	struct ibv_send_wr wr = {.wr_id = msg, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM};

	wr.imm_data = htobe32(msg);
	return rs_post(rs, &wr);
}

/* An RDMA WRITE (@opcode with or without immediate @imm) whose completion carries @wr_data. */
static int rs_post_rdma(struct rs *rs, enum ibv_wr_opcode opcode, struct ibv_sge *sgl, int nsge,
			uint32_t wr_data, uint32_t imm, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = {.wr_id = wr_data, .sg_list = sgl, .num_sge = nsge};

	wr.opcode = opcode;
	wr.send_flags = (unsigned int)flags;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return rs_post(rs, &wr);
}

/* An RDMA WRITE without immediate (riowrite, keepalive); @wr_data is its completion's tag. */
int rs_post_write(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t wr_data, int flags,
		  uint64_t addr, uint32_t rkey)
{
	return rs_post_rdma(rs, IBV_WR_RDMA_WRITE, sgl, nsge, wr_data, 0, flags, addr, rkey);
}

/* An RDMA WRITE with immediate @msg: data, a credit update with its SGE, an iomap entry. */
int rs_post_write_msg(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, int flags,
		      uint64_t addr, uint32_t rkey)
{
	return rs_post_rdma(rs, IBV_WR_RDMA_WRITE_WITH_IMM, sgl, nsge, msg, msg, flags, addr, rkey);
}

static void rs_src_copy(struct rs_src *s, uint8_t *dst, size_t len)
{
	while (len) {
		size_t n = s->iov->iov_len - s->off;

		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)s->iov->iov_base + s->off, n);
		dst += n;
		len -= n;
		s->off += n;
		if (s->off == s->iov->iov_len) {
			s->iov++;
			s->off = 0;
		}
	}
}

/*
 * Copy @len bytes from @src into the send buffer's ring at its head: one SGE, or two when the
 * ring wraps. Returns the number of SGEs.
 */
static int rs_stage_src(struct rs *rs, struct rs_src *src, uint32_t len, struct ibv_sge sge[2])
{
	uint32_t left = rs->sbuf_size - rs->sbuf_head;
	int n = 1;

	sge[0].addr = (uintptr_t)(rs->sbuf + rs->sbuf_head);
	sge[0].lkey = rs->smr->lkey;
	if (len <= left) {
		sge[0].length = len;
		rs_src_copy(src, rs->sbuf + rs->sbuf_head, len);
		rs->sbuf_head = len == left ? 0 : rs->sbuf_head + len;
	} else {
		sge[0].length = left;
		rs_src_copy(src, rs->sbuf + rs->sbuf_head, left);
		sge[1].addr = (uintptr_t)rs->sbuf;
		sge[1].length = len - left;
		sge[1].lkey = rs->smr->lkey;
		rs_src_copy(src, rs->sbuf, len - left);
		rs->sbuf_head = len - left;
		n = 2;
	}
	return n;
}

int rs_stage(struct rs *rs, const void *src, uint32_t len, struct ibv_sge sge[2])
{
	struct iovec iov = {.iov_base = (void *)src, .iov_len = len};
	struct rs_src s = {.iov = &iov};

	return rs_stage_src(rs, &s, len, sge);
}

/*
 * Send @len staged bytes as data into our target SGL's current entry (rdma-core's
 * rs_write_data): the entry is advanced before the post, since the peer may rewrite it as soon
 * as it has taken the data, and moves on to the next entry once used up.
 */
static int rs_write_data(struct rs *rs, struct ibv_sge *sgl, int nsge, uint32_t len)
{
	volatile struct rs_wire_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= len;
	t->addr = addr + len;
	t->length = t->length - len;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return rs_post_write_msg(rs, sgl, nsge, rs_msg(RS_OP_DATA, len),
				 len <= rs->sq_inline ? IBV_SEND_INLINE : 0, addr, rkey);
}

/* Stage @len bytes of @src and send them as one data message. 0 or an errno. */
int rs_send_chunk(struct rs *rs, struct rs_src *src, uint32_t len)
{
	struct ibv_sge sge[2];
	int n = rs_stage_src(rs, src, len, sge);

	return rs_write_data(rs, sge, n, len);
}

bool rs_ctrl_avail(const struct rs *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/* An SGE in the byte order of the peer that reads it. */
static void rs_peer_sge(const struct rs *rs, struct rs_wire_sge *s, uint64_t addr, uint32_t key,
			uint32_t len)
{
	s->addr = rs->peer_swap ? __builtin_bswap64(addr) : addr;
	s->key = rs->peer_swap ? __builtin_bswap32(key) : key;
	s->length = rs->peer_swap ? __builtin_bswap32(len) : len;
}

/*
 * Grant the peer credits (rdma-core's rs_send_credits): messages up to rseq_no + rq_size and,
 * when half the receive buffer is free again, that half, written into the peer's target SGL
 * entry after the one we wrote last; else a zero-length RS_OP_SGL with the credits alone.
 */
static void rs_send_credits(struct rs *rs)
{
	uint32_t msg = rs_msg(RS_OP_SGL, (uint32_t)rs->rseq_no + rs->rq_size);
	struct rs_wire_sge sge;
	struct ibv_sge ib;
	int flags = IBV_SEND_INLINE;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	if (rs->rbuf_bytes_avail < rs->rbuf_size >> 1) {
		rs_post_msg(rs, msg);
		return;
	}
	rs_peer_sge(rs, &sge, (uintptr_t)&rs->rbuf[rs->rbuf_free_offset], rs->rmr->rkey,
		    rs->rbuf_size >> 1);
	ib.addr = (uintptr_t)&sge;
	ib.lkey = 0;
	ib.length = sizeof(sge);
	if (rs->sq_inline < sizeof(sge)) {
		uint8_t *slot = rs->sbuf + rs->sbuf_size +
				sizeof(sge) * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));

		memcpy(slot, &sge, sizeof(sge));
		ib.addr = (uintptr_t)slot;
		ib.lkey = rs->smr->lkey;
		flags = 0;
	}
	rs_post_write_msg(rs, &ib, 1, msg, flags,
			  rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(sge),
			  rs->remote_sgl.key);
	rs->rbuf_bytes_avail -= rs->rbuf_size >> 1;
	rs->rbuf_free_offset += rs->rbuf_size >> 1;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

/*
 * Credits are due (rdma-core's rs_give_credits) when half the receive buffer is free or half
 * the messages granted are consumed, a control slot is free, and we are connected.
 */
void rs_update_credits(struct rs *rs)
{
	if (rs->state != RS_CONNECTED || !rs_ctrl_avail(rs))
		return;
	if (rs->rbuf_bytes_avail >= rs->rbuf_size >> 1 ||
	    (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		rs_send_credits(rs);
}

/* A message has arrived (rdma-core's rs_poll_cq, receive side). False: stop polling. */
static bool rs_recv_msg(struct rs *rs, uint32_t msg)
{
	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_IOMAP_SGL: /* the peer's table changed; riowrite reads it as it is */
	case RS_OP_WRITE:
		break;
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->state = RS_DISCONNECTED;
			rs->readable = rs->writable = false;
			return false;
		}
		if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (!rs->writable) {
				rs->state = RS_DISCONNECTED;
				rs->readable = false;
				return false;
			}
			rs->readable = false;
		}
		break;
	default:
		rs->rmsg[rs->rmsg_tail].op = rs_msg_op(msg);
		rs->rmsg[rs->rmsg_tail].len = rs_msg_data(msg);
		if (++rs->rmsg_tail == rs->rq_size + 1)
			rs->rmsg_tail = 0;
		break;
	}
	return true;
}

/* A send has completed: give back what it held. */
static void rs_send_done(struct rs *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->state = RS_DISCONNECTED;
			rs->readable = rs->writable = false;
		}
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += sizeof(struct rs_wire_iomap);
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += rs_msg_data(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && rs->state == RS_CONNECTED) {
		rs->state = RS_ERROR;
		rs->readable = rs->writable = false;
		rs->err = wc->status == IBV_WC_RETRY_EXC_ERR ? ETIMEDOUT : ECONNRESET;
	}
}

/*
 * Take what the CQ holds; receives consumed are posted again while connected. 0, or the errno
 * of a failed repost (the socket is then in RS_ERROR).
 */
int rs_poll_cq(struct rs *rs)
{
	struct ibv_wc wc[16];
	int n, rcnt = 0, err = 0;
	bool more = true;

	while (more && (n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (!(wc[i].wr_id & RS_WR_RECV)) {
				rs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;
			rcnt++;
			/* After DISCONNECT nothing more counts: the rest are flushes. */
			if (more && (wc[i].wc_flags & IBV_WC_WITH_IMM))
				more = rs_recv_msg(rs, be32toh(wc[i].imm_data));
		}
	}
	if (rs->state != RS_CONNECTED)
		return 0;
	while (!err && rcnt--) {
		struct ibv_recv_wr wr = {.wr_id = RS_WR_RECV}, *bad;

		err = ibv_post_recv(rs->cm_id->qp, &wr, &bad);
	}
	if (err) {
		rs->state = RS_ERROR;
		rs->err = err;
	}
	return err;
}

/* Ask for an event at the next completion. 0 or an errno. */
int rs_arm_cq(struct rs *rs)
{
	int err = 0;

	if (!atomic_load(&rs->cq_armed)) {
		err = ibv_req_notify_cq(rs->cq, 0);
		if (!err)
			atomic_store(&rs->cq_armed, true);
	}
	return err;
}

/* Count an event taken; acked in batches, all of them before the CQ goes (rs_free_endpoint). */
static void rs_event_taken(struct rs *rs)
{
	if (++rs->cq_events >= (unsigned int)(rs->sq_size + rs->rq_size)) {
		ibv_ack_cq_events(rs->cq, rs->cq_events);
		rs->cq_events = 0;
	}
	atomic_store(&rs->cq_armed, false);
}

/*
 * Wait for the CQ's event if it is armed (rdma-core's rs_get_cq_event); wait_lock held, lock
 * not. 0 or an errno (EINTR: a signal came).
 */
int rs_take_cq_event(struct rs *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	while (atomic_load(&rs->cq_armed)) {
		struct pollfd p = {.fd = rs->cq_channel->fd, .events = POLLIN};

		if (!ibv_get_cq_event(rs->cq_channel, &cq, &ctx)) {
			rs_event_taken(rs);
			return 0;
		}
		if (errno != EAGAIN)
			return errno;
		if (poll(&p, 1, -1) < 0 && errno == EINTR)
			return EINTR;
	}
	return 0;
}

/* rpoll: take the CQ's event if one is there, without waiting. wait_lock not held. */
void rs_consume_cq_event(struct rs *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	pthread_mutex_lock(&rs->wait_lock);
	if (atomic_load(&rs->cq_armed) && !ibv_get_cq_event(rs->cq_channel, &cq, &ctx))
		rs_event_taken(rs);
	pthread_mutex_unlock(&rs->wait_lock);
}

/*
 * Process completions until @test holds (rdma-core's rs_process_cq): a sender waiting for
 * credits and a receiver waiting for data share the CQ, so the one that sleeps on the channel
 * drops lock and holds wait_lock (rsocket_int.h). lock held. 0, or -1 with errno EWOULDBLOCK
 * (@nonblock and @test does not hold), EINTR, or an error of the CQ.
 */
int rs_process_cq(struct rs *rs, bool nonblock, bool (*test)(struct rs *rs))
{
	int err;

	do {
		rs_update_credits(rs);
		err = rs_poll_cq(rs);
		if (test(rs)) {
			err = 0;
			break;
		}
		if (err)
			break;
		if (nonblock) {
			err = EWOULDBLOCK;
		} else if (!atomic_load(&rs->cq_armed)) {
			err = rs_arm_cq(rs); /* then poll again: a completion may precede the arm */
		} else {
			rs_update_credits(rs);
			pthread_mutex_lock(&rs->wait_lock);
			pthread_mutex_unlock(&rs->lock);
			err = rs_take_cq_event(rs);
			pthread_mutex_unlock(&rs->wait_lock);
			pthread_mutex_lock(&rs->lock);
		}
	} while (!err);
	rs_update_credits(rs);
	return err ? rs_fail(err) : 0;
}

/* As rs_process_cq, spinning polling_time before it sleeps (rdma-core's rs_get_comp). */
int rs_get_comp(struct rs *rs, bool nonblock, bool (*test)(struct rs *rs))
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!rs_process_cq(rs, true, test))
			return 0;
		if (nonblock || errno != EWOULDBLOCK)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 >
		    rs_conf()->polling_us)
			break;
	}
	return rs_process_cq(rs, false, test);
}

/*
 * We may send (rdma-core's rs_can_send): a send WR, RS_SNDLOWAT bytes of send buffer, a credit
 * from the peer, and room in the target SGL's current entry.
 */
bool rs_can_send(struct rs *rs)
{
	return rs->sqe_avail && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->target_sgl[rs->target_sge].length != 0;
}

bool rs_have_rdata(struct rs *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}

bool rs_conn_have_rdata(struct rs *rs)
{
	return rs_have_rdata(rs) || rs->state != RS_CONNECTED || !rs->readable;
}

/* The bytes received and not yet read. lock held. */
size_t rs_rdata_bytes(const struct rs *rs)
{
	size_t n = 0;

	for (int h = rs->rmsg_head; h != rs->rmsg_tail; h = h == rs->rq_size ? 0 : h + 1)
		n += rs->rmsg[h].len;
	return n;
}

/*
 * MSG_PEEK | MSG_WAITALL: peek_want bytes are there, or no more can come before some are read,
 * or none will. A peek consumes nothing, so no credits are granted while it waits: the peer
 * may send the messages up to the last grant (rs_send_credits: rseq_no + rq_size when it was
 * made, rseq_comp - rq_size / 2 + rq_size now), and no more, however small they are.
 */
bool rs_conn_have_peek(struct rs *rs)
{
	int unread = (rs->rmsg_tail - rs->rmsg_head + rs->rq_size + 1) % (rs->rq_size + 1);
	uint16_t granted = (uint16_t)(rs->rseq_comp - (rs->rq_size >> 1) + rs->rq_size);

	return rs_rdata_bytes(rs) >= rs->peek_want || (uint16_t)(rs->rseq_no + unread) == granted ||
	       rs->state != RS_CONNECTED || !rs->readable;
}

bool rs_conn_can_send(struct rs *rs)
{
	return rs_can_send(rs) || rs->state != RS_CONNECTED || !rs->writable;
}

bool rs_conn_can_send_ctrl(struct rs *rs)
{
	return rs_ctrl_avail(rs) || rs->state != RS_CONNECTED;
}

/* Every send WR, data and control, has completed. */
bool rs_conn_all_sends_done(struct rs *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       rs->state != RS_CONNECTED;
}

/*
 * Wait until a send may go (credits, a send WR, send buffer, target room), as the flags and
 * O_NONBLOCK allow. lock held. 0, or -1 with errno (EAGAIN; EPIPE or ECONNRESET when the
 * connection's write side closed meanwhile).
 */
int rs_wait_send(struct rs *rs, int flags)
{
	if (rs_can_send(rs))
		return 0;
	if (rs_get_comp(rs, rs_nonblocking(rs, flags), rs_conn_can_send))
		return -1;
	if (rs->state != RS_CONNECTED || !rs->writable)
		return rs_fail(rs_send_error(rs));
	return 0;
}

/*
 * The size of the next transfer of @left bytes: as much as RS_MAX_TRANSFER and the send
 * buffer's free bytes allow. rdma-core's rsend starts at 2 KiB and doubles, so that an RNIC
 * sends the first bytes while the CPU copies the rest; uroce's posts leave from the posting
 * thread itself, after the copy, so there is nothing to overlap, and each smaller transfer
 * would only cost a system call on each side (its train and its acknowledgement). Any size
 * is the protocol's: the receiver takes a transfer up to its target entry's length.
 */
uint32_t rs_next_xfer(const struct rs *rs, size_t left)
{
	uint32_t xfer = left < RS_MAX_TRANSFER ? (uint32_t)left : RS_MAX_TRANSFER;

	return xfer < rs->sbuf_bytes_avail ? xfer : rs->sbuf_bytes_avail;
}
