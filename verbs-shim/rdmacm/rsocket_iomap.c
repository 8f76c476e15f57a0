// SPDX-License-Identifier: MIT
/*
 * rsockets: direct data placement (rsocket(7) "riomap"): riomap registers a buffer and, with
 * PROT_WRITE, publishes it in a free entry of the peer's iomap table (an RS_OP_IOMAP_SGL write
 * of struct rs_wire_iomap, sent before the next data); riowrite then writes into the peer's
 * buffers straight from the table the peer filled in ours (plain RDMA WRITEs, no message: the
 * peer learns of the data by its own means, as riostream's polled byte); riounmap forgets a
 * mapping (the peer is not told, as in rdma-core). The table's size is the peer's
 * RDMA_IOMAPSIZE, exchanged in the handshake.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/rsocket_int.h"

struct rs_iomr {
	uint64_t offset;
	struct ibv_mr *mr;
	int index; /* the entry of the peer's table, -1 for a local mapping */
	struct rs_iomr *next;
};

static void rs_push(struct rs_iomr **list, struct rs_iomr *m)
{
	m->next = NULL;
	while (*list)
		list = &(*list)->next;
	*list = m;
}

/* The first entry of the peer's table we hold no mapping in, or -1. map_lock held. */
static int rs_free_slot(struct rs *rs)
{
	for (uint32_t i = 0; i < rs->remote_iomap.length; i++) {
		bool used = false;

		for (struct rs_iomr *m = rs->iomaps; m && !used; m = m->next)
			used = m->index == (int)i;
		for (struct rs_iomr *m = rs->iomap_queue; m && !used; m = m->next)
			used = m->index == (int)i;
		if (!used)
			return (int)i;
	}
	return -1;
}

/*
 * riomap: register @len bytes at @buf and, with PROT_WRITE, offer them to the peer at @offset
 * (-1: the buffer's address). The offset, or -1 with errno EBADF, EINVAL (not connected, other
 * protections than PROT_WRITE / PROT_NONE, a negative offset other than -1), ENOMEM (the
 * peer's table is full) or ibv_reg_mr's.
 */
UROCE_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rs *rs = rs_lookup(socket);
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct rs_iomr *m;

	(void)flags;
	if (!rs)
		return rs_fail(EBADF);
	if (rs->type != SOCK_STREAM || !rs->cm_id->pd || !rs->cm_id->qp ||
	    (prot & ~(PROT_WRITE | PROT_NONE)) || offset < -1)
		return rs_fail(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return rs_fail(ENOMEM);
	pthread_mutex_lock(&rs->map_lock);
	m->index = -1;
	if (prot & PROT_WRITE) {
		m->index = rs_free_slot(rs);
		access |= IBV_ACCESS_REMOTE_WRITE;
		if (m->index < 0) {
			pthread_mutex_unlock(&rs->map_lock);
			free(m);
			return rs_fail(ENOMEM);
		}
	}
	m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!m->mr) {
		int err = errno;

		pthread_mutex_unlock(&rs->map_lock);
		free(m);
		return rs_fail(err);
	}
	m->offset = offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)offset;
	if (m->index >= 0) {
		rs_push(&rs->iomap_queue, m);
		rs->iomap_pending = true;
	} else {
		rs_push(&rs->iomaps, m);
	}
	pthread_mutex_unlock(&rs->map_lock);
	return (off_t)m->offset;
}

/* Take the mapping of exactly @buf, @len out of @list. */
static struct rs_iomr *rs_unlink(struct rs_iomr **list, const void *buf, size_t len)
{
	for (; *list; list = &(*list)->next) {
		struct rs_iomr *m = *list;

		if (m->mr->addr == buf && m->mr->length == len) {
			*list = m->next;
			return m;
		}
	}
	return NULL;
}

/* riounmap: 0, or -1 with errno EBADF, EINVAL (no mapping of exactly @buf and @len). */
UROCE_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rs *rs = rs_lookup(socket);
	struct rs_iomr *m;

	if (!rs)
		return rs_fail(EBADF);
	pthread_mutex_lock(&rs->map_lock);
	m = rs_unlink(&rs->iomaps, buf, len);
	if (!m)
		m = rs_unlink(&rs->iomap_queue, buf, len);
	rs->iomap_pending = rs->iomap_queue != NULL;
	pthread_mutex_unlock(&rs->map_lock);
	if (!m)
		return rs_fail(EINVAL);
	ibv_dereg_mr(m->mr);
	free(m);
	return 0;
}

void rs_free_iomaps(struct rs *rs)
{
	struct rs_iomr *lists[2] = {rs->iomaps, rs->iomap_queue};

	for (int i = 0; i < 2; i++)
		while (lists[i]) {
			struct rs_iomr *m = lists[i];

			lists[i] = m->next;
			ibv_dereg_mr(m->mr);
			free(m);
		}
	rs->iomaps = rs->iomap_queue = NULL;
}

