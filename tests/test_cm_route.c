/* SPDX-License-Identifier: MIT */
/*
 * cm/route: where a host sends each CM MAD (the reference frames of PROTOCOL.md Appendix A), the
 * communication IDs that carry a process's tag, and the host's answers for a MAD nobody takes
 * compared with the reference frames of those answers (REJ "no listener" bit-exact).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cm/route.h"
#include "tests/support/frames.h"
#include "tests/support/vectors.h"

static struct test_vector vectors[32];
static int nvectors;

static void load(void)
{
	nvectors = test_vectors_load(UROCE_TEST_DATA "/vectors.json", vectors, 32);
	cr_assert_gt(nvectors, 0);
}

static const uint8_t *mad_of(int frame)
{
	const uint8_t *mad = test_vector_mad(vectors, nvectors, frame);

	cr_assert_not_null(mad, "no CM MAD in frame %d of vectors.json", frame);
	return mad;
}

TestSuite(cm_route, .init = load);

Test(cm_route, requests_route_by_service)
{
	struct cm_route r = cm_route_of(mad_of(1), CM_MAD_LEN);

	cr_assert_eq(r.kind, CM_ROUTE_SERVICE);
	cr_assert_eq(r.attr_id, CM_ATTR_REQ);
	cr_assert_eq(r.service_id, 0x0000000001064853ull);
	r = cm_route_of(mad_of(16), CM_MAD_LEN);
	cr_assert_eq(r.kind, CM_ROUTE_SERVICE);
	cr_assert_eq(r.attr_id, CM_ATTR_SIDR_REQ);
	cr_assert_eq(r.service_id, 0x0000000001114853ull);
}

Test(cm_route, answers_route_by_the_receivers_comm_id)
{
	/* B's messages name A's ID (0x1B2C3D4E); A's after the REQ name B's (0x5A6B7C8D). */
	static const struct {
		int frame;
		uint32_t id;
	} cases[] = {{2, 0x1B2C3D4E},  {3, 0x5A6B7C8D},  {11, 0x5A6B7C8D}, {12, 0x1B2C3D4E},
		     {13, 0x1B2C3D4E}, {14, 0x1B2C3D4E}, {15, 0x1B2C3D4E}, {17, 0x1B2C3D4E}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cm_route r = cm_route_of(mad_of(cases[i].frame), CM_MAD_LEN);

		cr_assert_eq(r.kind, CM_ROUTE_COMM_ID, "frame %d", cases[i].frame);
		cr_assert_eq(r.comm_id, cases[i].id, "frame %d: %#x", cases[i].frame, r.comm_id);
	}
}

Test(cm_route, other_mads_are_not_routed)
{
	uint8_t mad[CM_MAD_LEN];

	memcpy(mad, mad_of(1), CM_MAD_LEN);
	cr_assert_eq(cm_route_of(mad, CM_MAD_LEN - 1).kind, CM_ROUTE_NONE);
	mad[1] = 0x03; /* SA class */
	cr_assert_eq(cm_route_of(mad, CM_MAD_LEN).kind, CM_ROUTE_NONE);
	memcpy(mad, mad_of(1), CM_MAD_LEN);
	mad[3] = 0x01; /* Get */
	cr_assert_eq(cm_route_of(mad, CM_MAD_LEN).kind, CM_ROUTE_NONE);
	memcpy(mad, mad_of(1), CM_MAD_LEN);
	mad[17] = 0x01; /* ClassPortInfo */
	cr_assert_eq(cm_route_of(mad, CM_MAD_LEN).kind, CM_ROUTE_NONE);
}

/* The RoCE packet (BTH to ICRC) of reference frame @frame. */
static const uint8_t *roce_of(int frame, size_t *len)
{
	for (int i = 0; i < nvectors; i++)
		if (vectors[i].frame == frame)
			return test_roce_of_frame(vectors[i].bytes, vectors[i].len, len);
	cr_assert_fail("no frame %d in vectors.json", frame);
	return NULL;
}

/* The MAD a GSI takes from a packet: a CM frame's, not an RC SEND's or a UD one to another Q_Key.
 */
