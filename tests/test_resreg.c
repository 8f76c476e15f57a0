// SPDX-License-Identifier: MIT
/*
 * The resource registry (verbs-shim/resreg.h): a process's file appears with its first object
 * and goes with its last, its counts and QP records as the verbs left them; readers skip and
 * clean up the files of killed processes and reused pids, leave other namespaces' and users'
 * alone, never see a torn record; a child of fork() keeps off its parent's file; without a
 * usable folder nothing is recorded and nothing fails. Each test has a folder of its own.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs-shim/resreg.h"
#include "verbs-shim/resreg_int.h"

static char dir[] = "/tmp/resreg-test.XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	uroce_resreg_use_dir(dir);
}

/* Empty the folder (files left by failed checks) and remove it. */
static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		cr_log_warn("could not remove %s", dir);
}

TestSuite(resreg, .init = setup, .fini = teardown, .timeout = 30);

/* What a read found. */
#define MAX_SEEN 128
struct seen {
	int nrows, nqps;
	struct {
		uint32_t pid;
		char dev[RESREG_NAME];
		uint64_t count[UROCE_RES_NUM];
	} rows[MAX_SEEN];
	struct {
		uint32_t pid;
		char dev[RESREG_NAME];
		struct uroce_res_qp q;
	} qps[MAX_SEEN];
};

static void seen_counts(void *arg, uint32_t pid, const char *dev,
			const uint64_t count[UROCE_RES_NUM])
{
	struct seen *s = arg;

	cr_assert_lt(s->nrows, MAX_SEEN);
	s->rows[s->nrows].pid = pid;
	snprintf(s->rows[s->nrows].dev, RESREG_NAME, "%s", dev);
	memcpy(s->rows[s->nrows++].count, count, sizeof(s->rows[0].count));
}

static void seen_qp(void *arg, uint32_t pid, const char *dev, const struct uroce_res_qp *q)
{
	struct seen *s = arg;

	cr_assert_lt(s->nqps, MAX_SEEN);
	s->qps[s->nqps].pid = pid;
	snprintf(s->qps[s->nqps].dev, RESREG_NAME, "%s", dev);
	s->qps[s->nqps++].q = *q;
}

static struct seen read_all(void)
{
	struct seen s = {0};
	struct uroce_resreg_visitor v = {seen_counts, seen_qp, &s};

	cr_assert_eq(uroce_resreg_read(dir, &v), 0);
	return s;
}

/* The count of @kind of process @pid on @dev, -1 if the process lists no such device. */
static int64_t count_of(const struct seen *s, pid_t pid, const char *dev, enum uroce_res kind)
{
	for (int i = 0; i < s->nrows; i++)
		if (s->rows[i].pid == (uint32_t)pid && !strcmp(s->rows[i].dev, dev))
			return (int64_t)s->rows[i].count[kind];
	return -1;
}

static void path_of(char *buf, size_t n, pid_t pid)
{
	cr_assert_eq(uroce_resreg_path(buf, n, dir, geteuid(), pid), 0);
}

static bool exists(pid_t pid)
{
	char p[256];

	path_of(p, sizeof(p), pid);
	return access(p, F_OK) == 0;
}

/* Overwrite the header field at @off of process @pid's file with @v. */
static void poke_header(pid_t pid, size_t off, uint64_t v)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), pid);
	fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &v, sizeof(v), (off_t)off), (ssize_t)sizeof(v));
	close(fd);
}

/* Field by field (the struct has padding). */
static bool same_qp(const struct uroce_res_qp *a, const struct uroce_res_qp *b)
{
	return a->lqpn == b->lqpn && a->rqpn == b->rqpn && a->rq_psn == b->rq_psn &&
	       a->sq_psn == b->sq_psn && a->pdn == b->pdn && a->has_pd == b->has_pd &&
	       a->port == b->port && a->type == b->type && a->state == b->state && a->mig == b->mig;
}

static const struct uroce_res_qp rc_reset = {
	.lqpn = 0x2000, .pdn = 3, .has_pd = true, .type = IBV_QPT_RC, .state = IBV_QPS_RESET};

