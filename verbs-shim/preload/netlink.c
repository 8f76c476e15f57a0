// SPDX-License-Identifier: MIT
/*
 * RDMA netlink for the programs uroce-run starts (ARCHITECTURE.md "The kernel's view"). A
 * socket(AF_NETLINK, SOCK_RAW or SOCK_DGRAM, NETLINK_RDMA) is one end of an AF_UNIX datagram
 * socketpair, the other end kept here; a request sent on it is answered at once (nldev.h, from
 * the devices sysfs shows, view.h) by writing the kernel's answer into the other end, so that
 * poll, select, epoll, read and recv find it on a real descriptor, one datagram per skb the
 * kernel would queue. The socket calls behave as net/netlink/af_netlink.c's: bind
 * (netlink_bind: the port ID given, or the process's ID then negative ones, netlink_autobind),
 * getsockname and getpeername (netlink_getname), connect (netlink_connect), send
 * (netlink_sendmsg: the kernel is port 0, no other port exists), recvmsg and recvfrom (the
 * sender's address: AF_NETLINK, port 0, with its length, which libmnl and libnl check; they,
 * recv, read and readv fail with ENOBUFS once after an answer was lost to a full socket,
 * netlink_overrun), setsockopt and getsockopt
 * at SOL_NETLINK (netlink_setsockopt: CAP_ACK and EXT_ACK shape the acknowledgments), SO_TYPE,
 * SO_PROTOCOL and SO_DOMAIN. dup, dup2, dup3 and fcntl's F_DUPFD give another descriptor of the
 * same socket; it ends with the last one closed.
 *
 * Every other socket and descriptor goes to the C library untouched: socket() compares the
 * address family first, and the calls on a descriptor read how many emulated sockets are open,
 * going straight to the C library when none is (one integer comparison), else after a scan of
 * the descriptors of the few that are. Not emulated: notifications (no RDMA netlink group has
 * any), sendmmsg/recvmmsg's address on an emulated socket, and a socket kept across exec().
 * This file holds the sockets, their table and the control calls; netlink_opt.c the socket
 * options; netlink_io.c the requests, the answers and receiving.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "verbs-shim/export.h"
#include "verbs-shim/preload/netlink_int.h"
#include "verbs-shim/preload/real.h"

/* The descriptors of the emulated sockets: fd -1 is a free slot. */
#define SLOTS 128
static struct {
	int fd;
	struct nlsock *s;
} slots[SLOTS] = {[0 ... SLOTS - 1] = {-1, NULL}};
int nl_nopen;        /* slots in use: 0 makes every call pass through */
static int nscanned; /* slots to scan: one past the highest ever used */
pthread_mutex_t nl_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of @fd, or -1: without a lock, so that a descriptor that is not an emulated socket
 * (a signal handler's write to a pipe) never waits. */
int nl_slot_of(int fd)
{
	int n;

	if (!__atomic_load_n(&nl_nopen, __ATOMIC_ACQUIRE) || fd < 0)
		return -1;
	n = __atomic_load_n(&nscanned, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&slots[i].fd, __ATOMIC_ACQUIRE) == fd)
			return i;
	return -1;
}

/* Under the lock: the socket of @fd, or NULL. */
struct nlsock *nl_sock_of(int fd)
{
	int i = nl_slot_of(fd);

	return i >= 0 && slots[i].fd == fd ? slots[i].s : NULL;
}

static void detach(int fd);

/* Under the lock: @fd refers to @s from now on (and no longer to what a number closed behind
 * the interposers' back referred to). ENFILE when every slot is taken. */
static int attach(int fd, struct nlsock *s)
{
	detach(fd);
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].fd < 0) {
			slots[i].s = s;
			s->refs++;
			__atomic_store_n(&slots[i].fd, fd, __ATOMIC_RELEASE);
			if (i >= nscanned)
				__atomic_store_n(&nscanned, i + 1, __ATOMIC_RELEASE);
			__atomic_add_fetch(&nl_nopen, 1, __ATOMIC_RELEASE);
			return 0;
		}
	return ENFILE;
}

/* Under the lock: @fd no longer refers to its socket, which ends with its last descriptor. */
static void detach(int fd)
{
	int i = nl_slot_of(fd);
	struct nlsock *s;

	if (i < 0)
		return;
	s = slots[i].s;
	__atomic_store_n(&slots[i].fd, -1, __ATOMIC_RELEASE);
	slots[i].s = NULL;
	__atomic_sub_fetch(&nl_nopen, 1, __ATOMIC_RELEASE);
	if (--s->refs == 0) {
		REAL(close)(s->peer);
		free(s);
	}
}

