// SPDX-License-Identifier: MIT
/*
 * docker_seccomp: run a command as Docker runs a container's process by default, as far as a
 * program like uroce can tell: with Docker's default capabilities only (no CAP_SYS_ADMIN, no
 * CAP_NET_ADMIN), no_new_privs, and a seccomp filter refusing what Docker's default profile
 * (moby/profiles seccomp/default.json, Docker 25 and later) refuses a process without
 * CAP_SYS_ADMIN among the calls such a program could make: io_uring (not in the profile's
 * list: EPERM), clone3 (ENOSYS, so that libc falls back to clone), clone with a namespace flag,
 * unshare, setns, mount and the new mount API, pivot_root, chroot, bpf, perf_event_open, the
 * key calls, userfaultfd, and sockets of the families the profile does not list (AF_ALG,
 * AF_VSOCK, ...). Every other call is let through: this is the profile's refusals, not its
 * whole allow list.
 *
 *   docker_seccomp COMMAND [ARG...]   run COMMAND so
 *   docker_seccomp --check            exit 0 if the refusals and the capabilities hold here
 *
 * Needs root (to drop capabilities from the bounding set). Exit status: COMMAND's, or 126 when
 * the sandbox cannot be set up, 127 when COMMAND is not found; --check: 0, or 1 with the
 * failed checks on stderr.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Docker's default capabilities (moby's oci/caps/defaults.go). */
static const int docker_caps[] = {
	CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
	CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
	CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
	CAP_KILL,    CAP_AUDIT_WRITE,
};

/* Calls refused with EPERM (without CAP_SYS_ADMIN, or not in the profile at all). */
static const int refused[] = {
	SYS_io_uring_setup,
	SYS_io_uring_enter,
	SYS_io_uring_register,
	SYS_unshare,
	SYS_setns,
	SYS_mount,
	SYS_umount2,
	SYS_pivot_root,
	SYS_chroot,
	SYS_bpf,
	SYS_perf_event_open,
	SYS_keyctl,
	SYS_add_key,
	SYS_request_key,
	SYS_userfaultfd,
	SYS_fsopen,
	SYS_fsconfig,
	SYS_fsmount,
	SYS_fspick,
	SYS_open_tree,
	SYS_move_mount,
	SYS_mount_setattr,
};

/* The socket families the profile does not list (it allows those below 12 and the others). */
static const int refused_families[] = {12, 19, 20, 23, 25, 34, 37, 38, 40};
#define FIRST_UNLISTED_FAMILY 46

/* Namespace flags of clone: the profile allows clone only with none of them. */
#define CLONE_NAMESPACES 0x7E020000u

#define DENY(err) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))
#define ALLOW     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int install_filter(void)
{
	struct sock_filter f[128];
	unsigned int n = 0;

	/* x86-64 only: another architecture's calls are refused outright. */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)DENY(EPERM);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)refused[i], 0, 1);
		f[n++] = (struct sock_filter)DENY(EPERM);
	}
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
	f[n++] = (struct sock_filter)DENY(ENOSYS);
	/* clone: its flags are the low word of the first argument. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, args[0]));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NAMESPACES, 0, 1);
	f[n++] = (struct sock_filter)DENY(EPERM);
	f[n++] = (struct sock_filter)ALLOW;
	/* socket: the family is the first argument. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0);
	f[n++] = (struct sock_filter)ALLOW;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, args[0]));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, FIRST_UNLISTED_FAMILY, 0,
					      1);
	f[n++] = (struct sock_filter)DENY(EPERM);
	for (size_t i = 0; i < sizeof(refused_families) / sizeof(refused_families[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)refused_families[i], 0, 1);
		f[n++] = (struct sock_filter)DENY(EPERM);
	}
	f[n++] = (struct sock_filter)ALLOW;

	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return errno;
	return 0;
}

static int is_docker_cap(int cap)
{
	for (size_t i = 0; i < sizeof(docker_caps) / sizeof(docker_caps[0]); i++)
		if (docker_caps[i] == cap)
			return 1;
	return 0;
}

/* Keep only Docker's capabilities in the bounding set: a root program exec'd gets no more. */
static int drop_caps(void)
{
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (!is_docker_cap(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return errno;
	return 0;
}

static int failed;

static void expect(const char *what, long ret, int want)
{
	if (ret == -1 && errno == want)
		return;
	fprintf(stderr, "docker_seccomp --check: %s gave %ld (%s), not %s\n", what, ret,
		ret == -1 ? strerror(errno) : "success", strerror(want));
	failed = 1;
}

/* The sandbox is in effect: what it must refuse is refused, and the capabilities are gone. */
static int check(void)
{
	char buf[64];

	expect("io_uring_setup", syscall(SYS_io_uring_setup, 4, buf), EPERM);
	expect("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET), EPERM);
	expect("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER), EPERM);
	expect("clone3", syscall(SYS_clone3, NULL, 0), ENOSYS);
	expect("mount", mount("none", "/mnt", "tmpfs", 0, NULL), EPERM);
	expect("socket(AF_VSOCK)", socket(40, SOCK_STREAM, 0), EPERM);
	if (prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0 ||
	    prctl(PR_CAPBSET_READ, CAP_NET_ADMIN, 0, 0, 0) != 0) {
		fprintf(stderr, "docker_seccomp --check: CAP_SYS_ADMIN or CAP_NET_ADMIN is left\n");
		failed = 1;
	}
	if (!failed)
		printf("docker_seccomp --check: io_uring, namespaces, clone3, mount and AF_VSOCK "
		       "refused; CAP_SYS_ADMIN and CAP_NET_ADMIN dropped\n");
	return failed;
}

int main(int argc, char **argv)
{
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: %s COMMAND [ARG...] | --check\n", argv[0]);
		return 126;
	}
	err = drop_caps();
	if (!err)
		err = install_filter();
	if (err) {
		fprintf(stderr, "docker_seccomp: cannot set up the sandbox: %s\n", strerror(err));
		return 126;
	}
	if (!strcmp(argv[1], "--check"))
		return check();
	execvp(argv[1], argv + 1);
	fprintf(stderr, "docker_seccomp: %s: %s\n", argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
