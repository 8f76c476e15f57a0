/* SPDX-License-Identifier: MIT */
/*
 * cm/wire: the CM MAD codec against the reference frames (PROTOCOL.md Appendix A: every field
 * the document gives, then re-encoded bit-exact), against every CM MAD of the Linux kernel's
 * rdma_cm in tests/vectors/kernel-rxe (rping, ucmatose, udaddy: decoded and re-encoded
 * bit-exact, cma headers naming the frames' addresses), a round-trip property over random
 * MADs, each decode error, service IDs and the cma header.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cm/wire.h"
#include "tests/support/frames.h"
#include "tests/support/vectors.h"

#define BTH_DETH 20 /* BTH 12 + DETH 8: a CM MAD is a UD SEND to QP 1 (§4.1) */

static struct test_vector vectors[32];
static int nvectors;

static void load(void)
{
	nvectors = test_vectors_load(UROCE_TEST_DATA "/vectors.json", vectors, 32);
	cr_assert_gt(nvectors, 0);
}

/* The MAD of reference frame @frame (1-based, Appendix A). */
static const uint8_t *mad_of(int frame)
{
	const uint8_t *mad = test_vector_mad(vectors, nvectors, frame);

	cr_assert_not_null(mad, "no CM MAD in frame %d of vectors.json", frame);
	return mad;
}

/* Decode frame @frame's MAD as @attr and check it re-encodes to the same 256 bytes. */
static struct cm_msg decode_vector(int frame, enum cm_attr attr)
{
	const uint8_t *mad = mad_of(frame);
	struct cm_msg m;
	uint8_t again[CM_MAD_LEN];

	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_OK, "frame %d", frame);
	cr_assert_eq(m.hdr.attr_id, attr, "frame %d: attribute %#x", frame, m.hdr.attr_id);
	cr_assert_eq(m.hdr.tid, 0x000000011B2C3D4Eull, "frame %d: TID", frame);
	cr_assert_eq(cm_encode(&m, again), CM_MAD_LEN);
	cr_assert_eq(memcmp(again, mad, CM_MAD_LEN), 0, "frame %d is not re-encoded bit-exact",
		     frame);
	return m;
}

static const uint8_t gid_a[16] = {[10] = 0xff, 0xff, 192, 168, 1, 1};
static const uint8_t gid_b[16] = {[10] = 0xff, 0xff, 192, 168, 1, 2};

TestSuite(cm_wire, .init = load);

Test(cm_wire, req_vector)
{
	struct cm_msg m = decode_vector(1, CM_ATTR_REQ);
	const struct cm_req *r = &m.u.req;
	struct cma_hdr h;

	cr_assert_eq(r->local_comm_id, 0x1B2C3D4E);
	cr_assert_eq(r->service_id, 0x0000000001064853ull);
	cr_assert_eq(r->local_ca_guid, 0x000000FFFE000001ull);
	cr_assert_eq(r->local_qkey, 0);
	cr_assert_eq(r->local_qpn, 0x11);
	cr_assert_eq(r->responder_resources, 1);
	cr_assert_eq(r->initiator_depth, 1);
	cr_assert_eq(r->remote_cm_response_timeout, 20);
	cr_assert_eq(r->transport_type, 0);
	cr_assert_eq(r->e2e_flow_control, 1);
	cr_assert_eq(r->starting_psn, 0x123456);
	cr_assert_eq(r->local_cm_response_timeout, 20);
	cr_assert_eq(r->retry_count, 7);
	cr_assert_eq(r->pkey, 0xFFFF);
	cr_assert_eq(r->path_mtu, 3);
	cr_assert_eq(r->rdc_exists, 0);
	cr_assert_eq(r->rnr_retry_count, 7);
	cr_assert_eq(r->max_cm_retries, 15);
	cr_assert_eq(r->srq, 0);
	cr_assert_eq(r->ext_transport_type, 0);
	cr_assert_eq(r->primary.local_lid, 0xFFFF);
	cr_assert_eq(r->primary.remote_lid, 0xFFFF);
	cr_assert_eq(memcmp(r->primary.local_gid, gid_a, 16), 0);
	cr_assert_eq(memcmp(r->primary.remote_gid, gid_b, 16), 0);
	cr_assert_eq(r->primary.flow_label, 0x1C8CB);
	cr_assert_eq(r->primary.packet_rate, 0);
	cr_assert_eq(r->primary.traffic_class, 0);
	cr_assert_eq(r->primary.hop_limit, 64);
	cr_assert_eq(r->primary.sl, 0);
	cr_assert_eq(r->primary.subnet_local, 0);
	cr_assert_eq(r->primary.local_ack_timeout, 19);
	cr_assert_eq(r->alternate.local_lid | r->alternate.remote_lid, 0);
	cr_assert_eq(cma_hdr_decode(r->private_data, &h), 0);
	cr_assert_eq(h.ip_version, 4);
	cr_assert_eq(h.src_port, 37000);
	cr_assert_eq(memcmp(h.src, gid_a, 16), 0);
	cr_assert_eq(memcmp(h.dst, gid_b, 16), 0);
	cr_assert_str_eq((const char *)r->private_data + CM_HDR_LEN, "client private data");
}

