// SPDX-License-Identifier: MIT
/*
 * RDMA netlink's requests and answers (netlink.c says what is emulated): a request sent on an
 * emulated socket (sendto, send, sendmsg, write, writev) is netlink_sendmsg()'s to the kernel,
 * answered at once (nldev.h) from the devices of view.h, and for the resource commands the
 * objects of the registry (resreg.h), into the socket's other end, one
 * datagram per skb the kernel would queue; receiving (recvmsg, recvfrom, recv, read, readv and
 * the fortified forms) is the C library's on the program's end, with the kernel's address and
 * netlink_overrun()'s ENOBUFS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/preload/netlink_int.h"
#include "verbs-shim/preload/real.h"
#include "verbs-shim/resreg.h"
#include "verbs-shim/preload/view.h"

/* The fortified entry points of <sys/socket.h> (_FORTIFY_SOURCE), which do not call the plain
 * ones. */
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *alen);

/* One datagram of an answer to the socket @arg, into its other end. */
static int emit_dgram(void *arg, const void *buf, size_t len)
{
	struct nlsock *s = arg;

	if (REAL(send)(s->peer, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* The socket is full: the kernel drops the answer and tells the reader
		 * (netlink_overrun()). */
		if (!s->no_enobufs)
			s->overrun = true;
	}
	return 0;
}

typedef uint64_t res_row[UROCE_RES_NUM];

/* What the registry's processes hold on the devices of one answer. */
struct collected {
	const struct uroce_sysview_dev *devs;
	int ndevs;
	res_row *res;               /* per device */
	struct uroce_nldev_qp *qps; /* unsorted as read */
	size_t nqps, cap;
	bool no_memory;
};

/* The position of the device named @name in the answer's devices, or -1 (a device gone since,
 * or of an interface this process does not see). */
static int dev_pos(const struct collected *c, const char *name)
{
	for (int i = 0; i < c->ndevs; i++)
		if (!strcmp(c->devs[i].name, name))
			return i;
	return -1;
}

static void add_counts(void *arg, uint32_t pid, const char *dev,
		       const uint64_t count[UROCE_RES_NUM])
{
	struct collected *c = arg;
	int i = dev_pos(c, dev);

	(void)pid;
	if (i >= 0)
		for (int k = 0; k < UROCE_RES_NUM; k++)
			c->res[i][k] += count[k];
}

static void add_qp(void *arg, uint32_t pid, const char *dev, const struct uroce_res_qp *q)
{
	struct collected *c = arg;
	int i = dev_pos(c, dev);

	if (i < 0 || c->no_memory)
		return;
	if (c->nqps == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct uroce_nldev_qp *more = realloc(c->qps, cap * sizeof(*more));

		if (!more) {
			c->no_memory = true;
			return;
		}
		c->qps = more;
		c->cap = cap;
	}
	c->qps[c->nqps++] = (struct uroce_nldev_qp){(size_t)i, pid, *q};
}

/* The kernel's restrack order: by device, then by QP number. */
static int qp_order(const void *a, const void *b)
{
	const struct uroce_nldev_qp *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->qp.lqpn < y->qp.lqpn ? -1 : x->qp.lqpn > y->qp.lqpn;
}

/*
 * Into @v: the objects of every uroce process this one may see (resreg.h: its uid's, or all
 * for root, of its network namespace), counted on the devices @devs (@n), and their QPs.
 * Returns 0 or ENOMEM; without a registry folder there are none.
 */
static int collect(struct uroce_nldev_view *v, const struct uroce_sysview_dev *devs, int n)
{
	struct collected c = {.devs = devs, .ndevs = n};
	struct uroce_resreg_visitor visitor = {add_counts, add_qp, &c};

	c.res = calloc(n ? (size_t)n : 1, sizeof(res_row));
	if (!c.res)
		return ENOMEM;
	uroce_resreg_read(UROCE_RESREG_DIR, &visitor);
	if (c.no_memory) {
		free(c.res);
		free(c.qps);
		return ENOMEM;
	}
	if (c.nqps)
		qsort(c.qps, c.nqps, sizeof(*c.qps), qp_order);
	v->res = (const res_row *)c.res;
	v->qps = c.qps;
	v->nqps = c.nqps;
	return 0;
}

/* True if the datagram @req (@len bytes) holds a resource command, which reads the registry. */
static bool asks_resources(const void *req, size_t len)
{
	const uint8_t *p = req;

	while (len >= NLMSG_HDRLEN) {
		struct nlmsghdr h;
		unsigned int op;

		memcpy(&h, p, sizeof(h));
		op = RDMA_NL_GET_OP(h.nlmsg_type);
		if (RDMA_NL_GET_CLIENT(h.nlmsg_type) == RDMA_NL_NLDEV &&
		    (op == RDMA_NLDEV_CMD_RES_GET || op == RDMA_NLDEV_CMD_RES_QP_GET))
			return true;
		if (h.nlmsg_len < NLMSG_HDRLEN || NLMSG_ALIGN(h.nlmsg_len) >= len)
			break;
		p += NLMSG_ALIGN(h.nlmsg_len);
		len -= NLMSG_ALIGN(h.nlmsg_len);
	}
	return false;
}

/* Under the lock: the kernel's answer to the request @req (@len bytes) sent by @s. */
static int answer(struct nlsock *s, const void *req, size_t len)
{
	struct uroce_nldev_sock who = {s->portid, s->cap_ack, s->ext_ack, s->net_admin};
	struct uroce_nldev_view v = {0};
	struct uroce_sysview_dev *devs;
	struct uroce_sysview sys;
	struct stat st;
	int n, err;

	/* The program closed the other end (its number may name something else now): no kernel
	 * end to answer. */
	if (fstat(s->peer, &st) || st.st_dev != s->peer_dev || st.st_ino != s->peer_ino)
		return ECONNREFUSED;
	err = preload_devices(&devs, &n);
	if (err)
		return err;
	sys = (struct uroce_sysview){devs, n};
	v.sys = &sys;
	if (asks_resources(req, len))
		err = collect(&v, devs, n);
	if (!err)
		err = uroce_nldev_answer(&v, &who, req, len, emit_dgram, s, &s->cnt);
	free((void *)v.res);
	free((void *)v.qps);
	free(devs);
	return err;
}

/*
 * netlink_sendmsg() of the @iovcnt buffers @iov to @name (NULL: the connected port): the kernel
 * (port 0) takes it and answers; there is no other port. Returns the length sent, or -1.
 */
static COLD ssize_t nl_send(int fd, const struct iovec *iov, size_t iovcnt, const void *name,
			    socklen_t namelen)
{
	const struct sockaddr_nl *nl = name;
	size_t len = 0, off = 0;
	int sndbuf = 0, err = 0;
	socklen_t optlen = sizeof(sndbuf);
	struct nlsock *s;
	uint32_t dst;
	char *buf;

	for (size_t i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (namelen && (namelen < sizeof(*nl) || nl->nl_family != AF_NETLINK))
		return nl_fail(EINVAL);
	if (!REAL(getsockopt)(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &optlen) &&
	    len + 32 > (size_t)sndbuf)
		return nl_fail(EMSGSIZE);
	buf = malloc(len ? len : 1);
	if (!buf)
		return nl_fail(ENOBUFS);
	for (size_t i = 0; i < iovcnt; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (!s) {
		err = EBADF;
	} else if (namelen && (nl->nl_pid || nl->nl_groups) && !s->net_admin) {
		err = EPERM;
	} else {
		dst = namelen ? nl->nl_pid : s->dst_portid;
		if (!s->bound)
			nl_autobind(s);
		err = dst ? ECONNREFUSED : answer(s, buf, len);
	}
	pthread_mutex_unlock(&nl_lock);
	free(buf);
	return err ? nl_fail(err) : (ssize_t)len;
}

/* One buffer sent: netlink_sendmsg() of it. */
static COLD ssize_t send_buf(int fd, const void *buf, size_t len, const void *name,
			     socklen_t namelen)
{
	struct iovec iov = {(void *)buf, len};

	return nl_send(fd, &iov, 1, name, namelen);
}

UROCE_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			    const struct sockaddr *addr, socklen_t alen)
{
	if (nl_pass(fd))
		return REAL(sendto)(fd, buf, len, flags, addr, alen);
	return send_buf(fd, buf, len, addr, addr ? alen : 0);
}

UROCE_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	if (nl_pass(fd))
		return REAL(send)(fd, buf, len, flags);
	return send_buf(fd, buf, len, NULL, 0);
}

UROCE_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (nl_pass(fd))
		return REAL(sendmsg)(fd, msg, flags);
	return nl_send(fd, msg->msg_iov, msg->msg_iovlen, msg->msg_name,
		       msg->msg_name ? msg->msg_namelen : 0);
}

