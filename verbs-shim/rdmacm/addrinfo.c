// SPDX-License-Identifier: MIT
/*
 * rdma_getaddrinfo(3) and rdma_freeaddrinfo(3), as librdmacm does them over IP: getaddrinfo
 * finds the address, which becomes the source of a passive (RAI_PASSIVE) result or the
 * destination of an active one; the QP type and port space default to RC over RDMA_PS_TCP.
 * Errors are getaddrinfo's EAI_* codes, which programs print with gai_strerror (ABI.md).
 */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

static struct sockaddr *copy_addr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c)
		memcpy(c, sa, len);
	return c;
}

/*
 * 0 and *@res (one result, freed with rdma_freeaddrinfo), or an EAI_* code: those of
 * getaddrinfo, EAI_BADFLAGS (an unknown RAI_ flag), EAI_FAMILY (not AF_UNSPEC, AF_INET or
 * AF_INET6), EAI_MEMORY, EAI_NONAME (neither @node nor @service).
 */
UROCE_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				  const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo h = {.ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_addrinfo *r;
	int flags = hints ? hints->ai_flags : 0, err;

	if (!res || (!node && !service))
		return EAI_NONAME;
	if (flags & ~(RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY))
		return EAI_BADFLAGS;
	h.ai_family = hints ? hints->ai_family : AF_UNSPEC;
	if (h.ai_family != AF_UNSPEC && h.ai_family != AF_INET && h.ai_family != AF_INET6)
		return EAI_FAMILY;
	if (flags & RAI_PASSIVE)
		h.ai_flags |= AI_PASSIVE;
	if (flags & RAI_NUMERICHOST)
		h.ai_flags |= AI_NUMERICHOST;
	err = getaddrinfo(node, service, &h, &ai);
	if (err)
		return err;
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return EAI_MEMORY;
	}
	r->ai_flags = flags;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	if (flags & RAI_PASSIVE) {
		r->ai_src_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = r->ai_src_addr ? hints->ai_src_len : 0;
		}
	}
	freeaddrinfo(ai);
	if (!r->ai_src_addr && !r->ai_dst_addr) {
		rdma_freeaddrinfo(r);
		return EAI_MEMORY;
	}
	*res = r;
	return 0;
}

UROCE_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
