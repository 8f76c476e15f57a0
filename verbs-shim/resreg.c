// SPDX-License-Identifier: MIT
/* This process's registry of its RDMA objects (resreg.h): the writer, in libibverbs.so.1. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verbs-shim/resreg.h"
#include "verbs-shim/resreg_int.h"

/*
 * The process's file, guarded by @lock (a leaf: nothing is taken inside it). Object creation
 * and destruction take it; a QP's record is written under the QP's lock alone, since the file
 * outlives every object counted in it.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct resreg_file *_Atomic file;
static char path[PATH_MAX];
static pid_t owner;                /* the process that made the file */
static _Atomic uint32_t epoch = 1; /* the tag of objects counted in the current file */
static uint64_t live;              /* objects counted in it */
static bool failed;                /* no file could be made: the process is not listed */
static bool atfork_set;
static const char *dir = UROCE_RESREG_DIR;
static uint64_t slots_used[UROCE_MAX_QP / 64]; /* QP records in use, a bit each */

void uroce_resreg_use_dir(const char *d)
{
	dir = d;
}

/* fork(): the lock is taken across it so that the child's copy is free. */
static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void parent_after_fork(void)
{
	pthread_mutex_unlock(&lock);
}

/* The child's objects are copies of its parent's, which stay counted in the parent's file:
 * the child forgets the file (a new epoch, so their tags match nothing) and makes its own on
 * its first object. */
static void child_after_fork(void)
{
	struct resreg_file *f = atomic_load(&file);

	if (f)
		munmap(f, sizeof(*f));
	atomic_store(&file, NULL);
	atomic_fetch_add(&epoch, 1);
	live = 0;
	failed = false;
	memset(slots_used, 0, sizeof(slots_used));
	pthread_mutex_unlock(&lock);
}

/* Under the lock: the file at @path is another pid namespace's, whose process of the same pid
 * number shares this /dev/shm: not ours to remove. */
static bool live_elsewhere(void)
{
	struct resreg_hdr h;
	uint64_t dev, ino;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool other;

	if (fd < 0)
		return false;
	other = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == RESREG_MAGIC &&
		!resreg_ns("pid", &dev, &ino) && (h.pidns_dev != dev || h.pidns_ino != ino);
	close(fd);
	return other;
}

/* Under the lock: make and map the file. Returns false when it cannot be had. */
static bool open_file(void)
{
	struct resreg_file *f;
	struct resreg_hdr *h;
	uint64_t start;
	int fd;

	if (failed)
		return false;
	failed = true; /* until it works */
	if (!atfork_set) {
		if (pthread_atfork(before_fork, parent_after_fork, child_after_fork))
			return false;
		atfork_set = true;
	}
	owner = getpid();
	start = uroce_resreg_start_time(owner);
	if (!start || uroce_resreg_path(path, sizeof(path), dir, geteuid(), owner))
		return false;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST && !live_elsewhere()) {
		/* Our pid's name: left by a dead process of the same pid, or by this process
		 * before it exec'd; its content is no one's now. */
		unlink(path);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0)
		return false;
	if (ftruncate(fd, sizeof(*f))) {
		close(fd);
		unlink(path);
		return false;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		unlink(path);
		return false;
	}
	h = &f->hdr;
	h->version = RESREG_VERSION;
	h->size = sizeof(*f);
	h->pid = (uint32_t)owner;
	h->uid = (uint32_t)geteuid();
	h->start_time = start;
	h->udp_port = resreg_udp_port();
	if (resreg_ns("net", &h->netns_dev, &h->netns_ino) ||
	    resreg_ns("pid", &h->pidns_dev, &h->pidns_ino)) {
		munmap(f, sizeof(*f));
		unlink(path);
		return false;
	}
	__atomic_store_n(&h->magic, RESREG_MAGIC, __ATOMIC_RELEASE);
	atomic_store(&file, f);
	failed = false;
	return true;
}

