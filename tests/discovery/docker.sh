#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce as a process in a Docker container sees it by default (tests/support/docker_seccomp.c:
# Docker's default capabilities, no_new_privs, and what its default seccomp profile refuses:
# io_uring, namespaces, mounts, clone3, ...). Under it, through uroce-run:
#   - the sandbox holds (docker_seccomp --check);
#   - the devices are found: ibv_devices, the kernel's view (sysfs files, /dev/infiniband),
#     `rdma link show` (RDMA netlink), `ucx_info -d` (UCX's rc_verbs on uroce_lo);
#   - the data path runs on the epoll backend, which the engine picks by itself (its log says
#     io_uring is not available): ibv_rc_pingpong with data checks, and rping -V through
#     uroce's rdma_cm.
# usage: docker.sh UROCE_RUN DOCKER_SECCOMP SANITIZER
set -u
run=$1 sandbox=$2
here=$(dirname "$0")
. "$here/../support/skip.sh"
skip_thread "$3"
fail() {
	echo "docker.sh: $*" >&2
	exit 1
}
((EUID == 0)) || fail "needs root, to drop capabilities as Docker does (run as root, as CI does)"
for p in ibv_devices ibv_rc_pingpong rping ucx_info; do
	command -v $p >/dev/null || fail "$p not found (scripts/setup.sh installs it)"
done
rdma=$(command -v rdma || echo /sbin/rdma)
[ -x "$rdma" ] || fail "rdma (iproute2) not found"
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
in_box() { "$sandbox" "$run" "$@"; }

"$sandbox" --check || fail "the sandbox does not hold here"

in_box ibv_devices >"$dir/devices" 2>&1 || fail "ibv_devices failed: $(cat "$dir/devices")"
grep -q uroce_lo "$dir/devices" || fail "ibv_devices lists no uroce_lo: $(cat "$dir/devices")"
gid=$(in_box cat /sys/class/infiniband/uroce_lo/ports/1/gids/0 2>&1) ||
	fail "the view's GID file cannot be read: $gid"
[[ $gid == 0000:0000:0000:0000:0000:ffff:7f00:0001 ]] ||
	fail "uroce_lo's GID 0 reads '$gid', not ::ffff:127.0.0.1"
in_box stat -c %F /dev/infiniband/uverbs0 >"$dir/stat" 2>&1 ||
	fail "stat /dev/infiniband/uverbs0: $(cat "$dir/stat")"
grep -q 'character special file' "$dir/stat" || fail "uverbs0 is $(cat "$dir/stat")"
in_box "$rdma" link show >"$dir/link" 2>&1 || fail "rdma link show failed: $(cat "$dir/link")"
grep -q 'link uroce_lo/1 state ACTIVE' "$dir/link" ||
	fail "rdma link show lists no active uroce_lo: $(cat "$dir/link")"
in_box ucx_info -d >"$dir/ucx" 2>&1 || fail "ucx_info -d failed: $(tail -5 "$dir/ucx")"
grep -A3 'Transport: rc_verbs' "$dir/ucx" | grep -q 'Device: uroce_lo' ||
	fail "ucx_info -d shows no rc_verbs on uroce_lo"

# The data path: server and client, each bounded; the engine logs its backend at info.
port=$((UROCE_UDP_PORT - 10000))
UROCE_LOG=info in_box timeout -k 5 60 ibv_rc_pingpong -d uroce_lo -g 0 -p "$port" -c \
	>"$dir/pp-server" 2>&1 &
pids+=($!)
sleep 0.5
UROCE_LOG=info in_box timeout -k 5 60 ibv_rc_pingpong -d uroce_lo -g 0 -p "$port" -c 127.0.0.1 \
	>"$dir/pp-client" 2>&1 || fail "ibv_rc_pingpong's client failed: $(tail -5 "$dir/pp-client")"
wait "${pids[0]}" || fail "ibv_rc_pingpong's server failed: $(tail -5 "$dir/pp-server")"
for side in server client; do
	grep -q 'bytes in .* seconds' "$dir/pp-$side" || fail "no transfer line from the $side"
	! grep -q 'invalid data' "$dir/pp-$side" || fail "the $side received wrong data"
	grep -q 'io_uring is not available here.*using epoll' "$dir/pp-$side" ||
		fail "the $side did not fall back to epoll: $(grep -i backend "$dir/pp-$side")"
done

in_box timeout -k 5 60 rping -s -a 127.0.0.1 -p "$port" -C 20 -V >"$dir/rping-server" 2>&1 &
pids+=($!)
sleep 0.5
in_box timeout -k 5 60 rping -c -a 127.0.0.1 -p "$port" -C 20 -V >"$dir/rping-client" 2>&1 ||
	fail "rping's client failed: $(tail -5 "$dir/rping-client")"
wait "${pids[1]}" || fail "rping's server failed: $(tail -5 "$dir/rping-server")"

echo "docker.sh: under Docker's default capabilities and seccomp refusals, uroce's devices are" \
	"found (ibv_devices, sysfs, /dev/infiniband, rdma link, ucx_info) and ibv_rc_pingpong -c" \
	"and rping -V run on the epoll backend"
