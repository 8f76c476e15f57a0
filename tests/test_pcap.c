/* SPDX-License-Identifier: MIT */
/*
 * The capture tap: frames written with uroce_pcap_write() are read back
 * with libpcap and every header byte is checked against values computed
 * here, independently of the transport code (checksums by RFC 1071).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/pcap.h"

#define ETH_LEN 14
#define NSEC    1000000000ull

static const uint8_t A4[4] = {10, 1, 2, 3};
static const uint8_t B4[4] = {172, 16, 254, 9};
static const uint8_t A6[16] = {0x20, 0x01, 0x0d, 0xb8, [12] = 0xa1, 0xa2, 0xa3, 0xa4};
static const uint8_t B6[16] = {0xfd, 0x00, [11] = 0x01, 0xb1, 0xb2, 0xb3, 0xb4};

static char path[64];

static void make_path(void)
{
	int fd;

	strcpy(path, "/tmp/uroce-test-pcap-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void remove_path(void)
{
	unlink(path);
}

TestSuite(pcap, .init = make_path, .fini = remove_path);

static struct roce_ipudp flow_v4(void)
{
	struct roce_ipudp f = {.sport = 0xC123,
			       .dport = 4791,
			       .tos = 0x02,
			       .ttl = 63,
			       .ip_id = 0x1234,
			       .ip_frag = ROCE_IPV4_DF};

	roce_gid_from_v4(f.sgid, A4);
	roce_gid_from_v4(f.dgid, B4);
	return f;
}

static struct roce_ipudp flow_v6(void)
{
	struct roce_ipudp f = {
		.sport = 0xC8CC, .dport = 4791, .tos = 0x68, .ttl = 7, .flow_label = 0x1C8CB};

	memcpy(f.sgid, A6, 16);
	memcpy(f.dgid, B6, 16);
	return f;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 17 + (i >> 8));
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* RFC 1071 one's complement sum of 16-bit big-endian words, not folded. */
static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)sum;
}

/* A read-back capture: every record, with its header. */
struct capture {
	size_t n;
	struct pcap_pkthdr hdr[1024];
	uint8_t *data[1024];
	int linktype;
};

static void capture_read(struct capture *c, const char *file)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, err);
	struct pcap_pkthdr *h;
	const u_char *d;
	int r;

	cr_assert_not_null(p, "pcap_open_offline: %s", err);
	c->linktype = pcap_datalink(p);
	c->n = 0;
	while ((r = pcap_next_ex(p, &h, &d)) == 1) {
		cr_assert_lt(c->n, 1024);
		c->hdr[c->n] = *h;
		c->data[c->n] = malloc(h->caplen);
		memcpy(c->data[c->n], d, h->caplen);
		c->n++;
	}
	cr_assert_eq(r, PCAP_ERROR_BREAK, "pcap_next_ex: %s", pcap_geterr(p));
	pcap_close(p);
}

static void capture_free(struct capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->data[i]);
}

static void check_mac(const uint8_t *mac, const uint8_t *addr4)
{
	uint8_t want[6] = {0x02, 0x00, addr4[0], addr4[1], addr4[2], addr4[3]};

	cr_assert_arr_eq(mac, want, 6);
}