Test(cm_wire, rep_rtu_vectors)
{
	struct cm_msg m = decode_vector(2, CM_ATTR_REP);
	const struct cm_rep *p = &m.u.rep;

	cr_assert_eq(p->local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(p->remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(p->local_qpn, 0x12);
	cr_assert_eq(p->starting_psn, 0x654321);
	cr_assert_eq(p->responder_resources, 1);
	cr_assert_eq(p->initiator_depth, 1);
	cr_assert_eq(p->target_ack_delay, 15);
	cr_assert_eq(p->failover_accepted, 0);
	cr_assert_eq(p->e2e_flow_control, 1);
	cr_assert_eq(p->rnr_retry_count, 7);
	cr_assert_eq(p->srq, 0);
	cr_assert_eq(p->local_ca_guid, 0x000000FFFE000002ull);
	cr_assert_str_eq((const char *)p->private_data, "server private data");

	m = decode_vector(3, CM_ATTR_RTU);
	cr_assert_eq(m.u.rtu.local_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.rtu.remote_comm_id, 0x5A6B7C8D);
}

Test(cm_wire, dreq_drep_mra_vectors)
{
	struct cm_msg m = decode_vector(11, CM_ATTR_DREQ);

	cr_assert_eq(m.u.dreq.local_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.dreq.remote_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.dreq.remote_qpn, 0x12, "the peer's QPN");
	m = decode_vector(12, CM_ATTR_DREP);
	cr_assert_eq(m.u.drep.local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.drep.remote_comm_id, 0x1B2C3D4E);
	m = decode_vector(13, CM_ATTR_MRA);
	cr_assert_eq(m.u.mra.local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.mra.remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.mra.message, CM_MSG_REQ);
	cr_assert_eq(m.u.mra.service_timeout, 24);
}

Test(cm_wire, rej_vectors)
{
	struct cm_msg m = decode_vector(14, CM_ATTR_REJ);

	cr_assert_eq(m.u.rej.local_comm_id, 0x5A6B7C8D);
	cr_assert_eq(m.u.rej.remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.rej.message, CM_MSG_REQ);
	cr_assert_eq(m.u.rej.reason, CM_REJ_CONSUMER);
	cr_assert_eq(m.u.rej.ari_len, 0);
	cr_assert_str_eq((const char *)m.u.rej.private_data, "go away");
	m = decode_vector(15, CM_ATTR_REJ);
	cr_assert_eq(m.u.rej.local_comm_id, 0, "no listener: no comm ID was allocated");
	cr_assert_eq(m.u.rej.remote_comm_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.rej.reason, CM_REJ_INVALID_SERVICE_ID);
}

Test(cm_wire, sidr_vectors)
{
	struct cm_msg m = decode_vector(16, CM_ATTR_SIDR_REQ);
	struct cma_hdr h;

	cr_assert_eq(m.u.sidr_req.request_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.sidr_req.pkey, 0xFFFF);
	cr_assert_eq(m.u.sidr_req.service_id, 0x0000000001114853ull);
	cr_assert_eq(cma_hdr_decode(m.u.sidr_req.private_data, &h), 0);
	cr_assert_eq(h.src_port, 37000);
	cr_assert_eq(memcmp(h.dst, gid_b, 16), 0);
	m = decode_vector(17, CM_ATTR_SIDR_REP);
	cr_assert_eq(m.u.sidr_rep.request_id, 0x1B2C3D4E);
	cr_assert_eq(m.u.sidr_rep.status, CM_SIDR_OK);
	cr_assert_eq(m.u.sidr_rep.qpn, 0x13);
	cr_assert_eq(m.u.sidr_rep.service_id, 0x0000000001114853ull);
	cr_assert_eq(m.u.sidr_rep.qkey, CM_UDP_QKEY);
}

/* The kernel captures: every frame to QP 1 is a CM MAD. */
struct kernel_seen {
	unsigned int mads, by_attr[CM_ATTR_APR + 1];
	const char *file;
};

static void check_kernel_frame(const uint8_t *frame, size_t flen, void *arg)
{
	struct kernel_seen *seen = arg;
	size_t len;
	const uint8_t *roce = test_roce_of_frame(frame, flen, &len);
	const uint8_t *mad;
	uint8_t again[CM_MAD_LEN];
	struct cm_msg m;
	struct cma_hdr h;
	bool v4 = frame[12] == 0x08;

	/* BTH DestQP (bytes 5..7) 1: the CM's QP. */
	if (!roce || len < BTH_DETH || roce[5] || roce[6] || roce[7] != 1)
		return;
	mad = roce + BTH_DETH;
	cr_assert_geq(len, BTH_DETH + CM_MAD_LEN, "%s: a short MAD", seen->file);
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_OK, "%s: MAD %u", seen->file,
		     seen->mads + 1);
	cr_assert_eq(cm_encode(&m, again), CM_MAD_LEN);
	cr_assert_eq(memcmp(again, mad, CM_MAD_LEN), 0, "%s: MAD %u (attribute %#x) differs",
		     seen->file, seen->mads + 1, m.hdr.attr_id);
	seen->mads++;
	seen->by_attr[m.hdr.attr_id]++;
	if (m.hdr.attr_id != CM_ATTR_REQ && m.hdr.attr_id != CM_ATTR_SIDR_REQ)
		return;
	/* The cma header names the frame's own addresses (IPv4 source at 26, destination 30). */
	cr_assert_eq(cma_hdr_decode(m.hdr.attr_id == CM_ATTR_REQ ? m.u.req.private_data
								 : m.u.sidr_req.private_data,
				    &h),
		     0);
	cr_assert(v4 && h.ip_version == 4, "%s: the captures are IPv4", seen->file);
	cr_assert_eq(memcmp(h.src + 12, frame + 26, 4), 0, "%s: cma source", seen->file);
	cr_assert_eq(memcmp(h.dst + 12, frame + 30, 4), 0, "%s: cma destination", seen->file);
}

static struct kernel_seen run_capture(const char *file)
{
	struct kernel_seen seen = {.file = file};
	char path[256];

	snprintf(path, sizeof(path), "%s/kernel-rxe/%s", UROCE_TEST_DATA, file);
	cr_assert_gt(test_for_each_frame(path, check_kernel_frame, &seen), 0, "%s", path);
	return seen;
}

Test(cm_wire, kernel_rping_ucmatose_udaddy)
{
	struct kernel_seen s = run_capture("rping.pcap");

	cr_assert(s.by_attr[CM_ATTR_REQ] && s.by_attr[CM_ATTR_REP] && s.by_attr[CM_ATTR_RTU] &&
			  s.by_attr[CM_ATTR_DREQ] && s.by_attr[CM_ATTR_DREP],
		  "rping: REQ %u REP %u RTU %u DREQ %u DREP %u", s.by_attr[CM_ATTR_REQ],
		  s.by_attr[CM_ATTR_REP], s.by_attr[CM_ATTR_RTU], s.by_attr[CM_ATTR_DREQ],
		  s.by_attr[CM_ATTR_DREP]);
	s = run_capture("ucma.pcap");
	cr_assert(s.by_attr[CM_ATTR_REQ] && s.by_attr[CM_ATTR_REP] && s.by_attr[CM_ATTR_RTU],
		  "ucmatose: no connection set up");
	s = run_capture("udaddy.pcap");
	cr_assert(s.by_attr[CM_ATTR_SIDR_REQ] && s.by_attr[CM_ATTR_SIDR_REP],
		  "udaddy: SIDR_REQ %u SIDR_REP %u", s.by_attr[CM_ATTR_SIDR_REQ],
		  s.by_attr[CM_ATTR_SIDR_REP]);
}

/* xorshift64*: the property test's fixed-seed generator. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/*
 * Any MAD of a CM attribute: decode, encode, decode again gives the same message, and the
 * second encoding the same bytes as the first (what decoding drops are reserved bits, which
 * encoding zeros; every field survives).
 */
Test(cm_wire, random_round_trips)
{
	uint64_t seed = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < 20000; i++) {
		uint8_t mad[CM_MAD_LEN], once[CM_MAD_LEN], twice[CM_MAD_LEN];
		struct cm_msg a, b;

		for (int k = 0; k < CM_MAD_LEN; k += 8) {
			uint64_t v = next(&seed);

			memcpy(mad + k, &v, 8);
		}
		mad[0] = 1;
		mad[1] = CM_MGMT_CLASS;
		mad[2] = CM_CLASS_VER;
		mad[3] = CM_METHOD_SEND;
		mad[16] = 0;
		mad[17] = (uint8_t)(CM_ATTR_REQ + i % (CM_ATTR_APR - CM_ATTR_REQ + 1));
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		cr_assert_eq(cm_decode(mad, sizeof(mad), &a), CM_OK);
		cr_assert_eq(cm_encode(&a, once), CM_MAD_LEN);
		cr_assert_eq(cm_decode(once, sizeof(once), &b), CM_OK);
		cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "attribute %#x: a field was lost",
			     a.hdr.attr_id);
		cr_assert_eq(cm_encode(&b, twice), CM_MAD_LEN);
		cr_assert_eq(memcmp(once, twice, CM_MAD_LEN), 0);
	}
}