/*
 * Send the queued mappings to the peer's table (rdma-core's rs_send_iomaps), each as data
 * would go: it takes a credit, a send WR and its size of send buffer. lock held. 0, or -1 with
 * errno (EAGAIN: non-blocking and no credit yet; EPIPE, ECONNRESET).
 */
int rs_send_iomaps(struct rs *rs, int flags)
{
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	while (rs->iomap_queue) {
		struct rs_iomr *m = rs->iomap_queue;
		struct rs_wire_iomap w;
		struct ibv_sge sge[2];
		bool swap = rs->peer_swap;
		int n;

		ret = rs_wait_send(rs, flags);
		if (ret)
			break;
		w.offset = swap ? __builtin_bswap64(m->offset) : m->offset;
		w.sge.addr = (uintptr_t)m->mr->addr;
		w.sge.key = m->mr->rkey;
		w.sge.length = (uint32_t)m->mr->length;
		if (swap) {
			w.sge.addr = __builtin_bswap64(w.sge.addr);
			w.sge.key = __builtin_bswap32(w.sge.key);
			w.sge.length = __builtin_bswap32(w.sge.length);
		}
		n = rs_stage(rs, &w, sizeof(w), sge);
		rs->sseq_no++;
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= sizeof(w);
		ret = rs_post_write_msg(rs, sge, n, rs_msg(RS_OP_IOMAP_SGL, (uint32_t)m->index),
					sizeof(w) <= rs->sq_inline ? IBV_SEND_INLINE : 0,
					rs->remote_iomap.addr + (uint64_t)m->index * sizeof(w),
					rs->remote_iomap.key);
		rs->iomap_queue = m->next;
		rs_push(&rs->iomaps, m);
		if (ret) {
			ret = rs_fail(ret);
			break;
		}
	}
	rs->iomap_pending = rs->iomap_queue != NULL;
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* The entry of our table (the peer's mappings) that holds @offset, or -1. */
static int rs_find_iomap(struct rs *rs, uint64_t offset)
{
	for (int i = 0; i < rs->target_iomap_size; i++) {
		uint64_t o = rs->target_iomap[i].offset;

		if (offset >= o && offset < o + rs->target_iomap[i].sge.length)
			return i;
	}
	return -1;
}

/*
 * riowrite: write @count bytes at @buf into the peer's mapping of @offset (rdma-core's
 * riowrite), in transfers as rsend's, each an RDMA WRITE without a message; flags
 * MSG_DONTWAIT. Bytes written (fewer when the mapping ends), or (size_t)-1 with errno EBADF,
 * EINVAL (no mapping holds @offset; a datagram socket), EAGAIN, EPIPE, ECONNRESET.
 */
UROCE_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rs *rs = rs_lookup(socket);
	const uint8_t *p = buf;
	uint32_t xfer;
	size_t left = count;
	uint64_t off = (uint64_t)offset;
	int ret = 0, e = -1;

	if (!rs)
		return (size_t)rs_fail(EBADF);
	if (rs->type != SOCK_STREAM)
		return (size_t)rs_fail(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RS_CONNECTED || !rs->writable) {
		ret = rs_fail(rs_send_error(rs));
		goto out;
	}
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer, p += xfer, off += xfer) {
		volatile struct rs_wire_iomap *m;
		struct ibv_sge sge[2];
		uint64_t end;
		int n;

		if (e < 0 || off >= rs->target_iomap[e].offset + rs->target_iomap[e].sge.length) {
			e = rs_find_iomap(rs, off);
			if (e < 0) {
				if (left == count)
					ret = rs_fail(EINVAL);
				break;
			}
		}
		ret = rs_wait_send(rs, flags);
		if (ret)
			break;
		m = &rs->target_iomap[e];
		xfer = rs_next_xfer(rs, left);
		end = m->offset + m->sge.length;
		if (xfer > end - off)
			xfer = (uint32_t)(end - off);
		n = rs_stage(rs, p, xfer, sge);
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= xfer;
		ret = rs_post_write(rs, sge, n, rs_msg(RS_OP_WRITE, xfer),
				    xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				    m->sge.addr + off - m->offset, m->sge.key);
		if (ret) {
			ret = rs_fail(ret);
			break;
		}
	}
out:
	/*
	 * The peer learns of the data by polling memory, and so may we of its answer: arming the
	 * CQ tells uroce's engine that this thread stops polling, so the writes leave now rather
	 * than with the next poll (verbs-shim/engine_held.c) and packets are received meanwhile.
	 */
	if (count != left && rs->cq && !ibv_req_notify_cq(rs->cq, 0))
		atomic_store(&rs->cq_armed, true);
	pthread_mutex_unlock(&rs->lock);
	return ret && left == count ? (size_t)-1 : count - left;
}