/* Check one IPv4 frame completely: Ethernet, IP, UDP and the payload. */
static void check_v4(const uint8_t *fr, size_t frame_len, const struct roce_ipudp *f,
		     const uint8_t *roce, size_t len)
{
	const uint8_t *ip = fr + ETH_LEN, *udp = ip + 20;
	uint32_t sum;

	cr_assert_eq(frame_len, ETH_LEN + 20 + 8 + len);
	check_mac(fr, B4);
	check_mac(fr + 6, A4);
	cr_assert_eq(be16(fr + 12), 0x0800);

	cr_assert_eq(ip[0], 0x45);
	cr_assert_eq(ip[1], f->tos);
	cr_assert_eq(be16(ip + 2), 20 + 8 + len);
	cr_assert_eq(be16(ip + 4), f->ip_id);
	cr_assert_eq(be16(ip + 6), 0x4000);
	cr_assert_eq(ip[8], f->ttl);
	cr_assert_eq(ip[9], 17);
	cr_assert_eq(fold(sum16(0, ip, 20)), 0xFFFF, "IPv4 header checksum");
	cr_assert_arr_eq(ip + 12, A4, 4);
	cr_assert_arr_eq(ip + 16, B4, 4);

	cr_assert_eq(be16(udp), f->sport);
	cr_assert_eq(be16(udp + 2), 4791);
	cr_assert_eq(be16(udp + 4), 8 + len);
	cr_assert_neq(be16(udp + 6), 0, "a kernel socket always sends a UDP checksum");
	/* Pseudo-header (RFC 768): addresses, protocol, UDP length. */
	sum = sum16(0, ip + 12, 8) + 17 + (uint32_t)(8 + len);
	cr_assert_eq(fold(sum16(sum, udp, 8 + len)), 0xFFFF, "UDP checksum");

	cr_assert_arr_eq(udp + 8, roce, len);
}

static void check_v6(const uint8_t *fr, size_t frame_len, const struct roce_ipudp *f,
		     const uint8_t *roce, size_t len)
{
	const uint8_t *ip = fr + ETH_LEN, *udp = ip + 40;
	uint32_t sum;

	cr_assert_eq(frame_len, ETH_LEN + 40 + 8 + len);
	check_mac(fr, B6 + 12);
	check_mac(fr + 6, A6 + 12);
	cr_assert_eq(be16(fr + 12), 0x86DD);

	/* Version 6, traffic class, flow label (RFC 8200). */
	cr_assert_eq(ip[0] >> 4, 6);
	cr_assert_eq((ip[0] & 0xF) << 4 | ip[1] >> 4, f->tos);
	cr_assert_eq((uint32_t)(ip[1] & 0xF) << 16 | be16(ip + 2), f->flow_label);
	cr_assert_eq(be16(ip + 4), 8 + len);
	cr_assert_eq(ip[6], 17);
	cr_assert_eq(ip[7], f->ttl);
	cr_assert_arr_eq(ip + 8, A6, 16);
	cr_assert_arr_eq(ip + 24, B6, 16);

	cr_assert_eq(be16(udp), f->sport);
	cr_assert_eq(be16(udp + 2), 4791);
	cr_assert_eq(be16(udp + 4), 8 + len);
	cr_assert_neq(be16(udp + 6), 0, "IPv6 UDP needs a checksum (RFC 8200)");
	sum = sum16(0, ip + 8, 32) + 17 + (uint32_t)(8 + len);
	cr_assert_eq(fold(sum16(sum, udp, 8 + len)), 0xFFFF, "UDP checksum");

	cr_assert_arr_eq(udp + 8, roce, len);
}

Test(pcap, ipv4_frames_read_back_exactly)
{
	static const size_t lens[] = {16, 61, 1072, 4096 + 28 + 4};
	static struct capture c;
	static uint8_t roce[4][4200];
	struct roce_ipudp f = flow_v4();
	struct uroce_pcap *cap = uroce_pcap_open(path);

	cr_assert_not_null(cap, "open %s: %s", path, strerror(errno));
	for (unsigned i = 0; i < 4; i++) {
		fill(roce[i], lens[i], i);
		f.ip_id = (uint16_t)(0x1234 + i);
		cr_assert_eq(uroce_pcap_write(cap, &f, roce[i], lens[i], (i + 1) * NSEC), 0);
	}
	cr_assert_eq(uroce_pcap_frames(cap), 4);
	cr_assert_eq(uroce_pcap_dropped(cap), 0);
	cr_assert_eq(uroce_pcap_close(cap), 0);

	capture_read(&c, path);
	cr_assert_eq(c.linktype, DLT_EN10MB);
	cr_assert_eq(c.n, 4);
	for (unsigned i = 0; i < 4; i++) {
		f.ip_id = (uint16_t)(0x1234 + i);
		cr_assert_eq(c.hdr[i].caplen, c.hdr[i].len);
		check_v4(c.data[i], c.hdr[i].caplen, &f, roce[i], lens[i]);
	}
	capture_free(&c);
}

