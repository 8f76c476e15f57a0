/* SPDX-License-Identifier: MIT */
#include "fabric/pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/nocancel.h"
#include "transport/wire.h"

/* Ethernet + IPv6 + UDP headers, the longest header a frame gets. */
#define HDR_MAX (ETH_HLEN + ROCE_IPV6_HDR_LEN + ROCE_UDP_HDR_LEN)
/* The largest frame: an IPv6 packet with the largest payload length (RFC 8200). */
#define FRAME_MAX (ETH_HLEN + ROCE_IPV6_HDR_LEN + 0xFFFF)

/*
 * libpcap's largest snapshot length (what tcpdump uses), so that even a
 * 65535-byte IP packet plus its Ethernet header is recorded untruncated.
 */
#define SNAPLEN 262144

#define NSEC_PER_SEC 1000000000u

/* A FIFO's pipe buffer, asked for (fs.pipe-max-size caps it for the unprivileged). */
#define PIPE_BYTES (1u << 20)

/*
 * A FIFO target (a live view: tshark -i FIFO). Opened read-write and non-blocking, so that
 * opening never waits for a reader and writing never raises SIGPIPE when the reader goes (this
 * process holds a read end too). libpcap writes each record through an unbuffered stream into
 * the stage, and the record goes into the pipe (pipe_commit); when the pipe is full, records
 * are dropped whole and counted: a slow reader costs frames, never a stalled NIC or a torn
 * record.
 */
#define RECORD_MAX (16 + FRAME_MAX) /* a pcap record header and the largest frame */
struct pipe_out {
	int fd;
	uint8_t *stage;
	size_t len, cap;
	uint8_t carry[RECORD_MAX]; /* the rest of a record the pipe took in part */
	size_t carry_len, carry_off;
	uint64_t slow; /* records dropped for want of room */
};

struct uroce_pcap {
	pthread_mutex_t lock; /* serialises the frame buffer and the dumper */
	pcap_t *pcap;         /* a "dead" handle: only describes the file format */
	pcap_dumper_t *dumper;
	struct pipe_out *pipe; /* a FIFO target, or NULL */
	bool failed;           /* an I/O error happened; nothing more is written */
	_Atomic uint64_t frames;
	_Atomic uint64_t dropped;
	char *path;               /* for the error message */
	uint8_t frame[FRAME_MAX]; /* pcap_dump takes one contiguous frame */
};

static ssize_t stage_write(void *cookie, const char *buf, size_t size)
{
	struct pipe_out *po = cookie;

	if (po->len + size > po->cap) {
		size_t cap = po->len + size + 4096;
		uint8_t *stage = realloc(po->stage, cap);

		if (!stage) {
			errno = ENOMEM;
			return -1;
		}
		po->stage = stage;
		po->cap = cap;
	}
	memcpy(po->stage + po->len, buf, size);
	po->len += size;
	return (ssize_t)size;
}

static int stage_close(void *cookie)
{
	struct pipe_out *po = cookie;
	int ret = close(po->fd);

	free(po->stage);
	free(po);
	return ret;
}

/* Write what is left of a record the pipe took in part. Returns 0 or an errno. */
static int pipe_push_carry(struct pipe_out *po)
{
	ssize_t n;

	if (!po->carry_len)
		return 0;
	n = nc_write(po->fd, po->carry + po->carry_off, po->carry_len - po->carry_off);
	if (n < 0)
		return errno == EAGAIN ? 0 : errno;
	po->carry_off += (size_t)n;
	if (po->carry_off == po->carry_len)
		po->carry_len = po->carry_off = 0;
	return 0;
}

/*
 * Move the staged record into the pipe: whole, or, if the pipe takes only part of it, the rest
 * later (pipe_push_carry) before anything else; while such a rest waits, or the pipe is full,
 * records are dropped whole. Returns 0 or an errno.
 */