/* Under the lock: the last object went; so does the file. */
static void close_file(void)
{
	struct resreg_file *f = atomic_load(&file);

	unlink(path);
	munmap(f, sizeof(*f));
	atomic_store(&file, NULL);
	atomic_fetch_add(&epoch, 1);
}

/*
 * At exit (or dlclose): the file goes with the process. Its mapping stays, since other threads
 * may still write a QP's record (a move to ERR on the progress thread) until the process ends.
 * A child of fork() that made none has its parent's forgotten (child_after_fork).
 */
__attribute__((destructor)) static void remove_file(void)
{
	pthread_mutex_lock(&lock);
	if (atomic_load(&file) && owner == getpid())
		unlink(path);
	pthread_mutex_unlock(&lock);
}

/* Under the lock, with the file: the index of device @name, added if new; -1 if the table is
 * full. */
static int dev_index(struct resreg_file *f, const char *name)
{
	uint32_t n = f->hdr.ndevs;

	for (uint32_t i = 0; i < n; i++)
		if (!strncmp(f->dev[i].name, name, RESREG_NAME))
			return (int)i;
	if (n == RESREG_DEVS)
		return -1;
	snprintf(f->dev[n].name, RESREG_NAME, "%s", name);
	__atomic_store_n(&f->hdr.ndevs, n + 1, __ATOMIC_RELEASE);
	return (int)n;
}

/* Under the lock, with the file: one more (@delta 1) or one less (-1) object of @kind on
 * device @d. */
static void count(struct resreg_file *f, int d, enum uroce_res kind, int delta)
{
	uint64_t *c = &f->dev[d].count[kind];

	__atomic_store_n(c, *c + (uint64_t)(int64_t)delta, __ATOMIC_RELAXED);
	live += (uint64_t)(int64_t)delta;
}

/* Under the lock: the file and device @name's index for a new object, or NULL. */
static struct resreg_file *file_for(const char *name, int *d)
{
	struct resreg_file *f = atomic_load(&file);

	if (!f && !open_file())
		return NULL;
	f = atomic_load(&file);
	*d = dev_index(f, name);
	if (*d < 0) {
		if (!live)
			close_file();
		return NULL;
	}
	return f;
}

uint32_t uroce_resreg_add(const char *dev, enum uroce_res kind)
{
	struct resreg_file *f;
	uint32_t tag = 0;
	int d;

	pthread_mutex_lock(&lock);
	f = file_for(dev, &d);
	if (f) {
		count(f, d, kind, 1);
		tag = atomic_load(&epoch);
	}
	pthread_mutex_unlock(&lock);
	return tag;
}

/* Under the lock: the object of @tag was counted in the current file (so it is there). */
static struct resreg_file *counted_in(uint32_t tag)
{
	return tag && tag == atomic_load(&epoch) ? atomic_load(&file) : NULL;
}

/* Under the lock, with the file: one object less on @dev; the file goes with the last. */
static void uncount(struct resreg_file *f, const char *dev, enum uroce_res kind)
{
	int d = dev_index(f, dev);

	if (d >= 0)
		count(f, d, kind, -1);
	if (!live)
		close_file();
}

void uroce_resreg_del(const char *dev, enum uroce_res kind, uint32_t tag)
{
	struct resreg_file *f;

	if (!tag)
		return;
	pthread_mutex_lock(&lock);
	f = counted_in(tag);
	if (f)
		uncount(f, dev, kind);
	pthread_mutex_unlock(&lock);
}

/*
 * Write record @r: @used, on device @d, from @q; its port is the handle's (sticky). A seqlock:
 * the sequence is odd while the fields change. Each field is stored with release order, so
 * that a reader that sees a new field (acquire, read_qp) also sees the odd sequence before it,
 * and retries; release stores in place of a release fence, which ThreadSanitizer cannot
 * model.
 */
