/* SPDX-License-Identifier: MIT */
/*
 * The steered receive (fabric/progress_steer.c) on both backends and on a polling thread: after
 * a datagram of RDMA WRITE MIDDLE packets that continues its message, the next datagram's
 * payloads are received where the owner's plan (progress.h: steer) puts them, and each packet
 * is handed on with a gap over its payload; a packet that does not fit the plan (its PSN) comes
 * whole, its payload back in the buffer; a datagram the owner does not steer comes as usual.
 * The owner here is a fake responder whose WRITE targets a buffer of this file.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fabric/progress.h"
#include "fabric/progress_int.h"
#include "fabric/udp.h"
#include "transport/wire.h"

#define PMTU   1024u
#define SEG    (ROCE_BTH_LEN + PMTU + ROCE_ICRC_LEN)
#define QPN    0x000123u
#define OTHER  0x000456u /* a QP the owner does not steer for */
#define NPSN   64u
#define OPCODE (ROCE_TR_RC | ROCE_OP_WRITE_MIDDLE)

static struct uroce_udp sock;
static uint8_t target[NPSN * PMTU]; /* the WRITE's target: PSN n's payload at n * PMTU */

/* What came for each PSN (of QP QPN): packets, those with a gap, bad ones. */
static atomic_int got[NPSN], gapped[NPSN], bad, received, asked;

static int init(void *arg, struct uroce_progress *p)
{
	(void)arg;
	return uroce_progress_add_udp(p, &sock);
}

static uint8_t byte_of(uint32_t psn, size_t i)
{
	return (uint8_t)(psn * 7 + i + 1);
}

/* Each packet's payload is byte_of(psn, i), wherever it is; its ICRC bytes are its PSN. */
static void datagram(void *arg, const struct uroce_rx *rx)
{
	uint32_t psn = roce_get24(rx->roce + 9);
	const uint8_t *payload = rx->gap.len ? rx->gap.src : rx->roce + ROCE_BTH_LEN;

	(void)arg;
	atomic_fetch_add(&received, 1);
	if (rx->len != SEG || rx->roce[0] != OPCODE || psn >= NPSN ||
	    rx->roce[SEG - ROCE_ICRC_LEN] != (uint8_t)psn) {
		atomic_fetch_add(&bad, 1);
		return;
	}
	if (rx->gap.len && (rx->gap.off != ROCE_BTH_LEN || rx->gap.len != PMTU ||
			    rx->gap.src != target + (size_t)psn * PMTU))
		atomic_fetch_add(&bad, 1);
	for (size_t i = 0; i < PMTU; i++)
		if (payload[i] != byte_of(psn, i)) {
			atomic_fetch_add(&bad, 1);
			break;
		}
	if (roce_get24(rx->roce + 5) == QPN) {
		atomic_fetch_add(&got[psn], 1);
		atomic_fetch_add(&gapped[psn], rx->gap.len != 0);
	}
}

/* A responder in a WRITE that expects any PSN of QP QPN: payloads go to target. */
static bool steer(void *arg, const uint8_t *bth, uint16_t seg, size_t total,
		  struct roce_steer *plan)
{
	uint32_t psn = roce_get24(bth + 9);

	(void)arg;
	atomic_fetch_add(&asked, 1);
	if (roce_get24(bth + 5) != QPN || bth[0] != OPCODE || seg != SEG || psn >= NPSN)
		return false;
	*plan = (struct roce_steer){.at = target + (size_t)psn * PMTU,
				    .qpn = QPN,
				    .psn = psn,
				    .pmtu = PMTU,
				    .hdr_len = ROCE_BTH_LEN,
				    .opcode = OPCODE,
				    .count = (uint8_t)(total / seg)};
	if (psn + plan->count > NPSN)
		plan->count = (uint8_t)(NPSN - psn);
	return true;
}

static const struct uroce_progress_ops ops = {.init = init, .datagram = datagram, .steer = steer};

