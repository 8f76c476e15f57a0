#!/usr/bin/env bash
# Fetch and unpack Debian 12's Linux 6.1 kernel (the image and its modules) for the
# interop suite, which boots it in qemu to talk to the in-kernel Soft-RoCE (rdma_rxe).
#
# The kernel is NOT installed on the host: `apt-get download` fetches the .deb of the
# current linux-image-6.1.0-NN-amd64-unsigned (NN from linux-image-amd64's dependency)
# and `dpkg-deb -x` unpacks it into a cache folder. Idempotent: an unpacked tree is
# reused. Prints the unpacked tree's path on stdout (everything else goes to stderr).
#
#   fetch-kernel.sh [--no-download]
#     --no-download: only look in the cache, and fail (naming the fix) when the kernel is not
#     there; vm.py uses it so that a test never reaches the network behind one's back.
#   UROCE_INTEROP_CACHE  cache folder (default /var/cache/uroce-interop)
#   UROCE_KERNEL_ABI     force an ABI, e.g. 6.1.0-56 (default: what linux-image-amd64 names)
set -euo pipefail

download=1
case ${1:-} in
--no-download) download=0 ;;
"") ;;
*) echo "usage: $0 [--no-download]" >&2; exit 2 ;;
esac
CACHE=${UROCE_INTEROP_CACHE:-/var/cache/uroce-interop}
log() { echo "fetch-kernel: $*" >&2; }
die() { echo "fetch-kernel: error: $*" >&2; exit 1; }

# extract_vmlinux BZIMAGE OUT: the ELF inside a bzImage (as the kernel's
# scripts/extract-vmlinux does: try each compressed-stream magic until one yields an ELF).
extract_vmlinux() {
	python3 - "$1" "$2" <<'PY'
import lzma, subprocess, sys, zlib
img = open(sys.argv[1], "rb").read()
def unxz(b): return lzma.LZMADecompressor().decompress(b)  # stops at the stream's end
def ungz(b): return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(b)
def unzstd(b): return subprocess.run(["zstd", "-qdc"], input=b, stdout=subprocess.PIPE).stdout
for magic, fn in ((b"\xfd7zXZ\x00", unxz), (b"\x28\xb5\x2f\xfd", unzstd), (b"\x1f\x8b\x08", ungz)):
    at = img.find(magic)
    while at >= 0:
        try:
            out = fn(img[at:])
        except Exception:
            out = b""
        if out[:4] == b"\x7fELF":
            open(sys.argv[2], "wb").write(out)
            sys.exit(0)
        at = img.find(magic, at + 1)
sys.exit(1)
PY
}

abi=${UROCE_KERNEL_ABI:-}
if [[ -z $abi && $download == 0 ]]; then
	# Offline: the newest unpacked tree in the cache.
	tree=$(ls -1d "$CACHE"/linux-image-*-amd64-unsigned/.unpacked 2>/dev/null | sort -V | tail -n1 || true)
	[[ -n $tree ]] || die "no kernel unpacked in $CACHE: run scripts/setup.sh (or tests/interop/fetch-kernel.sh) as root"
	dirname "$tree"
	exit 0
fi
if [[ -z $abi ]]; then
	# apt-cache needs package lists; on a fresh machine they may be missing.
	if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
		log "no package lists yet: apt-get update"
		apt-get update -qq >&2 || die "apt-get update failed"
	fi
	# "Depends: linux-image-6.1.0-56-amd64" -> 6.1.0-56
	abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9][0-9.]*-[0-9]*\)-amd64$/\1/p' | head -n1)
	[[ -n $abi ]] || die "cannot tell the kernel ABI from 'apt-cache depends linux-image-amd64'"
fi
pkg=linux-image-${abi}-amd64-unsigned
tree=$CACHE/$pkg
# The tree is complete only once the marker is written (an interrupted unpack is redone).
if [[ -f $tree/.unpacked ]]; then
	echo "$tree"
	exit 0
fi

[[ $download == 1 ]] || die "$pkg not unpacked in $CACHE: run scripts/setup.sh (or tests/interop/fetch-kernel.sh) as root"
mkdir -p "$CACHE"
cd "$CACHE"
deb=$(ls -1 "${pkg}"_*_amd64.deb 2>/dev/null | tail -n1 || true)
if [[ -z $deb ]]; then
	log "downloading $pkg"
	# apt-get download drops privileges to _apt when it can; a root-owned cache folder
	# it cannot write to only brings a warning, and root still writes the file.
	apt-get download -q "$pkg" >&2 || die "apt-get download $pkg failed"
	deb=$(ls -1 "${pkg}"_*_amd64.deb | tail -n1)
fi
log "unpacking $deb"
rm -rf "$tree"
mkdir -p "$tree"
dpkg-deb -x "$deb" "$tree"
kver=$(ls -1 "$tree/lib/modules" | head -n1)
[[ -f $tree/boot/vmlinuz-$kver ]] || die "no boot/vmlinuz-$kver in $deb"
# A private modules.dep for this tree (the package ships none; depmod writes it into
# $tree/lib/modules/$kver), used by mkinitramfs.sh to close over rdma_rxe's dependencies.
depmod -b "$tree" "$kver"
# The uncompressed kernel (ELF, with the PVH entry note) next to vmlinuz: qemu boots it
# directly (PVH), which skips the xz decompression that costs ~4 s under TCG.
extract_vmlinux "$tree/boot/vmlinuz-$kver" "$tree/boot/vmlinux-$kver" ||
	log "no vmlinux extracted: booting vmlinuz (slower)"
touch "$tree/.unpacked"
# Old ABIs' debs and trees are left alone: removing them is the admin's choice.
echo "$tree"
