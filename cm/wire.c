// SPDX-License-Identifier: MIT
/*
 * CM MAD codec (wire.h). Each message is a table of fields, as the IBTA tables list them: a
 * field is a run of bits in the big-endian message data (its byte offset, the bit from that
 * byte's MSB where it starts, its width) or a run of bytes, and the struct member it fills.
 * One engine reads and writes any table, so a layout lives in one place only.
 */
#include "cm/wire.h"

#include <stddef.h>
#include <string.h>

struct field {
	uint16_t off;    /* byte offset in the message data (the IBTA tables' offsets) */
	uint8_t bit;     /* first bit, counted from the MSB of byte @off */
	uint8_t width;   /* bits; 0: a byte string as long as the member */
	uint16_t member; /* offsetof the member */
	uint16_t size;   /* sizeof the member: 1, 2, 4 or 8 for a number */
};

#define MEMBER(type, m) offsetof(type, m), sizeof(((type *)0)->m)
/* A number of @width bits at byte @off, bit @bit; a byte string at @off. */
#define NUM(type, off, bit, width, m)                                                              \
	{                                                                                          \
		off, bit, width, MEMBER(type, m)                                                   \
	}
#define BYTES(type, off, m)                                                                        \
	{                                                                                          \
		off, 0, 0, MEMBER(type, m)                                                         \
	}

/* A path as REQ lays it out (table 106) from byte @b: primary at 52, alternate at 96. */
#define REQ_PATH(b, p)                                                                             \
	NUM(struct cm_req, b + 0, 0, 16, p.local_lid),                                             \
		NUM(struct cm_req, b + 2, 0, 16, p.remote_lid),                                    \
		BYTES(struct cm_req, b + 4, p.local_gid),                                          \
		BYTES(struct cm_req, b + 20, p.remote_gid),                                        \
		NUM(struct cm_req, b + 36, 0, 20, p.flow_label),                                   \
		NUM(struct cm_req, b + 39, 2, 6, p.packet_rate),                                   \
		NUM(struct cm_req, b + 40, 0, 8, p.traffic_class),                                 \
		NUM(struct cm_req, b + 41, 0, 8, p.hop_limit),                                     \
		NUM(struct cm_req, b + 42, 0, 4, p.sl),                                            \
		NUM(struct cm_req, b + 42, 4, 1, p.subnet_local),                                  \
		NUM(struct cm_req, b + 43, 0, 5, p.local_ack_timeout)

static const struct field req_fields[] = {
	NUM(struct cm_req, 0, 0, 32, local_comm_id),
	NUM(struct cm_req, 5, 0, 24, vendor_id),
	NUM(struct cm_req, 8, 0, 64, service_id),
	NUM(struct cm_req, 16, 0, 64, local_ca_guid),
	NUM(struct cm_req, 28, 0, 32, local_qkey),
	NUM(struct cm_req, 32, 0, 24, local_qpn),
	NUM(struct cm_req, 35, 0, 8, responder_resources),
	NUM(struct cm_req, 36, 0, 24, local_eecn),
	NUM(struct cm_req, 39, 0, 8, initiator_depth),
	NUM(struct cm_req, 40, 0, 24, remote_eecn),
	NUM(struct cm_req, 43, 0, 5, remote_cm_response_timeout),
	NUM(struct cm_req, 43, 5, 2, transport_type),
	NUM(struct cm_req, 43, 7, 1, e2e_flow_control),
	NUM(struct cm_req, 44, 0, 24, starting_psn),
	NUM(struct cm_req, 47, 0, 5, local_cm_response_timeout),
	NUM(struct cm_req, 47, 5, 3, retry_count),
	NUM(struct cm_req, 48, 0, 16, pkey),
	NUM(struct cm_req, 50, 0, 4, path_mtu),
	NUM(struct cm_req, 50, 4, 1, rdc_exists),
	NUM(struct cm_req, 50, 5, 3, rnr_retry_count),
	NUM(struct cm_req, 51, 0, 4, max_cm_retries),
	NUM(struct cm_req, 51, 4, 1, srq),
	NUM(struct cm_req, 51, 5, 3, ext_transport_type),
	REQ_PATH(52, primary),
	REQ_PATH(96, alternate),
	NUM(struct cm_req, 139, 5, 1, sap_supported),
	BYTES(struct cm_req, 140, private_data),
};