/* One GSO send of WRITE MIDDLE packets to @qpn with the PSNs @psns. */
static void send_train(uint32_t qpn, const uint32_t *psns, unsigned int n)
{
	static uint8_t buf[16 * SEG];
	struct roce_ipudp f = {.ttl = 64};
	uint8_t lo[4] = {127, 0, 0, 1};
	struct uroce_udp tx;

	cr_assert_leq(n, 16);
	for (unsigned int k = 0; k < n; k++) {
		uint8_t *pkt = buf + k * SEG;

		memset(pkt, 0, ROCE_BTH_LEN);
		pkt[0] = OPCODE;
		roce_put16(pkt + 2, 0xFFFF);
		pkt[5] = (uint8_t)(qpn >> 16), pkt[6] = (uint8_t)(qpn >> 8), pkt[7] = (uint8_t)qpn;
		pkt[9] = (uint8_t)(psns[k] >> 16), pkt[10] = (uint8_t)(psns[k] >> 8);
		pkt[11] = (uint8_t)psns[k];
		for (size_t i = 0; i < PMTU; i++)
			pkt[ROCE_BTH_LEN + i] = byte_of(psns[k], i);
		memset(pkt + SEG - ROCE_ICRC_LEN, (uint8_t)psns[k], ROCE_ICRC_LEN);
	}
	roce_gid_from_v4(f.sgid, lo);
	roce_gid_from_v4(f.dgid, lo);
	f.dport = sock.port;
	cr_assert_eq(uroce_udp_open(&tx, AF_INET, 0), 0);
	cr_assert_eq(uroce_udp_send_gso(&tx, &f, buf, n * SEG, SEG), 0);
	uroce_udp_close(&tx);
}

/* Wait for @n packets in all, polling @p if @poll (the polling thread's receive). */
static void wait_received(struct uroce_progress *p, bool poll, int n)
{
	for (time_t end = time(NULL) + 10; atomic_load(&received) < n && time(NULL) < end;)
		if (!poll || uroce_progress_poll(p) < 0)
			usleep(1000);
	cr_assert_eq(atomic_load(&received), n, "%d of %d packets came", atomic_load(&received), n);
}

static void receive_into_place(enum uroce_backend backend, bool poll)
{
	struct uroce_progress *p;

	cr_assert_eq(uroce_udp_open(&sock, AF_INET, 0), 0);
	cr_assert_eq(uroce_progress_start(&p, &ops, NULL, 4, backend), 0);
	if (poll) /* this thread takes the sockets: the direct receive */
		for (time_t end = time(NULL) + 10; uroce_progress_poll(p) < 0 && time(NULL) < end;)
			;
	/* A datagram as any other; it continues a WRITE, so the next one is looked at. */
	send_train(QPN, (const uint32_t[]){0, 1, 2, 3}, 4);
	wait_received(p, poll, 4);
	cr_assert_eq(atomic_load(&asked), 0, "a datagram after none was looked at");
	send_train(QPN, (const uint32_t[]){4, 5, 6, 7}, 4);
	wait_received(p, poll, 8);
	for (uint32_t psn = 4; psn < 8; psn++)
		cr_assert_eq(atomic_load(&gapped[psn]), 1, "PSN %u was not steered", psn);
	for (size_t i = 0; i < 4 * PMTU; i++)
		cr_assert_eq(target[4 * PMTU + i], byte_of(4 + (uint32_t)(i / PMTU), i % PMTU));
	/* The third packet is not the PSN planned: it and the one after come whole. */
	send_train(QPN, (const uint32_t[]){8, 9, 11, 10}, 4);
	wait_received(p, poll, 12);
	cr_assert_eq(atomic_load(&gapped[8]) + atomic_load(&gapped[9]), 2);
	cr_assert_eq(atomic_load(&gapped[10]) + atomic_load(&gapped[11]), 0);
	/* Not the owner's to steer: as usual, and the guesses after it are skipped. */
	send_train(OTHER, (const uint32_t[]){12, 13}, 2);
	wait_received(p, poll, 14);
	send_train(QPN, (const uint32_t[]){14, 15}, 2);
	wait_received(p, poll, 16);
	cr_assert_eq(atomic_load(&gapped[14]) + atomic_load(&gapped[15]), 0);
	for (uint32_t psn = 0; psn < 16; psn++)
		if (psn != 12 && psn != 13)
			cr_assert_eq(atomic_load(&got[psn]), 1, "PSN %u came %d times", psn,
				     atomic_load(&got[psn]));
	cr_assert_eq(atomic_load(&bad), 0);
	uroce_progress_stop(p);
	uroce_udp_close(&sock);
}

Test(steer, io_uring_receives_into_place)
{
	receive_into_place(UROCE_BACKEND_IO_URING, false);
}

Test(steer, epoll_receives_into_place)
{
	receive_into_place(UROCE_BACKEND_EPOLL, false);
}

Test(steer, polling_thread_receives_into_place)
{
	receive_into_place(UROCE_BACKEND_IO_URING, true);
}
