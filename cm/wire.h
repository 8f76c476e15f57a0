/* SPDX-License-Identifier: MIT */
/*
 * The IB CM on the wire (PROTOCOL.md §4): the 24-byte MAD common header and every CM message
 * of class 0x07, version 2, as plain structs with host-order fields, and the rdma_cm
 * conventions carried inside them (service IDs, the 36-byte cma header at the start of REQ and
 * SIDR_REQ private data).
 *
 * A CM MAD is 256 bytes: the common header, then 232 bytes of message data laid out as the
 * IBTA tables give them (REQ table 106 ... SIDR_REP table 120). Encoding writes every field
 * and zeros everything reserved; decoding reads every field and ignores reserved bits. LAP and
 * APR are decoded (and encoded, for tests) though rdma_cm never sends them over RoCE.
 *
 * Pure code: no allocation, no I/O.
 */
#ifndef UROCE_CM_WIRE_H
#define UROCE_CM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_MAD_LEN     256
#define CM_MAD_HDR_LEN 24
#define CM_DATA_LEN    (CM_MAD_LEN - CM_MAD_HDR_LEN)
#define CM_QP1_QKEY    0x80010000u /* QP 1's well-known Q_Key (§4.1) */
#define CM_MGMT_CLASS  0x07
#define CM_CLASS_VER   2
#define CM_METHOD_SEND 0x03
#define CM_UDP_QKEY    0x01234567u /* rdma_cm's default UD Q_Key (RDMA_UDP_QKEY) */

/* Attribute IDs (§4.3). */
enum cm_attr {
	CM_ATTR_CLASS_PORT_INFO = 0x0001,
	CM_ATTR_REQ = 0x0010,
	CM_ATTR_MRA = 0x0011,
	CM_ATTR_REJ = 0x0012,
	CM_ATTR_REP = 0x0013,
	CM_ATTR_RTU = 0x0014,
	CM_ATTR_DREQ = 0x0015,
	CM_ATTR_DREP = 0x0016,
	CM_ATTR_SIDR_REQ = 0x0017,
	CM_ATTR_SIDR_REP = 0x0018,
	CM_ATTR_LAP = 0x0019,
	CM_ATTR_APR = 0x001A,
};

/* Private data of each message (§4.5), and the other fixed-size byte fields. */
enum {
	CM_REQ_PRIVATE = 92,
	CM_MRA_PRIVATE = 222,
	CM_REJ_PRIVATE = 148,
	CM_REJ_ARI = 72,
	CM_REP_PRIVATE = 196,
	CM_RTU_PRIVATE = 224,
	CM_DREQ_PRIVATE = 220,
	CM_DREP_PRIVATE = 224,
	CM_LAP_PRIVATE = 168,
	CM_APR_PRIVATE = 148,
	CM_APR_INFO = 72,
	CM_SIDR_REQ_PRIVATE = 216,
	CM_SIDR_REP_PRIVATE = 136,
	CM_SIDR_REP_INFO = 72,
};

/* REJ reasons used by rdma_cm (§4.6; the field is 16 bits and carries any of them). */
enum cm_rej_reason {
	CM_REJ_NO_QP = 1,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_CONSUMER = 28,
	CM_REJ_VENDOR_OPTION = 35, /* vendor option not supported (ECE) */
};

/* "Message REJected / MRAed" (REJ and MRA byte 8 bits 7:6). */
enum cm_msg_ref { CM_MSG_REQ = 0, CM_MSG_REP = 1, CM_MSG_OTHER = 2 };

/* SIDR_REP status. */
enum cm_sidr_status {
	CM_SIDR_OK = 0,
	CM_SIDR_UNSUPPORTED = 1, /* no listener on the service ID */
	CM_SIDR_REJECT = 2,
	CM_SIDR_NO_QP = 3,
	CM_SIDR_REDIRECT = 4,
	CM_SIDR_CLASS_VERSION = 5,
};

struct cm_mad_hdr {
	uint8_t base_version; /* 1 */
	uint8_t mgmt_class;   /* CM_MGMT_CLASS */
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id; /* enum cm_attr */
	uint32_t attr_mod;
};

/* A path as REQ (primary, alternate) and LAP carry it. */
struct cm_path {
	uint16_t local_lid, remote_lid; /* 0xFFFF (permissive) on RoCEv2 */
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits */
	uint8_t traffic_class, hop_limit;
	uint8_t sl;                /* 4 bits */
	uint8_t subnet_local;      /* 1 bit */
	uint8_t local_ack_timeout; /* 5 bits */
};

struct cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* 24 bits (ECE) */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn; /* 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;               /* 24 bits */
	uint8_t remote_cm_response_timeout; /* 5 bits */
	uint8_t transport_type;             /* 2 bits: 0 RC, 1 UC, 3 extended */
	uint8_t e2e_flow_control;           /* 1 bit */
	uint32_t starting_psn;              /* 24 bits */
	uint8_t local_cm_response_timeout;  /* 5 bits */
	uint8_t retry_count;                /* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;           /* 4 bits: IBV_MTU_* */
	uint8_t rdc_exists;         /* 1 bit */
	uint8_t rnr_retry_count;    /* 3 bits */
	uint8_t max_cm_retries;     /* 4 bits */
	uint8_t srq;                /* 1 bit */
	uint8_t ext_transport_type; /* 3 bits: 1 XRC */
	struct cm_path primary, alternate;
	uint8_t sap_supported; /* 1 bit */
	uint8_t private_data[CM_REQ_PRIVATE];
};

struct cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t message;         /* 2 bits: enum cm_msg_ref */
	uint8_t service_timeout; /* 5 bits */
	uint8_t private_data[CM_MRA_PRIVATE];
};

