#!/usr/bin/env bash
# Build the extra initramfs archive that carries a uroce build into the interop VM.
#
# Linux unpacks archives concatenated into one initramfs into one root file system, so this one
# is appended to the base archive (mkinitramfs.sh) by vm.py (VM(extra_initrd=[...])) for the
# tests that run uroce inside the guest. The base archive is neither changed nor renamed: the
# tests that do not need uroce in the guest boot exactly what they booted before, no bigger.
#
# What goes in, and why:
#   - /opt/uroce/bin: uroce-run, uroce-config-check, uroce-bench and bench_report.py from
#     BIN_DIR, and /opt/uroce/lib: the drop-in libibverbs.so.1 and librdmacm.so.1 and
#     liburoce-preload.so (which uroce-run preloads) from BIN_DIR/../lib: the build tree's
#     layout, where uroce-run finds the libraries (../lib)
#   - Debian's python3 from THIS host's /usr, for uroce-bench itself (the guest runs the real
#     bench, not a copy of its commands), with the standard library modules it imports: found
#     by importing it (uroce-bench --help under the same python3, in the guest's C locale), so
#     the list follows the bench's code; with their compiled forms (__pycache__), which the
#     guest's slow TCG CPU would otherwise compile at every start
#   - every shared library of these programs that the base archive does not hold (ldd)
#
# Cached: rebuilt only when an input changed (this script, the base archive, or the size/mtime
# of a file copied in). Prints the archive's path, which is named after BIN_DIR's real path, so
# that two build trees have an archive each.
#
#   mkinitramfs-uroce.sh BIN_DIR [BASE_ARCHIVE]  (default: what mkinitramfs.sh prints)
#   UROCE_INTEROP_CACHE  where the archive goes (default /var/cache/uroce-interop)
#   FORCE=1              rebuild even when the cache key matches
set -euo pipefail
umask 022

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${UROCE_INTEROP_CACHE:-/var/cache/uroce-interop}
log() { echo "mkinitramfs-uroce: $*" >&2; }
die() { echo "mkinitramfs-uroce: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: mkinitramfs-uroce.sh BIN_DIR [BASE_ARCHIVE]"
bin=$(cd "$1" 2>/dev/null && pwd -P) || die "$1: no such folder"
lib_dir=$(cd "$bin/../lib" 2>/dev/null && pwd -P) || die "$bin/../lib: no such folder (is uroce built?)"
# (FORCE is this script's: the base archive is rebuilt only when its own inputs changed)
base=${2:-$(env -u FORCE "$here/mkinitramfs.sh" | tail -n1)}
[[ -f $base ]] || die "no base archive $base"
for t in cpio gzip; do
	command -v "$t" >/dev/null || die "$t missing (scripts/setup.sh installs it)"
done
# The python3 that goes into the guest, and runs the import trace below: Debian's.
PY=/usr/bin/python3
[[ -x $PY ]] || die "$PY missing (apt-get install python3)"
PYVER=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
STDLIB=/usr/lib/python$PYVER

# uroce's files: BUILD path -> guest path
declare -A UROCE=(
	["$bin/uroce-run"]=/opt/uroce/bin/uroce-run
	["$bin/uroce-config-check"]=/opt/uroce/bin/uroce-config-check
	["$bin/uroce-bench"]=/opt/uroce/bin/uroce-bench
	["$bin/bench_report.py"]=/opt/uroce/bin/bench_report.py
	["$lib_dir/libibverbs.so.1"]=/opt/uroce/lib/libibverbs.so.1
	["$lib_dir/librdmacm.so.1"]=/opt/uroce/lib/librdmacm.so.1
	["$lib_dir/liburoce-preload.so"]=/opt/uroce/lib/liburoce-preload.so
)
for f in "${!UROCE[@]}"; do
	[[ -f $f ]] || die "$f missing (build uroce first: cmake --build BUILD_DIR)"
done

# ---- resolve the host files ----------------------------------------------------------
# The files the base archive holds already (cpio lists them as usr/..., or ./usr/...).
declare -A INBASE=()
while read -r p; do
	p=${p#./}
	[[ $p == . || -z $p ]] || INBASE[/$p]=1
done < <(gzip -dc "$base" | cpio -it --quiet 2>/dev/null)
((${#INBASE[@]} > 100)) || die "$base lists only ${#INBASE[@]} files"

# canon PATH: the path with its folders resolved (/lib/... -> /usr/lib/... on a merged /usr),
# as the base archive spells it.
canon() { REPLY=$(cd "${1%/*}" && pwd -P)/${1##*/}; }
declare -A FILES=() # canonical Debian path -> 1
add_file() {
	local p
	canon "$1"
	p=$REPLY
	case $p in
	/usr/local/* | /work/* | /opt/* | /home/* | /tmp/* | /root/*) die "$p is not a Debian file" ;;
	esac
	[[ -n ${FILES[$p]:-} || -n ${INBASE[$p]:-} ]] && return 0
	FILES[$p]=1
	if [[ -L $p ]]; then
		add_file "$(readlink -f "$p")"
	fi
}
# uroce's own libraries (librdmacm.so.1 links libibverbs.so.1 through its run path) are in
# already.
. "$here/ldd-libs.sh"
add_libs() {
	local lib libs
	libs=$(ldd_libs "$1") || exit 1
	while read -r lib; do
		if [[ -n $lib && $lib != "$lib_dir"/* ]]; then add_file "$lib"; fi
	done <<<"$libs"
}

for f in "$bin/uroce-config-check" "$lib_dir/libibverbs.so.1" "$lib_dir/librdmacm.so.1" \
	"$lib_dir/liburoce-preload.so"; do
	add_libs "$f"
done
add_file "$PY"
add_file "$(readlink -f "$PY")"
add_libs "$(readlink -f "$PY")"
# The landmarks by which python finds its prefix (os.py; lib-dynload, even if empty).
add_file "$STDLIB/os.py"
# What uroce-bench imports: every module loaded once it has run as far as --help (all its
# imports are at the top of its files), in the C locale of the guest's agent.
trace=$(env -i PATH=/usr/bin:/bin LC_ALL=C "$PY" -I -B -c '
import os, runpy, sys
bench = sys.argv[1]
sys.argv = [bench, "--help"]
sys.path.insert(0, os.path.dirname(bench))
out, sys.stdout = sys.stdout, open(os.devnull, "w")
try:
    runpy.run_path(bench, run_name="__main__")
except SystemExit:
    pass
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f:
        print(f, file=out)
' "$bin/uroce-bench") || die "importing $bin/uroce-bench failed"
nmods=0
while read -r f; do
	[[ $f == "$STDLIB"/* && -f $f ]] || continue # the bench's own, or the host's site-packages
	add_file "$f"
	nmods=$((nmods + 1))
	case $f in
	*.so) add_libs "$f" ;;
	*.py)
		d=$(dirname "$f")
		n=$(basename "$f" .py)
		pyc=$d/__pycache__/$n.cpython-${PYVER/./}.pyc
		[[ -f $pyc ]] && add_file "$pyc"
		;;
	esac
done <<<"$trace"
((nmods > 10)) || die "the import trace of uroce-bench found only $nmods modules"

# ---- cache key -----------------------------------------------------------------------
mkdir -p "$CACHE"
tag=$(printf '%s' "$bin" | sha256sum | cut -c1-12)
out=$CACHE/uroce-build-$tag.cpio.gz
key=$(
	{
		sha256sum "${BASH_SOURCE[0]}" "$here/ldd-libs.sh"
		cat "$base.key" 2>/dev/null || stat -c '%n %s %Y' "$base"
		for f in "${!UROCE[@]}" "${!FILES[@]}"; do stat -c '%n %s %Y' "$f"; done | sort
	} | sha256sum | cut -d' ' -f1
)
if [[ -z ${FORCE:-} && -f $out && -f $out.key && $(cat "$out.key") == "$key" ]]; then
	echo "$out"
	exit 0
fi
log "building $out (uroce from $bin)"

# ---- stage and pack --------------------------------------------------------------------
stage=$(mktemp -d "$CACHE/stage-uroce.XXXXXX")
trap 'rm -rf "$stage"' EXIT
R=$stage/root
mkdir -p "$R/opt/uroce/bin" "$R/opt/uroce/lib" "$R$STDLIB/lib-dynload"
for f in "${!FILES[@]}"; do
	mkdir -p "$R$(dirname "$f")"
	cp -a "$f" "$R$f"
done
for f in "${!UROCE[@]}"; do
	cp -p "$f" "$R${UROCE[$f]}"
done
# Only folders and files below usr/ and opt/: an entry for a folder the base archive has as a
# symlink (bin, lib) would replace the link.
(cd "$R" && find . -mindepth 1 -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) |
	gzip -6 >"$stage/out.cpio.gz"
log "$(du -h "$stage/out.cpio.gz" | cut -f1) compressed, $(du -sh "$R" | cut -f1) unpacked, $nmods python modules"
mv "$stage/out.cpio.gz" "$out" # in the same folder: a VM booting meanwhile reads one or the other
echo "$key" >"$out.key"
echo "$out"