static int pipe_commit(struct pipe_out *po)
{
	size_t len = po->len;
	ssize_t n;
	int err = pipe_push_carry(po);

	po->len = 0;
	if (err || !len)
		return err;
	if (po->carry_len) {
		po->slow++;
		return 0;
	}
	n = nc_write(po->fd, po->stage, len);
	if (n < 0) {
		if (errno != EAGAIN)
			return errno;
		po->slow++;
	} else if ((size_t)n < len) {
		po->carry_len = len - (size_t)n;
		po->carry_off = 0;
		memcpy(po->carry, po->stage + n, po->carry_len);
	}
	return 0;
}

/* Open a FIFO target (struct pipe_out) as a stream for libpcap. */
static FILE *open_pipe(const char *path, struct pipe_out **out)
{
	static const cookie_io_functions_t io = {.write = stage_write, .close = stage_close};
	struct pipe_out *po = calloc(1, sizeof(*po));
	FILE *file;

	if (!po)
		return NULL;
	po->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (po->fd < 0) {
		free(po);
		return NULL;
	}
	fcntl(po->fd, F_SETPIPE_SZ, PIPE_BYTES); /* best effort: the default is 64 KiB */
	file = fopencookie(po, "w", io);
	if (!file) {
		stage_close(po);
		return NULL;
	}
	setvbuf(file, NULL, _IONBF, 0);
	*out = po;
	return file;
}

/* A recursive mutex: a holder (uroce_pcap_hold) records under its hold. */
static void init_lock(pthread_mutex_t *lock)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(lock, &attr);
	pthread_mutexattr_destroy(&attr);
}

struct uroce_pcap *uroce_pcap_open(const char *path)
{
	struct uroce_pcap *cap = calloc(1, sizeof(*cap));
	FILE *file = NULL;
	struct stat st;
	int err = ENOMEM;

	if (!cap)
		return NULL;
	cap->path = strdup(path);
	cap->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, SNAPLEN,
							 PCAP_TSTAMP_PRECISION_NANO);
	if (!cap->path || !cap->pcap)
		goto fail;
	/*
	 * Open the stream ourselves rather than with pcap_dump_open(), so that
	 * errno is fopen's own, and a FIFO gets its stream (struct pipe_out).
	 */
	if (!stat(path, &st) && S_ISFIFO(st.st_mode))
		file = open_pipe(path, &cap->pipe);
	else
		file = fopen(path, "wbec");
	if (!file) {
		err = errno;
		goto fail;
	}
	errno = 0;
	cap->dumper = pcap_dump_fopen(cap->pcap, file);
	if (!cap->dumper || (cap->pipe && (err = pipe_commit(cap->pipe)))) {
		/* pcap_dump_fopen() closes @file when the header cannot be written. */
		if (cap->dumper)
			pcap_dump_close(cap->dumper);
		else
			err = errno ? errno : EIO;
		goto fail;
	}
	init_lock(&cap->lock);
	return cap;

fail:
	if (cap->pcap)
		pcap_close(cap->pcap);
	free(cap->path);
	free(cap);
	errno = err;
	return NULL;
}

/* Remember the first I/O error and report it once. Called with the lock held. */
static void pcap_fail(struct uroce_pcap *cap, int err)
{
	char buf[128];

	if (cap->failed)
		return;
	cap->failed = true;
	fprintf(stderr, "uroce: capture %s: write failed: %s; further frames are dropped\n",
		cap->path, strerror_r(err ? err : EIO, buf, sizeof(buf)));
}

/* The synthetic MAC of an address: 02:00 and the GID's last four bytes. */
static void mac_from_gid(uint8_t mac[ETH_ALEN], const uint8_t gid[16])
{
	mac[0] = 0x02; /* locally administered, unicast */
	mac[1] = 0x00;
	memcpy(mac + 2, gid + 12, 4);
}