UROCE_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	if (nl_pass(fd))
		return REAL(write)(fd, buf, len);
	return send_buf(fd, buf, len, NULL, 0);
}

UROCE_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (nl_pass(fd))
		return REAL(writev)(fd, iov, iovcnt);
	if (iovcnt < 0)
		return nl_fail(EINVAL);
	return nl_send(fd, iov, (size_t)iovcnt, NULL, 0);
}

/* Before a receive: ENOBUFS once if an answer was lost since the last one. */
static bool overran(int fd)
{
	struct nlsock *s;
	bool lost = false;

	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (s) {
		lost = s->overrun;
		s->overrun = false;
	}
	pthread_mutex_unlock(&nl_lock);
	return lost;
}

static const struct sockaddr_nl kernel_addr = {.nl_family = AF_NETLINK};

static COLD ssize_t emu_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct msghdr m;
	ssize_t n;

	if (overran(fd))
		return nl_fail(ENOBUFS);
	m = *msg;
	m.msg_name = NULL;
	m.msg_namelen = 0;
	n = REAL(recvmsg)(fd, &m, flags);
	if (n < 0)
		return n;
	msg->msg_flags = m.msg_flags;
	msg->msg_controllen = m.msg_controllen;
	if (msg->msg_name)
		nl_give_addr(&kernel_addr, msg->msg_name, &msg->msg_namelen);
	else
		msg->msg_namelen = 0;
	return n;
}

