// SPDX-License-Identifier: MIT
/* Device discovery: one uroce device per interface (device.h). */
#include "verbs-shim/device.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_device *registry;
static uint32_t next_index;

/* What one scan found out about one interface. */
struct iface {
	char name[IF_NAMESIZE];
	unsigned int flags;
	uint8_t mac[6];
	bool has_mac;
	int ngids;
	union ibv_gid gids[UROCE_GID_TBL_LEN];
};

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

static struct iface *iface_get(struct iface *ifs, int *nifs, const char *name)
{
	for (int i = 0; i < *nifs; i++)
		if (!strcmp(ifs[i].name, name))
			return &ifs[i];
	struct iface *f = &ifs[(*nifs)++];

	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

static void iface_add_gid(struct iface *f, const struct sockaddr *sa)
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

/* Interfaces that are up with at least one IP address, from getifaddrs. */
static int ifaces_read(struct iface **out, int *nout)
{
	struct ifaddrs *ifa_list;
	struct iface *ifs;
	int n = 0, nifs = 0;

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
		struct iface *f;

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
		} else {
			iface_add_gid(f, sa);
		}
	}
	freeifaddrs(ifa_list);
	*out = ifs;
	*nout = nifs;
	return 0;
}

/*
 * Node GUID: the EUI-64 of the MAC address, as rxe derives it (addrconf_addr_eui48: flip the
 * universal/local bit, insert ff:fe). Interfaces without a MAC (lo) use the locally
 * administered 02:00:00 followed by the low 24 bits of the interface index.
 */
static __be64 guid_from_mac(const struct iface *f, unsigned int ifindex)
{
	uint8_t mac[6] = {0x02, 0, 0, ifindex >> 16, ifindex >> 8, ifindex};
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

/* Fill dev->ibdev.dev_name, dev_path and ibdev_path from dev->ibdev.name and dev->index. */
static void uroce_sysfs_device_paths(struct uroce_device *dev)
{
	struct ibv_device *ib = &dev->ibdev;

	snprintf(ib->dev_name, sizeof(ib->dev_name), UROCE_UVERBS_PREFIX "%u", dev->index);
	snprintf(ib->dev_path, sizeof(ib->dev_path), UROCE_UVERBS_CLASS "%s", ib->dev_name);
	snprintf(ib->ibdev_path, sizeof(ib->ibdev_path), UROCE_IBDEV_CLASS "%s", ib->name);
}

static struct uroce_device *device_new(const struct iface *f)
{
	struct uroce_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	snprintf(dev->ifname, sizeof(dev->ifname), "%s", f->name);
	dev->ifindex = if_nametoindex(f->name);
	dev->index = next_index++;
	dev->guid = guid_from_mac(f, dev->ifindex);
	dev->loopback = f->flags & IFF_LOOPBACK;
	pthread_mutex_init(&dev->lock, NULL);
	dev->ibdev.node_type = IBV_NODE_CA;
	/* RoCE reports the IB transport (ABI.md §3.1: perftest treats iWARP differently). */
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), UROCE_DEVICE_PREFIX "%s", f->name);
	uroce_sysfs_device_paths(dev);
	return dev;
}

/*
 * Keep each GID's slot stable across scans, as the kernel's GID cache does: a vanished
 * address frees its slot, a new one takes the first free slot.
 */
static void port_update_gids(struct uroce_port_state *port, const struct iface *f)
{
	for (int s = 0; s < UROCE_GID_TBL_LEN; s++) {
		bool keep = false;

		for (int g = 0; g < f->ngids && port->gids[s].valid; g++)
			keep |= !memcmp(&port->gids[s].gid, &f->gids[g], sizeof(union ibv_gid));
		if (!keep)
			memset(&port->gids[s], 0, sizeof(port->gids[s]));
	}
	for (int g = 0; g < f->ngids; g++) {
		int free_slot = -1;
		bool present = false;

		for (int s = 0; s < UROCE_GID_TBL_LEN; s++) {
			if (!port->gids[s].valid) {
				if (free_slot < 0)
					free_slot = s;
			} else if (!memcmp(&port->gids[s].gid, &f->gids[g], sizeof(f->gids[g]))) {
				present = true;
			}
		}
		if (!present && free_slot >= 0) {
			port->gids[free_slot].gid = f->gids[g];
			port->gids[free_slot].valid = true;
		}
	}
}

