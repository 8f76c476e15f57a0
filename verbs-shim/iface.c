// SPDX-License-Identifier: MIT
/* The interfaces uroce makes devices of (iface.h). */
#include "verbs-shim/iface.h"

#include <errno.h>
#include <limits.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/ethtool.h>
#include <linux/if_addr.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * IBTA RoCE / Linux rdma_cm: the path MTU is the largest IB MTU <= netdev MTU - 96 (IPv6 40 +
 * UDP 8 + BTH 12 + up to 28 bytes of extension headers + ICRC 4 + room; [K-core ib_addr.h
 * iboe_get_mtu], PROTOCOL.md §1.8). rxe subtracts 80 for its port MTU; uroce uses the rdma_cm
 * rule so the port and the paths the CM builds agree. 1500 gives 1024, 9000 and lo's 65536
 * give 4096 (the IB maximum). Interfaces too small for 256-byte payloads still get 256.
 */
enum ibv_mtu uroce_active_mtu(int ifmtu)
{
	int payload = ifmtu - 96;

	if (payload >= 4096)
		return IBV_MTU_4096;
	if (payload >= 2048)
		return IBV_MTU_2048;
	if (payload >= 1024)
		return IBV_MTU_1024;
	if (payload >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

static void gid_from_sockaddr(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		/* RoCE v2 GID of an IPv4 address: the IPv4-mapped IPv6 address ::ffff:a.b.c.d. */
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &sin->sin_addr, 4);
	} else {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

static struct uroce_iface *iface_get(struct uroce_iface *ifs, int *nifs, const char *name)
{
	for (int i = 0; i < *nifs; i++)
		if (!strcmp(ifs[i].name, name))
			return &ifs[i];
	struct uroce_iface *f = &ifs[(*nifs)++];

	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

/* IPv6 addresses no datagram may leave from yet, or at all (tentative_v6). */
struct v6_unusable {
	struct in6_addr addr[64];
	int n;
};

/*
 * The host's IPv6 addresses a UDP socket cannot send from, by the flags addrconf shows in
 * /proc/net/if_inet6 (if6_seq_show; getifaddrs gives no flags): tentative ones, while
 * duplicate address detection runs (IFA_F_TENTATIVE without IFA_F_OPTIMISTIC), and those it
 * found duplicated (IFA_F_DADFAILED). The kernel refuses them as a datagram's source
 * (ip6_datagram_send_ctl: EINVAL), so they are no GID until detection has passed: a link-local
 * address comes up to a few seconds after its link.
 */
static void tentative_v6(struct v6_unusable *u)
{
	FILE *f = fopen("/proc/net/if_inet6", "re");
	char hex[33], name[IF_NAMESIZE + 1];
	unsigned int ifindex, plen, scope, flags;

	u->n = 0;
	if (!f)
		return;
	while (u->n < (int)(sizeof(u->addr) / sizeof(u->addr[0])) &&
	       fscanf(f, "%32s %x %x %x %x %16s", hex, &ifindex, &plen, &scope, &flags, name) ==
		       6) {
		if (!((flags & IFA_F_TENTATIVE) && !(flags & IFA_F_OPTIMISTIC)) &&
		    !(flags & IFA_F_DADFAILED))
			continue;
		for (int i = 0; i < 16; i++) {
			unsigned int byte;

			if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
				break;
			u->addr[u->n].s6_addr[i] = (uint8_t)byte;
		}
		u->n++;
	}
	fclose(f);
}

static bool v6_is_unusable(const struct v6_unusable *u, const struct sockaddr *sa)
{
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

	for (int i = 0; i < u->n; i++)
		if (!memcmp(&u->addr[i], a, sizeof(*a)))
			return true;
	return false;
}

static void iface_add_gid(struct uroce_iface *f, const struct sockaddr *sa)
{
	union ibv_gid gid;
	bool link_local;

	if (f->ngids == UROCE_GID_TBL_LEN)
		return; /* the table is full: further addresses are not offered */
	gid_from_sockaddr(sa, &gid);
	/* Like the kernel's default GID, a link-local address goes before the others. */
	link_local = sa->sa_family == AF_INET6 && gid.raw[0] == 0xfe && (gid.raw[1] & 0xc0) == 0x80;
	if (link_local) {
		int first_other = 0;

		while (first_other < f->ngids && f->gids[first_other].raw[0] == 0xfe &&
		       (f->gids[first_other].raw[1] & 0xc0) == 0x80)
			first_other++;
		memmove(&f->gids[first_other + 1], &f->gids[first_other],
			(f->ngids - first_other) * sizeof(gid));
		f->gids[first_other] = gid;
	} else {
		f->gids[f->ngids] = gid;
	}
	f->ngids++;
}

/* Interface MTU; 1500 (the Ethernet default) if the kernel will not say. */
static int iface_mtu(int sock, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (sock < 0 || ioctl(sock, SIOCGIFMTU, &ifr) < 0 || ifr.ifr_mtu <= 0)
		return 1500;
	return ifr.ifr_mtu;
}

/*
 * The port's active width and speed for an interface of @mbps Mb/s (0: unknown), as the
 * kernel's ib_get_eth_speed() maps the ethtool link speed for rxe's query_port: an unknown
 * speed (lo, a virtio NIC) counts as 1000 Mb/s, 1X SDR.
 */
static void eth_speed(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	if (!mbps || mbps <= 1000) {
		*width = UROCE_WIDTH_1X;
		*speed = UROCE_SPEED_SDR;
	} else if (mbps <= 10000) {
		*width = UROCE_WIDTH_1X;
		*speed = UROCE_SPEED_FDR10;
	} else if (mbps <= 20000) {
		*width = UROCE_WIDTH_4X;
		*speed = UROCE_SPEED_DDR;
	} else if (mbps <= 25000) {
		*width = UROCE_WIDTH_1X;
		*speed = UROCE_SPEED_EDR;
	} else if (mbps <= 40000) {
		*width = UROCE_WIDTH_4X;
		*speed = UROCE_SPEED_FDR10;
	} else {
		*width = UROCE_WIDTH_4X;
		*speed = UROCE_SPEED_EDR;
	}
}

/* The interface's ethtool link speed in Mb/s, 0 if unknown (ETHTOOL_GSET, any user). */
static uint32_t iface_link_mbps(int sock, const char *name)
{
	struct ethtool_cmd cmd = {.cmd = ETHTOOL_GSET};
	struct ifreq ifr;
	uint32_t mbps;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (char *)&cmd;
	if (sock < 0 || ioctl(sock, SIOCETHTOOL, &ifr) < 0)
		return 0;
	/* ethtool_cmd_speed() of <linux/ethtool.h>, without its int overflow for 0xffff << 16. */
	mbps = (uint32_t)cmd.speed_hi << 16 | cmd.speed;
	return mbps == (uint32_t)SPEED_UNKNOWN ? 0 : mbps;
}

int uroce_ifaces_read(struct uroce_iface **out, int *nout)
{
	struct ifaddrs *ifa_list;
	struct uroce_iface *ifs;
	struct v6_unusable unusable;
	int n = 0, nifs = 0, sock;

	tentative_v6(&unusable);
	if (getifaddrs(&ifa_list))
		return errno;
	for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next)
		n++;
	ifs = calloc(n ? n : 1, sizeof(*ifs));
	if (!ifs) {
		freeifaddrs(ifa_list);
		return ENOMEM;
	}
	for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		const struct sockaddr *sa = ifa->ifa_addr;
		struct uroce_iface *f;

		if (!sa || strlen(ifa->ifa_name) >= IF_NAMESIZE)
			continue;
		if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6 &&
		    sa->sa_family != AF_PACKET)
			continue;
		f = iface_get(ifs, &nifs, ifa->ifa_name);
		f->flags = ifa->ifa_flags;
		if (sa->sa_family == AF_PACKET) {
			const struct sockaddr_ll *ll = (const struct sockaddr_ll *)sa;

			if (ll->sll_halen == 6) {
				memcpy(f->mac, ll->sll_addr, 6);
				f->has_mac = true;
			}
		} else if (sa->sa_family == AF_INET || !v6_is_unusable(&unusable, sa)) {
			iface_add_gid(f, sa);
		}
	}
	freeifaddrs(ifa_list);
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (int i = 0; i < nifs; i++) {
		ifs[i].ifindex = if_nametoindex(ifs[i].name);
		ifs[i].mtu = iface_mtu(sock, ifs[i].name);
		eth_speed(iface_link_mbps(sock, ifs[i].name), &ifs[i].width, &ifs[i].speed);
	}
	if (sock >= 0)
		close(sock);
	*out = ifs;
	*nout = nifs;
	return 0;
}

bool uroce_iface_is_device(const struct uroce_iface *f)
{
	return (f->flags & IFF_UP) && f->ngids > 0;
}

/* The EUI-64 of the MAC address, as rxe derives it (addrconf_addr_eui48: flip the
 * universal/local bit, insert ff:fe). */
__be64 uroce_iface_guid(const struct uroce_iface *f)
{
	uint8_t mac[6] = {0x02, 0, 0, f->ifindex >> 16, f->ifindex >> 8, f->ifindex};
	uint8_t eui[8];
	__be64 guid;

	if (f->has_mac && memcmp(f->mac, (uint8_t[6]){0}, 6))
		memcpy(mac, f->mac, 6);
	eui[0] = mac[0] ^ 2;
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
	memcpy(&guid, eui, sizeof(guid));
	return guid;
}

void uroce_iface_parent(const char *ifname, char *out, size_t size)
{
	char link[64 + IF_NAMESIZE], dir[PATH_MAX];

	if (size)
		out[0] = '\0';
	snprintf(link, sizeof(link), "/sys/class/net/%s/device", ifname);
	if (!realpath(link, dir) || strncmp(dir, "/sys/devices/", 13) || strlen(dir) >= size)
		return;
	strcpy(out, dir);
}
