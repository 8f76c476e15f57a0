// SPDX-License-Identifier: MIT
/*
 * Binding and resolution (rdma_bind_addr(3), rdma_resolve_addr(3), rdma_resolve_route(3)):
 * an IP address names the uroce device whose GID table holds it; a destination is reached
 * from the source address the kernel's routing table picks for it; over RoCE the route is
 * that pair of GIDs (PROTOCOL.md §4.7). Ports are reserved per port space across the host's
 * processes (EADDRINUSE), in the CM directory the host's hub keeps (fabric/rdv.h).
 * Resolution of an id bound to an address, and route resolution, answer at once: their events
 * are queued before the call returns. An id that resolution binds itself waits for the hub to
 * reserve its port without blocking the caller (as the kernel's resolution runs in the
 * background), so that many resolutions share the round trips to the hub; ADDR_RESOLVED or
 * ADDR_ERROR comes when the hub has answered. Giving a port up is not waited for either.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/rdmacm/cma.h"
/*
 * An address resolution waiting for the hub to reserve its source port (resolve_bind): the
 * answer reaches the id on the engine's thread, unless the id is destroyed first.
 */
struct cma_resolving {
	struct cma_id *c; /* NULL once the id is destroyed (resolve_lock) */
	struct ibv_context *verbs;
	uint8_t port_num;
};

static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_ip(const struct sockaddr *sa)
{
	return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static uint16_t get_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
}

static void set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

/* The GID of @sa's address: IPv4-mapped for IPv4 (PROTOCOL.md §4.7). */
union ibv_gid cma_gid(const struct sockaddr *sa)
{
	union ibv_gid g = {0};

	if (sa->sa_family == AF_INET) {
		g.raw[10] = g.raw[11] = 0xff;
		memcpy(g.raw + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(g.raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
	return g;
}

int cma_gid_index(struct ibv_context *ctx, const uint8_t gid[16])
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;

		if (!ibv_query_gid(ctx, 1, i, &g) && !memcmp(g.raw, gid, 16))
			return i;
	}
	return -1;
}

/* The GID of @family's wildcard address: ::ffff:0.0.0.0 or ::. */
static union ibv_gid any_gid(sa_family_t family)
{
	union ibv_gid g = {0};

	if (family == AF_INET)
		g.raw[10] = g.raw[11] = 0xff;
	return g;
}

static bool is_wildcard(const struct sockaddr *sa)
{
	union ibv_gid g = cma_gid(sa), any = any_gid(sa->sa_family);

	return !memcmp(&g, &any, sizeof(g));
}

/* 127.0.0.0/8 or ::1 (the kernel's ipv4_is_loopback, ipv6_addr_loopback). */
static bool is_loopback(const struct sockaddr *sa)
{
	static const struct in6_addr v6 = IN6ADDR_LOOPBACK_INIT;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &v6, sizeof(v6));
}

bool cma_any_addr(const struct sockaddr *sa)
{
	return is_wildcard(sa) || is_loopback(sa);
}

/* net.ipv6.bindv6only: whether an IPv6 wildcard leaves IPv4 alone. */
static bool bindv6only(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v == 1;
}

/*
 * The first half of binding @c to @addr: the device and port holding the address with its
 * default PD, the id's source address and AF_ONLY default, and *@s, the port to reserve. A
 * wildcard has no device, nor has a loopback address unless @attach_loopback: rdma_cm counts
 * loopback addresses as "any" (cma_any_addr), so rdma_bind_addr to 127.0.0.1 attaches no
 * device and a listener there listens on every device; only the resolution of a loopback
 * destination binds a device (cma_bind_loopback), here uroce_lo. 0, ENODEV (as the kernel: no
 * RDMA device holds the address) or ENOMEM.
 */
static int bind_start(struct cma_id *c, const struct sockaddr *addr, bool attach_loopback,
		      struct ibv_context **verbs, uint8_t *port_num, struct uroce_service *s)
{
	union ibv_gid g = cma_gid(addr);

