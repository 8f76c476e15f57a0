// SPDX-License-Identifier: MIT
/* Reading the registries of other processes (resreg.h): what liburoce-preload.so's RDMA netlink
 * answers RES_GET and RES_QP_GET from. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/config.h"
#include "transport/wire.h"
#include "verbs-shim/resreg.h"
#include "verbs-shim/resreg_int.h"

/* Tries at a QP record that keeps changing under the reader, before it is left out. */
#define READ_TRIES 1000

int uroce_resreg_path(char *buf, size_t n, const char *dir, uid_t uid, pid_t pid)
{
	int len = snprintf(buf, n, "%s/" RESREG_PREFIX "%u-%d", dir, (unsigned int)uid, (int)pid);

	return len < 0 || (size_t)len >= n ? ENAMETOOLONG : 0;
}

uint64_t uroce_resreg_start_time(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	const char *p;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	/* "pid (comm) state ppid ...": the name may hold spaces and parentheses, so fields are
	 * counted from the last ')'; a zombie (Z) or dead task (X) holds nothing any more. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

uint16_t resreg_udp_port(void)
{
	const char *value = secure_getenv("UROCE_UDP_PORT");
	uint16_t port;

	if (!value || uroce_config_parse_port(value, &port))
		port = ROCE_UDP_PORT;
	return port;
}

int resreg_ns(const char *which, uint64_t *dev, uint64_t *ino)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", which);
	if (stat(path, &st))
		return errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* The reader: what it may see. */
struct reader {
	uid_t uid;
	bool root;
	uint64_t netns_dev, netns_ino, pidns_dev, pidns_ino;
	uint16_t udp_port;
	const struct uroce_resreg_visitor *v;
};

/*
 * A whole copy of record @r into @q (its device in *dev), or false: free, or changing for as
 * long as the reader tried. Each field is loaded with acquire order, so that the sequence's
 * second load comes after them all and a field the writer changed meanwhile shows as a new
 * sequence (write_qp).
 */
static bool read_qp(const struct resreg_qp *r, uint32_t *dev, struct uroce_res_qp *q)
{
	for (int i = 0; i < READ_TRIES; i++) {
		uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE), used;

		if (seq & 1)
			continue;
		used = __atomic_load_n(&r->used, __ATOMIC_ACQUIRE);
		*dev = __atomic_load_n(&r->dev, __ATOMIC_ACQUIRE);
		q->lqpn = __atomic_load_n(&r->lqpn, __ATOMIC_ACQUIRE);
		q->rqpn = __atomic_load_n(&r->rqpn, __ATOMIC_ACQUIRE);
		q->rq_psn = __atomic_load_n(&r->rq_psn, __ATOMIC_ACQUIRE);
		q->sq_psn = __atomic_load_n(&r->sq_psn, __ATOMIC_ACQUIRE);
		q->pdn = __atomic_load_n(&r->pdn, __ATOMIC_ACQUIRE);
		q->has_pd = __atomic_load_n(&r->has_pd, __ATOMIC_ACQUIRE);
		q->port = (uint8_t)__atomic_load_n(&r->port, __ATOMIC_ACQUIRE);
		q->type = (uint8_t)__atomic_load_n(&r->type, __ATOMIC_ACQUIRE);
		q->state = (uint8_t)__atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
		q->mig = (uint8_t)__atomic_load_n(&r->mig, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) == seq)
			return used;
	}
	return false;
}

/* Tell the visitor what the live process of the mapped file @f holds. */
static void visit(const struct reader *rd, const struct resreg_file *f)
{
	const struct resreg_hdr *h = &f->hdr;
	uint32_t ndevs = __atomic_load_n(&h->ndevs, __ATOMIC_ACQUIRE);
	uint32_t end = __atomic_load_n(&h->qp_end, __ATOMIC_ACQUIRE);
	char names[RESREG_DEVS][RESREG_NAME];

	if (ndevs > RESREG_DEVS)
		ndevs = RESREG_DEVS;
	if (end > UROCE_MAX_QP)
		end = UROCE_MAX_QP;
	for (uint32_t d = 0; d < ndevs; d++) {
		uint64_t count[UROCE_RES_NUM];

		memcpy(names[d], f->dev[d].name, RESREG_NAME);
		names[d][RESREG_NAME - 1] = '\0';
		for (int k = 0; k < UROCE_RES_NUM; k++)
			count[k] = __atomic_load_n(&f->dev[d].count[k], __ATOMIC_RELAXED);
		if (rd->v->counts)
			rd->v->counts(rd->v->arg, h->pid, names[d], count);
	}
	for (uint32_t i = 0; i < end && rd->v->qp; i++) {
		struct uroce_res_qp q;
		uint32_t dev;

		if (read_qp(&f->qp[i], &dev, &q) && dev < ndevs)
			rd->v->qp(rd->v->arg, h->pid, names[dev], &q);
	}
}

/* The file @name of the folder @dfd: visited if it is a live process's the reader may see,
 * removed if its process is dead and it is the reader's uid's. */
static void read_file(const struct reader *rd, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	const struct resreg_hdr *h;
	struct resreg_file *f;
	struct stat st, now;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size != sizeof(*f) ||
	    (!rd->root && st.st_uid != rd->uid)) {
		close(fd);
		return;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return;
	h = &f->hdr;
	/* Another layout, one being made, or a process of another pid namespace, whose pid says
	 * nothing here: not ours to judge. */
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != RESREG_MAGIC ||
	    h->version != RESREG_VERSION || h->size != sizeof(*f) ||
	    h->pidns_dev != rd->pidns_dev || h->pidns_ino != rd->pidns_ino) {
		munmap(f, sizeof(*f));
		return;
	}
	if (uroce_resreg_start_time((pid_t)h->pid) != h->start_time) {
		/* Left by a process killed before its exit (SIGKILL), of any network namespace
		 * (one that is gone has no reader of its own); the name is checked to be still this
		 * file, not one a new process of the same pid has just made. */
		if (st.st_uid == rd->uid && !fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
		    now.st_ino == st.st_ino && now.st_dev == st.st_dev)
			unlinkat(dfd, name, 0);
	} else if (h->netns_dev == rd->netns_dev && h->netns_ino == rd->netns_ino &&
		   h->udp_port == rd->udp_port) {
		visit(rd, f);
	}
	munmap(f, sizeof(*f));
}

int uroce_resreg_read(const char *dir, const struct uroce_resreg_visitor *v)
{
	struct reader rd = {.uid = geteuid(), .udp_port = resreg_udp_port(), .v = v};
	char prefix[64];
	struct dirent *e;
	DIR *d;
	int err;

	rd.root = rd.uid == 0;
	err = resreg_ns("net", &rd.netns_dev, &rd.netns_ino);
	if (!err)
		err = resreg_ns("pid", &rd.pidns_dev, &rd.pidns_ino);
	if (err)
		return err;
	d = opendir(dir);
	if (!d)
		return errno;
	if (rd.root)
		snprintf(prefix, sizeof(prefix), RESREG_PREFIX);
	else
		snprintf(prefix, sizeof(prefix), RESREG_PREFIX "%u-", (unsigned int)rd.uid);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			read_file(&rd, dirfd(d), e->d_name);
	closedir(d);
	return 0;
}