Test(pcap, ipv6_frame_read_back_exactly)
{
	static struct capture c;
	uint8_t roce[77];
	struct roce_ipudp f = flow_v6();
	struct uroce_pcap *cap = uroce_pcap_open(path);

	cr_assert_not_null(cap);
	fill(roce, sizeof(roce), 9);
	cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), 5), 0);
	cr_assert_eq(uroce_pcap_close(cap), 0);

	capture_read(&c, path);
	cr_assert_eq(c.linktype, DLT_EN10MB);
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.hdr[0].caplen, c.hdr[0].len);
	check_v6(c.data[0], c.hdr[0].caplen, &f, roce, sizeof(roce));
	capture_free(&c);
}

Test(pcap, timestamps_keep_nanoseconds)
{
	/* libpcap reads the 32-bit seconds field as signed: the last second is in 2038. */
	static const uint64_t ts[] = {0, 1, 999999999, 1700000000123456789ull,
				      2147483647ull * NSEC + 999999999};
	static struct capture c;
	struct roce_ipudp f = flow_v4();
	struct uroce_pcap *cap = uroce_pcap_open(path);
	uint8_t roce[16] = {0};

	cr_assert_not_null(cap);
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), ts[i]), 0);
	cr_assert_eq(uroce_pcap_close(cap), 0);

	capture_read(&c, path);
	cr_assert_eq(c.n, 5);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq((uint64_t)c.hdr[i].ts.tv_sec, ts[i] / NSEC, "frame %u", i);
		cr_assert_eq((uint64_t)c.hdr[i].ts.tv_usec, ts[i] % NSEC, "frame %u", i);
	}
	capture_free(&c);
}

/* The largest UDP payloads IPv4 and IPv6 can carry are recorded whole; one more is refused. */
Test(pcap, largest_packets_and_emsgsize)
{
	static uint8_t roce[65527];
	static struct capture c;
	struct roce_ipudp f4 = flow_v4(), f6 = flow_v6();
	struct uroce_pcap *cap = uroce_pcap_open(path);

	cr_assert_not_null(cap);
	fill(roce, sizeof(roce), 3);
	cr_assert_eq(uroce_pcap_write(cap, &f4, roce, 65507, 1), 0);
	errno = 0;
	cr_assert_eq(uroce_pcap_write(cap, &f4, roce, 65508, 2), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(uroce_pcap_write(cap, &f6, roce, 65527, 3), 0);
	errno = 0;
	cr_assert_eq(uroce_pcap_write(cap, &f6, roce, 65528, 4), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(uroce_pcap_frames(cap), 2);
	cr_assert_eq(uroce_pcap_dropped(cap), 0, "a refused frame is not an I/O loss");
	cr_assert_eq(uroce_pcap_close(cap), 0);

	capture_read(&c, path);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.hdr[0].caplen, c.hdr[0].len, "not truncated");
	check_v4(c.data[0], c.hdr[0].caplen, &f4, roce, 65507);
	cr_assert_eq(c.hdr[1].caplen, c.hdr[1].len, "not truncated");
	check_v6(c.data[1], c.hdr[1].caplen, &f6, roce, 65527);
	capture_free(&c);
}

enum { THREADS = 4, PER_THREAD = 200 };

struct writer {
	struct uroce_pcap *cap;
	unsigned id;
	int failures;
};

/* Frame @seq of writer @id: its length and bytes say who wrote it. */
static size_t threaded_frame(uint8_t *buf, unsigned id, unsigned seq)
{
	size_t len = 16 + (id * 7 + seq * 13) % 600;

	fill(buf, len, id * PER_THREAD + seq);
	buf[0] = (uint8_t)id;
	buf[1] = (uint8_t)(seq >> 8);
	buf[2] = (uint8_t)seq;
	return len;
}

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	struct roce_ipudp f = flow_v4();
	uint8_t buf[640];

	for (unsigned seq = 0; seq < PER_THREAD; seq++) {
		size_t len = threaded_frame(buf, w->id, seq);

		if (uroce_pcap_write(w->cap, &f, buf, len, (uint64_t)w->id * NSEC + seq))
			w->failures++;
	}
	return NULL;
}