static const struct field mra_fields[] = {
	NUM(struct cm_mra, 0, 0, 32, local_comm_id), NUM(struct cm_mra, 4, 0, 32, remote_comm_id),
	NUM(struct cm_mra, 8, 0, 2, message),        NUM(struct cm_mra, 9, 0, 5, service_timeout),
	BYTES(struct cm_mra, 10, private_data),
};

static const struct field rej_fields[] = {
	NUM(struct cm_rej, 0, 0, 32, local_comm_id), NUM(struct cm_rej, 4, 0, 32, remote_comm_id),
	NUM(struct cm_rej, 8, 0, 2, message),        NUM(struct cm_rej, 9, 0, 7, ari_len),
	NUM(struct cm_rej, 10, 0, 16, reason),       BYTES(struct cm_rej, 12, ari),
	BYTES(struct cm_rej, 84, private_data),
};

static const struct field rep_fields[] = {
	NUM(struct cm_rep, 0, 0, 32, local_comm_id),
	NUM(struct cm_rep, 4, 0, 32, remote_comm_id),
	NUM(struct cm_rep, 8, 0, 32, local_qkey),
	NUM(struct cm_rep, 12, 0, 24, local_qpn),
	NUM(struct cm_rep, 15, 0, 8, vendor_id[0]),
	NUM(struct cm_rep, 16, 0, 24, local_eecn),
	NUM(struct cm_rep, 19, 0, 8, vendor_id[1]),
	NUM(struct cm_rep, 20, 0, 24, starting_psn),
	NUM(struct cm_rep, 23, 0, 8, vendor_id[2]),
	NUM(struct cm_rep, 24, 0, 8, responder_resources),
	NUM(struct cm_rep, 25, 0, 8, initiator_depth),
	NUM(struct cm_rep, 26, 0, 5, target_ack_delay),
	NUM(struct cm_rep, 26, 5, 2, failover_accepted),
	NUM(struct cm_rep, 26, 7, 1, e2e_flow_control),
	NUM(struct cm_rep, 27, 0, 3, rnr_retry_count),
	NUM(struct cm_rep, 27, 3, 1, srq),
	NUM(struct cm_rep, 28, 0, 64, local_ca_guid),
	BYTES(struct cm_rep, 36, private_data),
};

static const struct field rtu_fields[] = {
	NUM(struct cm_rtu, 0, 0, 32, local_comm_id),
	NUM(struct cm_rtu, 4, 0, 32, remote_comm_id),
	BYTES(struct cm_rtu, 8, private_data),
};

static const struct field dreq_fields[] = {
	NUM(struct cm_dreq, 0, 0, 32, local_comm_id),
	NUM(struct cm_dreq, 4, 0, 32, remote_comm_id),
	NUM(struct cm_dreq, 8, 0, 24, remote_qpn),
	BYTES(struct cm_dreq, 12, private_data),
};

static const struct field drep_fields[] = {
	NUM(struct cm_drep, 0, 0, 32, local_comm_id),
	NUM(struct cm_drep, 4, 0, 32, remote_comm_id),
	BYTES(struct cm_drep, 8, private_data),
};