	*verbs = NULL;
	*port_num = 0;
	if (!is_wildcard(addr) && (attach_loopback || !is_loopback(addr))) {
		*verbs = cma_device_of(g.raw);
		if (!*verbs)
			return ENODEV;
		*port_num = 1;
		/* librdmacm's ucma_get_device: the device's PD comes with it, or ENOMEM. */
		if (!cma_default_pd(*verbs))
			return ENOMEM;
	}
	/* The kernel's default: IPv4 ids are AF-only, IPv6 ones as net.ipv6.bindv6only says. */
	if (!c->afonly_set)
		c->afonly = addr->sa_family == AF_INET || bindv6only();
	memcpy(&c->id.route.addr.src_addr, addr, sa_len(addr));
	*s = cma_service_of(c);
	return 0;
}

/* The second half: the hub reserved s->port for @c (@err 0), or refused with @err. */
static void bind_end(struct cma_id *c, int err, const struct uroce_service *s,
		     struct ibv_context *verbs, uint8_t port_num)
{
	if (err) {
		memset(&c->id.route.addr.src_storage, 0, sizeof(c->id.route.addr.src_storage));
		return;
	}
	set_port(&c->id.route.addr.src_addr, s->port);
	c->id.verbs = verbs;
	c->id.pd = verbs ? cma_default_pd(verbs) : NULL; /* made by bind_start */
	/* Counted on its device from now on, as the kernel's cma_attach_to_dev() tracks it. */
	if (verbs)
		c->res_tag = uroce_res_add(verbs, UROCE_RES_CM_ID);
	c->id.port_num = port_num;
	c->state = CMA_BOUND;
	c->bound = true;
}

/* Bind @c to @addr, reserving the port host-wide (mad.h uroce_cm_service). 0 or an errno. */
static int bind_to(struct cma_id *c, const struct sockaddr *addr)
{
	struct ibv_context *verbs;
	struct uroce_service s;
	uint8_t port_num;
	int err = bind_start(c, addr, false, &verbs, &port_num, &s);

	if (err)
		return err;
	err = uroce_cm_service(UROCE_SERVICE_BIND, &s);
	bind_end(c, err, &s, verbs, port_num);
	return err;
}

/* The hub's answer to resolve_bind (engine's thread): the id's ADDR_RESOLVED or ADDR_ERROR. */
static void resolved(void *arg, int err, const struct uroce_service *s)
{
	struct cma_resolving *q = arg;
	struct cma_id *c;

	pthread_mutex_lock(&resolve_lock);
	c = q->c;
	if (c) {
		c->resolving = NULL;
		bind_end(c, err, s, q->verbs, q->port_num);
		c->state = err ? CMA_IDLE : CMA_ADDR_RESOLVED;
		/* Out of memory for the event: the application waits, as for a lost answer. */
		cma_event(&c->id, err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
			  -err);
	}
	pthread_mutex_unlock(&resolve_lock);
	if (!c && !err) /* the id went first: the port goes back */
		uroce_cm_service_async(UROCE_SERVICE_UNBIND, s, NULL, NULL);
	free(q);
}

/*
 * Bind @c to @src and resolve it to @dst without waiting for the hub (resolved() ends it).
 * 0 (the answer will come), or an errno: bind_start's, ENOMEM, or uroce_cm_service_async's.
 */