struct cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t message; /* 2 bits: enum cm_msg_ref */
	uint8_t ari_len; /* 7 bits */
	uint16_t reason; /* enum cm_rej_reason */
	uint8_t ari[CM_REJ_ARI];
	uint8_t private_data[CM_REJ_PRIVATE];
};

struct cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;    /* 24 bits */
	uint32_t local_eecn;   /* 24 bits */
	uint32_t starting_psn; /* 24 bits */
	uint8_t vendor_id[3];  /* ECE: bits 23..16, 15..8, 7..0 */
	uint8_t responder_resources, initiator_depth;
	uint8_t target_ack_delay;  /* 5 bits */
	uint8_t failover_accepted; /* 2 bits */
	uint8_t e2e_flow_control;  /* 1 bit */
	uint8_t rnr_retry_count;   /* 3 bits */
	uint8_t srq;               /* 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data[CM_REP_PRIVATE];
};

struct cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_RTU_PRIVATE];
};

struct cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: the peer's QPN (or EECN) */
	uint8_t private_data[CM_DREQ_PRIVATE];
};

struct cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[CM_DREP_PRIVATE];
};

struct cm_lap {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;                /* 24 bits */
	uint8_t remote_cm_response_timeout; /* 5 bits */
	struct cm_path alternate;
	uint8_t private_data[CM_LAP_PRIVATE];
};

struct cm_apr {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t info_len;
	uint8_t status;
	uint8_t info[CM_APR_INFO];
	uint8_t private_data[CM_APR_PRIVATE];
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[CM_SIDR_REQ_PRIVATE];
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status; /* enum cm_sidr_status */
	uint8_t info_len;
	uint16_t vendor_id_hi; /* ECE vendor ID bits 23..8 */
	uint32_t qpn;          /* 24 bits */
	uint8_t vendor_id_lo;  /* bits 7..0 */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[CM_SIDR_REP_INFO];
	uint8_t private_data[CM_SIDR_REP_PRIVATE];
};

/* A CM MAD: the header and the message its attribute ID names. */
struct cm_msg {
	struct cm_mad_hdr hdr;
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
		struct cm_lap lap;
		struct cm_apr apr;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	} u;
};

/* What cm_decode() found wrong, one reason each. */
enum cm_err {
	CM_OK = 0,
	CM_ERR_SHORT,         /* fewer than CM_MAD_LEN bytes */
	CM_ERR_BASE_VERSION,  /* base version is not 1 */
	CM_ERR_CLASS,         /* management class is not CM_MGMT_CLASS */
	CM_ERR_CLASS_VERSION, /* class version is not 2 */
	CM_ERR_METHOD,        /* not Send */
	CM_ERR_ATTR,          /* an attribute that is no CM message */
};

/* A short description of @err ("MAD shorter than 256 bytes", ...). */
const char *cm_err_str(enum cm_err err);

/*
 * Decode the CM MAD at @mad (@len bytes; a longer buffer's tail is ignored) into @out: the
 * header, and the message for CM_ATTR_REQ .. CM_ATTR_APR. Returns CM_OK or the first check that
 * failed, in the order of enum cm_err (a Linux CM drops such a MAD the same way, §4.10).
 */
enum cm_err cm_decode(const uint8_t *mad, size_t len, struct cm_msg *out);

/*
 * Encode @m into @mad (CM_MAD_LEN bytes): header fields as given, the message by
 * m->hdr.attr_id, reserved bits zero. Returns CM_MAD_LEN, or 0 if the attribute ID is no CM
 * message (nothing written).
 */
size_t cm_encode(const struct cm_msg *m, uint8_t mad[CM_MAD_LEN]);

/* A header for a CM message of @attr with transaction ID @tid (version 1, class 7 v2, Send). */
struct cm_mad_hdr cm_hdr(enum cm_attr attr, uint64_t tid);

/* rdma_cm (§4.8): port spaces, service IDs and the cma header. */
enum cm_port_space {
	CM_PS_IPOIB = 0x0002,
	CM_PS_TCP = 0x0106,
	CM_PS_UDP = 0x0111,
	CM_PS_IB = 0x013F,
};
#define CM_IP_PS_MASK 0xFFFFFFFFFFFF0000ull

/* (port space << 16) + port. */
uint64_t cm_service_id(enum cm_port_space ps, uint16_t port);

/*
 * The port space and port of an rdma_cm service ID: true if @sid is (port space << 16) + port
 * for one of the port spaces above, else false. TCP, UDP and IB IDs lie in the RDMA IP CM
 * service range 0x0000000001xxxxxx (§4.8); an IPoIB one (0x0002) lies below it, as the kernel
 * forms it the same way.
 */
bool cm_service_split(uint64_t sid, enum cm_port_space *ps, uint16_t *port);

#define CM_HDR_LEN 36

/* The cma header (PROTOCOL.md §4.8): addresses as GIDs (IPv4-mapped for IPv4). */
struct cma_hdr {
	uint8_t ip_version; /* 4 or 6 */
	uint16_t src_port;
	uint8_t src[16], dst[16];
};

/* Write @h into the first CM_HDR_LEN bytes of @pd. @h's addresses must match its version. */
void cma_hdr_encode(const struct cma_hdr *h, uint8_t pd[CM_HDR_LEN]);

/*
 * Read the cma header at the start of @pd. Returns 0, or -1 if its version is not 0 or its IP
 * version is neither 4 nor 6 (a Linux listener rejects such a REQ, §4.10).
 */
int cma_hdr_decode(const uint8_t pd[CM_HDR_LEN], struct cma_hdr *h);

#endif