Test(resreg, the_file_comes_with_the_first_object_and_goes_with_the_last)
{
	uint32_t ctx, pd, pd2;
	struct seen s;
	struct stat st;
	char p[256];

	cr_assert_not(exists(getpid()), "no file before an object");
	cr_assert_eq(read_all().nrows, 0);
	ctx = uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	pd = uroce_resreg_add("uroce_lo", UROCE_RES_PD);
	pd2 = uroce_resreg_add("uroce_eth0", UROCE_RES_PD);
	cr_assert(ctx && pd && pd2);
	path_of(p, sizeof(p), getpid());
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(st.st_uid, geteuid());
	s = read_all();
	cr_assert_eq(s.nrows, 2);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_CTX), 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_PD), 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_eth0", UROCE_RES_PD), 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_eth0", UROCE_RES_CTX), 0);
	uroce_resreg_del("uroce_lo", UROCE_RES_PD, pd);
	s = read_all();
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_PD), 0);
	uroce_resreg_del("uroce_eth0", UROCE_RES_PD, pd2);
	cr_assert(exists(getpid()), "the context is still there");
	uroce_resreg_del("uroce_lo", UROCE_RES_CTX, ctx);
	cr_assert_not(exists(getpid()), "the last object took the file with it");
	cr_assert_eq(read_all().nrows, 0);
	/* and a new object makes a new one */
	ctx = uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	cr_assert(ctx && exists(getpid()));
	s = read_all();
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_CTX), 1);
}

Test(resreg, a_qps_record_follows_create_modify_destroy)
{
	struct uroce_resreg_qp h = {0};
	struct uroce_res_qp q = rc_reset;
	uint32_t ctx = uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	struct seen s;

	uroce_resreg_qp_add(&h, "uroce_lo", &q);
	cr_assert_neq(h.tag, 0);
	s = read_all();
	cr_assert_eq(s.nqps, 1);
	cr_assert_eq(s.qps[0].pid, (uint32_t)getpid());
	cr_assert_str_eq(s.qps[0].dev, "uroce_lo");
	cr_assert(same_qp(&s.qps[0].q, &q));
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_QP), 1);
	/* to INIT on port 1, then RTR with its peer and PSNs */
	q.port = 1;
	q.state = IBV_QPS_INIT;
	uroce_resreg_qp_set(&h, &q);
	q.port = 0; /* IBV_QP_PORT given once; a later modify's attributes have it 0 */
	q.state = IBV_QPS_RTR;
	q.rqpn = 0x3000;
	q.rq_psn = 0xabcdef;
	q.sq_psn = 0x123456;
	q.mig = IBV_MIG_REARM;
	uroce_resreg_qp_set(&h, &q);
	s = read_all();
	cr_assert_eq(s.nqps, 1);
	cr_assert_eq(s.qps[0].q.port, 1, "the port stays, as the kernel's ib_qp.port");
	cr_assert_eq(s.qps[0].q.state, IBV_QPS_RTR);
	cr_assert_eq(s.qps[0].q.rqpn, 0x3000);
	cr_assert_eq(s.qps[0].q.rq_psn, 0xabcdef);
	cr_assert_eq(s.qps[0].q.sq_psn, 0x123456);
	cr_assert_eq(s.qps[0].q.mig, IBV_MIG_REARM);
	cr_assert_eq(s.qps[0].q.pdn, 3);
	cr_assert(s.qps[0].q.has_pd);
	uroce_resreg_qp_del(&h, "uroce_lo");
	cr_assert_eq(h.tag, 0);
	s = read_all();
	cr_assert_eq(s.nqps, 0);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_QP), 0);
	uroce_resreg_del("uroce_lo", UROCE_RES_CTX, ctx);
}

Test(resreg, records_are_reused_lowest_first)
{
	struct uroce_resreg_qp h[3] = {0};
	struct uroce_res_qp q = rc_reset;
	struct seen s;

	for (int i = 0; i < 3; i++) {
		q.lqpn = 10 + (uint32_t)i;
		uroce_resreg_qp_add(&h[i], "uroce_lo", &q);
		cr_assert_eq(h[i].slot, (uint32_t)i);
	}
	uroce_resreg_qp_del(&h[1], "uroce_lo");
	q.lqpn = 20;
	uroce_resreg_qp_add(&h[1], "uroce_lo", &q);
	cr_assert_eq(h[1].slot, 1);
	s = read_all();
	cr_assert_eq(s.nqps, 3);
	cr_assert_eq(s.qps[1].q.lqpn, 20);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_QP), 3);
}

