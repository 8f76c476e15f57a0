// SPDX-License-Identifier: MIT
/*
 * rdma_getaddrinfo(3) and rdma_freeaddrinfo(3), as librdmacm's (rdma-core
 * librdmacm/addrinfo.c) does them over IP. The hints become getaddrinfo's
 * (ucma_convert_to_ai: the QP type gives the socket type, the port space the protocol), and
 * getaddrinfo's first answer becomes the result (ucma_convert_to_rai): the source of a passive
 * (RAI_PASSIVE) result, the destination of an active one, its QP type and port space the hints'
 * or, if those are 0, what the answer's socket type and protocol say (RC over RDMA_PS_TCP for a
 * stream, UD over RDMA_PS_UDP for datagrams). Without a node and a service the result is made of
 * the hints themselves (flags, family, QP type, port space, destination). A source address in
 * the hints is the result's source unless the result has one. Errors are getaddrinfo's EAI_*
 * codes, or -1 with errno as librdmacm's ERR() (ABI.md).
 */
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"

/* librdmacm's ucma_copy_addr: 0, or -1 with errno ENOMEM. */
static int copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
		     socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return cma_fail(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* getaddrinfo's hints for @r (librdmacm's ucma_convert_to_ai). */
static struct addrinfo to_ai(const struct rdma_addrinfo *r)
{
	struct addrinfo h = {0};

	if (r->ai_flags & RAI_PASSIVE)
		h.ai_flags = AI_PASSIVE;
	if (r->ai_flags & RAI_NUMERICHOST)
		h.ai_flags |= AI_NUMERICHOST;
	if (r->ai_family != AF_IB)
		h.ai_family = r->ai_family;
	switch (r->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		h.ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		h.ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (r->ai_port_space) {
	case RDMA_PS_TCP:
		h.ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		h.ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (h.ai_socktype == SOCK_STREAM)
			h.ai_protocol = IPPROTO_TCP;
		else if (h.ai_socktype == SOCK_DGRAM)
			h.ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
	return h;
}

/*
 * @r from getaddrinfo's answer @ai to @hints (librdmacm's ucma_convert_to_rai): 0, -1 with
 * errno ENOMEM, or EAI_FAMILY for an AF_IB result (RAI_FAMILY, AF_IB and RAI_NUMERICHOST), which
 * librdmacm makes of an IPv6 address and uroce, having no AF_IB, does not.
 */
static int from_ai(struct rdma_addrinfo *r, const struct rdma_addrinfo *hints,
		   const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		r->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		r->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		r->ai_qp_type = IBV_QPT_UD;
	if (hints->ai_port_space)
		r->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		r->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		r->ai_port_space = RDMA_PS_UDP;
	if ((hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
	    (hints->ai_flags & RAI_NUMERICHOST))
		return EAI_FAMILY;
	r->ai_family = ai->ai_family;
	/* getaddrinfo's answers carry the request's flags: AI_PASSIVE makes a source. */
	if (ai->ai_flags & AI_PASSIVE) {
		r->ai_flags = RAI_PASSIVE;
		return copy_addr(&r->ai_src_addr, &r->ai_src_len, ai->ai_addr, ai->ai_addrlen);
	}
	return copy_addr(&r->ai_dst_addr, &r->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

/*
 * 0 and *@res (one result, freed with rdma_freeaddrinfo); getaddrinfo's EAI_* code for @node
 * and @service; EAI_FAMILY for an AF_IB result (from_ai); or -1 with errno EINVAL (no @node,
 * @service or @hints, or no @res) or ENOMEM.
 */
UROCE_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				  const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *r;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return cma_fail(EINVAL);
	r = calloc(1, sizeof(*r));
	if (!r)
		return cma_fail(ENOMEM);
	if (!hints)
		hints = &nohints;
	if (node || service) {
		struct addrinfo h = to_ai(hints), *ai;

		/* librdmacm gives getaddrinfo no hints when it was given none. */
		ret = getaddrinfo(node, service, hints == &nohints ? NULL : &h, &ai);
		if (!ret) {
			ret = from_ai(r, hints, ai);
			freeaddrinfo(ai);
		}
	} else {
		r->ai_flags = hints->ai_flags;
		r->ai_family = hints->ai_family;
		r->ai_qp_type = hints->ai_qp_type;
		r->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = copy_addr(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
					hints->ai_dst_len);
	}
	if (!ret && !r->ai_src_len && hints->ai_src_len)
		ret = copy_addr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(r);
		return ret;
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
