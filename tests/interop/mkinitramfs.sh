#!/usr/bin/env bash
# Build the interop VM's initramfs (a gzip'd newc cpio): the whole guest lives in it, no disk.
#
# What goes in, and why:
#   - busybox (static) and its applets: mount, insmod, stty, setsid, poweroff, base64...
#   - bash (the guest's /init and its command agent) and dash as /bin/sh (the shell that runs
#     the host's commands: busybox's own sh prefers its applets to PATH, so `ip` would be
#     busybox's weak one instead of iproute2's)
#   - Debian's rdma-core programs from THIS host's /usr (never the project's build folder:
#     the guest is the reference side), perftest, iproute2's ip and rdma, tcpdump if present,
#     every shared library they need (ldd), the rxe verbs provider and the dynamic loader
#   - the kernel modules for rdma_rxe, the RDMA CM stack and the virtio NIC, with their
#     dependencies from modules.dep, decompressed (.ko.xz/.ko.zst -> .ko) so busybox insmod
#     loads them, and a load order (load.list) the /init follows
#   - a few /etc files (passwd, group, hosts, nsswitch.conf, ld.so.cache)
#
# Cached: the result is rebuilt only when an input changed (this script, the guest scripts,
# the kernel tree, or the size/mtime of any host file copied in). Prints the image's path.
#
#   mkinitramfs.sh [KERNEL_TREE]   (default: what fetch-kernel.sh --no-download prints)
#   UROCE_INTEROP_CACHE  where the image goes (default /var/cache/uroce-interop)
#   FORCE=1              rebuild even when the cache key matches
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${UROCE_INTEROP_CACHE:-/var/cache/uroce-interop}
log() { echo "mkinitramfs: $*" >&2; }
die() { echo "mkinitramfs: error: $*" >&2; exit 1; }

tree=${1:-$("$here/fetch-kernel.sh" --no-download)}
[[ -f $tree/.unpacked ]] || die "no unpacked kernel at $tree (run tests/interop/fetch-kernel.sh)"
kver=$(ls -1 "$tree/lib/modules" | head -n1)
moddir=$tree/lib/modules/$kver
[[ -f $moddir/modules.dep ]] || die "$moddir/modules.dep missing (fetch-kernel.sh runs depmod)"

# ---- what to put in ------------------------------------------------------------------
# Modules asked for by name; their dependencies are added from modules.dep.
MODULES=(
	virtio_pci virtio_net           # the NIC qemu gives the guest (-device virtio-net-pci)
	crc32_generic                   # rxe allocates the "crc32" shash for the ICRC
	configfs                        # rdma_cm's configfs interface (rdma_ucm depends on it)
	rdma_rxe                        # Soft-RoCE, the peer uroce must interoperate with
	ib_uverbs rdma_ucm ib_umad      # user verbs, user RDMA CM, user MADs
)
# Programs (resolved on PATH); the first group must exist, the second is optional.
REQUIRED_PROGRAMS=(
	bash dash
	ibv_devinfo ibv_devices ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
	ibv_xsrq_pingpong
	rping ucmatose udaddy mckey cmtime rdma_server rdma_client rdma_xserver rdma_xclient
	rstream riostream rcopy udpong
	ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw
	ib_atomic_lat
	ip rdma
)
OPTIONAL_PROGRAMS=(tcpdump ibv_asyncwatch)
# Libraries that are dlopen'ed (ldd cannot see them), and data files.
MULTIARCH=x86_64-linux-gnu
EXTRA_FILES=(
	/usr/lib/$MULTIARCH/libibverbs/librxe-rdmav34.so
	/etc/libibverbs.d/rxe.driver
	/usr/lib/$MULTIARCH/libgcc_s.so.1 # glibc dlopens it for pthread_exit/cancellation (rping)
)
OPTIONAL_EXTRA_FILES=(
	/usr/lib/$MULTIARCH/rsocket/librspreload.so
	/usr/lib/$MULTIARCH/rsocket/librspreload.so.1
	/etc/services /etc/protocols /etc/ethertypes
	/etc/ld.so.conf /etc/ld.so.conf.d/$MULTIARCH.conf
	/etc/iproute2/rt_tables
)
GUEST_SCRIPTS=("$here/guest/init.sh" "$here/guest/agent.sh")