/* A child process holding a context and a QP on uroce_lo, stopped until killed; its pid. */
static pid_t holder(void)
{
	int ready[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct uroce_resreg_qp h = {0};

		uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
		uroce_resreg_qp_add(&h, "uroce_lo", &rc_reset);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

/* The state letter of process @pid ('?' if gone). */
static char state_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return p ? p[2] : '?';
}

Test(resreg, a_killed_process_is_skipped_and_its_file_removed)
{
	pid_t pid = holder();
	struct seen s = read_all();
	int status;

	cr_assert_eq(count_of(&s, pid, "uroce_lo", UROCE_RES_CTX), 1);
	cr_assert_eq(s.nqps, 1);
	cr_assert_eq(s.qps[0].pid, (uint32_t)pid);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	/* a zombie holds nothing (the kernel gives no pid for its objects) */
	for (int i = 0; i < 1000 && state_of(pid) != 'Z'; i++)
		usleep(1000);
	cr_assert_eq(state_of(pid), 'Z');
	cr_assert(exists(pid), "SIGKILL leaves the file");
	s = read_all();
	cr_assert_eq(s.nrows + s.nqps, 0, "a dead process's objects are not listed");
	cr_assert_not(exists(pid), "the reader removed its file");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(read_all().nrows, 0);
}

Test(resreg, a_pid_of_another_start_time_is_another_process)
{
	uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	cr_assert_eq(read_all().nrows, 1);
	poke_header(getpid(), offsetof(struct resreg_hdr, start_time),
		    uroce_resreg_start_time(getpid()) + 1);
	cr_assert_eq(read_all().nrows, 0, "the file's process is not this one");
	cr_assert_not(exists(getpid()), "and its file was removed");
}

static uint64_t netns_ino(void)
{
	struct stat st;

	cr_assert_eq(stat("/proc/self/ns/net", &st), 0);
	return st.st_ino;
}

Test(resreg, other_namespaces_are_not_listed)
{
	uint64_t pidns;
	struct stat st;

	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	pidns = st.st_ino;
	uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	poke_header(getpid(), offsetof(struct resreg_hdr, netns_ino), 1);
	cr_assert_eq(read_all().nrows, 0, "another network namespace's process is not listed");
	cr_assert(exists(getpid()), "nor removed: it lives");
	poke_header(getpid(), offsetof(struct resreg_hdr, netns_ino), netns_ino());
	cr_assert_eq(read_all().nrows, 1);
	/* another pid namespace's: its pid means nothing here, dead or alive */
	poke_header(getpid(), offsetof(struct resreg_hdr, pidns_ino), 1);
	cr_assert_eq(read_all().nrows, 0, "nor another pid namespace's");
	poke_header(getpid(), offsetof(struct resreg_hdr, start_time), 1);
	cr_assert_eq(read_all().nrows, 0);
	cr_assert(exists(getpid()), "whose file is not the reader's to judge");
	/* a dead process of another network namespace (gone with it, perhaps): removed */
	poke_header(getpid(), offsetof(struct resreg_hdr, pidns_ino), pidns);
	poke_header(getpid(), offsetof(struct resreg_hdr, netns_ino), 1);
	cr_assert_eq(read_all().nrows, 0);
	cr_assert_not(exists(getpid()),
		      "a dead process's file is removed whatever its network namespace");
}

/* A RoCE UDP port is a host of its own (uroce's processes meet per port): a reader of another
 * port lists nothing of this one's, and removes nothing of a living process. */
Test(resreg, another_ports_processes_are_not_listed)
{
	const char *was = getenv("UROCE_UDP_PORT");
	char saved[16] = "";

	if (was)
		snprintf(saved, sizeof(saved), "%s", was);
	setenv("UROCE_UDP_PORT", "4791", 1);
	uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	cr_assert_eq(read_all().nrows, 1);
	setenv("UROCE_UDP_PORT", "4792", 1);
	cr_assert_eq(read_all().nrows, 0, "a process of port 4791 listed to a reader of 4792");
	cr_assert(exists(getpid()), "nor removed: it lives");
	unsetenv("UROCE_UDP_PORT");
	cr_assert_eq(read_all().nrows, 1, "unset is the default port, 4791");
	if (was)
		setenv("UROCE_UDP_PORT", saved, 1);
}

Test(resreg, another_users_stale_file_is_not_removed)
{
	char p[256];

	if (geteuid() != 0)
		cr_skip_test("needs root to give the file to another user");
	uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	path_of(p, sizeof(p), getpid());
	poke_header(getpid(), offsetof(struct resreg_hdr, start_time), 1);
	cr_assert_eq(chown(p, 65534, 65534), 0);
	cr_assert_eq(read_all().nrows, 0, "root reads every user's, and this one is stale");
	cr_assert(exists(getpid()), "another user's file stays");
}

/* A file at this process's name, holding @n bytes of @content: open, read-write. */
static int plant(const void *content, size_t n)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), getpid());
	fd = open(p, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, content, n, 0), (ssize_t)n);
	return fd;
}

