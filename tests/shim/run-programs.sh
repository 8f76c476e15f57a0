#!/usr/bin/env bash
# Unmodified rdma-core programs on uroce's libibverbs.so.1, through uroce-run: they load
# (BIND_NOW, ABI.md §0), see the uroce devices, and read the port and GIDs of a RoCE port.
# Also uroce-run's own command line. Usage: run-programs.sh UROCE_RUN [SANITIZER]
set -uo pipefail

run=$1
# Uninstrumented programs cannot host a ThreadSanitizer build of the library (they exit
# silently or crash); an ASan build works, uroce-run preloads its runtimes.
if [[ ${2:-} == thread ]]; then
	echo "run-programs: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

check() { # check DESCRIPTION COMMAND... : the command succeeds
	if ! "${@:2}" >"$out" 2>&1; then
		echo "FAIL: $1: '${*:2}' exited $?" >&2
		sed 's/^/  | /' "$out" >&2
		fail=1
		return 1
	fi
}

expect() { # expect DESCRIPTION EXTENDED_REGEX : the last output matches
	if ! grep -Eq -- "$2" "$out"; then
		echo "FAIL: $1: no line matches /$2/ in:" >&2
		sed 's/^/  | /' "$out" >&2
		fail=1
	fi
}

# uroce-run itself.
check "version" "$run" --version && expect "version" '^uroce-run [0-9]+\.[0-9]+\.[0-9]+$'
"$run" --bogus true >"$out" 2>&1
[[ $? == 2 ]] || { echo "FAIL: an unknown option is not refused with 2" >&2; fail=1; }
expect "unknown option named" "unknown option '--bogus'"
"$run" uroce-no-such-program >"$out" 2>&1
[[ $? == 127 ]] || { echo "FAIL: a missing program does not give 127" >&2; fail=1; }
"$run" -- sh -c 'exit 7' >"$out" 2>&1
[[ $? == 7 ]] || { echo "FAIL: the program's exit status is not passed on" >&2; fail=1; }
check "library path" "$run" sh -c 'echo "$LD_LIBRARY_PATH"'
expect "library path" '/lib(:|$)'

# ibverbs-utils.
check "ibv_devices" "$run" ibv_devices
expect "ibv_devices lists lo" '^[[:space:]]+uroce_lo[[:space:]]+[0-9a-f]{16}$'
if grep -E '^[[:space:]]+[a-z]' "$out" | grep -Ev '^[[:space:]]+(device|uroce_)' >&2; then
	echo "FAIL: ibv_devices lists devices that are not uroce's" >&2
	fail=1
fi
check "ibv_devinfo -v" "$run" ibv_devinfo -v -d uroce_lo
expect "port active" 'state:[[:space:]]+PORT_ACTIVE \(4\)'
expect "Ethernet" 'link_layer:[[:space:]]+Ethernet'
expect "vendor" 'vendor_id:[[:space:]]+0xffffff'
expect "lo's IPv4 GID" 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:127\.0\.0\.1, RoCE v2'
expect "lo's IPv6 GID" 'GID\[ *[0-9]+\]:[[:space:]]+::1, RoCE v2'
expect "active MTU" 'active_mtu:[[:space:]]+4096 \(5\)'

# pyverbs (its device module imports the private ibv_query_gid_type).
check "pyverbs" "$run" /usr/bin/python3 -c '
import pyverbs.device as d
from pyverbs.device import Context
names = [dev.name.decode() for dev in d.get_device_list()]
assert "uroce_lo" in names, names
with Context(name="uroce_lo") as ctx:
    port = ctx.query_port(1)
    assert port.state == 4 and port.link_layer == 2, (port.state, port.link_layer)
    gids = [str(ctx.query_gid(1, i)) for i in range(port.gid_tbl_len)]
    i = gids.index("0000:0000:0000:0000:0000:ffff:7f00:0001")
    assert ctx.query_gid_type(1, i) == 1
    print("pyverbs:", names, "lo IPv4 GID at", i)
'
expect "pyverbs" '^pyverbs: .*uroce_lo'

# perftest: DT_NEEDED libmlx5/libefa bind to IBVERBS_PRIVATE_<N> and register before main.
for prog in ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
	ib_atomic_bw ib_atomic_lat; do
	"$run" "$prog" --help >"$out" 2>&1
	expect "$prog reaches main" '^ *Usage:'
	if grep -Eq 'error while loading|symbol lookup error|version .* not found' "$out"; then
		echo "FAIL: $prog does not load" >&2
		fail=1
	fi
done

((fail == 0)) && echo "run-programs: ok"
exit $fail
