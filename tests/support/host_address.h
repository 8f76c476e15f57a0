/* SPDX-License-Identifier: MIT */
/*
 * An address of this host that a uroce device other than uroce_lo holds, for tests of what
 * rdma_cm does with a device's address where 127.0.0.1 would not do: rdma_cm counts loopback
 * addresses as "any" (the kernel's cma_any_addr), so a binding there has no device.
 */
#ifndef UROCE_TESTS_SUPPORT_HOST_ADDRESS_H
#define UROCE_TESTS_SUPPORT_HOST_ADDRESS_H

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

/* The first IPv4 address of an interface that is up and not a loopback one, with @port (host
 * order), in *@out: true, or false when the host has none. */
static inline bool host_address4(uint16_t port, struct sockaddr_in *out)
{
	struct ifaddrs *ifs, *i;

	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    !(i->ifa_flags & IFF_LOOPBACK))
			break;
	if (i) {
		memcpy(out, i->ifa_addr, sizeof(*out));
		out->sin_port = htons(port);
	}
	freeifaddrs(ifs);
	return i != NULL;
}

#endif
