/* SPDX-License-Identifier: MIT */
/*
 * uroce's extras beyond the verbs and rdma_cm APIs: its version, the capture file of this
 * process, and what its engine did (statistics).
 *
 * These functions live in uroce's libibverbs.so.1 at the version node UROCE_1.0. A program
 * that links against them (pkg-config uroce, or find_package(uroce)) runs only on uroce; one
 * that must also run on the system's rdma-core (uroce-run --backend verbs, real hardware)
 * looks them up at run time instead:
 *
 *	int (*get)(struct uroce_stats *, size_t) = dlsym(RTLD_DEFAULT, "uroce_get_stats");
 *	if (get) ... // on uroce
 *
 * None of them starts the engine: before the process opens a uroce device, the statistics are
 * zeros and there is no capture file.
 */
#ifndef UROCE_UROCE_H
#define UROCE_UROCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library in use, "MAJOR.MINOR.PATCH". Never fails. */
const char *uroce_version(void);

/*
 * The capture file this process writes (UROCE_PCAP, with %p replaced by the process id), or
 * NULL when it captures nothing: no UROCE_PCAP, the engine not started yet, or the file could
 * not be opened (the engine then logged why). The string lives as long as the process.
 */
const char *uroce_capture_path(void);

/*
 * Counters of this process's engine since it started, over all its devices. Fields may be
 * added at the end in later versions; a caller passes the size it was compiled with.
 */
struct uroce_stats {
	/* Frames */
	uint64_t tx_packets; /* RoCE packets sent */
	uint64_t rx_packets; /* RoCE packets received */
	uint64_t forwarded;  /* received for another process of the host and handed on */
	/* Received and dropped (each counted once, by the first reason found) */
	uint64_t rx_malformed;    /* headers that do not decode (wrong version, length, opcode) */
	uint64_t rx_bad_icrc;     /* the ICRC does not match */
	uint64_t rx_no_qp;        /* no queue pair with that number in this process */
	uint64_t rx_unsupported;  /* to QP 1 but not a MAD this process handles */
	uint64_t rx_buffers_lost; /* lost because receive buffers were full (socket drops) */
	/* UROCE_FAULTS */
	uint64_t fault_lost, fault_duplicated, fault_corrupted, fault_reordered;
	/* Queue pairs, alive and destroyed (what a HCA's hw_counters show) */
	uint64_t retransmits;   /* go-back-N restarts: timeout, sequence NAK or RNR NAK */
	uint64_t timeouts;      /* local ACK timeouts */
	uint64_t seq_naks_sent; /* PSN sequence error NAKs sent */
	uint64_t rnr_naks_sent; /* RNR NAKs sent (no receive WQE) */
	uint64_t rx_duplicate;  /* duplicate requests, answered again */
	uint64_t rx_out_of_seq; /* requests beyond the expected PSN */
};

/*
 * Fill @out with the counters; @size is sizeof(*out) as the caller knows it (fields beyond it
 * are not written, and fields the library does not know are zeroed).
 * Returns 0, or EINVAL when @out is NULL or @size is smaller than the first field.
 */
int uroce_get_stats(struct uroce_stats *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif
