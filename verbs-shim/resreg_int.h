/* SPDX-License-Identifier: MIT */
/*
 * The layout of a registry file (resreg.h), which its process writes (resreg.c) and others
 * read (resreg_read.c). A file of another layout has another magic or version and is skipped.
 *
 * Every field another process may read while it changes is read and written with __atomic
 * builtins: the counts and the table sizes one by one, a QP's record under its sequence count.
 * The file is sized for UROCE_MAX_QP records, which tmpfs backs only as far as they are used
 * (records are taken lowest first; readers look below qp_end).
 */
#ifndef UROCE_VERBS_SHIM_RESREG_INT_H
#define UROCE_VERBS_SHIM_RESREG_INT_H

#include <stdint.h>

#include "verbs-shim/caps.h"

#define RESREG_MAGIC   0x6765727365636f72ull /* "rocesreg" */
#define RESREG_VERSION 2
#define RESREG_PREFIX  "uroce-res-"
/* Devices one process may hold objects on: one per interface it uses. */
#define RESREG_DEVS 64
/* A device's name: "uroce_" and an interface name (IFNAMSIZ) fit. */
#define RESREG_NAME 32

struct resreg_hdr {
	uint64_t magic; /* stored last (release): the rest is set once it reads right */
	uint32_t version;
	uint32_t size; /* sizeof(struct resreg_file) */
	uint32_t pid, uid;
	uint64_t start_time;           /* /proc/<pid>/stat field 22 */
	uint64_t netns_dev, netns_ino; /* /proc/self/ns/net of the writer */
	uint64_t pidns_dev, pidns_ino; /* /proc/self/ns/pid */
	uint32_t udp_port;             /* its RoCE UDP port: processes of one port are one host */
	uint32_t ndevs;                /* devices named so far: dev[0 .. ndevs) (release) */
	uint32_t qp_end;               /* records in use lie below it */
};

struct resreg_dev {
	char name[RESREG_NAME]; /* set before ndevs counts it */
	uint64_t count[UROCE_RES_NUM];
};

/* One QP: struct uroce_res_qp, each field a 32-bit word. */
struct resreg_qp {
	uint32_t seq;  /* odd while the record changes; a reader's copy is whole if it is even and
			* the same before and after */
	uint32_t used; /* 1: a QP's; 0: free */
	uint32_t dev;  /* index in dev[] */
	uint32_t lqpn, rqpn, rq_psn, sq_psn, pdn, has_pd, port, type, state, mig;
};

struct resreg_file {
	struct resreg_hdr hdr;
	struct resreg_dev dev[RESREG_DEVS];
	struct resreg_qp qp[UROCE_MAX_QP];
};

/*
 * This process's RoCE UDP port (UROCE_UDP_PORT, fabric/config.h; default 4791): uroce's
 * processes meet per port (fabric/rdv.h), so a port is a host of its own, and a reader lists
 * the processes of its own port only. A bad value (which uroce-run and the library refuse
 * before any of this runs) counts as the default.
 */
uint16_t resreg_udp_port(void);

/* The namespace /proc/self/ns/@which ("net", "pid") of this process: its device and inode.
 * Returns 0 or an errno value. */
int resreg_ns(const char *which, uint64_t *dev, uint64_t *ino);

#endif
