// SPDX-License-Identifier: MIT
/*
 * The kernel's view of uroce devices (sysview.h): the tree itself. uroce_sysview_lookup()
 * answers each path of it, without following links; sysview_walk.c walks paths through it.
 */
#include "verbs-shim/sysview.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/sysview_int.h"

/* What ibv_devinfo prints as board_id. */
#define UROCE_BOARD_ID "uroce_soft_roce"
/* node_desc: the driver's name, as rxe's reads "rxe". */
#define UROCE_NODE_DESC "uroce"

/* Node builders. */

static void node_dir(struct uroce_sysview_node *nd)
{
	nd->kind = UROCE_SV_DIR;
	nd->mode = 0755;
	nd->len = 0;
	nd->read_err = 0;
}

static void dir_add(struct uroce_sysview_node *nd, unsigned char type, const char *name)
{
	size_t n = strlen(name) + 1;

	if (nd->len + 1 + n > sizeof(nd->text))
		return; /* cannot happen with UROCE_GID_TBL_LEN entries and IF_NAMESIZE names */
	nd->text[nd->len++] = (char)type;
	memcpy(nd->text + nd->len, name, n);
	nd->len += n;
}

static void dir_add_fmt(struct uroce_sysview_node *nd, unsigned char type, const char *fmt, ...)
{
	char name[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	dir_add(nd, type, name);
}

static __attribute__((format(printf, 3, 4))) void
node_text(struct uroce_sysview_node *nd, enum uroce_sysview_kind kind, const char *fmt, ...)
{
	va_list ap;
	int n;

	nd->kind = kind;
	nd->mode = kind == UROCE_SV_LINK ? 0777 : 0444;
	nd->read_err = 0;
	va_start(ap, fmt);
	n = vsnprintf(nd->text, sizeof(nd->text), fmt, ap);
	va_end(ap);
	nd->len = n < 0 ? 0 : (size_t)n >= sizeof(nd->text) ? sizeof(nd->text) - 1 : (size_t)n;
}

#define node_file(nd, ...) node_text(nd, UROCE_SV_FILE, __VA_ARGS__)
#define node_link(nd, ...) node_text(nd, UROCE_SV_LINK, __VA_ARGS__)

/* The first component of @rest into @name (@size bytes); the rest after it, or NULL. */
static const char *component(const char *rest, char *name, size_t size)
{
	size_t n = strcspn(rest, "/");

	if (n == 0 || n >= size)
		return NULL;
	memcpy(name, rest, n);
	name[n] = '\0';
	return rest[n] ? rest + n + 1 : rest + n;
}

/* A decimal index in [0, limit) that is all of @s, or -1. */
static int index_of(const char *s, int limit)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1]))
		return -1;
	v = strtol(s, &end, 10);
	return *end || v >= limit ? -1 : (int)v;
}

static const struct uroce_sysview_dev *dev_named(const struct uroce_sysview *v, const char *name)
{
	for (int i = 0; i < v->ndevs; i++)
		if (!strcmp(v->devs[i].name, name))
			return &v->devs[i];
	return NULL;
}

static const struct uroce_sysview_dev *dev_of_uverbs(const struct uroce_sysview *v,
						     const char *name)
{
	int n;

	if (strncmp(name, "uverbs", 6))
		return NULL;
	n = index_of(name + 6, INT_MAX);
	for (int i = 0; n >= 0 && i < v->ndevs; i++)
		if (v->devs[i].index == (uint32_t)n)
			return &v->devs[i];
	return NULL;
}

static const struct uroce_sysview_dev *dev_of_iface(const struct uroce_sysview *v,
						    const char *ifname)
{
	for (int i = 0; i < v->ndevs; i++)
		if (!v->devs[i].parent[0] && !strcmp(v->devs[i].ifname, ifname))
			return &v->devs[i];
	return NULL;
}

static void format_gid(char *buf, size_t size, const union ibv_gid *gid)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, size,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0],
		 r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
		 r[14], r[15]);
}

/*
 * ports/N/rate: ib_core's rate_show() of the port's width and speed (Linux 6.1: SDR named,
 * deci-Gb/s per lane).
 */