/* LAP (table 115) lays its path out differently from REQ. */
static const struct field lap_fields[] = {
	NUM(struct cm_lap, 0, 0, 32, local_comm_id),
	NUM(struct cm_lap, 4, 0, 32, remote_comm_id),
	NUM(struct cm_lap, 12, 0, 24, remote_qpn),
	NUM(struct cm_lap, 15, 0, 5, remote_cm_response_timeout),
	NUM(struct cm_lap, 20, 0, 16, alternate.local_lid),
	NUM(struct cm_lap, 22, 0, 16, alternate.remote_lid),
	BYTES(struct cm_lap, 24, alternate.local_gid),
	BYTES(struct cm_lap, 40, alternate.remote_gid),
	NUM(struct cm_lap, 56, 0, 20, alternate.flow_label),
	NUM(struct cm_lap, 59, 0, 8, alternate.traffic_class),
	NUM(struct cm_lap, 60, 0, 8, alternate.hop_limit),
	NUM(struct cm_lap, 61, 2, 6, alternate.packet_rate),
	NUM(struct cm_lap, 62, 0, 4, alternate.sl),
	NUM(struct cm_lap, 62, 4, 1, alternate.subnet_local),
	NUM(struct cm_lap, 63, 0, 5, alternate.local_ack_timeout),
	BYTES(struct cm_lap, 64, private_data),
};

static const struct field apr_fields[] = {
	NUM(struct cm_apr, 0, 0, 32, local_comm_id),
	NUM(struct cm_apr, 4, 0, 32, remote_comm_id),
	NUM(struct cm_apr, 8, 0, 8, info_len),
	NUM(struct cm_apr, 9, 0, 8, status),
	BYTES(struct cm_apr, 12, info),
	BYTES(struct cm_apr, 84, private_data),
};

static const struct field sidr_req_fields[] = {
	NUM(struct cm_sidr_req, 0, 0, 32, request_id),
	NUM(struct cm_sidr_req, 4, 0, 16, pkey),
	NUM(struct cm_sidr_req, 8, 0, 64, service_id),
	BYTES(struct cm_sidr_req, 16, private_data),
};

static const struct field sidr_rep_fields[] = {
	NUM(struct cm_sidr_rep, 0, 0, 32, request_id),
	NUM(struct cm_sidr_rep, 4, 0, 8, status),
	NUM(struct cm_sidr_rep, 5, 0, 8, info_len),
	NUM(struct cm_sidr_rep, 6, 0, 16, vendor_id_hi),
	NUM(struct cm_sidr_rep, 8, 0, 24, qpn),
	NUM(struct cm_sidr_rep, 11, 0, 8, vendor_id_lo),
	NUM(struct cm_sidr_rep, 12, 0, 64, service_id),
	NUM(struct cm_sidr_rep, 20, 0, 32, qkey),
	BYTES(struct cm_sidr_rep, 24, info),
	BYTES(struct cm_sidr_rep, 96, private_data),
};

struct layout {
	const struct field *fields;
	size_t n;
};

#define LAYOUT(f)                                                                                  \
	{                                                                                          \
		f, sizeof(f) / sizeof(f[0])                                                        \
	}

/* The layout of attribute @attr, or NULL. */
static const struct layout *layout_of(uint16_t attr)
{
	static const struct layout layouts[] = {
		[CM_ATTR_REQ - CM_ATTR_REQ] = LAYOUT(req_fields),
		[CM_ATTR_MRA - CM_ATTR_REQ] = LAYOUT(mra_fields),
		[CM_ATTR_REJ - CM_ATTR_REQ] = LAYOUT(rej_fields),
		[CM_ATTR_REP - CM_ATTR_REQ] = LAYOUT(rep_fields),
		[CM_ATTR_RTU - CM_ATTR_REQ] = LAYOUT(rtu_fields),
		[CM_ATTR_DREQ - CM_ATTR_REQ] = LAYOUT(dreq_fields),
		[CM_ATTR_DREP - CM_ATTR_REQ] = LAYOUT(drep_fields),
		[CM_ATTR_SIDR_REQ - CM_ATTR_REQ] = LAYOUT(sidr_req_fields),
		[CM_ATTR_SIDR_REP - CM_ATTR_REQ] = LAYOUT(sidr_rep_fields),
		[CM_ATTR_LAP - CM_ATTR_REQ] = LAYOUT(lap_fields),
		[CM_ATTR_APR - CM_ATTR_REQ] = LAYOUT(apr_fields),
	};

	if (attr < CM_ATTR_REQ || attr > CM_ATTR_APR)
		return NULL;
	return &layouts[attr - CM_ATTR_REQ];
}

