#!/bin/bash
# SPDX-License-Identifier: MIT
# RDMA netlink under uroce-run (liburoce-preload.so, verbs-shim/nldev.h) against rxe's
# (tests/discovery/rxe-reference.txt, section 5, iproute2 6.1 on Linux 6.1):
#   - `rdma dev show` and `rdma -j dev show` list every uroce device with rxe's fields (plus
#     fw: uroce reports a firmware version, rxe none), its uverbs number as index, and GUIDs
#     and firmware as sysfs holds them;
#   - `rdma link show` and `rdma -j link show` list port 1 of every device with rxe's fields,
#     state, physical state and netdev as sysfs holds them;
#   - `rdma res show` and `rdma system show` print rxe's fields (res.sh: the objects listed);
#   - the socket and the other commands from a program of its own (netlink.py);
#   - NETLINK_ROUTE is untouched: `ip link show`, `ip addr` and their -d and -j forms print the
#     same with and without uroce-run.
# usage: netlink.sh UROCE_RUN REFERENCE
set -u
run=$1
ref=$2
here=$(dirname "$0")
fail=0
bad() {
	echo "netlink.sh: $*" >&2
	fail=1
}

rdma=$(command -v rdma || echo /sbin/rdma)
[ -x "$rdma" ] || { echo "netlink.sh: rdma (iproute2) not found" >&2; exit 1; }

# The reference's output of "COMMAND" (its first line).
rxe_says() {
	awk -v want="--- guest# $1    [rc 0]" '$0 == want { getline; print; exit }' "$ref"
}
# The field names of an rdma line: every other word from the @1-th.
keys() {
	awk -v from="$1" '{ for (i = from; i <= NF; i += 2) printf "%s ", $i; print "" }'
}
# An rdma -j array's keys, object by object.
json_keys() {
	/usr/bin/python3 -c 'import json, sys
for o in json.load(sys.stdin): print(" ".join(o))'
}
# The uverbs number of device $1, as /sys/class/infiniband_verbs says.
uverbs_of() {
	"$run" sh -c 'for f in /sys/class/infiniband_verbs/uverbs*/ibdev; do
		[ "$(cat "$f")" = "$1" ] && basename "$(dirname "$f")"; done' sh "$1" | sed 's/^uverbs//'
}

devs=$("$run" ls /sys/class/infiniband)
[ -n "$devs" ] || { echo "netlink.sh: uroce-run lists no device in /sys/class/infiniband" >&2; exit 1; }
ndevs=$(wc -w <<<"$devs")

# rdma dev show: "N: DEV: node_type ca fw V node_guid G sys_image_guid G", rxe's fields and fw.
rxe=$(rxe_says "rdma dev show")
want_keys=$(keys 3 <<<"$rxe" | sed 's/^node_type /node_type fw /')
out=$("$run" "$rdma" dev show) || bad "rdma dev show failed: $out"
[ "$(wc -l <<<"$out")" = "$ndevs" ] || bad "rdma dev show lists $(wc -l <<<"$out") devices, sysfs $ndevs:
$out"
for d in $devs; do
	line=$(grep -E "^[0-9]+: $d: " <<<"$out") || { bad "rdma dev show: no $d"; continue; }
	[ "$(keys 3 <<<"$line")" = "$want_keys" ] || bad "rdma dev show: '$line' has not rxe's fields [$want_keys] ('$rxe')"
	sys=/sys/class/infiniband/$d
	want="$(uverbs_of "$d"): $d: node_type ca fw $("$run" cat $sys/fw_ver) node_guid $("$run" cat $sys/node_guid) sys_image_guid $("$run" cat $sys/sys_image_guid)"
	[ "$(sed 's/ *$//' <<<"$line")" = "$want" ] || bad "rdma dev show: '$line', sysfs says '$want'"
	one=$("$run" "$rdma" dev show "$d")
	[ "$one" = "$line" ] || bad "rdma dev show $d: '$one', not '$line'"
done