static void rate_file(const struct uroce_sysview_dev *d, struct uroce_sysview_node *nd)
{
	const char *name;
	int rate, lanes;

	switch (d->speed) {
	case UROCE_SPEED_DDR:
		name = " DDR";
		rate = 50;
		break;
	case UROCE_SPEED_QDR:
		name = " QDR";
		rate = 100;
		break;
	case UROCE_SPEED_FDR10:
		name = " FDR10";
		rate = 100;
		break;
	case UROCE_SPEED_FDR:
		name = " FDR";
		rate = 140;
		break;
	case UROCE_SPEED_EDR:
		name = " EDR";
		rate = 250;
		break;
	default:
		name = " SDR";
		rate = 25;
		break;
	}
	lanes = d->width == UROCE_WIDTH_4X    ? 4
		: d->width == UROCE_WIDTH_8X  ? 8
		: d->width == UROCE_WIDTH_12X ? 12
					      : 1;
	rate *= lanes;
	node_file(nd, "%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "", lanes, name);
}

/* .../ports/1/gids/I, gid_attrs/{types,ndevs}/I (ib_core's sysfs.c show_port_gid*). */
static int port_gid_file(const struct uroce_sysview_dev *d, const char *what, int i,
			 struct uroce_sysview_node *nd)
{
	const struct uroce_gid_slot *slot = &d->gids[i];
	char gid[64];

	if (!strcmp(what, "gids")) {
		static const union ibv_gid zero;

		format_gid(gid, sizeof(gid), slot->valid ? &slot->gid : &zero);
		node_file(nd, "%s\n", gid);
		return 0;
	}
	if (!strcmp(what, "types"))
		node_file(nd, "RoCE v2\n");
	else
		node_file(nd, "%s\n", d->ifname);
	if (!slot->valid) {
		/* An empty slot's attributes fail to read with EINVAL, as the kernel's do. */
		nd->len = 0;
		nd->read_err = EINVAL;
	}
	return 0;
}

static int port_node(const struct uroce_sysview_dev *d, const char *rest,
		     struct uroce_sysview_node *nd)
{
	static const char *const states[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE"};
	static const struct {
		const char *name;
		unsigned char type;
	} files[] = {
		{"cap_mask", DT_REG},   {"gid_attrs", DT_DIR},      {"gids", DT_DIR},
		{"lid", DT_REG},        {"lid_mask_count", DT_REG}, {"link_layer", DT_REG},
		{"phys_state", DT_REG}, {"pkeys", DT_DIR},          {"rate", DT_REG},
		{"sm_lid", DT_REG},     {"sm_sl", DT_REG},          {"state", DT_REG},
	};
	enum ibv_port_state state = uroce_iface_port_state(d->ifflags);
	uint8_t phys = uroce_iface_phys_state(d->ifflags);
	char name[32], sub[32];
	const char *tail;
	int i;

	if (!*rest) {
		node_dir(nd);
		for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++)
			dir_add(nd, files[k].type, files[k].name);
		return 0;
	}
	tail = component(rest, name, sizeof(name));
	if (!tail)
		return ENOENT;
	if (!strcmp(name, "gids") || !strcmp(name, "pkeys")) {
		int limit = name[0] == 'g' ? UROCE_GID_TBL_LEN : UROCE_PKEY_TBL_LEN;

		if (!*tail) {
			node_dir(nd);
			for (i = 0; i < limit; i++)
				dir_add_fmt(nd, DT_REG, "%d", i);
			return 0;
		}
		i = index_of(tail, limit);
		if (i < 0)
			return ENOENT;
		if (name[0] == 'p') {
			node_file(nd, "0x%04x\n", UROCE_DEFAULT_PKEY);
			return 0;
		}
		return port_gid_file(d, "gids", i, nd);
	}
	if (!strcmp(name, "gid_attrs")) {
		if (!*tail) {
			node_dir(nd);
			dir_add(nd, DT_DIR, "ndevs");
			dir_add(nd, DT_DIR, "types");
			return 0;
		}
		tail = component(tail, sub, sizeof(sub));
		if (!tail || (strcmp(sub, "types") && strcmp(sub, "ndevs")))
			return ENOENT;
		if (!*tail) {
			node_dir(nd);
			for (i = 0; i < UROCE_GID_TBL_LEN; i++)
				dir_add_fmt(nd, DT_REG, "%d", i);
			return 0;
		}
		i = index_of(tail, UROCE_GID_TBL_LEN);
		return i < 0 ? ENOENT : port_gid_file(d, sub, i, nd);
	}
	if (*tail)
		return ENOENT;
	if (!strcmp(name, "state"))
		node_file(nd, "%d: %s\n", state, states[state]);
	else if (!strcmp(name, "phys_state"))
		node_file(nd, "%u: %s\n", phys, phys == 5 ? "LinkUp" : "Disabled");
	else if (!strcmp(name, "link_layer"))
		node_file(nd, "Ethernet\n");
	else if (!strcmp(name, "lid") || !strcmp(name, "sm_lid"))
		node_file(nd, "0x0\n");
	else if (!strcmp(name, "lid_mask_count") || !strcmp(name, "sm_sl"))
		node_file(nd, "0\n");
	else if (!strcmp(name, "cap_mask"))
		/* ib_core's file holds the driver's flags; IP_BASED_GIDS is added by uverbs'
		 * query_port only (rxe's reads 0x00010000), so the file goes without it. */
		node_file(nd, "0x%08x\n",
			  (unsigned int)(UROCE_PORT_CAP_FLAGS & ~IBV_PORT_IP_BASED_GIDS));
	else if (!strcmp(name, "rate"))
		rate_file(d, nd);
	else
		return ENOENT;
	return 0;
}

/* /sys/devices/virtual/infiniband_verbs/uverbsN/... (ib_uverbs' device attributes). */
static int uverbs_node(const struct uroce_sysview_dev *d, const char *rest,
		       struct uroce_sysview_node *nd)
{
	unsigned int minor = UROCE_UVERBS_MINOR_BASE + d->index;

	if (!*rest) {
		node_dir(nd);
		dir_add(nd, DT_REG, "abi_version");
		dir_add(nd, DT_REG, "dev");
		dir_add(nd, DT_REG, "ibdev");
		dir_add(nd, DT_LNK, "subsystem");
		dir_add(nd, DT_REG, "uevent");
	} else if (!strcmp(rest, "abi_version")) {
		node_file(nd, "%d\n", UROCE_UVERBS_DEV_ABI);
	} else if (!strcmp(rest, "dev")) {
		node_file(nd, "%d:%u\n", UROCE_UVERBS_MAJOR, minor);
	} else if (!strcmp(rest, "ibdev")) {
		node_file(nd, "%s\n", d->name);
	} else if (!strcmp(rest, "uevent")) {
		node_file(nd, "MAJOR=%d\nMINOR=%u\nDEVNAME=infiniband/uverbs%u\nDEVMODE=0666\n",
			  UROCE_UVERBS_MAJOR, minor, d->index);
		nd->mode = 0644;
	} else if (!strcmp(rest, "subsystem")) {
		node_link(nd, "../../../../class/infiniband_verbs");
	} else {
		return ENOENT;
	}
	return 0;
}

static void format_guid(char *buf, size_t size, __be64 guid)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
}