/*
 * True if @fd is an emulated socket (for a call to emulate). A descriptor the program closed
 * behind the interposers' back (fclose of an fdopen'ed socket, close_range) is forgotten once
 * its number is closed or names something else, which its inode tells.
 */
COLD bool nl_emulated(int fd)
{
	struct nlsock *s;
	struct stat st;
	bool open, live;

	if (nl_slot_of(fd) < 0)
		return false;
	open = !fstat(fd, &st);
	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	live = s && open && st.st_dev == s->self_dev && st.st_ino == s->self_ino;
	if (s && !live)
		detach(fd);
	pthread_mutex_unlock(&nl_lock);
	return live;
}

/* CAP_NET_ADMIN in the effective set: what netlink_capable() asks of RDMA_NL_ADMIN_PERM
 * commands and netlink_allowed() of joining a group. */
static bool net_admin(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

static bool portid_used(uint32_t portid)
{
	for (int i = 0; i < nscanned; i++)
		if (slots[i].fd >= 0 && slots[i].s->bound && slots[i].s->portid == portid)
			return true;
	return false;
}

/* Under the lock: netlink_autobind(): the process's ID, or else negative IDs from -4097 down. */
void nl_autobind(struct nlsock *s)
{
	static int32_t rover = -4097;
	uint32_t portid = (uint32_t)getpid();

	while (portid_used(portid))
		portid = (uint32_t)rover--;
	s->portid = portid;
	s->bound = true;
}

int nl_fail(int err)
{
	errno = err;
	return -1;
}

/* netlink_create() of a NETLINK_RDMA socket of @type (SOCK_NONBLOCK, SOCK_CLOEXEC kept). */
static COLD int emu_socket(int type)
{
	int sv[2], base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), err;
	struct nlsock *s;
	struct stat st;

	if (base != SOCK_RAW && base != SOCK_DGRAM) /* netlink_create() */
		return nl_fail(ESOCKTNOSUPPORT);
	s = calloc(1, sizeof(*s));
	if (!s)
		return nl_fail(ENOMEM);
	if (REAL(socketpair)(AF_UNIX, SOCK_DGRAM | (type & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0,
			     sv)) {
		free(s);
		return -1;
	}
	REAL(fcntl)(sv[1], F_SETFD, FD_CLOEXEC);
	if (fstat(sv[1], &st)) {
		err = errno;
		goto out;
	}
	s->peer = sv[1];
	s->peer_dev = st.st_dev;
	s->peer_ino = st.st_ino;
	if (fstat(sv[0], &st)) {
		err = errno;
		goto out;
	}
	s->self_dev = st.st_dev;
	s->self_ino = st.st_ino;
	s->type = base;
	s->net_admin = net_admin();
	pthread_mutex_lock(&nl_lock);
	err = attach(sv[0], s);
	pthread_mutex_unlock(&nl_lock);
	if (!err)
		return sv[0];
out:
	REAL(close)(sv[0]);
	REAL(close)(sv[1]);
	free(s);
	return nl_fail(err);
}

UROCE_EXPORT int socket(int domain, int type, int protocol)
{
	if (domain != AF_NETLINK || protocol != NETLINK_RDMA)
		return REAL(socket)(domain, type, protocol);
	return emu_socket(type);
}

static COLD int emu_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_nl *nl = (const struct sockaddr_nl *)addr;
	struct nlsock *s;
	int err = 0;

	if (len < sizeof(*nl) || nl->nl_family != AF_NETLINK)
		return nl_fail(EINVAL);
	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (!s)
		err = EBADF;
	else if (nl->nl_groups && !s->net_admin)
		err = EPERM;
	else if (s->bound && nl->nl_pid != s->portid)
		err = EINVAL;
	else if (!s->bound && nl->nl_pid && portid_used(nl->nl_pid))
		err = EADDRINUSE;
	if (!err) {
		if (!s->bound && nl->nl_pid) {
			s->portid = nl->nl_pid;
			s->bound = true;
		} else if (!s->bound) {
			nl_autobind(s);
		}
		s->groups = nl->nl_groups;
	}
	pthread_mutex_unlock(&nl_lock);
	return err ? nl_fail(err) : 0;
}

UROCE_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (nl_pass(fd))
		return REAL(bind)(fd, addr, len);
	return emu_bind(fd, addr, len);
}