static int device_order(const void *a, const void *b)
{
	const struct uroce_device *x = *(struct uroce_device *const *)a;
	const struct uroce_device *y = *(struct uroce_device *const *)b;

	if (x->loopback != y->loopback)
		return x->loopback ? 1 : -1;
	return x->ifindex < y->ifindex ? -1 : x->ifindex > y->ifindex;
}

int uroce_devices_scan(struct uroce_device ***devs, int *n)
{
	struct uroce_device **list;
	struct iface *ifs = NULL;
	int nifs = 0, count = 0, err, sock;

	err = ifaces_read(&ifs, &nifs);
	if (err)
		return err;
	list = calloc(nifs + 1, sizeof(*list));
	if (!list) {
		free(ifs);
		return ENOMEM;
	}
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	pthread_mutex_lock(&registry_lock);
	for (struct uroce_device *dev = registry; dev; dev = dev->next) {
		pthread_mutex_lock(&dev->lock);
		dev->listed = false;
		pthread_mutex_unlock(&dev->lock);
	}
	for (int i = 0; i < nifs; i++) {
		const struct iface *f = &ifs[i];
		struct uroce_device *dev;

		if (!(f->flags & IFF_UP) || f->ngids == 0)
			continue;
		for (dev = registry; dev && strcmp(dev->ifname, f->name); dev = dev->next)
			;
		if (!dev) {
			dev = device_new(f);
			if (!dev) {
				err = ENOMEM;
				break;
			}
			dev->next = registry;
			registry = dev;
		}
		pthread_mutex_lock(&dev->lock);
		dev->port.ifflags = f->flags;
		dev->port.ifmtu = iface_mtu(sock, f->name);
		port_update_gids(&dev->port, f);
		dev->listed = true;
		pthread_mutex_unlock(&dev->lock);
		list[count++] = dev;
	}
	pthread_mutex_unlock(&registry_lock);
	if (sock >= 0)
		close(sock);
	free(ifs);
	if (err) {
		free(list);
		return err;
	}
	qsort(list, count, sizeof(*list), device_order);
	*devs = list;
	*n = count;
	return 0;
}

struct uroce_device *uroce_device_by_name(const char *name)
{
	struct uroce_device *dev;

	pthread_mutex_lock(&registry_lock);
	for (dev = registry; dev && strcmp(dev->ibdev.name, name); dev = dev->next)
		;
	pthread_mutex_unlock(&registry_lock);
	return dev;
}

void uroce_device_port(struct uroce_device *dev, struct uroce_port_state *out)
{
	pthread_mutex_lock(&dev->lock);
	*out = dev->port;
	pthread_mutex_unlock(&dev->lock);
}

int uroce_device_gid(struct uroce_device *dev, uint32_t index, union ibv_gid *gid)
{
	int ret = 0;

	if (index >= UROCE_GID_TBL_LEN)
		return EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->port.gids[index].valid)
		*gid = dev->port.gids[index].gid;
	else
		ret = ENODATA;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int uroce_device_find_gid(struct uroce_device *dev, const union ibv_gid *gid)
{
	int found = -1;

	pthread_mutex_lock(&dev->lock);
	for (int s = 0; s < UROCE_GID_TBL_LEN && found < 0; s++)
		if (dev->port.gids[s].valid && !memcmp(&dev->port.gids[s].gid, gid, sizeof(*gid)))
			found = s;
	pthread_mutex_unlock(&dev->lock);
	return found;
}