# rdma link show: "link DEV/1 state S physical_state P netdev IF", rxe's fields.
rxe=$(rxe_says "rdma link show")
want_keys=$(keys 3 <<<"$rxe")
out=$("$run" "$rdma" link show) || bad "rdma link show failed: $out"
[ "$(wc -l <<<"$out")" = "$ndevs" ] || bad "rdma link show lists $(wc -l <<<"$out") ports for $ndevs devices:
$out"
for d in $devs; do
	line=$(grep "^link $d/1 " <<<"$out") || { bad "rdma link show: no $d/1"; continue; }
	[ "$(keys 3 <<<"$line")" = "$want_keys" ] || bad "rdma link show: '$line' has not rxe's fields [$want_keys] ('$rxe')"
	sys=/sys/class/infiniband/$d
	state=$("$run" cat $sys/ports/1/state | sed 's/.*: //')
	phys=$("$run" cat $sys/ports/1/phys_state | sed 's/^5: .*/LINK_UP/; s/^3: .*/DISABLED/')
	net=$("$run" ls $sys/device/net/)
	want="link $d/1 state $state physical_state $phys netdev $net"
	[ "$(sed 's/ *$//' <<<"$line")" = "$want" ] || bad "rdma link show: '$line', sysfs says '$want'"
done

# -j: rxe's keys (and fw for devices); ifindex is the uverbs number, netdev_index the netdev's.
rxe=$(rxe_says "rdma -j dev show" | json_keys | sed 's/ node_type / node_type fw /')
"$run" "$rdma" -j dev show | json_keys | while read -r k; do
	[ "$k" = "$rxe" ] || echo "rdma -j dev show: keys [$k], rxe's [$rxe]"
done | grep . >&2 && fail=1
rxe=$(rxe_says "rdma -j link show" | json_keys)
json=$("$run" "$rdma" -j link show)
json_keys <<<"$json" | while read -r k; do
	[ "$k" = "$rxe" ] || echo "rdma -j link show: keys [$k], rxe's [$rxe]"
done | grep . >&2 && fail=1
for d in $devs; do
	got=$(/usr/bin/python3 -c 'import json, sys
for o in json.loads(sys.argv[1]):
    if o["ifname"] == sys.argv[2]: print(o["ifindex"], o["port"], o["netdev"], o["netdev_index"])' "$json" "$d")
	net=$("$run" ls /sys/class/infiniband/$d/device/net/)
	want="$(uverbs_of "$d") 1 $net $(cat /sys/class/net/$net/ifindex)"
	[ "$got" = "$want" ] || bad "rdma -j link show, $d: '$got', want '$want'"
done

# rdma res show: rxe's fields for each device, counts (every uroce process's of this user and
# namespace: res.sh checks their values where no other process runs).
rxe=$(rxe_says "rdma res show")
out=$("$run" "$rdma" res show) || bad "rdma res show failed: $out"
for d in $devs; do
	line=$(grep -E "^[0-9]+: $d: " <<<"$out") || { bad "rdma res show: no $d"; continue; }
	[ "$(keys 3 <<<"$line")" = "$(keys 3 <<<"$rxe")" ] || bad "rdma res show: '$line' has not rxe's fields ('$rxe')"
	grep -qE "^$(uverbs_of "$d"): $d: pd [0-9]+ cq [0-9]+ qp [0-9]+ cm_id [0-9]+ mr [0-9]+ ctx [0-9]+ srq [0-9]+ *$" <<<"$line" ||
		bad "rdma res show: '$line'"
done
rxe=$(rxe_says "rdma system show")
out=$("$run" "$rdma" system show)
[ "$(keys 1 <<<"$out")" = "$(keys 1 <<<"$rxe")" ] || bad "rdma system show: '$out', rxe's '$rxe'"
[ "$out" = "netns exclusive copy-on-fork on" ] || bad "rdma system show: '$out'"

# The socket, the other commands, agreement with sysfs and the verbs.
out=$("$run" /usr/bin/python3 "$here/netlink.py" 2>&1) || bad "netlink.py:
$out"

# NETLINK_ROUTE untouched.
for cmd in "ip link show" "ip addr" "ip -d link show" "ip -j addr show" "ip -6 route show"; do
	plain=$($cmd 2>&1)
	under=$("$run" $cmd 2>&1)
	[ "$plain" = "$under" ] || bad "'$cmd' differs under uroce-run:
$(diff <(echo "$plain") <(echo "$under"))"
done

[ $fail = 0 ] && echo "netlink.sh: rdma lists every uroce device as rxe's; ip is unchanged"
exit $fail