Test(resreg, a_leftover_of_this_pid_is_replaced)
{
	struct seen s;

	close(plant("left by a process before exec", 29));
	cr_assert_neq(uroce_resreg_add("uroce_lo", UROCE_RES_MR), 0);
	s = read_all();
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_MR), 1);
}

Test(resreg, a_same_pid_of_another_pid_namespace_is_left_alone)
{
	struct resreg_hdr h = {.magic = RESREG_MAGIC, .version = RESREG_VERSION, .pidns_ino = 1};
	struct resreg_hdr after;
	/* a process of another pid namespace, with this pid number, sharing the folder */
	int fd = plant(&h, sizeof(h));

	cr_assert_eq(uroce_resreg_add("uroce_lo", UROCE_RES_CTX), 0,
		     "not recorded: the name is taken");
	cr_assert_eq(pread(fd, &after, sizeof(after), 0), (ssize_t)sizeof(after));
	cr_assert_eq(after.pidns_ino, 1, "and the other's file is untouched");
	close(fd);
}

Test(resreg, a_forked_child_keeps_off_its_parents_file)
{
	struct uroce_resreg_qp h = {0};
	struct uroce_res_qp q = rc_reset;
	uint32_t ctx = uroce_resreg_add("uroce_lo", UROCE_RES_CTX);
	uint32_t mr = uroce_resreg_add("uroce_lo", UROCE_RES_MR);
	struct seen s;
	int status;
	pid_t pid;

	uroce_resreg_qp_add(&h, "uroce_lo", &q);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* its copies of the parent's objects are the parent's: destroying or modifying
		 * them here changes nothing there */
		struct uroce_res_qp changed = q;

		changed.state = IBV_QPS_ERR;
		uroce_resreg_qp_set(&h, &changed);
		uroce_resreg_del("uroce_lo", UROCE_RES_MR, mr);
		uroce_resreg_qp_del(&h, "uroce_lo");
		/* what it makes is its own, in a file of its own */
		if (!uroce_resreg_add("uroce_lo", UROCE_RES_PD))
			_exit(2);
		if (!exists(getpid()))
			_exit(3);
		exit(0); /* exit(), not _exit(): its destructor removes its own file only */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	cr_assert_not(exists(pid), "the child's file went with it");
	cr_assert(exists(getpid()), "the parent's stays");
	s = read_all();
	cr_assert_eq(s.nrows, 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_MR), 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_QP), 1);
	cr_assert_eq(count_of(&s, getpid(), "uroce_lo", UROCE_RES_PD), 0);
	cr_assert_eq(s.nqps, 1);
	cr_assert_eq(s.qps[0].q.state, IBV_QPS_RESET);
	uroce_resreg_qp_del(&h, "uroce_lo");
	uroce_resreg_del("uroce_lo", UROCE_RES_MR, mr);
	uroce_resreg_del("uroce_lo", UROCE_RES_CTX, ctx);
	cr_assert_not(exists(getpid()));
}

