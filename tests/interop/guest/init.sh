#!/bin/bash
# /init of the interop VM (PID 1, from the initramfs that mkinitramfs.sh builds).
#
# Brings up the network and the Soft-RoCE device, then hands over to the command agent on
# the second serial port. Configured by the kernel command line (vm.py sets it):
#   uroce.ip=10.77.0.2/24    IPv4 address of eth0
#   uroce.ip6=fd77::2/64     IPv6 address of eth0 (added with nodad: usable at once)
#   uroce.name=vm0           hostname
#   uroce.chan=/dev/ttyS1    the agent's channel
#   uroce.mtu=1500           eth0's MTU (rxe derives its active MTU from it: 1500 -> 1024)
#   uroce.rxe=0              do not create rxe0 (a test that wants to do it itself)
# Any failure here ends in a kernel panic, which qemu (-no-reboot, panic=-1) turns into an
# exit: the host sees it at once instead of waiting for a ready marker that never comes.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root
say() { echo "uroce-init: $*"; }
fail() {
	say "FAILED: $*"
	exec /bin/busybox poweroff -f
}
trap 'fail "line $LINENO: $BASH_COMMAND"' ERR

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm

declare -A P=([ip]=10.77.0.2/24 [ip6]=fd77::2/64 [name]=vm0 [chan]=/dev/ttyS1 [mtu]=1500 [rxe]=1)
for w in $(cat /proc/cmdline); do
	case $w in uroce.*=*) k=${w#uroce.}; P[${k%%=*}]=${w#*=} ;; esac
done
hostname "${P[name]}"

# Addresses must be usable at once: no duplicate address detection (the link-local one
# too, which becomes GID 0), on interfaces created from now on.
sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
sysctl -qw net.ipv6.conf.default.router_solicitations=0

kver=$(uname -r)
while read -r ko; do
	insmod "$ko" || fail "insmod $ko"
done <"/lib/modules/$kver/load.list"
# rdma_cm's configfs (rdma_ucm needs configfs.ko, loaded just now)
grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs configfs /sys/kernel/config

for _ in $(seq 100); do [[ -e /sys/class/net/eth0 ]] && break; sleep 0.05; done
[[ -e /sys/class/net/eth0 ]] || fail "no eth0 (virtio-net missing?)"
ip link set lo up
ip link set eth0 mtu "${P[mtu]}"
ip link set eth0 up
ip addr add "${P[ip]}" dev eth0
ip -6 addr add "${P[ip6]}" dev eth0 nodad

# rxe needs its netdev up before it is bound to it.
if [[ ${P[rxe]} == 1 ]]; then
	rdma link add rxe0 type rxe netdev eth0
	state=/sys/class/infiniband/rxe0/ports/1/state
	for _ in $(seq 100); do grep -q ACTIVE "$state" 2>/dev/null && break; sleep 0.05; done
	say "rxe0 port: $(cat "$state")"
fi

# rdma-core programs pin their buffers: no memlock limit for anything started from here.
ulimit -l unlimited
ulimit -c 0
say "network: $(ip -br addr show eth0 | tr -s ' ')"
exec /usr/bin/uroce-agent "${P[chan]}"