UROCE_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (nl_pass(fd))
		return REAL(recvmsg)(fd, msg, flags);
	return emu_recvmsg(fd, msg, flags);
}

static COLD ssize_t emu_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
				 socklen_t *alen)
{
	ssize_t n;

	if (overran(fd))
		return nl_fail(ENOBUFS);
	n = REAL(recvfrom)(fd, buf, len, flags, NULL, NULL);
	if (n >= 0)
		nl_give_addr(&kernel_addr, addr, alen);
	return n;
}

UROCE_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			      socklen_t *alen)
{
	if (nl_pass(fd))
		return REAL(recvfrom)(fd, buf, len, flags, addr, alen);
	return emu_recvfrom(fd, buf, len, flags, addr, alen);
}

static COLD ssize_t emu_recv(int fd, void *buf, size_t len, int flags)
{
	if (overran(fd))
		return nl_fail(ENOBUFS);
	return REAL(recv)(fd, buf, len, flags);
}

UROCE_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	if (nl_pass(fd))
		return REAL(recv)(fd, buf, len, flags);
	return emu_recv(fd, buf, len, flags);
}

/* read() and readv() are recv() without flags (sock_read_iter()): ENOBUFS after an overrun. */
static COLD ssize_t emu_read(int fd, void *buf, size_t len)
{
	if (overran(fd))
		return nl_fail(ENOBUFS);
	return REAL(read)(fd, buf, len);
}

UROCE_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	if (nl_pass(fd))
		return REAL(read)(fd, buf, len);
	return emu_read(fd, buf, len);
}

UROCE_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen || nl_pass(fd))
		return REAL(__read_chk)(fd, buf, len, buflen);
	return emu_read(fd, buf, len);
}

static COLD ssize_t emu_readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (overran(fd))
		return nl_fail(ENOBUFS);
	return REAL(readv)(fd, iov, iovcnt);
}

UROCE_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (nl_pass(fd))
		return REAL(readv)(fd, iov, iovcnt);
	return emu_readv(fd, iov, iovcnt);
}

UROCE_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	/* a buffer shorter than said: the C library's aborts */
	if (len > buflen || nl_pass(fd))
		return REAL(__recv_chk)(fd, buf, len, buflen, flags);
	return emu_recv(fd, buf, len, flags);
}

UROCE_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
				    struct sockaddr *addr, socklen_t *alen)
{
	if (len > buflen || nl_pass(fd))
		return REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, addr, alen);
	return emu_recvfrom(fd, buf, len, flags, addr, alen);
}
