/* SPDX-License-Identifier: MIT */
/*
 * Work requests of uroce-sample on a connection (conn.h), each posted signalled and waited
 * for: the scenarios run one operation at a time, so each completion is the one expected.
 * Offsets are into the local buffer c->buf and, for remote operations, the peer's (c->peer).
 * Every function returns 0, or -1 after printing what failed on stderr.
 */
#ifndef UROCE_TOOLS_SAMPLES_OPS_H
#define UROCE_TOOLS_SAMPLES_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "tools/samples/conn.h"

/* Post a receive into c->buf[off, off + len) (not waited for: sample_wait_recv). */
int sample_post_recv(struct sample_conn *c, size_t off, size_t len);
/* Wait for the next receive completion; *len is the message's length. */
int sample_wait_recv(struct sample_conn *c, uint32_t *len);

/* SEND c->buf[off, off + len). */
int sample_send(struct sample_conn *c, size_t off, size_t len);
/* RDMA WRITE c->buf[off, off + len) to the peer's buffer at @roff. */
int sample_write(struct sample_conn *c, size_t off, size_t len, uint64_t roff);
/* RDMA READ @len bytes of the peer's buffer at @roff into c->buf[off, off + len). */
int sample_read(struct sample_conn *c, size_t off, size_t len, uint64_t roff);
/*
 * Compare-and-swap and fetch-and-add on the peer's 8 bytes at @roff; the original value lands
 * in c->buf[off, off + 8) (host order) and in *orig.
 */
int sample_cas(struct sample_conn *c, size_t off, uint64_t roff, uint64_t compare, uint64_t swap,
	       uint64_t *orig);
int sample_faa(struct sample_conn *c, size_t off, uint64_t roff, uint64_t add, uint64_t *orig);

#endif