static int resolve_bind(struct cma_id *c, const struct sockaddr *src, const struct sockaddr *dst)
{
	struct cma_resolving *q = calloc(1, sizeof(*q));
	struct uroce_service s;
	int err;

	if (!q)
		return ENOMEM;
	err = bind_start(c, src, true, &q->verbs, &q->port_num, &s);
	if (!err) {
		memcpy(&c->id.route.addr.dst_addr, dst, sa_len(dst));
		q->c = c;
		pthread_mutex_lock(&resolve_lock);
		c->resolving = q;
		c->state = CMA_ADDR_QUERY;
		pthread_mutex_unlock(&resolve_lock);
		/* From here on resolved() may run, and free q, at any time. */
		err = uroce_cm_service_async(UROCE_SERVICE_BIND, &s, resolved, q);
		if (!err)
			return 0;
		pthread_mutex_lock(&resolve_lock);
		c->resolving = NULL;
		c->state = CMA_IDLE;
		pthread_mutex_unlock(&resolve_lock);
		bind_end(c, err, &s, NULL, 0);
	}
	free(q);
	return err;
}

void cma_resolve_cancel(struct cma_id *c)
{
	pthread_mutex_lock(&resolve_lock);
	if (c->resolving) {
		c->resolving->c = NULL;
		c->resolving = NULL;
	}
	pthread_mutex_unlock(&resolve_lock);
}

struct uroce_service cma_service_of(const struct cma_id *c)
{
	const struct sockaddr *src = &c->id.route.addr.src_addr;
	struct uroce_service s = {.ps = (uint16_t)c->id.ps, .port = get_port(src)};
	/* A loopback binding covers its family's addresses in the directory, as a wildcard. */
	union ibv_gid g = is_loopback(src) ? any_gid(src->sa_family) : cma_gid(src);

	if (c->reuseaddr)
		s.flags |= UROCE_SERVICE_REUSEADDR;
	if (c->afonly)
		s.flags |= UROCE_SERVICE_AFONLY;

	memcpy(s.gid, g.raw, 16);
	return s;
}

/* Give up @c's port. */
static void unbind(struct cma_id *c)
{
	if (c->bound) {
		struct uroce_service s = cma_service_of(c);

		/*
		 * Not waited for (the hub takes this process's requests in order, net.h); sent
		 * and waited for only if it cannot be queued. Only a lost hub can fail it, and the
		 * port goes with the process's bindings.
		 */
		if (uroce_cm_service_async(UROCE_SERVICE_UNBIND, &s, NULL, NULL))
			uroce_cm_service(UROCE_SERVICE_UNBIND, &s);
		c->bound = false;
	}
	c->state = CMA_IDLE;
}

void cma_release(struct cma_id *c)
{
	unbind(c);
	free(c->id.route.path_rec);
	c->id.route.path_rec = NULL;
	c->id.route.num_paths = 0;
}

/*
 * 0, or -1 with errno: EINVAL (NULL, or @id already bound), EAFNOSUPPORT (not IPv4 or IPv6),
 * ENODEV (no uroce device has the address), EADDRINUSE (the port of that port space is taken
 * on the host at this address, or no ephemeral port is left), EADDRNOTAVAIL (it is taken, and
 * one of the two is a wildcard: the kernel's rules, fabric/net.h uroce_net_service), ETIMEDOUT
 * (the host's hub did not answer).
 */
UROCE_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c;
	int err;

	if (!id || !addr)
		return cma_fail(EINVAL);
	if (!is_ip(addr))
		return cma_fail(EAFNOSUPPORT);
	c = to_cma_id(id);
	if (c->state != CMA_IDLE)
		return cma_fail(EINVAL);
	err = bind_to(c, addr);
	return err ? cma_fail(err) : 0;
}

/* The source address the routing table gives for @dst (port 0): 0 or an errno. */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return errno;
	/* connect() on a UDP socket only looks the route up; nothing is sent. */
	if (connect(fd, dst, sa_len(dst)) || getsockname(fd, (struct sockaddr *)src, &len))
		err = errno;
	close(fd);
	set_port((struct sockaddr *)src, 0);
	return err;
}

