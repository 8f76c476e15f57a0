// SPDX-License-Identifier: MIT
/*
 * The kernel's view of uroce devices (verbs-shim/sysview.h), pure: paths in, nodes out, checked
 * against what rxe's tree holds on Linux 6.1 (tests/discovery/rxe-reference.txt).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "verbs-shim/iface.h"
#include "verbs-shim/sysview.h"

static struct uroce_sysview_dev devs[2];
static struct uroce_sysview view = {devs, 2};
static struct uroce_sysview_node node;
static char real[PATH_MAX];

static void setup(void)
{
	memset(devs, 0, sizeof(devs));
	/* eth0: a virtio NIC's interface, with a parent device; uverbs0. */
	strcpy(devs[0].name, "uroce_eth0");
	strcpy(devs[0].ifname, "eth0");
	devs[0].index = 0;
	devs[0].ifflags = IFF_UP | IFF_RUNNING;
	devs[0].width = UROCE_WIDTH_1X; /* a 25 Gb/s link (ib_get_eth_speed) */
	devs[0].speed = UROCE_SPEED_EDR;
	devs[0].guid = htobe64(0x505400fffe770002ull);
	devs[0].gids[0].valid = true;
	devs[0].gids[0].gid.raw[0] = 0xfe;
	devs[0].gids[0].gid.raw[1] = 0x80;
	devs[0].gids[0].gid.raw[15] = 2;
	strcpy(devs[0].parent, "/sys/devices/pci0000:00/0000:00:03.0/virtio2");
	/* lo: no parent, down; uverbs1. */
	strcpy(devs[1].name, "uroce_lo");
	strcpy(devs[1].ifname, "lo");
	devs[1].index = 1;
	devs[1].ifflags = IFF_UP;
	devs[1].width = UROCE_WIDTH_1X; /* no link speed */
	devs[1].speed = UROCE_SPEED_SDR;
	devs[1].gids[0].valid = true;
	devs[1].gids[0].gid.raw[15] = 1;
}

TestSuite(sysview, .init = setup);

static int resolve(const char *path, bool follow)
{
	memset(&node, 0, sizeof(node));
	real[0] = '\0';
	return uroce_sysview_resolve(&view, path, follow, &node, real, sizeof(real));
}

/* The file at @path reads @want. */
static void expect_file(const char *path, const char *want)
{
	cr_assert_eq(resolve(path, true), UROCE_SV_NODE, "%s", path);
	cr_assert_eq(node.kind, UROCE_SV_FILE, "%s", path);
	cr_assert_eq(node.read_err, 0, "%s", path);
	cr_assert_eq(node.len, strlen(want), "%s: %.*s", path, (int)node.len, node.text);
	cr_assert_eq(memcmp(node.text, want, node.len), 0, "%s: %.*s", path, (int)node.len,
		     node.text);
}

/* The folder at @path lists exactly @want (names separated by ' '). */
static void expect_dir(const char *path, const char *want)
{
	char got[1024] = "";

	cr_assert_eq(resolve(path, true), UROCE_SV_NODE, "%s", path);
	cr_assert_eq(node.kind, UROCE_SV_DIR, "%s", path);
	for (size_t off = 0; off < node.len; off += strlen(node.text + off + 1) + 2) {
		if (got[0])
			strcat(got, " ");
		strcat(got, node.text + off + 1);
	}
	cr_assert_str_eq(got, want, "%s", path);
}

Test(sysview, class_folder_links_each_device_as_rxe)
{
	expect_dir("/sys/class/infiniband", "uroce_eth0 uroce_lo");
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo", false), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_LINK);
	cr_assert_str_eq(node.text, "../../devices/virtual/infiniband/uroce_lo");
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo", true), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_DIR);
	cr_assert_str_eq(real, "/sys/devices/virtual/infiniband/uroce_lo");
}