int uroce_pcap_write(struct uroce_pcap *cap, const struct roce_ipudp *f, const uint8_t *roce,
		     size_t len, uint64_t ts_ns)
{
	uint8_t hdr[HDR_MAX];
	struct pcap_pkthdr ph;
	size_t ip_udp_len, hdr_len;
	int ret = 0, err;

	if (!roce) {
		errno = EINVAL;
		return -1;
	}
	ip_udp_len = roce_ipudp_write(hdr + ETH_HLEN, f, roce, len, ROCE_UDP_CSUM_FULL);
	if (!ip_udp_len) {
		errno = EMSGSIZE;
		return -1;
	}
	mac_from_gid(hdr, f->dgid);
	mac_from_gid(hdr + ETH_ALEN, f->sgid);
	roce_put16(hdr + 2 * ETH_ALEN, roce_ipudp_is_v4(f) ? ETH_P_IP : ETH_P_IPV6);
	hdr_len = ETH_HLEN + ip_udp_len;

	ph.ts.tv_sec = (time_t)(ts_ns / NSEC_PER_SEC);
	/* Nanoseconds: the handle was opened with PCAP_TSTAMP_PRECISION_NANO. */
	ph.ts.tv_usec = (suseconds_t)(ts_ns % NSEC_PER_SEC);
	ph.caplen = ph.len = (bpf_u_int32)(hdr_len + len);

	pthread_mutex_lock(&cap->lock);
	if (!cap->failed) {
		memcpy(cap->frame, hdr, hdr_len);
		memcpy(cap->frame + hdr_len, roce, len);
		errno = 0;
		pcap_dump((u_char *)cap->dumper, &ph, cap->frame);
		/* pcap_dump() returns nothing: stdio keeps the error. */
		if (ferror(pcap_dump_file(cap->dumper)))
			pcap_fail(cap, errno);
		else if (cap->pipe && (err = pipe_commit(cap->pipe)))
			pcap_fail(cap, err);
	}
	if (cap->failed) {
		atomic_fetch_add_explicit(&cap->dropped, 1, memory_order_relaxed);
		ret = -1;
	} else {
		atomic_fetch_add_explicit(&cap->frames, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&cap->lock);
	if (ret)
		errno = EIO;
	return ret;
}

/* Flush with the lock held; sets cap->failed on error. */
static int pcap_flush_locked(struct uroce_pcap *cap)
{
	int err;

	if (!cap->failed && pcap_dump_flush(cap->dumper) != 0)
		pcap_fail(cap, errno);
	else if (!cap->failed && cap->pipe && (err = pipe_push_carry(cap->pipe)))
		pcap_fail(cap, err);
	return cap->failed ? -1 : 0;
}

void uroce_pcap_hold(struct uroce_pcap *cap)
{
	pthread_mutex_lock(&cap->lock);
}

void uroce_pcap_release(struct uroce_pcap *cap)
{
	pthread_mutex_unlock(&cap->lock);
}

int uroce_pcap_flush(struct uroce_pcap *cap)
{
	int ret;

	pthread_mutex_lock(&cap->lock);
	ret = pcap_flush_locked(cap);
	pthread_mutex_unlock(&cap->lock);
	if (ret)
		errno = EIO;
	return ret;
}

uint64_t uroce_pcap_frames(const struct uroce_pcap *cap)
{
	return atomic_load_explicit(&cap->frames, memory_order_relaxed);
}

uint64_t uroce_pcap_dropped(const struct uroce_pcap *cap)
{
	return atomic_load_explicit(&cap->dropped, memory_order_relaxed);
}

int uroce_pcap_close(struct uroce_pcap *cap)
{
	int ret;

	if (!cap)
		return 0;
	pthread_mutex_lock(&cap->lock);
	ret = pcap_flush_locked(cap);
	pthread_mutex_unlock(&cap->lock);
	if (cap->pipe && cap->pipe->slow)
		fprintf(stderr,
			"uroce: capture %s: %llu frames dropped: the reader did not keep up\n",
			cap->path, (unsigned long long)cap->pipe->slow);
	/* Everything is flushed: closing can no longer lose buffered frames. */
	pcap_dump_close(cap->dumper);
	pcap_close(cap->pcap);
	pthread_mutex_destroy(&cap->lock);
	free(cap->path);
	free(cap);
	if (ret)
		errno = EIO;
	return ret;
}