/*
 * 0 (ADDR_RESOLVED or ADDR_ERROR follows on the channel; a synchronous id returns -1 with the
 * error's errno instead of queueing ADDR_ERROR for itself), or -1 with errno: EINVAL (NULL
 * @id or @dst, @id past resolution), EAFNOSUPPORT (an address that is not IPv4 or IPv6, or
 * @src and @dst of different families), and rdma_bind_addr's errors for @src.
 * ADDR_ERROR's status: -ENETUNREACH or -EHOSTUNREACH (no route), -ENODEV (the route's source
 * address is on no uroce device). @timeout_ms is not needed: resolution is immediate.
 */
UROCE_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				   struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c;
	struct sockaddr_storage src;
	int err = 0;

	(void)timeout_ms;
	if (!id || !dst_addr)
		return cma_fail(EINVAL);
	if (!is_ip(dst_addr) || (src_addr && src_addr->sa_family != dst_addr->sa_family))
		return cma_fail(EAFNOSUPPORT);
	c = to_cma_id(id);
	if (c->state > CMA_BOUND)
		return cma_fail(EINVAL);
	if (c->state == CMA_IDLE && src_addr && !is_wildcard(src_addr) &&
	    rdma_bind_addr(id, src_addr))
		return -1;
	if (!id->verbs) {
		/*
		 * Unbound or bound to a wildcard: the route's source, keeping any port asked for.
		 * Bound to a loopback address: that address, on uroce_lo.
		 */
		const struct sockaddr *bound = &id->route.addr.src_addr;
		uint16_t port = c->state == CMA_BOUND ? get_port(bound)
				: src_addr            ? get_port(src_addr)
						      : 0;

		if (c->state == CMA_BOUND && is_loopback(bound))
			memcpy(&src, bound, sa_len(bound));
		else
			err = route_source(dst_addr, &src);
		if (!err) {
			set_port((struct sockaddr *)&src, port);
			unbind(c);
			err = resolve_bind(c, (struct sockaddr *)&src, dst_addr);
			if (!err) {
				/* While the hub answers: a connection follows a resolution. */
				cma_cm_start_early();
				return cma_complete(id);
			}
		}
	}
	if (!err) {
		memcpy(&id->route.addr.dst_addr, dst_addr, sa_len(dst_addr));
		c->state = CMA_ADDR_RESOLVED;
	}
	err = cma_event(id, err ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, -err);
	return err ? cma_fail(err) : cma_complete(id);
}

/*
 * 0 (ROUTE_RESOLVED follows), or -1 with errno: EINVAL (NULL, or the address is not resolved),
 * ENOMEM. The one path is the GID pair of the addresses, P_Key 0xFFFF, the port's active MTU,
 * hop limit 64.
 */
UROCE_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c;
	struct ibv_sa_path_rec *p;
	struct ibv_port_attr pa;
	int err;

	(void)timeout_ms;
	if (!id)
		return cma_fail(EINVAL);
	c = to_cma_id(id);
	if (c->state != CMA_ADDR_RESOLVED)
		return cma_fail(EINVAL);
	p = calloc(1, sizeof(*p));
	if (!p)
		return cma_fail(ENOMEM);
	p->sgid = cma_gid(&id->route.addr.src_addr);
	p->dgid = cma_gid(&id->route.addr.dst_addr);
	p->dlid = p->slid = htons(0xFFFF); /* permissive on RoCEv2 (§4.7) */
	p->hop_limit = 64;
	p->traffic_class = c->tos; /* RDMA_OPTION_ID_TOS, else the kernel's default_roce_tos 0 */
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htons(0xFFFF);
	p->mtu = ibv_query_port(id->verbs, id->port_num, &pa) ? IBV_MTU_1024 : pa.active_mtu;
	p->packet_life_time = 16; /* Linux 6.2 and later (§4.7) */
	free(id->route.path_rec);
	id->route.path_rec = p;
	id->route.num_paths = 1;
	c->state = CMA_ROUTE_RESOLVED;
	err = cma_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return err ? cma_fail(err) : cma_complete(id);
}