Test(resreg, without_a_usable_folder_nothing_is_recorded_and_nothing_fails)
{
	static const char *const unusable[] = {"/nonexistent-uroce-folder", "/dev/null"};

	for (size_t i = 0; i < 2; i++) {
		pid_t pid = fork();
		int status;

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct uroce_resreg_qp h = {0};
			struct uroce_resreg_visitor v = {seen_counts, seen_qp, &(struct seen){0}};

			uroce_resreg_use_dir(unusable[i]);
			if (uroce_resreg_add("uroce_lo", UROCE_RES_CTX))
				_exit(2);
			uroce_resreg_qp_add(&h, "uroce_lo", &rc_reset);
			if (h.tag)
				_exit(3);
			uroce_resreg_qp_set(&h, &rc_reset);
			uroce_resreg_qp_del(&h, "uroce_lo");
			uroce_resreg_del("uroce_lo", UROCE_RES_CTX, 0);
			/* a reader without the folder finds nobody */
			_exit(uroce_resreg_read(unusable[i], &v) ? 0 : 4);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %#x",
			  unusable[i], status);
	}
}

Test(resreg, a_full_device_table_leaves_further_devices_out)
{
	char name[RESREG_NAME];
	uint32_t tag;

	for (int i = 0; i < RESREG_DEVS; i++) {
		snprintf(name, sizeof(name), "uroce_veth%d", i);
		cr_assert_neq(uroce_resreg_add(name, UROCE_RES_CTX), 0);
	}
	tag = uroce_resreg_add("uroce_one_too_many", UROCE_RES_CTX);
	cr_assert_eq(tag, 0);
	uroce_resreg_del("uroce_one_too_many", UROCE_RES_CTX, tag);
	cr_assert_eq(read_all().nrows, RESREG_DEVS);
}

/* The writer of the torn-record test: every field of the record the same, changing. */
static atomic_bool stop;

static void *rewrite(void *arg)
{
	struct uroce_resreg_qp *h = arg;

	for (uint32_t k = 1; !atomic_load(&stop); k++) {
		struct uroce_res_qp q = {.lqpn = k,
					 .rqpn = k,
					 .rq_psn = k,
					 .sq_psn = k,
					 .pdn = k,
					 .has_pd = true,
					 .type = IBV_QPT_RC,
					 .state = (uint8_t)(k % 7),
					 .mig = (uint8_t)(k % 3)};

		uroce_resreg_qp_set(h, &q);
	}
	return NULL;
}

Test(resreg, a_reader_never_sees_a_torn_record)
{
	struct uroce_resreg_qp h = {0};
	pthread_t t;
	int reads = 0;

	uroce_resreg_qp_add(&h, "uroce_lo", &(struct uroce_res_qp){.type = IBV_QPT_RC});
	cr_assert_eq(pthread_create(&t, NULL, rewrite, &h), 0);
	for (int i = 0; i < 3000; i++) {
		struct seen s = read_all();

		for (int k = 0; k < s.nqps; k++) {
			const struct uroce_res_qp *q = &s.qps[k].q;

			reads++;
			cr_assert(q->rqpn == q->lqpn && q->rq_psn == q->lqpn &&
					  q->sq_psn == q->lqpn && q->pdn == q->lqpn &&
					  q->state == q->lqpn % 7 && q->mig == q->lqpn % 3,
				  "torn: lqpn %u rqpn %u rq_psn %u sq_psn %u pdn %u", q->lqpn,
				  q->rqpn, q->rq_psn, q->sq_psn, q->pdn);
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	cr_assert_gt(reads, 0);
}

Test(resreg, start_times_of_the_living_and_the_dead)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_neq(uroce_resreg_start_time(getpid()), 0);
	cr_assert_eq(uroce_resreg_start_time(getpid()), uroce_resreg_start_time(getpid()));
	cr_assert_eq(uroce_resreg_start_time(pid), 0, "a reaped process has none");
	cr_assert_lt(uroce_resreg_start_time(getppid()), uroce_resreg_start_time(getpid()) + 1);
}