Test(pcap, concurrent_writers_lose_and_mix_nothing)
{
	static struct capture c;
	static bool seen[THREADS][PER_THREAD];
	struct writer w[THREADS];
	pthread_t t[THREADS];
	struct roce_ipudp f = flow_v4();
	uint8_t want[640];

	w[0].cap = uroce_pcap_open(path);
	cr_assert_not_null(w[0].cap);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct writer){.cap = w[0].cap, .id = i};
		cr_assert_eq(pthread_create(&t[i], NULL, writer_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	cr_assert_eq(uroce_pcap_frames(w[0].cap), THREADS * PER_THREAD);
	cr_assert_eq(uroce_pcap_close(w[0].cap), 0);

	capture_read(&c, path);
	cr_assert_eq(c.n, THREADS * PER_THREAD);
	for (size_t i = 0; i < c.n; i++) {
		const uint8_t *roce = c.data[i] + ETH_LEN + 28;
		unsigned id = roce[0], seq = (unsigned)roce[1] << 8 | roce[2];
		size_t len;

		cr_assert_lt(id, THREADS, "frame %zu", i);
		cr_assert_lt(seq, PER_THREAD, "frame %zu", i);
		cr_assert_not(seen[id][seq], "frame %zu duplicates %u/%u", i, id, seq);
		seen[id][seq] = true;
		len = threaded_frame(want, id, seq);
		check_v4(c.data[i], c.hdr[i].caplen, &f, want, len);
		cr_assert_eq((uint64_t)c.hdr[i].ts.tv_sec, id);
		cr_assert_eq((uint64_t)c.hdr[i].ts.tv_usec, seq);
	}
	capture_free(&c);
}

Test(pcap, unwritable_path_gives_errno)
{
	errno = 0;
	cr_assert_null(uroce_pcap_open("/nonexistent-uroce-dir/x.pcap"));
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(uroce_pcap_open("/tmp"));
	cr_assert_eq(errno, EISDIR);
}

Test(pcap, close_null_is_noop)
{
	cr_assert_eq(uroce_pcap_close(NULL), 0);
}

/* Runs @fn with stderr sent to a temporary file; returns that file, rewound. */
static FILE *with_stderr_captured(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved;

	cr_assert_not_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	cr_assert_geq(saved, 0);
	dup2(fileno(tmp), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	return tmp;
}

static void check_reported_once(FILE *err)
{
	char line[512], want[128];
	int lines = 0;

	snprintf(want, sizeof(want), "/dev/full: write failed: %s", strerror(ENOSPC));
	while (fgets(line, sizeof(line), err)) {
		cr_assert(strstr(line, want), "unexpected stderr line: %s", line);
		lines++;
	}
	cr_assert_eq(lines, 1, "the error is reported exactly once");
	fclose(err);
}

static void flush_error_sequence(void)
{
	struct roce_ipudp f = flow_v4();
	struct uroce_pcap *cap = uroce_pcap_open("/dev/full");
	uint8_t roce[64] = {0};

	/* Opening and buffering succeed; the error shows when the data reaches the device. */
	cr_assert_not_null(cap, "open /dev/full: %s", strerror(errno));
	cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), 1), 0);
	errno = 0;
	cr_assert_eq(uroce_pcap_flush(cap), -1);
	cr_assert_eq(errno, EIO);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), 2), -1);
		cr_assert_eq(errno, EIO);
	}
	errno = 0;
	cr_assert_eq(uroce_pcap_flush(cap), -1);
	cr_assert_eq(errno, EIO);
	cr_assert_eq(uroce_pcap_frames(cap), 1);
	cr_assert_eq(uroce_pcap_dropped(cap), 3);
	errno = 0;
	cr_assert_eq(uroce_pcap_close(cap), -1);
	cr_assert_eq(errno, EIO);
}