static void write_qp(struct resreg_qp *r, uint32_t used, uint32_t d, const struct uroce_res_qp *q,
		     uint8_t port)
{
	uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->used, used, __ATOMIC_RELEASE);
	__atomic_store_n(&r->dev, d, __ATOMIC_RELEASE);
	__atomic_store_n(&r->lqpn, q->lqpn, __ATOMIC_RELEASE);
	__atomic_store_n(&r->rqpn, q->rqpn, __ATOMIC_RELEASE);
	__atomic_store_n(&r->rq_psn, q->rq_psn, __ATOMIC_RELEASE);
	__atomic_store_n(&r->sq_psn, q->sq_psn, __ATOMIC_RELEASE);
	__atomic_store_n(&r->pdn, q->pdn, __ATOMIC_RELEASE);
	__atomic_store_n(&r->has_pd, q->has_pd, __ATOMIC_RELEASE);
	__atomic_store_n(&r->port, port, __ATOMIC_RELEASE);
	__atomic_store_n(&r->type, q->type, __ATOMIC_RELEASE);
	__atomic_store_n(&r->state, q->state, __ATOMIC_RELEASE);
	__atomic_store_n(&r->mig, q->mig, __ATOMIC_RELEASE);
	__atomic_store_n(&r->seq, seq + 2, __ATOMIC_RELEASE);
}

/* Under the lock: the lowest free record, or -1 (there are as many as a process may have
 * QPs, so only a QP past UROCE_MAX_QP finds none). */
static int take_slot(struct resreg_file *f)
{
	for (uint32_t w = 0; w < UROCE_MAX_QP / 64; w++) {
		if (slots_used[w] == UINT64_MAX)
			continue;
		uint32_t bit = (uint32_t)__builtin_ctzll(~slots_used[w]), s = w * 64 + bit;

		slots_used[w] |= 1ull << bit;
		if (s >= f->hdr.qp_end)
			__atomic_store_n(&f->hdr.qp_end, s + 1, __ATOMIC_RELEASE);
		return (int)s;
	}
	return -1;
}

/* Under the lock: record @s is free again; the records in use stay below qp_end. */
static void give_slot(struct resreg_file *f, uint32_t s)
{
	uint32_t end = f->hdr.qp_end;

	slots_used[s / 64] &= ~(1ull << (s % 64));
	while (end && !(slots_used[(end - 1) / 64] & (1ull << ((end - 1) % 64))))
		end--;
	__atomic_store_n(&f->hdr.qp_end, end, __ATOMIC_RELEASE);
}

void uroce_resreg_qp_add(struct uroce_resreg_qp *h, const char *dev, const struct uroce_res_qp *q)
{
	struct resreg_file *f;
	int d, s;

	pthread_mutex_lock(&lock);
	f = file_for(dev, &d);
	if (f) {
		s = take_slot(f);
		count(f, d, UROCE_RES_QP, 1);
		if (s >= 0) {
			h->slot = (uint32_t)s;
			h->port = q->port;
			write_qp(&f->qp[s], 1, (uint32_t)d, q, h->port);
			h->tag = atomic_load(&epoch);
		} else {
			uncount(f, dev, UROCE_RES_QP);
		}
	}
	pthread_mutex_unlock(&lock);
}

void uroce_resreg_qp_set(struct uroce_resreg_qp *h, const struct uroce_res_qp *q)
{
	/* Without the registry's lock: the QP's counts keep the file, and its lock keeps other
	 * writers of the record out. */
	struct resreg_file *f = counted_in(h->tag);
	struct resreg_qp *r;

	if (!f)
		return;
	r = &f->qp[h->slot];
	if (q->port)
		h->port = q->port;
	write_qp(r, 1, __atomic_load_n(&r->dev, __ATOMIC_RELAXED), q, h->port);
}

void uroce_resreg_qp_del(struct uroce_resreg_qp *h, const char *dev)
{
	static const struct uroce_res_qp none;
	struct resreg_file *f;

	if (!h->tag)
		return;
	pthread_mutex_lock(&lock);
	f = counted_in(h->tag);
	if (f) {
		write_qp(&f->qp[h->slot], 0, 0, &none, 0);
		give_slot(f, h->slot);
		uncount(f, dev, UROCE_RES_QP);
	}
	pthread_mutex_unlock(&lock);
	h->tag = 0;
}
