/* SPDX-License-Identifier: MIT */
/*
 * The kernel's view of uroce devices: the sysfs and /dev folders an rxe device has on a host
 * with the kernel module (/sys/class/infiniband/<dev>, /sys/class/infiniband_verbs/uverbs<N>,
 * /dev/infiniband/uverbs<N>), built from a list of devices, in memory. It is pure -- strings in,
 * nodes out, no system calls -- so that libibverbs (ibv_read_sysfs_file, sysfs.c) and the
 * preloaded liburoce-preload.so (preload/), which serves these paths to every program run under
 * uroce-run, answer from one definition. ARCHITECTURE.md "The kernel's view".
 *
 * The tree, for each device D on interface I with uverbs number N, as rxe's on Linux 6.1
 * (tests/discovery/rxe-reference.txt):
 *   /sys/class/infiniband/D -> ../../devices/virtual/infiniband/D
 *   /sys/devices/virtual/infiniband/D/{fw_ver,node_desc,node_guid,node_type,parent,
 *       sys_image_guid,uevent,subsystem,ports/1/{state,phys_state,rate,link_layer,lid,sm_lid,
 *       lid_mask_count,sm_sl,cap_mask,gids/,gid_attrs/{types,ndevs}/,pkeys/}}
 *   /sys/class/infiniband_verbs/{abi_version,uverbsN ->
 * ../../devices/virtual/infiniband_verbs/uverbsN}
 *   /sys/devices/virtual/infiniband_verbs/uverbsN/{abi_version,dev,ibdev,subsystem,uevent}
 *   /dev/infiniband/{uverbsN,rdma_cm} (character device nodes)
 * Beyond rxe's, as a hardware RNIC has them: board_id, and a link D/device to the interface's
 * parent device (whose net/ holds I), where pyverbs, UCX and NCCL look for the netdev and the
 * NUMA node; for an interface without a parent (lo, veth) the link leads to a device folder of
 * the tree, /sys/devices/virtual/uroce/I, holding net/I -> the interface and numa_node.
 * Not served (rxe has them): power/, hw_counters/, the CM's counters, umad and issm nodes.
 */
#ifndef UROCE_VERBS_SHIM_SYSVIEW_H
#define UROCE_VERBS_SHIM_SYSVIEW_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verbs-shim/iface.h"

/* What the tree needs to know of one device. */
struct uroce_sysview_dev {
	char name[64]; /* ibv_get_device_name() */
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;
	uint32_t index; /* N of uverbsN, ibv_get_device_index() */
	__be64 guid;
	unsigned int ifflags;
	int ifmtu;
	uint8_t width, speed; /* the port's UROCE_WIDTH_* and UROCE_SPEED_* */
	struct uroce_gid_slot gids[UROCE_GID_TBL_LEN];
	/* The interface's parent device, as /sys/class/net/I/device resolves ("/sys/devices/..."),
	 * or "" for a virtual interface: the device link then points into the tree. */
	char parent[PATH_MAX];
};

struct uroce_sysview {
	const struct uroce_sysview_dev *devs;
	int ndevs;
};

enum uroce_sysview_kind {
	UROCE_SV_DIR = 1,
	UROCE_SV_FILE,
	UROCE_SV_LINK,
	UROCE_SV_CHR,
};

/* Room for one node's content: a file's text, a link's target, a folder's entries. */
#define UROCE_SYSVIEW_TEXT 4096

struct uroce_sysview_node {
	enum uroce_sysview_kind kind;
	unsigned int mode;         /* permission bits */
	unsigned int major, minor; /* UROCE_SV_CHR */
	/*
	 * FILE: the content, @len bytes; @read_err is the errno reading it fails with (0 if it
	 * reads), as the kernel's attributes of an empty GID slot fail with EINVAL.
	 * LINK: the target, as readlink gives it (relative, as sysfs links are).
	 * DIR: the entries, each a d_type byte (DT_DIR, DT_REG, DT_LNK, DT_CHR) followed by the
	 * name and a NUL, @len bytes in all, without "." and "..".
	 */
	char text[UROCE_SYSVIEW_TEXT];
	size_t len;
	int read_err;
};

/* True if @path (absolute, normalized: no "//", ".", ".." or trailing '/') is in the tree or
 * is one of its roots. */
bool uroce_sysview_owns(const char *path);

/*
 * Normalize the absolute @path into @out (@size bytes): "//", "." and ".." folded lexically,
 * trailing '/' dropped. Returns 0, EINVAL for a relative path, ENAMETOOLONG.
 */
int uroce_sysview_normalize(const char *path, char *out, size_t size);

/* The outcomes of uroce_sysview_resolve. */
enum uroce_sysview_where {
	UROCE_SV_OUTSIDE = 0, /* the walk never entered the tree: not the tree's business */
	UROCE_SV_NODE,        /* *node is the answer */
	UROCE_SV_REAL,        /* the walk left the tree: @real is the path to ask the kernel */
};

/*
 * Resolve the absolute @path as the kernel's path walk would (path_resolution(7)): component
 * by component, ".." on the path resolved so far, links of the tree followed (the last
 * component's only if @follow or a '/' follows it). Outside the tree the walk goes on
 * lexically. Returns UROCE_SV_NODE with *node filled and the node's resolved path in @real
 * (@real_size bytes; @real may be NULL), UROCE_SV_REAL with the resolved path to ask the
 * kernel in @real, UROCE_SV_OUTSIDE, or a negative errno: -EINVAL (a relative path),
 * -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG.
 */
int uroce_sysview_resolve(const struct uroce_sysview *v, const char *path, bool follow,
			  struct uroce_sysview_node *node, char *real, size_t real_size);

/* The character device numbers of /dev/infiniband/uverbsN: the kernel's, major 231 from 192. */
#define UROCE_UVERBS_MAJOR      231
#define UROCE_UVERBS_MINOR_BASE 192
/* /dev/infiniband/rdma_cm: a misc device (major 10); the minor the kernel gave rxe's host. */
#define UROCE_RDMA_CM_MAJOR 10
#define UROCE_RDMA_CM_MINOR 124
/* The kernel's uverbs ABI version (/sys/class/infiniband_verbs/abi_version,
 * IB_USER_VERBS_ABI_VERSION). */
#define UROCE_UVERBS_CLASS_ABI 6
/* The per-device uverbs ABI version rxe registers (RXE_UVERBS_ABI_VERSION):
 * uverbsN/abi_version, and the CHARDEV_ABI of RDMA netlink's GET_CHARDEV. */
#define UROCE_UVERBS_DEV_ABI 2

#endif