Test(sysview, device_files_read_as_rxe)
{
	expect_dir("/sys/class/infiniband/uroce_eth0",
		   "board_id device fw_ver node_desc node_guid node_type parent ports subsystem "
		   "sys_image_guid uevent");
	expect_file("/sys/class/infiniband/uroce_eth0/node_guid", "5054:00ff:fe77:0002\n");
	expect_file("/sys/class/infiniband/uroce_eth0/sys_image_guid", "5054:00ff:fe77:0002\n");
	expect_file("/sys/class/infiniband/uroce_eth0/node_type", "1: CA\n");
	expect_file("/sys/class/infiniband/uroce_eth0/parent", "eth0\n");
	expect_file("/sys/class/infiniband/uroce_eth0/uevent", "NAME=uroce_eth0\n");
	cr_assert_eq(node.mode, 0644);
}

Test(sysview, port_files_read_as_rxe)
{
	const char *p = "/sys/class/infiniband/uroce_eth0/ports/1/";
	char path[256];

	expect_dir("/sys/class/infiniband/uroce_eth0/ports", "1");
#define PORT(f) (snprintf(path, sizeof(path), "%s%s", p, f), path)
	expect_file(PORT("state"), "4: ACTIVE\n");
	expect_file(PORT("phys_state"), "5: LinkUp\n");
	expect_file(PORT("link_layer"), "Ethernet\n");
	expect_file(PORT("cap_mask"), "0x00010000\n");
	expect_file(PORT("lid"), "0x0\n");
	expect_file(PORT("sm_sl"), "0\n");
	expect_file(PORT("rate"), "25 Gb/sec (1X EDR)\n");
	/* ib_core's rate_show: lanes times the lane's rate, SDR named (Linux 6.1). */
	expect_file("/sys/class/infiniband/uroce_lo/ports/1/rate", "2.5 Gb/sec (1X SDR)\n");
	devs[0].width = UROCE_WIDTH_4X;
	devs[0].speed = UROCE_SPEED_FDR10;
	expect_file(PORT("rate"), "40 Gb/sec (4X FDR10)\n");
	devs[0].width = UROCE_WIDTH_1X;
	devs[0].speed = UROCE_SPEED_EDR;
	expect_file(PORT("pkeys/0"), "0xffff\n");
	expect_file(PORT("gids/0"), "fe80:0000:0000:0000:0000:0000:0000:0002\n");
	expect_file(PORT("gids/15"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(PORT("gid_attrs/types/0"), "RoCE v2\n");
	expect_file(PORT("gid_attrs/ndevs/0"), "eth0\n");
	cr_assert_eq(resolve(PORT("gids/16"), true), -ENOENT);
	cr_assert_eq(resolve(PORT("gids/01"), true), -ENOENT);
	expect_file("/sys/class/infiniband/uroce_lo/ports/1/state", "1: DOWN\n");
	expect_file("/sys/class/infiniband/uroce_lo/ports/1/phys_state", "3: Disabled\n");
}

Test(sysview, empty_gid_slot_attributes_fail_with_einval)
{
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_eth0/ports/1/gid_attrs/types/3", true),
		     UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_FILE);
	cr_assert_eq(node.read_err, EINVAL);
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_eth0/ports/1/gid_attrs/ndevs/3", true),
		     UROCE_SV_NODE);
	cr_assert_eq(node.read_err, EINVAL);
}

Test(sysview, uverbs_folder_as_rxe)
{
	expect_dir("/sys/class/infiniband_verbs", "abi_version uverbs0 uverbs1");
	expect_file("/sys/class/infiniband_verbs/abi_version", "6\n");
	cr_assert_eq(resolve("/sys/class/infiniband_verbs/uverbs1", false), UROCE_SV_NODE);
	cr_assert_str_eq(node.text, "../../devices/virtual/infiniband_verbs/uverbs1");
	expect_file("/sys/class/infiniband_verbs/uverbs1/ibdev", "uroce_lo\n");
	expect_file("/sys/class/infiniband_verbs/uverbs1/abi_version", "2\n");
	expect_file("/sys/class/infiniband_verbs/uverbs1/dev", "231:193\n");
	expect_file("/sys/class/infiniband_verbs/uverbs0/uevent",
		    "MAJOR=231\nMINOR=192\nDEVNAME=infiniband/uverbs0\nDEVMODE=0666\n");
	cr_assert_eq(resolve("/sys/class/infiniband_verbs/uverbs2", true), -ENOENT);
}