static int getname(int fd, struct sockaddr *addr, socklen_t *len, bool peer)
{
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	struct nlsock *s;

	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (s && peer) {
		nl.nl_pid = s->dst_portid;
	} else if (s) {
		nl.nl_pid = s->bound ? s->portid : 0;
		nl.nl_groups = s->groups;
	}
	pthread_mutex_unlock(&nl_lock);
	if (!s)
		return nl_fail(EBADF);
	nl_give_addr(&nl, addr, len);
	return 0;
}

static COLD int emu_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return getname(fd, addr, len, false);
}

UROCE_EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	if (nl_pass(fd))
		return REAL(getsockname)(fd, addr, len);
	return emu_getsockname(fd, addr, len);
}

static COLD int emu_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return getname(fd, addr, len, true);
}

UROCE_EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	if (nl_pass(fd))
		return REAL(getpeername)(fd, addr, len);
	return emu_getpeername(fd, addr, len);
}

static COLD int emu_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_nl *nl = (const struct sockaddr_nl *)addr;
	struct nlsock *s;
	int err = 0;

	if (len < sizeof(addr->sa_family))
		return nl_fail(EINVAL);
	pthread_mutex_lock(&nl_lock);
	s = nl_sock_of(fd);
	if (!s)
		err = EBADF;
	else if (addr->sa_family == AF_UNSPEC)
		s->dst_portid = 0;
	else if (addr->sa_family != AF_NETLINK || len < sizeof(*nl))
		err = EINVAL;
	else if ((nl->nl_groups || nl->nl_pid) && !s->net_admin)
		err = EPERM;
	else {
		if (!s->bound)
			nl_autobind(s);
		s->dst_portid = nl->nl_pid;
	}
	pthread_mutex_unlock(&nl_lock);
	return err ? nl_fail(err) : 0;
}

UROCE_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (nl_pass(fd))
		return REAL(connect)(fd, addr, len);
	return emu_connect(fd, addr, len);
}

/* move_addr_to_user(): as much of @nl as fits, and its full length. */
void nl_give_addr(const struct sockaddr_nl *nl, struct sockaddr *addr, socklen_t *len)
{
	if (!addr || !len)
		return;
	memcpy(addr, nl, *len < sizeof(*nl) ? *len : sizeof(*nl));
	*len = sizeof(*nl);
}

/* Before @fd is closed: forget it, if it is an emulated socket's (its number may be reused at
 * once). */
static COLD void forget(int fd)
{
	if (nl_slot_of(fd) < 0)
		return;
	pthread_mutex_lock(&nl_lock);
	detach(fd);
	pthread_mutex_unlock(&nl_lock);
}

UROCE_EXPORT int close(int fd)
{
	if (!nl_none_open())
		forget(fd);
	return REAL(close)(fd);
}

/* After @newfd became a copy of @oldfd (dup2, dup3, F_DUPFD): @newfd refers to what @oldfd
 * does, and no longer to what it referred to before. */
static int duplicated(int oldfd, int newfd)
{
	struct nlsock *s;
	int err = 0;

	if (newfd < 0 || oldfd == newfd)
		return newfd;
	pthread_mutex_lock(&nl_lock);
	detach(newfd);
	s = nl_sock_of(oldfd);
	if (s)
		err = attach(newfd, s);
	pthread_mutex_unlock(&nl_lock);
	if (err) {
		REAL(close)(newfd);
		return nl_fail(err);
	}
	return newfd;
}

UROCE_EXPORT int dup(int fd)
{
	int r = REAL(dup)(fd);

	return nl_none_open() || !nl_emulated(fd) ? r : duplicated(fd, r);
}

UROCE_EXPORT int dup2(int oldfd, int newfd)
{
	int r = REAL(dup2)(oldfd, newfd);

	if (nl_none_open() || (nl_slot_of(oldfd) < 0 && nl_slot_of(newfd) < 0))
		return r;
	return duplicated(oldfd, r);
}

UROCE_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int r = REAL(dup3)(oldfd, newfd, flags);

	if (nl_none_open() || (nl_slot_of(oldfd) < 0 && nl_slot_of(newfd) < 0))
		return r;
	return duplicated(oldfd, r);
}

/* fcntl(2)'s third argument, whichever type it has, as the C library passes it on. */
static int fcntl_any(int fd, int cmd, void *arg, int (*real)(int, int, ...))
{
	int r = real(fd, cmd, arg);

	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !nl_none_open() && nl_emulated(fd))
		return duplicated(fd, r);
	return r;
}

UROCE_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_any(fd, cmd, arg, REAL(fcntl));
}

UROCE_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_any(fd, cmd, arg, REAL(fcntl64));
}
