// SPDX-License-Identifier: MIT
/* Address handles: create (from attributes or from a received completion), destroy. */
#include "verbs-shim/ah.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/objects.h"
#include "verbs-shim/port.h"

int uroce_ah_attr_check(struct uroce_device *dev, const struct ibv_ah_attr *attr)
{
	union ibv_gid gid;

	if (attr->port_num != UROCE_PORT_NUM || !attr->is_global)
		return EINVAL;
	if (uroce_device_gid(dev, attr->grh.sgid_index, &gid))
		return EINVAL;
	return 0;
}

UROCE_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	static atomic_uint next_handle;
	struct uroce_ah *ah;
	int err;

	err = uroce_ah_attr_check(to_uctx(pd->context)->dev, attr);
	if (err) {
		errno = err;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->pd = to_upd(pd);
	atomic_fetch_add(&ah->pd->usecnt, 1);
	ah->attr = *attr;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = atomic_fetch_add(&next_handle, 1);
	return &ah->ah;
}

UROCE_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct uroce_ah *ah = to_uah(ibah);

	atomic_fetch_sub(&ah->pd->usecnt, 1);
	free(ah);
	return 0;
}

static void ipv4_mapped(union ibv_gid *gid, uint32_t addr_be)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &addr_be, 4);
}

/* Internet checksum of an IPv4 header (RFC 791): 0 for an intact header. */
static uint16_t ipv4_header_sum(const uint8_t *hdr, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/*
 * RoCE v2 puts the received IP header in the 40-byte GRH area of a UD receive buffer: an IPv6
 * header as is, or an IPv4 header in its last 20 bytes (IBA Annex A17, RoCE v2). rdma-core decides
 * which by the IPv6 version nibble, then by an IPv4 header with a valid checksum.
 */
static int grh_ip_version(const struct ibv_grh *grh)
{
	const uint8_t *ip4 = (const uint8_t *)grh + 20;

	if ((be32toh(grh->version_tclass_flow) >> 28) != 6)
		return (ip4[0] >> 4) == 4 ? 4 : -1;
	if ((ip4[0] & 0x0f) != 5)
		return 6;
	return ipv4_header_sum(ip4, 20) == 0 ? 4 : 6;
}

UROCE_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				     struct ibv_wc *wc, struct ibv_grh *grh,
				     struct ibv_ah_attr *ah_attr)
{
	struct uroce_device *dev = to_uctx(context)->dev;
	union ibv_gid local;
	int version, sgid_index;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	version = grh_ip_version(grh);
	if (version == 4) {
		struct iphdr ip4;

		memcpy(&ip4, (const uint8_t *)grh + 20, sizeof(ip4));
		/* A reply to a multicast destination cannot come from its address. */
		if (IN_MULTICAST(be32toh(ip4.daddr))) {
			errno = EINVAL;
			return -1;
		}
		ipv4_mapped(&local, ip4.daddr);
		ipv4_mapped(&ah_attr->grh.dgid, ip4.saddr);
		ah_attr->grh.hop_limit = ip4.ttl;
		ah_attr->grh.traffic_class = ip4.tos;
	} else if (version == 6) {
		if (grh->dgid.raw[0] == 0xff || grh->next_hdr != IPPROTO_UDP) {
			errno = grh->next_hdr != IPPROTO_UDP ? EPROTONOSUPPORT : EINVAL;
			return -1;
		}
		local = grh->dgid;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.hop_limit = grh->hop_limit;
		ah_attr->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
	} else {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	/* The local address the request came to selects the source GID of the reply. */
	sgid_index = uroce_device_find_gid(dev, &local);
	if (sgid_index < 0) {
		errno = EINVAL;
		return -1;
	}
	ah_attr->grh.sgid_index = sgid_index;
	return 0;
}

UROCE_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						  struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