/* A REQ built field by field reads back field by field: no two fields share a bit. */
Test(cm_wire, req_fields_do_not_overlap)
{
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, 7)}, back;
	uint8_t mad[CM_MAD_LEN];

	m.u.req = (struct cm_req){
		.local_comm_id = 0xFFFFFFFF,
		.vendor_id = 0xFFFFFF,
		.local_qpn = 0xFFFFFF,
		.responder_resources = 0xFF,
		.local_eecn = 0xFFFFFF,
		.initiator_depth = 0xFF,
		.remote_eecn = 0xFFFFFF,
		.remote_cm_response_timeout = 31,
		.transport_type = 3,
		.e2e_flow_control = 1,
		.starting_psn = 0xFFFFFF,
		.local_cm_response_timeout = 31,
		.retry_count = 7,
		.pkey = 0xFFFF,
		.path_mtu = 15,
		.rdc_exists = 1,
		.rnr_retry_count = 7,
		.max_cm_retries = 15,
		.srq = 1,
		.ext_transport_type = 7,
		.sap_supported = 1,
		.primary = {.flow_label = 0xFFFFF,
			    .packet_rate = 63,
			    .sl = 15,
			    .subnet_local = 1,
			    .local_ack_timeout = 31},
	};
	for (int f = 0; f < 2; f++) {
		struct cm_msg one = m;

		/* Each field alone: only it comes back non-zero. */
		memset(&one.u.req, 0, sizeof(one.u.req));
		if (f == 0)
			one.u.req.transport_type = 3;
		else
			one.u.req.primary.packet_rate = 63;
		cr_assert_eq(cm_encode(&one, mad), CM_MAD_LEN);
		cr_assert_eq(cm_decode(mad, sizeof(mad), &back), CM_OK);
		cr_assert_eq(memcmp(&back.u.req, &one.u.req, sizeof(one.u.req)), 0);
	}
	cr_assert_eq(cm_encode(&m, mad), CM_MAD_LEN);
	cr_assert_eq(cm_decode(mad, sizeof(mad), &back), CM_OK);
	cr_assert_eq(memcmp(&back.u.req, &m.u.req, sizeof(m.u.req)), 0);
	cr_assert_eq(mad[CM_MAD_HDR_LEN + 4], 0, "reserved byte 4 written");
}