command -v busybox >/dev/null || die "busybox missing (apt-get install busybox-static)"
busybox=$(readlink -f "$(command -v busybox)")
file -b "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	ldd "$busybox" 2>&1 | grep -q 'not a dynamic executable' ||
	die "$busybox is not static (apt-get install busybox-static)"
for t in cpio gzip depmod ldconfig; do
	command -v "$t" >/dev/null || die "$t missing (scripts/setup.sh installs it)"
done

# ---- resolve the host files ----------------------------------------------------------
# canon PATH: the path with a merged-/usr prefix spelled as /usr/... (/lib -> /usr/lib etc.),
# so each file has one place in the image, which has the same symlinks at the top.
declare -A CANON=() # memo: the same libraries come up for every program
canon() {
	local p=$1
	if [[ -z ${CANON[$p]:-} ]]; then
		CANON[$p]=$(cd "${p%/*}" && pwd -P)/${p##*/}
	fi
	REPLY=${CANON[$p]}
}
# The project's own libibverbs/librdmacm must never end up in the guest: refuse anything
# that does not live in the distribution's directories.
check_origin() {
	case $1 in
	/usr/local/* | /work/* | /opt/* | /home/* | /tmp/*) die "$1 is not a Debian file (LD_LIBRARY_PATH?)" ;;
	esac
}

declare -A FILES=() # canonical host path -> 1
add_file() {
	local p
	canon "$1"
	p=$REPLY
	check_origin "$p"
	[[ -n ${FILES[$p]:-} ]] && return 0
	FILES[$p]=1
	# A symlink is copied as a link; its target comes along too.
	if [[ -L $p ]]; then
		add_file "$(readlink -f "$p")"
	fi
}
. "$here/ldd-libs.sh"
add_libs() {
	local lib libs
	libs=$(ldd_libs "$1") || exit 1
	while read -r lib; do
		if [[ -n $lib ]]; then add_file "$lib"; fi
	done <<<"$libs"
}

programs=()
for p in "${REQUIRED_PROGRAMS[@]}"; do
	path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$p") || die "$p not found (scripts/setup.sh installs it)"
	programs+=("$path")
done
for p in "${OPTIONAL_PROGRAMS[@]}"; do
	path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$p") && programs+=("$path") || log "optional $p absent"
done
for p in "${programs[@]}"; do
	add_file "$p"
	add_libs "$(readlink -f "$p")"
done
for f in "${EXTRA_FILES[@]}"; do
	[[ -e $f ]] || die "$f missing (ibverbs-providers)"
	add_file "$f"
	[[ $f == *.so* ]] && add_libs "$f"
done
for f in "${OPTIONAL_EXTRA_FILES[@]}"; do
	[[ -e $f ]] || continue
	add_file "$f"
	[[ $f == *.so* ]] && add_libs "$f"
done

# Module closure, dependencies first (modules.dep lists a module's deps, deepest last).
declare -A MODPATH=() # name -> path relative to $moddir
while IFS=: read -r path _; do
	n=${path##*/}
	n=${n%%.ko*}
	MODPATH[${n//-/_}]=$path
done <"$moddir/modules.dep"
declare -A SEEN=()
ORDER=()
visit() {
	local name=${1//-/_} path deps d
	[[ -n ${SEEN[$name]:-} ]] && return 0
	SEEN[$name]=1
	path=${MODPATH[$name]:-}
	[[ -n $path ]] || die "module $name not in $moddir/modules.dep"
	deps=$(grep -m1 "^$path:" "$moddir/modules.dep" | cut -d: -f2)
	for d in $deps; do
		d=${d##*/}
		visit "${d%%.ko*}"
	done
	ORDER+=("$path")
}
for m in "${MODULES[@]}"; do visit "$m"; done

# ---- cache key -----------------------------------------------------------------------
mkdir -p "$CACHE"
out=$CACHE/initramfs-$kver.cpio.gz
key=$(
	{
		echo "kernel $kver $(stat -c '%Y' "$tree/.unpacked")"
		sha256sum "${BASH_SOURCE[0]}" "$here/ldd-libs.sh" "${GUEST_SCRIPTS[@]}"
		printf '%s\n' "${ORDER[@]}"
		for f in "$busybox" "${!FILES[@]}"; do stat -c '%n %s %Y' "$f"; done | sort
	} | sha256sum | cut -d' ' -f1
)
if [[ -z ${FORCE:-} && -f $out && -f $out.key && $(cat "$out.key") == "$key" ]]; then
	echo "$out"
	exit 0
fi
log "building $out"

# ---- stage the tree ------------------------------------------------------------------
stage=$(mktemp -d "$CACHE/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
R=$stage/root
mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root,var}
# merged /usr, as on the host, so every path the host's binaries know resolves
ln -s usr/bin "$R/bin"
ln -s usr/sbin "$R/sbin"
ln -s usr/lib "$R/lib"
ln -s usr/lib64 "$R/lib64"
ln -s /tmp "$R/var/tmp"

for f in "${!FILES[@]}"; do
	mkdir -p "$R$(dirname "$f")"
	cp -a "$f" "$R$f"
done

# busybox and its applets, but no applet that would shadow a real program (ip...)
cp "$busybox" "$R/usr/bin/busybox"
for a in $("$busybox" --list); do
	case $a in busybox | sh) continue ;; esac
	for d in usr/bin usr/sbin; do [[ -e $R/$d/$a ]] && continue 2; done
	ln -s busybox "$R/usr/bin/$a"
done
ln -sf dash "$R/usr/bin/sh"

# modules, decompressed, plus a load order and a modules.dep of their own (depmod -b) so
# busybox modprobe also works, e.g. for the kernel's request_module()
for path in "${ORDER[@]}"; do
	dst=$R/usr/lib/modules/$kver/${path%.ko*}.ko
	mkdir -p "$(dirname "$dst")"
	case $path in
	*.ko) cp "$moddir/$path" "$dst" ;;
	*.ko.xz) xz -dc "$moddir/$path" >"$dst" ;;
	*.ko.zst) zstd -qdc "$moddir/$path" >"$dst" ;;
	*.ko.gz) gzip -dc "$moddir/$path" >"$dst" ;;
	*) die "unknown module format: $path" ;;
	esac
	echo "/lib/modules/$kver/${path%.ko*}.ko" >>"$R/usr/lib/modules/$kver/load.list"