/* /sys/devices/virtual/infiniband/D/... */
static int ibdev_node(const struct uroce_sysview_dev *d, const char *rest,
		      struct uroce_sysview_node *nd)
{
	char name[32], guid[32];
	const char *tail;

	if (!*rest) {
		node_dir(nd);
		dir_add(nd, DT_REG, "board_id");
		dir_add(nd, DT_LNK, "device");
		dir_add(nd, DT_REG, "fw_ver");
		dir_add(nd, DT_REG, "node_desc");
		dir_add(nd, DT_REG, "node_guid");
		dir_add(nd, DT_REG, "node_type");
		dir_add(nd, DT_REG, "parent");
		dir_add(nd, DT_DIR, "ports");
		dir_add(nd, DT_LNK, "subsystem");
		dir_add(nd, DT_REG, "sys_image_guid");
		dir_add(nd, DT_REG, "uevent");
		return 0;
	}
	tail = component(rest, name, sizeof(name));
	if (!tail)
		return ENOENT;
	if (!strcmp(name, "ports")) {
		if (!*tail) {
			node_dir(nd);
			dir_add_fmt(nd, DT_DIR, "%d", UROCE_PORT_NUM);
			return 0;
		}
		tail = component(tail, name, sizeof(name));
		if (!tail || index_of(name, UROCE_PORT_NUM + 1) != UROCE_PORT_NUM)
			return ENOENT;
		return port_node(d, tail, nd);
	}
	if (*tail)
		return ENOENT;
	format_guid(guid, sizeof(guid), d->guid);
	if (!strcmp(name, "node_guid") || !strcmp(name, "sys_image_guid"))
		node_file(nd, "%s\n", guid);
	else if (!strcmp(name, "node_type"))
		node_file(nd, "%d: CA\n", IBV_NODE_CA);
	else if (!strcmp(name, "node_desc"))
		node_file(nd, "%s\n", UROCE_NODE_DESC), nd->mode = 0644;
	else if (!strcmp(name, "parent"))
		node_file(nd, "%s\n", d->ifname);
	else if (!strcmp(name, "fw_ver"))
		node_file(nd, "%s\n", UROCE_VERSION);
	else if (!strcmp(name, "board_id"))
		node_file(nd, "%s\n", UROCE_BOARD_ID);
	else if (!strcmp(name, "uevent"))
		node_file(nd, "NAME=%s\n", d->name), nd->mode = 0644;
	else if (!strcmp(name, "subsystem"))
		node_link(nd, "../../../../class/infiniband");
	else if (!strcmp(name, "device") && d->parent[0])
		node_link(nd, "../../../%s", d->parent + strlen("/sys/devices/"));
	else if (!strcmp(name, "device"))
		node_link(nd, "../../uroce/%s", d->ifname);
	else
		return ENOENT;
	return 0;
}

