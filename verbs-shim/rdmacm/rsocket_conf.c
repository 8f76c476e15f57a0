// SPDX-License-Identifier: MIT
/*
 * rsockets' defaults from the files rdma-core's rs_configure reads (rsocket(7)), in
 * /etc/rdma/rsocket/, each one decimal number: polling_time (microseconds a blocking call
 * spins before it sleeps), inline_default, sqsize_default, rqsize_default (a new stream
 * socket's RDMA_INLINE, RDMA_SQSIZE, RDMA_RQSIZE), mem_default and wmem_default (its receive
 * and send buffer bytes) and iomap_size (its RDMA_IOMAPSIZE). They are read once, when the
 * process makes its first rsocket; a missing file keeps the built-in default.
 *
 * The values are bounded as the options are (rsocket_opt.c): the queue sizes to
 * RS_QP_MIN_SIZE..RS_QP_MAX_SIZE, the inline size to RS_QP_MAX_SIZE, the buffers to at least
 * twice RS_SNDLOWAT (rdma-core takes a send buffer below RS_SNDLOWAT as twice it, a receive
 * buffer of 0 as 1 byte), the iomap size rounded to what the handshake's byte can say. A file
 * that holds no number, or one too large for its setting, keeps the default and is reported
 * on stderr with its path, where rdma-core's fscanf would keep whatever it half read.
 *
 * rdma-core's wake_up_interval (how often a thread in rpoll wakes to look again) is not read:
 * uroce's rpoll is woken by each change of a socket's state (rsocket_poll.c), never by a timer.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "verbs-shim/rdmacm/rsocket_int.h"

#define RS_CONF_DIR "/etc/rdma/rsocket"

static struct rs_conf conf = {
	.polling_us = RS_DEF_POLLING_US,
	.inline_size = RS_DEF_INLINE,
	.sq_size = RS_DEF_SQSIZE,
	.rq_size = RS_DEF_RQSIZE,
	.mem = RS_DEF_MEM,
	.wmem = RS_DEF_WMEM,
	.iomap_size = 0,
};
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;

/*
 * The number in file @name of RS_CONF_DIR into *@v, if it is there and at most @max: true.
 * False for a missing file; a file without a number, or with a larger one, is also reported.
 */
static bool read_number(const char *name, unsigned long max, unsigned long *v)
{
	char path[64], buf[32], *end;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), RS_CONF_DIR "/%s", name);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	errno = 0;
	*v = strtoul(buf, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	if (end == buf || *end || errno || buf[0] == '-' || *v > max) {
		/* An error line as fabric/log.h prints them (librdmacm.so.1 has no logger). */
		fprintf(stderr,
			"uroce[%d]: rsocket: %s: '%.*s' is not a number from 0 to %lu; the default "
			"stays\n",
			(int)getpid(), path, (int)strcspn(buf, "\n"), buf, max);
		return false;
	}
	return true;
}

static unsigned long bounded(unsigned long v, unsigned long lo, unsigned long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void configure(void)
{
	unsigned long v;

	if (read_number("polling_time", UINT_MAX, &v))
		conf.polling_us = (uint32_t)v;
	if (read_number("inline_default", USHRT_MAX, &v))
		conf.inline_size = (uint16_t)bounded(v, 0, RS_QP_MAX_SIZE);
	if (read_number("sqsize_default", USHRT_MAX, &v))
		conf.sq_size = (uint16_t)bounded(v, RS_QP_MIN_SIZE, RS_QP_MAX_SIZE);
	if (read_number("rqsize_default", USHRT_MAX, &v))
		conf.rq_size = (uint16_t)bounded(v, RS_QP_MIN_SIZE, RS_QP_MAX_SIZE);
	if (read_number("mem_default", UINT_MAX, &v))
		conf.mem = (uint32_t)bounded(v, RS_SNDLOWAT << 1, UINT_MAX);
	if (read_number("wmem_default", UINT_MAX, &v))
		conf.wmem = (uint32_t)bounded(v, RS_SNDLOWAT << 1, UINT_MAX);
	if (read_number("iomap_size", USHRT_MAX, &v))
		conf.iomap_size = (uint16_t)rs_scale_to_value(rs_value_to_scale((int)v, 8), 8);
}

const struct rs_conf *rs_conf(void)
{
	pthread_once(&conf_once, configure);
	return &conf;
}
