// SPDX-License-Identifier: MIT
/* rsockets: datagram sockets (work in progress). */
#include <errno.h>
#include <unistd.h>

#include "verbs-shim/rdmacm/rsocket_int.h"

int ds_init(struct rs *rs, int domain)
{
	(void)rs;
	(void)domain;
	return ENOTSUP;
}
void ds_free(struct rs *rs)
{
	rs_remove(rs);
}
int ds_bind(struct rs *rs, const struct sockaddr *addr, socklen_t len)
{
	(void)rs, (void)addr, (void)len;
	return rs_fail(ENOTSUP);
}
int ds_connect(struct rs *rs, const struct sockaddr *addr, socklen_t len)
{
	(void)rs, (void)addr, (void)len;
	return rs_fail(ENOTSUP);
}
ssize_t ds_sendto(struct rs *rs, const void *buf, size_t len, int flags, const struct sockaddr *to,
		  socklen_t tolen)
{
	(void)rs, (void)buf, (void)len, (void)flags, (void)to, (void)tolen;
	return rs_fail(ENOTSUP);
}
ssize_t ds_recvfrom(struct rs *rs, void *buf, size_t len, int flags, struct sockaddr *from,
		    socklen_t *fromlen)
{
	(void)rs, (void)buf, (void)len, (void)flags, (void)from, (void)fromlen;
	return rs_fail(ENOTSUP);
}
int ds_poll_events(struct rs *rs, short events, bool nonblock)
{
	(void)rs, (void)events, (void)nonblock;
	return 0;
}
int ds_wait_fd(struct rs *rs)
{
	(void)rs;
	return -1;
}
void ds_consume_event(struct rs *rs)
{
	(void)rs;
}
void ds_svc_input(struct rs *rs)
{
	(void)rs;
}
int ds_shutdown(struct rs *rs)
{
	(void)rs;
	return 0;
}