/* /sys/devices/virtual/uroce/I/...: the device folder of an interface without one. */
static int netdev_node(const struct uroce_sysview_dev *d, const char *rest,
		       struct uroce_sysview_node *nd)
{
	if (!*rest) {
		node_dir(nd);
		dir_add(nd, DT_DIR, "net");
		dir_add(nd, DT_REG, "numa_node");
		dir_add(nd, DT_REG, "uevent");
	} else if (!strcmp(rest, "net")) {
		node_dir(nd);
		dir_add(nd, DT_LNK, d->ifname);
	} else if (!strncmp(rest, "net/", 4) && !strcmp(rest + 4, d->ifname)) {
		node_link(nd, "../../../net/%s", d->ifname);
	} else if (!strcmp(rest, "numa_node")) {
		node_file(nd, "-1\n");
	} else if (!strcmp(rest, "uevent")) {
		node_file(nd, "%s", "");
	} else {
		return ENOENT;
	}
	return 0;
}

int uroce_sysview_lookup(const struct uroce_sysview *v, const char *path,
			 struct uroce_sysview_node *nd)
{
	const struct uroce_sysview_dev *d;
	const char *rest, *tail;
	char name[64];

	if ((rest = uroce_sysview_under(path, UROCE_SV_CLASS_IB))) {
		if (!*rest) {
			node_dir(nd);
			for (int i = 0; i < v->ndevs; i++)
				dir_add(nd, DT_LNK, v->devs[i].name);
			return 0;
		}
		if (!(d = dev_named(v, rest)))
			return ENOENT;
		node_link(nd, "../../devices/virtual/infiniband/%s", d->name);
		return 0;
	}
	if ((rest = uroce_sysview_under(path, UROCE_SV_CLASS_UVERBS))) {
		if (!*rest) {
			node_dir(nd);
			dir_add(nd, DT_REG, "abi_version");
			for (int i = 0; i < v->ndevs; i++)
				dir_add_fmt(nd, DT_LNK, "uverbs%u", v->devs[i].index);
			return 0;
		}
		if (!strcmp(rest, "abi_version")) {
			node_file(nd, "%d\n", UROCE_UVERBS_CLASS_ABI);
			return 0;
		}
		if (!(d = dev_of_uverbs(v, rest)))
			return ENOENT;
		node_link(nd, "../../devices/virtual/infiniband_verbs/uverbs%u", d->index);
		return 0;
	}
	if ((rest = uroce_sysview_under(path, UROCE_SV_DEVICES_UVERBS))) {
		if (!*rest) {
			node_dir(nd);
			for (int i = 0; i < v->ndevs; i++)
				dir_add_fmt(nd, DT_DIR, "uverbs%u", v->devs[i].index);
			return 0;
		}
		tail = component(rest, name, sizeof(name));
		if (!tail || !(d = dev_of_uverbs(v, name)))
			return ENOENT;
		return uverbs_node(d, tail, nd);
	}
	if ((rest = uroce_sysview_under(path, UROCE_SV_DEVICES_IB))) {
		if (!*rest) {
			node_dir(nd);
			for (int i = 0; i < v->ndevs; i++)
				dir_add(nd, DT_DIR, v->devs[i].name);
			return 0;
		}
		tail = component(rest, name, sizeof(name));
		if (!tail || !(d = dev_named(v, name)))
			return ENOENT;
		return ibdev_node(d, tail, nd);
	}
	if ((rest = uroce_sysview_under(path, UROCE_SV_DEVICES_NET))) {
		if (!*rest) {
			node_dir(nd);
			for (int i = 0; i < v->ndevs; i++)
				if (!v->devs[i].parent[0])
					dir_add(nd, DT_DIR, v->devs[i].ifname);
			return 0;
		}
		tail = component(rest, name, sizeof(name));
		if (!tail || !(d = dev_of_iface(v, name)))
			return ENOENT;
		return netdev_node(d, tail, nd);
	}
	if ((rest = uroce_sysview_under(path, UROCE_SV_DEV_IB))) {
		if (!*rest) {
			node_dir(nd);
			dir_add(nd, DT_CHR, "rdma_cm");
			for (int i = 0; i < v->ndevs; i++)
				dir_add_fmt(nd, DT_CHR, "uverbs%u", v->devs[i].index);
			return 0;
		}
		nd->kind = UROCE_SV_CHR;
		nd->mode = 0666;
		if (!strcmp(rest, "rdma_cm")) {
			nd->major = UROCE_RDMA_CM_MAJOR;
			nd->minor = UROCE_RDMA_CM_MINOR;
		} else if ((d = dev_of_uverbs(v, rest))) {
			nd->major = UROCE_UVERBS_MAJOR;
			nd->minor = UROCE_UVERBS_MINOR_BASE + d->index;
		} else {
			return ENOENT;
		}
		nd->len = 0;
		nd->read_err = 0;
		return 0;
	}
	return ENOENT;
}
