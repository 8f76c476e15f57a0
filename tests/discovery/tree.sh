#!/bin/bash
# SPDX-License-Identifier: MIT
# The kernel's view of uroce's devices, as programs see it under uroce-run, against rxe's
# (tests/discovery/rxe-reference.txt, taken on Linux 6.1 with rdma_rxe):
#   - each folder holds the names rxe's does, less what uroce does not serve and plus what it
#     adds (sysview.h says which, and why);
#   - /dev/infiniband/uverbsN is a character device as rxe's is;
#   - a path outside the view is untouched (outside.py with and without uroce-run);
#   - UCX finds rc_verbs and ud_verbs on every uroce device (ucx_info -d).
# usage: tree.sh UROCE_RUN REFERENCE
set -u
run=$1
ref=$2
here=$(dirname "$0")
fail=0
bad() {
	echo "tree.sh: $*" >&2
	fail=1
}

# The names in the reference's "ls -la FOLDER" listing (without . and ..).
rxe_names() {
	awk -v want="--- guest# ls -la $1    [rc 0]" '
		$0 == want { on = 1; next }
		on && /^$/ { exit }
		on && NF >= 9 && $NF != "." && $NF != ".." { n = $NF; if ($(NF-1) == "->") n = $(NF-2); print n }
	' "$ref" | sort
}

# compare WHAT RXE_FOLDER OUR_FOLDER "RXE ONLY" "OURS ONLY"
compare() {
	local want got
	want=$( (rxe_names "$2" | grep -vxF -f <(tr ' ' '\n' <<<"$4" | grep .); tr ' ' '\n' <<<"$5" | grep .) | sort)
	got=$("$run" ls -A "$3" | sort)
	[ "$got" = "$want" ] || bad "$1: $3 holds [$(echo $got)], rxe's [$(echo $want)] (less [$4], plus [$5])"
	[ -n "$got" ] || bad "$1: $3 is empty"
}

dev=$("$run" ls /sys/class/infiniband | head -1)
[ -n "$dev" ] || { echo "tree.sh: uroce-run ls /sys/class/infiniband lists no device" >&2; exit 1; }
uverbs=$("$run" ls /sys/class/infiniband_verbs | grep '^uverbs' | head -1)
compare "device" /sys/class/infiniband/rxe0/ "/sys/class/infiniband/$dev/" "power" "board_id device"
compare "port" /sys/class/infiniband/rxe0/ports/1/ "/sys/class/infiniband/$dev/ports/1/" \
	"cm_rx_duplicates cm_rx_msgs cm_tx_msgs cm_tx_retries hw_counters" ""
compare "uverbs" /sys/class/infiniband_verbs/uverbs0/ "/sys/class/infiniband_verbs/$uverbs/" "power" ""
compare "dev" /dev/infiniband/ /dev/infiniband/ "issm0 umad0 uverbs0" "$("$run" ls /dev/infiniband | grep uverbs | tr '\n' ' ')"

# Links as rxe's: class -> devices/virtual.
link=$("$run" readlink "/sys/class/infiniband/$dev")
[ "$link" = "../../devices/virtual/infiniband/$dev" ] || bad "readlink /sys/class/infiniband/$dev: $link"
link=$("$run" readlink "/sys/class/infiniband_verbs/$uverbs")
[ "$link" = "../../devices/virtual/infiniband_verbs/$uverbs" ] || bad "readlink /sys/class/infiniband_verbs/$uverbs: $link"
# The device node: rxe's is "character special file e7:c0 666 root" (231:192).
n=${uverbs#uverbs}
want="character special file $(printf '%x:%x' 231 $((192 + n))) 666 root"
got=$("$run" stat -c '%F %t:%T %a %U' "/dev/infiniband/$uverbs")
[ "$got" = "$want" ] || bad "stat /dev/infiniband/$uverbs: $got, want $want"
# Each device's netdev, where pyverbs looks for it.
for d in $("$run" ls /sys/class/infiniband); do
	net=$("$run" ls "/sys/class/infiniband/$d/device/net/")
	[ "uroce_$net" = "$d" ] || bad "ls /sys/class/infiniband/$d/device/net/: '$net'"
	"$run" cat "/sys/class/infiniband/$d/device/net/$net/mtu" >/dev/null || bad "$d: the netdev's mtu does not read"
done
# An empty GID slot's attributes fail to read with EINVAL, as the kernel's.
err=$("$run" cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/15" 2>&1 >/dev/null)
[ "$err" = "cat: /sys/class/infiniband/$dev/ports/1/gid_attrs/types/15: Invalid argument" ] || bad "types/15: '$err'"

# Outside the view nothing changes.
plain=$(/usr/bin/python3 "$here/outside.py")
under=$("$run" /usr/bin/python3 "$here/outside.py")
[ "$plain" = "$under" ] || bad "a path outside the view changed under uroce-run:
$(diff <(echo "$plain") <(echo "$under"))"

# UCX: rc_verbs and ud_verbs on every uroce device.
command -v ucx_info >/dev/null || { echo "tree.sh: ucx_info not found (Debian's ucx-utils; scripts/setup.sh installs it)" >&2; exit 1; }
ucx=$("$run" ucx_info -d)
for d in $("$run" ls /sys/class/infiniband); do
	for tl in rc_verbs ud_verbs; do
		grep -A1 -x "#      Transport: $tl" <<<"$ucx" | grep -qx "#         Device: $d:1" ||
			bad "ucx_info -d: no $tl on $d"
	done
done

[ $fail = 0 ] && echo "tree.sh: the view matches rxe's and UCX finds every device"
exit $fail
