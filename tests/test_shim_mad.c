/* SPDX-License-Identifier: MIT */
/*
 * MADs on QP 1 between two processes (verbs-shim/mad.h, the private interface of uroce's
 * librdmacm): a CM REQ sent from one process reaches the handler of the other, which listens on
 * its service, whole, with the IP addresses and hop limit it was sent with; a REQ for a service
 * nobody listens on comes back as REJ "invalid service ID" with the REQ's traffic class.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cm/route.h"
#include "cm/wire.h"
#include "verbs-shim/mad.h"

#define COMM_ID 0x0C0FFEE1u

static const uint8_t lo[16] = {[10] = 0xff, 0xff, 127, 0, 0, 1};
static atomic_int got, bad;

static void on_mad(void *arg, const struct uroce_mad_rx *rx)
{
	struct cm_msg m;

	(void)arg;
	if (cm_decode(rx->mad, CM_MAD_LEN, &m) != CM_OK || m.hdr.attr_id != CM_ATTR_REQ ||
	    m.u.req.local_comm_id != COMM_ID)
		return; /* someone else's */
	if (memcmp(rx->sgid, lo, 16) || memcmp(rx->dgid, lo, 16) || rx->ttl != 64 ||
	    m.u.req.service_id != 0x0000000001064853ull)
		atomic_fetch_add(&bad, 1);
	else
		atomic_fetch_add(&got, 1);
}

Test(shim_mad, req_reaches_the_other_process, .timeout = 30)
{
	int ready[2], status;
	pid_t child;
	char c;
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, 0x100000000ull | COMM_ID)};
	uint8_t mad[CM_MAD_LEN];

	cr_assert_eq(pipe(ready), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		struct timespec t0, t;

		struct uroce_service svc = {.ps = CM_PS_TCP, .port = 0x4853};

		memcpy(svc.gid, lo, 16);
		/* The host routes a REQ to the process listening on its service (mad.h). */
		if (uroce_mad_set_handler(on_mad, NULL) ||
		    uroce_cm_service(UROCE_SERVICE_BIND, &svc) ||
		    uroce_cm_service(UROCE_SERVICE_LISTEN, &svc) || write(ready[1], "r", 1) != 1)
			_exit(3);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			usleep(10000);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (!atomic_load(&got) && t.tv_sec - t0.tv_sec < 5);
		_exit(atomic_load(&got) == 1 && !atomic_load(&bad) ? 0 : 1);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	m.u.req.local_comm_id = COMM_ID;
	m.u.req.service_id = 0x0000000001064853ull;
	cr_assert_eq(cm_encode(&m, mad), CM_MAD_LEN);
	cr_assert_eq(uroce_mad_send(lo, lo, 0, 64, mad), 0);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the other process did not get the REQ (status %#x)", status);
}

static atomic_int rejected;
static atomic_uint my_comm_id;

static void on_rej(void *arg, const struct uroce_mad_rx *rx)
{
	struct cm_msg m;

	(void)arg;
	if (cm_decode(rx->mad, CM_MAD_LEN, &m) == CM_OK && m.hdr.attr_id == CM_ATTR_REJ &&
	    m.u.rej.reason == CM_REJ_INVALID_SERVICE_ID &&
	    m.u.rej.remote_comm_id == atomic_load(&my_comm_id) && rx->tos == 0x28 && rx->ttl == 64)
		atomic_fetch_add(&rejected, 1);
}

/*
 * A REQ for a service nobody on the host listens on is answered with REJ 8 (§4.10), with the
 * REQ's traffic class, as the kernel's CM answers from the request's GRH.
 */
Test(shim_mad, req_without_listener_is_rejected, .timeout = 30)
{
	struct cm_msg m = {.hdr = cm_hdr(CM_ATTR_REQ, 0x100000001ull)};
	uint8_t mad[CM_MAD_LEN];
	uint32_t tag;

	cr_assert_eq(uroce_mad_set_handler(on_rej, NULL), 0);
	cr_assert_eq(uroce_cm_comm_tag(&tag), 0);
	atomic_store(&my_comm_id, cm_comm_id(tag, 42));
	m.u.req.local_comm_id = atomic_load(&my_comm_id);
	m.u.req.service_id = 0x0000000001060001ull; /* TCP port 1: nobody */
	cr_assert_eq(cm_encode(&m, mad), CM_MAD_LEN);
	cr_assert_eq(uroce_mad_send(lo, lo, 0x28, 64, mad), 0);
	for (int i = 0; i < 300 && !atomic_load(&rejected); i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&rejected), 1);
}
