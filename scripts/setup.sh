#!/usr/bin/env bash
# Install what uroce needs to build and test, from Debian 12 packages.
# Idempotent: installs only what is missing. Run as root (or with sudo on PATH).
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
	# libraries
	liburing-dev libpcap-dev libxxhash-dev libisal-dev zlib1g-dev
	# rdma-core headers and the unmodified programs uroce must run
	libibverbs-dev librdmacm-dev ibverbs-providers librdmacm1 ibverbs-utils rdmacm-utils perftest python3-pyverbs binutils
	# tests and oracles
	libcriterion-dev tshark python3-scapy iproute2 nftables
	# RDMA middleware that runs on uroce unmodified (tests/discovery/tree.sh: ucx_info;
	# tests/middleware/)
	ucx-utils qperf libfabric-bin openmpi-bin libopenmpi-dev mpich libmpich-dev util-linux
	# a socket program over rsockets through librspreload.so (tests/rsocket/preload.sh)
	iperf
	# backtraces of a test program that hangs (tests/shim/bounded.sh)
	gdb
	# interop suite: boot Debian's kernel with rdma_rxe in qemu (TCG) from a busybox initramfs
	# (tests/interop/: the kernel itself comes from tests/interop/fetch-kernel.sh below)
	qemu-system-x86 busybox-static cpio kmod xz-utils tcpdump iputils-ping
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done

SUDO=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install packages and fetch the interop kernel" >&2; exit 1; }
	SUDO=(sudo)
fi
if ((${#missing[@]} == 0)); then
	echo "setup: all ${#PACKAGES[@]} packages present"
else
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; answer no without a prompt.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | "${SUDO[@]}" debconf-set-selections
	"${SUDO[@]}" apt-get update -qq
	"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	echo "setup: done"
fi

# The interop suite's guest kernel (Debian's linux-image-6.1.0-NN-amd64-unsigned): downloaded
# and unpacked into /var/cache/uroce-interop, not installed; reused when already there.
"${SUDO[@]}" "$(dirname "${BASH_SOURCE[0]}")/../tests/interop/fetch-kernel.sh" >/dev/null
echo "setup: interop kernel ready"
