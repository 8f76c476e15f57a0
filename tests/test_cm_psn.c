/* SPDX-License-Identifier: MIT */
/*
 * The Starting PSN of a REQ or REP, read as Linux reads it, proven on the kernel-rxe capture
 * tests/vectors/kernel-rxe/rping.pcap (two kernel rxe hosts, rping -C 10 -S 2048 -V): its REQ
 * and REP run through cm/ib_cm as the active and the passive side, and the PSNs the pure CM
 * gives each side's QP must be the ones the kernel's QPs used on the wire: the first request
 * packet each side sent carries that side's sq_psn, and the other side received at it.
 * A Starting PSN is its sender's receive PSN (PROTOCOL.md §3.1; ib_send_cm_req,
 * cm_req_handler, ib_send_cm_rep, cm_rep_handler in the kernel's drivers/infiniband/core/cm.c).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cm/ib_cm.h"
#include "support/frames.h"

#define BTH_LEN  12
#define DETH_LEN 8

struct seen {
	struct cm_msg req, rep;
	bool have_req, have_rep;
	uint8_t active_ip[4];  /* the REQ's IPv4 source */
	uint32_t first_psn[2]; /* [0] the active side's first request, [1] the passive's */
	uint8_t first_opcode[2];
	bool have_first[2];
};

/* An RC request packet (IBA 9.2 table 38: SEND, WRITE, READ request, atomics). */
static bool rc_request(uint8_t opcode)
{
	return opcode <= 0x0c || opcode == 0x13 || opcode == 0x14 || opcode == 0x16 ||
	       opcode == 0x17;
}

static void on_frame(const uint8_t *frame, size_t len, void *arg)
{
	struct seen *s = arg;
	size_t rlen;
	const uint8_t *roce = test_roce_of_frame(frame, len, &rlen);
	struct cm_msg m;
	uint8_t opcode;
	uint32_t dqpn, psn;
	int side;

	cr_assert(roce && frame[12] == 0x08 && frame[13] == 0x00, "the capture is IPv4 RoCE");
	opcode = roce[0];
	dqpn = (uint32_t)roce[5] << 16 | (uint32_t)roce[6] << 8 | roce[7];
	psn = (uint32_t)roce[9] << 16 | (uint32_t)roce[10] << 8 | roce[11];
	if (dqpn == 1) {
		cr_assert_geq(rlen, BTH_LEN + DETH_LEN + CM_MAD_LEN);
		cr_assert_eq(cm_decode(roce + BTH_LEN + DETH_LEN, CM_MAD_LEN, &m), CM_OK);
		if (m.hdr.attr_id == CM_ATTR_REQ && !s->have_req) {
			s->req = m;
			s->have_req = true;
			memcpy(s->active_ip, frame + 26, 4);
		} else if (m.hdr.attr_id == CM_ATTR_REP && !s->have_rep) {
			s->rep = m;
			s->have_rep = true;
		}
		return;
	}
	if (!s->have_rep || (opcode >> 5) != 0 || !rc_request(opcode))
		return;
	side = memcmp(frame + 26, s->active_ip, 4) == 0 ? 0 : 1;
	if (s->have_first[side])
		return;
	s->have_first[side] = true;
	s->first_psn[side] = psn;
	s->first_opcode[side] = opcode;
}

static const struct cm_timing timing = {.remote_response_timeout = 20,
					.packet_life_time = 16,
					.max_cm_retries = 15,
					.timewait = 19};

Test(cm_psn, starting_psns_as_the_kernel_reads_them)
{
	struct seen s = {0};
	struct cm_conn active, passive;
	struct cm_event ev;
	struct cm_msg out;

	cr_assert_gt(test_for_each_frame(UROCE_TEST_DATA "/kernel-rxe/rping.pcap", on_frame, &s),
		     0);
	cr_assert(s.have_req && s.have_rep && s.have_first[0] && s.have_first[1],
		  "rping.pcap: a REQ, a REP and data from both sides");
	/* The capture's own numbers (its README): the client SENDs, the server READs. */
	cr_assert_eq(s.req.u.req.starting_psn, 0x6bf86f);
	cr_assert_eq(s.rep.u.rep.starting_psn, 0x46f51e);

	/* Active side: it sends the REQ, then reads the REP. */
	cm_conn_init(&active, s.req.u.req.local_comm_id, &timing);
	cr_assert_eq(cm_conn_connect(&active, &s.req.u.req, s.req.hdr.tid, 0), 0);
	cr_assert(cm_conn_write(&active, &out, 0));
	cr_assert(cm_conn_read(&active, &s.rep, 1));
	cr_assert(cm_conn_event(&active, &ev) && ev.type == CM_EV_REP);

	/* Passive side: the REQ reaches it, it answers with the REP. */
	cm_conn_init(&passive, s.rep.u.rep.local_comm_id, &timing);
	cr_assert_eq(cm_conn_accept_req(&passive, &s.req, 0), 0);
	cr_assert_eq(cm_conn_rep(&passive, &s.rep.u.rep, 0), 0);

	cr_assert_eq(active.sq_psn, s.first_psn[0],
		     "the active side sends from %#x, the kernel's first request (opcode %#x) "
		     "carried %#x",
		     active.sq_psn, s.first_opcode[0], s.first_psn[0]);
	cr_assert_eq(passive.sq_psn, s.first_psn[1],
		     "the passive side sends from %#x, the kernel's first request (opcode %#x) "
		     "carried %#x",
		     passive.sq_psn, s.first_opcode[1], s.first_psn[1]);
	cr_assert_eq(active.rq_psn, passive.sq_psn, "each receives where the other sends from");
	cr_assert_eq(passive.rq_psn, active.sq_psn);
	cr_assert_eq(active.rq_psn, s.req.u.req.starting_psn, "a REQ names its sender's rq_psn");
	cr_assert_eq(passive.rq_psn, s.rep.u.rep.starting_psn, "a REP names its sender's rq_psn");
}