done
cp "$moddir"/modules.{order,builtin,builtin.modinfo} "$R/usr/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$R" "$kver"

# /etc: minimal users (tcpdump drops privileges to its own user), name lookup from files
cat >"$R/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
tcpdump:x:104:110::/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$R/etc/group" <<'EOF'
root:x:0:
tcpdump:x:110:
nogroup:x:65534:
EOF
cat >"$R/etc/nsswitch.conf" <<'EOF'
passwd: files
group:  files
shadow: files
hosts:  files
networks: files
protocols: files
services: files
EOF
cat >"$R/etc/hosts" <<'EOF'
127.0.0.1 localhost
::1       localhost ip6-localhost ip6-loopback
10.77.0.1 host
10.77.0.2 vm0
10.77.0.3 vm1
fd77::1   host6
fd77::2   vm0-6
fd77::3   vm1-6
EOF
[[ -f $R/etc/ld.so.conf ]] || echo 'include /etc/ld.so.conf.d/*.conf' >"$R/etc/ld.so.conf"
ldconfig -r "$R"

install -m 0755 "$here/guest/init.sh" "$R/init"
install -m 0755 "$here/guest/agent.sh" "$R/usr/bin/uroce-agent"
echo "$kver" >"$R/etc/uroce-kver"

# ---- pack ----------------------------------------------------------------------------
(cd "$R" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -6 >"$out.tmp"
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
log "$(du -h "$out" | cut -f1) compressed, $(du -sh "$R" | cut -f1) unpacked"
echo "$out"