Test(pcap, flush_error_reported_once_then_frames_dropped)
{
	check_reported_once(with_stderr_captured(flush_error_sequence));
}

static void write_error_sequence(void)
{
	struct roce_ipudp f = flow_v4();
	struct uroce_pcap *cap = uroce_pcap_open("/dev/full");
	static uint8_t roce[1500];
	unsigned i;

	cr_assert_not_null(cap);
	/* No flush: the write that overflows stdio's buffer meets the error. */
	for (i = 0; i < 1000; i++) {
		errno = 0;
		if (uroce_pcap_write(cap, &f, roce, sizeof(roce), i))
			break;
	}
	cr_assert_lt(i, 1000, "no write saw the error");
	cr_assert_eq(errno, EIO);
	cr_assert_eq(uroce_pcap_frames(cap), i);
	cr_assert_eq(uroce_pcap_dropped(cap), 1);
	cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), i), -1);
	cr_assert_eq(uroce_pcap_dropped(cap), 2);
	cr_assert_eq(uroce_pcap_close(cap), -1);
}

Test(pcap, write_error_reported_once_then_frames_dropped)
{
	check_reported_once(with_stderr_captured(write_error_sequence));
}

/*
 * A FIFO target: opening waits for no reader; with no reader the pipe fills and later frames
 * are dropped whole (no blocking); the reader then gets a valid capture of whole frames; and a
 * reader that goes away raises no SIGPIPE (the test process would die of it).
 */
Test(pcap, fifo_never_blocks_tears_or_kills)
{
	uint8_t roce[4096];
	struct roce_ipudp f = flow_v4();
	struct uroce_pcap *cap;
	struct pcap_pkthdr *ph;
	const u_char *data;
	char err[PCAP_ERRBUF_SIZE];
	int rfd, frames = 0, ret;
	FILE *rf;
	pcap_t *rd;

	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cap = uroce_pcap_open(path);
	cr_assert_not_null(cap, "open: %s", strerror(errno));
	fill(roce, sizeof(roce), 3);
	for (int i = 0; i < 2000; i++) /* 8 MiB: more than any pipe holds */
		cr_assert_eq(uroce_pcap_write(cap, &f, roce, sizeof(roce), (uint64_t)i), 0);
	cr_assert_lt(uroce_pcap_frames(cap), 2000 + 1);
	rfd = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rfd, 0);
	rf = fdopen(rfd, "rb");
	rd = pcap_fopen_offline_with_tstamp_precision(rf, PCAP_TSTAMP_PRECISION_NANO, err);
	cr_assert_not_null(rd, "%s", err);
	/* The rest of a frame the full pipe took in part goes in at a flush, once there is room. */
	cr_assert_eq(uroce_pcap_flush(cap), 0);
	/* Read what the pipe holds: whole frames, in order, until it is empty. */
	while ((ret = pcap_next_ex(rd, &ph, &data)) == 1) {
		cr_assert_eq(ph->caplen, ETH_LEN + 20 + 8 + sizeof(roce));
		cr_assert_eq(memcmp(data + ETH_LEN + 28, roce, sizeof(roce)), 0);
		cr_assert_eq((uint64_t)ph->ts.tv_usec, (uint64_t)frames, "frame %d out of order",
			     frames);
		frames++;
		if (frames % 64 == 0)
			uroce_pcap_flush(cap);
	}
	cr_assert_gt(frames, 10, "only %d frames came through", frames);
	cr_assert_lt(frames, 2000, "a pipe cannot hold 8 MiB: nothing was dropped?");
	pcap_close(rd); /* the reader goes */
	for (int i = 0; i < 400; i++)
		uroce_pcap_write(cap, &f, roce, sizeof(roce), 1);
	cr_assert_eq(uroce_pcap_close(cap), 0);
}