/* The @width bits at bit @pos of @d (big-endian, bit 0 = MSB of byte 0). */
static uint64_t get_bits(const uint8_t *d, unsigned int pos, unsigned int width)
{
	uint64_t v = 0;

	for (unsigned int i = pos; i < pos + width; i++)
		v = v << 1 | ((d[i / 8] >> (7 - i % 8)) & 1);
	return v;
}

static void put_bits(uint8_t *d, unsigned int pos, unsigned int width, uint64_t v)
{
	for (unsigned int i = pos + width; i-- > pos; v >>= 1) {
		uint8_t mask = (uint8_t)(1u << (7 - i % 8));

		d[i / 8] = (uint8_t)((v & 1) ? d[i / 8] | mask : d[i / 8] & ~mask);
	}
}

static uint64_t load(const uint8_t *p, uint16_t size)
{
	switch (size) {
	case 1:
		return *p;
	case 2:
		return *(const uint16_t *)(const void *)p;
	case 4:
		return *(const uint32_t *)(const void *)p;
	default:
		return *(const uint64_t *)(const void *)p;
	}
}

static void store(uint8_t *p, uint16_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)(void *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)(void *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)(void *)p = v;
	}
}

static void read_fields(const struct layout *l, const uint8_t *data, void *msg)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct field *f = &l->fields[i];
		uint8_t *m = (uint8_t *)msg + f->member;

		if (f->width)
			store(m, f->size, get_bits(data, f->off * 8u + f->bit, f->width));
		else
			memcpy(m, data + f->off, f->size);
	}
}

/* Values wider than their field are cut to it: the field holds what fits. */
static void write_fields(const struct layout *l, const void *msg, uint8_t *data)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct field *f = &l->fields[i];
		const uint8_t *m = (const uint8_t *)msg + f->member;

		if (f->width)
			put_bits(data, f->off * 8u + f->bit, f->width, load(m, f->size));
		else
			memcpy(data + f->off, m, f->size);
	}
}

const char *cm_err_str(enum cm_err err)
{
	switch (err) {
	case CM_OK:
		return "ok";
	case CM_ERR_SHORT:
		return "MAD shorter than 256 bytes";
	case CM_ERR_BASE_VERSION:
		return "MAD base version is not 1";
	case CM_ERR_CLASS:
		return "management class is not CM (0x07)";
	case CM_ERR_CLASS_VERSION:
		return "CM class version is not 2";
	case CM_ERR_METHOD:
		return "MAD method is not Send";
	case CM_ERR_ATTR:
		return "attribute is not a CM message";
	}
	return "unknown error";
}

enum cm_err cm_decode(const uint8_t *mad, size_t len, struct cm_msg *out)
{
	const struct layout *l;
	struct cm_mad_hdr *h = &out->hdr;

	if (len < CM_MAD_LEN)
		return CM_ERR_SHORT;
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = (uint16_t)get_bits(mad, 4 * 8, 16);
	h->class_specific = (uint16_t)get_bits(mad, 6 * 8, 16);
	h->tid = get_bits(mad, 8 * 8, 64);
	h->attr_id = (uint16_t)get_bits(mad, 16 * 8, 16);
	h->attr_mod = (uint32_t)get_bits(mad, 20 * 8, 32);
	if (h->base_version != 1)
		return CM_ERR_BASE_VERSION;
	if (h->mgmt_class != CM_MGMT_CLASS)
		return CM_ERR_CLASS;
	if (h->class_version != CM_CLASS_VER)
		return CM_ERR_CLASS_VERSION;
	if (h->method != CM_METHOD_SEND)
		return CM_ERR_METHOD;
	l = layout_of(h->attr_id);
	if (!l)
		return CM_ERR_ATTR;
	memset(&out->u, 0, sizeof(out->u));
	read_fields(l, mad + CM_MAD_HDR_LEN, &out->u);
	return CM_OK;
}