Test(cm_wire, decode_errors)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_RTU, 1)};

	cr_assert_eq(cm_encode(&m, mad), CM_MAD_LEN);
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN - 1, &m), CM_ERR_SHORT);
	mad[0] = 2;
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_BASE_VERSION);
	mad[0] = 1;
	mad[1] = 0x81; /* a subnet management class */
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_CLASS);
	mad[1] = CM_MGMT_CLASS;
	mad[2] = 1;
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_CLASS_VERSION);
	mad[2] = CM_CLASS_VER;
	mad[3] = 0x01; /* Get */
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_METHOD);
	mad[3] = CM_METHOD_SEND;
	mad[17] = CM_ATTR_CLASS_PORT_INFO;
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_ATTR);
	mad[17] = 0x1B;
	cr_assert_eq(cm_decode(mad, CM_MAD_LEN, &m), CM_ERR_ATTR);
	m.hdr.attr_id = 0x1B;
	cr_assert_eq(cm_encode(&m, mad), 0, "encoded an attribute that is no CM message");
	for (int e = CM_OK; e <= CM_ERR_ATTR; e++)
		cr_assert_neq(strcmp(cm_err_str((enum cm_err)e), "unknown error"), 0);
}

Test(cm_wire, service_ids_and_cma_header)
{
	enum cm_port_space ps;
	uint16_t port;
	struct cma_hdr h = {.ip_version = 6,
			    .src_port = 0xBEEF,
			    .src = {0xfd, 0, [15] = 1},
			    .dst = {0xfd, 0, [15] = 2}},
		       back;
	uint8_t pd[CM_HDR_LEN];

	cr_assert_eq(cm_service_id(CM_PS_TCP, 18515), 0x0000000001064853ull);
	cr_assert_eq(cm_service_id(CM_PS_UDP, 18515), 0x0000000001114853ull);
	cr_assert(cm_service_split(0x00000000013F0102ull, &ps, &port));
	cr_assert_eq(ps, CM_PS_IB);
	cr_assert_eq(port, 0x0102);
	cr_assert_not(cm_service_split(0x0000000001990001ull, &ps, &port), "unknown port space");
	cr_assert_not(cm_service_split(0x1000000001060001ull, &ps, &port), "not an IP CM ID");
	cma_hdr_encode(&h, pd);
	cr_assert_eq(pd[1], 0x60);
	cr_assert_eq(cma_hdr_decode(pd, &back), 0);
	cr_assert(back.ip_version == 6 && back.src_port == 0xBEEF);
	cr_assert(!memcmp(back.src, h.src, 16) && !memcmp(back.dst, h.dst, 16));
	pd[0] = 1;
	cr_assert_eq(cma_hdr_decode(pd, &back), -1, "CMA version 1");
	pd[0] = 0;
	pd[1] = 0x50;
	cr_assert_eq(cma_hdr_decode(pd, &back), -1, "IP version 5");
}
