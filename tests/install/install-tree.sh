#!/usr/bin/env bash
# cmake --install of the build tree into a temporary prefix: the layout (the drop-in libraries
# in lib/uroce/, never lib/ itself), the installed uroce-run finding them, and a program of a
# user's built against the installation twice -- with pkg-config and with find_package -- that
# runs without uroce-run on uroce's libraries (run path).
# Usage: install-tree.sh BUILD_DIR SOURCE_DIR SANITIZER
set -euo pipefail
build=$1 src=$2 sanitizer=${3:-}
if [[ -n $sanitizer ]]; then
	echo "install-tree: skipped: a sanitized build's libraries need their runtimes preloaded"
	exit 77
fi
# Under the build tree, so that whatever a killed run leaves behind goes with it.
prefix=$(mktemp -d "$build/install-tree.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(echo "$prefix"/lib*/pkgconfig/uroce.pc)
[[ -e $pc ]] || fail "no pkg-config file uroce.pc in $prefix"
libdir=${pc#"$prefix"/}
libdir=${libdir%/pkgconfig/uroce.pc} # lib, or lib/x86_64-linux-gnu
for f in "$libdir/uroce/libibverbs.so.1" "$libdir/uroce/libibverbs.so" \
	"$libdir/uroce/librdmacm.so.1" "$libdir/uroce/librdmacm.so" bin/uroce-run \
	bin/uroce-config-check bin/uroce-demo bin/uroce-bench bin/uroce-sockbench \
	share/uroce/bench_report.py bin/uroce-simrun include/uroce/uroce.h "$libdir/pkgconfig/uroce.pc" \
	"$libdir/cmake/uroce/uroceConfig.cmake" "$libdir/cmake/uroce/uroceConfigVersion.cmake"; do
	[[ -e $prefix/$f ]] || fail "$f is not installed"
done
# Neither the internal static libraries nor the tests' programs (all of them in the build's bin/,
# none named uroce-*).
extra=$(find "$prefix" \( -name '*.a' -o -path "$prefix/bin/*" ! -name 'uroce-*' \) -print)
[[ -z $extra ]] || fail "installed but internal: $extra"
if compgen -G "$prefix/$libdir/lib*verbs*" >/dev/null || compgen -G "$prefix/$libdir/librdmacm*" >/dev/null; then
	fail "a drop-in library is installed in $libdir itself, where it would shadow rdma-core's"
fi

out=$("$prefix/bin/uroce-run" ibv_devices) || fail "installed uroce-run ibv_devices: $out"
grep -Eq '^[[:space:]]+uroce_lo[[:space:]]' <<<"$out" || fail "installed uroce-run: $out"
# The installed uroce-bench finds its report module in share/uroce.
out=$("$prefix/bin/uroce-bench" --help) || fail "installed uroce-bench --help: $out"

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# shellcheck disable=SC2046
cc -Wall -Werror -o "$prefix/consumer-pc" "$src/tests/install/consumer.c" $(pkg-config --cflags --libs uroce)
out=$(env -u LD_LIBRARY_PATH "$prefix/consumer-pc") || fail "pkg-config build: $out"
grep -q '^consumer: uroce [0-9.]*, uroce_lo$' <<<"$out" || fail "pkg-config build: $out"

cmake -S "$src/tests/install/cmake-consumer" -B "$prefix/consumer-build" \
	-DCMAKE_PREFIX_PATH="$prefix" >/dev/null || fail "find_package(uroce)"
cmake --build "$prefix/consumer-build" >/dev/null || fail "building against uroce::ibverbs"
out=$(env -u LD_LIBRARY_PATH "$prefix/consumer-build/consumer") || fail "CMake build: $out"
grep -q '^consumer: uroce [0-9.]*, uroce_lo$' <<<"$out" || fail "CMake build: $out"
echo "install-tree: ok ($prefix: lib/uroce, uroce-run, pkg-config and CMake users)"