Test(sysview, dev_nodes_are_character_devices)
{
	expect_dir("/dev/infiniband", "rdma_cm uverbs0 uverbs1");
	cr_assert_eq(resolve("/dev/infiniband/uverbs1", true), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_CHR);
	cr_assert_eq(node.mode, 0666);
	cr_assert_eq(node.major, 231);
	cr_assert_eq(node.minor, 193);
	cr_assert_eq(resolve("/dev/infiniband/rdma_cm", true), UROCE_SV_NODE);
	cr_assert_eq(node.major, 10);
	cr_assert_eq(node.minor, 124);
}

Test(sysview, device_link_leads_to_the_parent_or_a_netdev_folder)
{
	/* A parent device: the rest of the walk is the kernel's. */
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_eth0/device", false), UROCE_SV_NODE);
	cr_assert_str_eq(node.text, "../../../pci0000:00/0000:00:03.0/virtio2");
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_eth0/device/net/", true), UROCE_SV_REAL);
	cr_assert_str_eq(real, "/sys/devices/pci0000:00/0000:00:03.0/virtio2/net");
	/* No parent: the tree's own device folder, whose net/lo leads to the real interface. */
	expect_dir("/sys/class/infiniband/uroce_lo/device/net", "lo");
	expect_file("/sys/class/infiniband/uroce_lo/device/numa_node", "-1\n");
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/device/net/lo", false), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_LINK);
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/device/net/lo/mtu", true),
		     UROCE_SV_REAL);
	cr_assert_str_eq(real, "/sys/devices/virtual/net/lo/mtu");
}

Test(sysview, dotdot_is_taken_on_the_resolved_path)
{
	/* As the kernel's walk: ".." after a link is the link target's parent, not the link's. */
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/device/..", true), UROCE_SV_NODE);
	cr_assert_str_eq(real, "/sys/devices/virtual/uroce");
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/..", true), UROCE_SV_NODE);
	cr_assert_str_eq(real, "/sys/devices/virtual/infiniband");
	/* Out of the tree through "..": the kernel's folder. */
	cr_assert_eq(resolve("/dev/infiniband/..", true), UROCE_SV_REAL);
	cr_assert_str_eq(real, "/dev");
	cr_assert_eq(resolve("//sys/./class//infiniband/./uroce_lo/ports/../ports/1", true),
		     UROCE_SV_NODE);
	cr_assert_str_eq(real, "/sys/devices/virtual/infiniband/uroce_lo/ports/1");
}

Test(sysview, trailing_slash_or_dot_follows_the_last_link)
{
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/", false), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_DIR);
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/.", false), UROCE_SV_NODE);
	cr_assert_eq(node.kind, UROCE_SV_DIR);
}

Test(sysview, errors_as_the_kernel_gives_them)
{
	cr_assert_eq(resolve("/sys/class/infiniband/mlx5_0", true), -ENOENT);
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/node_guid/x", true), -ENOTDIR);
	cr_assert_eq(resolve("/sys/class/infiniband/uroce_lo/ports/2", true), -ENOENT);
	cr_assert_eq(resolve("sys/class/infiniband", true), -EINVAL);
}

Test(sysview, paths_outside_the_tree_are_not_its_business)
{
	cr_assert_eq(resolve("/sys/class/net/lo", true), UROCE_SV_OUTSIDE);
	cr_assert_eq(resolve("/sys/class/infiniband_mad", true), UROCE_SV_OUTSIDE);
	cr_assert_eq(resolve("/dev/null", true), UROCE_SV_OUTSIDE);
	cr_assert(!uroce_sysview_owns("/sys/class/infinibandx"));
	cr_assert(uroce_sysview_owns("/sys/class/infiniband"));
	cr_assert(uroce_sysview_owns("/dev/infiniband/uverbs0"));
}