size_t cm_encode(const struct cm_msg *m, uint8_t mad[CM_MAD_LEN])
{
	const struct cm_mad_hdr *h = &m->hdr;
	const struct layout *l = layout_of(h->attr_id);

	if (!l)
		return 0;
	memset(mad, 0, CM_MAD_LEN);
	mad[0] = h->base_version;
	mad[1] = h->mgmt_class;
	mad[2] = h->class_version;
	mad[3] = h->method;
	put_bits(mad, 4 * 8, 16, h->status);
	put_bits(mad, 6 * 8, 16, h->class_specific);
	put_bits(mad, 8 * 8, 64, h->tid);
	put_bits(mad, 16 * 8, 16, h->attr_id);
	put_bits(mad, 20 * 8, 32, h->attr_mod);
	write_fields(l, &m->u, mad + CM_MAD_HDR_LEN);
	return CM_MAD_LEN;
}

struct cm_mad_hdr cm_hdr(enum cm_attr attr, uint64_t tid)
{
	return (struct cm_mad_hdr){.base_version = 1,
				   .mgmt_class = CM_MGMT_CLASS,
				   .class_version = CM_CLASS_VER,
				   .method = CM_METHOD_SEND,
				   .tid = tid,
				   .attr_id = (uint16_t)attr};
}

uint64_t cm_service_id(enum cm_port_space ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

bool cm_service_split(uint64_t sid, enum cm_port_space *ps, uint16_t *port)
{
	uint64_t space = (sid & CM_IP_PS_MASK) >> 16;

	if (space != CM_PS_TCP && space != CM_PS_UDP && space != CM_PS_IB && space != CM_PS_IPOIB)
		return false;
	*ps = (enum cm_port_space)space;
	*port = (uint16_t)sid;
	return true;
}

/* §4.8: an IPv4 address is 12 zero bytes and the address, not the ::ffff: form of GIDs. */
static void put_addr(uint8_t *p, const uint8_t gid[16], bool v4)
{
	memset(p, 0, 16);
	if (v4)
		memcpy(p + 12, gid + 12, 4);
	else
		memcpy(p, gid, 16);
}

static void get_addr(uint8_t gid[16], const uint8_t *p, bool v4)
{
	static const uint8_t mapped[12] = {[10] = 0xff, 0xff};

	if (v4) {
		memcpy(gid, mapped, 12);
		memcpy(gid + 12, p + 12, 4);
	} else {
		memcpy(gid, p, 16);
	}
}

void cma_hdr_encode(const struct cma_hdr *h, uint8_t pd[CM_HDR_LEN])
{
	bool v4 = h->ip_version == 4;

	pd[0] = 0; /* CMA version */
	pd[1] = (uint8_t)(h->ip_version << 4);
	pd[2] = (uint8_t)(h->src_port >> 8);
	pd[3] = (uint8_t)h->src_port;
	put_addr(pd + 4, h->src, v4);
	put_addr(pd + 20, h->dst, v4);
}

int cma_hdr_decode(const uint8_t pd[CM_HDR_LEN], struct cma_hdr *h)
{
	uint8_t ipv = pd[1] >> 4;

	if (pd[0] != 0 || (ipv != 4 && ipv != 6))
		return -1;
	h->ip_version = ipv;
	h->src_port = (uint16_t)(pd[2] << 8 | pd[3]);
	get_addr(h->src, pd + 4, ipv == 4);
	get_addr(h->dst, pd + 20, ipv == 4);
	return 0;
}