Test(cm_route, gsi_mad_of_a_packet)
{
	size_t len;
	const uint8_t *roce = roce_of(2, &len);

	cr_assert_eq(cm_gsi_mad(roce, len), roce + 20, "REP: the MAD after BTH and DETH");
	cr_assert_null(cm_gsi_mad(roce, len - 5), "a truncated one");
	roce = roce_of(4, &len);
	cr_assert_null(cm_gsi_mad(roce, len), "RC SEND");
	roce = roce_of(18, &len);
	cr_assert_null(cm_gsi_mad(roce, len), "UD SEND to another QP's Q_Key");
}

Test(cm_route, comm_ids_carry_the_tag)
{
	cr_assert_eq(cm_comm_id(0xABC, 0x12345), 0xABC12345u);
	cr_assert_eq(cm_comm_tag(cm_comm_id(0xABC, 0x12345)), 0xABC);
	cr_assert_eq(cm_comm_id(0xABC, 0xFFF12345), 0xABC12345u); /* the sequence wraps */
	cr_assert_eq(cm_comm_id(0, 0), 1u);                       /* never 0 */
	cr_assert_eq(cm_comm_id(0, 0x100000), 1u);
	cr_assert_eq(cm_comm_id(1, 0), 0x00100000u);
}

Test(cm_route, no_listener_rej_is_the_reference_frame)
{
	uint8_t out[CM_MAD_LEN];

	cr_assert(cm_answer_unclaimed(mad_of(1), CM_MAD_LEN, out));
	cr_assert_eq(memcmp(out, mad_of(15), CM_MAD_LEN), 0);
}

Test(cm_route, sidr_without_listener_is_unsupported)
{
	uint8_t out[CM_MAD_LEN];
	struct cm_msg m;

	cr_assert(cm_answer_unclaimed(mad_of(16), CM_MAD_LEN, out));
	cr_assert_eq(cm_decode(out, CM_MAD_LEN, &m), CM_OK);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_SIDR_REP);
	cr_assert_eq(m.hdr.tid, 0x000000011B2C3D4Eull);
	cr_assert_eq(m.u.sidr_rep.request_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	cr_assert_eq(m.u.sidr_rep.service_id, 0x0000000001114853ull);
	cr_assert_eq(m.u.sidr_rep.qpn, 0);
}

Test(cm_route, dreq_of_a_gone_connection_gets_a_drep)
{
	uint8_t out[CM_MAD_LEN];
	struct cm_msg m;

	cr_assert(cm_answer_unclaimed(mad_of(11), CM_MAD_LEN, out));
	cr_assert_eq(cm_decode(out, CM_MAD_LEN, &m), CM_OK);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_DREP);
	cr_assert_eq(m.u.drep.local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.drep.remote_comm_id, 0x1B2C3D4E);
	/* The reference DREP has no private data either: the same MAD. */
	cr_assert_eq(memcmp(out, mad_of(12), CM_MAD_LEN), 0);
}

Test(cm_route, other_messages_are_not_answered)
{
	uint8_t out[CM_MAD_LEN];
	static const int frames[] = {2, 3, 12, 13, 14, 15, 17};

	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++)
		cr_assert_not(cm_answer_unclaimed(mad_of(frames[i]), CM_MAD_LEN, out), "frame %d",
			      frames[i]);
	cr_assert_not(cm_answer_unclaimed(mad_of(1), CM_MAD_LEN - 1, out));
}

Test(cm_route, dreq_on_behalf_of_a_dead_process)
{
	uint8_t out[CM_MAD_LEN];
	struct cm_msg m;

	cm_dreq_for_dead(0x5A6B7C8D, 0x1B2C3D4E, 0x11, out);
	cr_assert_eq(cm_decode(out, CM_MAD_LEN, &m), CM_OK);
	cr_assert_eq(m.hdr.attr_id, CM_ATTR_DREQ);
	cr_assert_eq(m.hdr.tid, 0x000000015A6B7C8Dull);
	cr_assert_eq(m.u.dreq.local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.dreq.remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.dreq.remote_qpn, 0x11);
	/* It routes to the peer, whose comm ID it names. */
	cr_assert_eq(cm_route_of(out, CM_MAD_LEN).comm_id, 0x1B2C3D4E);
}
