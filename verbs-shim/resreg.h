/* SPDX-License-Identifier: MIT */
/*
 * The resource registry: what RDMA objects each uroce process holds, readable by another
 * process without talking to it, so that RDMA netlink's RDMA_NLDEV_CMD_RES_GET and
 * RES_QP_GET (nldev.h) answer for every process as the kernel's restrack does
 * (ARCHITECTURE.md "The kernel's view").
 *
 * Each process that holds an object has one file, <dir>/uroce-res-<uid>-<pid> (dir: /dev/shm),
 * mode 0600, a fixed-size table (resreg_int.h) it maps shared: a header naming the process (pid,
 * start time from /proc/<pid>/stat, network and pid namespaces), per device the count of each
 * enum uroce_res kind, and one record per QP. The file is made on the first object and removed
 * when the last goes or the library is unloaded (exit); a process killed with SIGKILL leaves
 * it, and readers skip it -- its pid is gone or names another process (another start time) --
 * and remove it when it is of their own uid. Only create, modify and destroy write it; a QP's
 * record is written under the QP's lock with a sequence count (a seqlock: odd while it
 * changes), so that a reader copies it whole or tries again. The registry never fails a verb:
 * without the file (no /dev/shm, not writable, a full device table) the object is simply not
 * listed, and its tag is 0.
 *
 * fork(): the child's copies of its parent's objects stay the parent's (the kernel's restrack
 * names the creating task); each object carries the tag of the file it was counted in, the
 * child starts with none (pthread_atfork), so destroying an inherited object changes nothing,
 * and what the child creates goes to a file of its own.
 */
#ifndef UROCE_VERBS_SHIM_RESREG_H
#define UROCE_VERBS_SHIM_RESREG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "verbs-shim/caps.h"

/* Where the files are. */
#define UROCE_RESREG_DIR "/dev/shm"

/* One QP, as the kernel's fill_res_qp_entry() reports it (values of enum ibv_qp_type,
 * ibv_qp_state and ibv_mig_state, which equal the kernel's ib_* ones). */
struct uroce_res_qp {
	uint32_t lqpn, rqpn;
	uint32_t rq_psn, sq_psn;
	uint32_t pdn;  /* its PD's number (ibv_pd.handle), if has_pd */
	bool has_pd;   /* an XRC target QP has none */
	uint8_t port;  /* the last port ibv_modify_qp gave it (IBV_QP_PORT), 0: none yet */
	uint8_t type;  /* enum ibv_qp_type */
	uint8_t state; /* enum ibv_qp_state */
	uint8_t mig;   /* enum ibv_mig_state */
};

/*
 * Count an object of kind @kind on the device named @dev. Returns the tag to give
 * uroce_resreg_del, or 0 when it is not recorded (no file could be made, the device table is
 * full); never fails otherwise.
 */
uint32_t uroce_resreg_add(const char *dev, enum uroce_res kind);

/* The object counted with @tag (0: not counted; another file's: not this process's) is gone. */
void uroce_resreg_del(const char *dev, enum uroce_res kind, uint32_t tag);

/* A QP's place in the registry, kept in the QP and written under its lock. */
struct uroce_resreg_qp {
	uint32_t tag;  /* as uroce_resreg_add's; 0: not recorded */
	uint32_t slot; /* its record */
	uint8_t port;  /* the last port set: the kernel's ib_qp.port, which a reset keeps */
};

/* Count the QP @q on @dev and give it a record (@h: all zero before). */
void uroce_resreg_qp_add(struct uroce_resreg_qp *h, const char *dev, const struct uroce_res_qp *q);

/* The QP's attributes changed (create, modify, a move to SQE or ERR): rewrite its record. */
void uroce_resreg_qp_set(struct uroce_resreg_qp *h, const struct uroce_res_qp *q);

/* The QP is being destroyed: its record and count go. */
void uroce_resreg_qp_del(struct uroce_resreg_qp *h, const char *dev);

/*
 * Keep the files in @dir instead of UROCE_RESREG_DIR (tests), before the first object. @dir
 * must stay valid.
 */
void uroce_resreg_use_dir(const char *dir);

/* What a reader is told, process by process (uroce_resreg_read). */
struct uroce_resreg_visitor {
	/* @pid holds count[kind] objects of each kind on the device named @dev. */
	void (*counts)(void *arg, uint32_t pid, const char *dev,
		       const uint64_t count[UROCE_RES_NUM]);
	/* @pid holds the QP @q on the device named @dev. */
	void (*qp)(void *arg, uint32_t pid, const char *dev, const struct uroce_res_qp *q);
	void *arg;
};

/*
 * Read the registries in @dir of the live processes this one may see: its own uid's (every
 * uid's for root), of its network and pid namespaces and its RoCE UDP port. A file of a dead
 * process of its pid namespace (its pid gone, a zombie, or a pid now of another process: another
 * start time) is skipped, and removed when it is of this process's uid, whatever its network
 * namespace. Returns 0, or the errno of opening @dir (ENOENT: no registry at all); unreadable files
 * are skipped.
 */
int uroce_resreg_read(const char *dir, const struct uroce_resreg_visitor *v);

/* The path of the registry of @uid's process @pid in @dir, into @buf (@n bytes). Returns 0 or
 * ENAMETOOLONG. */
int uroce_resreg_path(char *buf, size_t n, const char *dir, uid_t uid, pid_t pid);

/* The start time of process @pid (clock ticks after boot, /proc/<pid>/stat field 22), or 0
 * when it is gone or a zombie. */
uint64_t uroce_resreg_start_time(pid_t pid);

#endif
