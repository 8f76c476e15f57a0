#!/usr/bin/env bash
# Three "hosts": network namespaces a, b and c on one bridge (a fourth namespace), each with
# its own uroce process(es), so that each holds UDP 4791 itself. Every pair talks through
# Debian's unmodified programs at once:
#   - mckey: a sends to a multicast group that b and c joined (a-b, a-c; IP multicast over the
#     bridge);
#   - ucmatose: c serves two connections, one from a and one from b (a-c, b-c);
#   - rping -V: b serves a (a-b, the data checked).
# Needs root; exits 77 (skipped, with a message) otherwise.
#
# Usage: three-hosts.sh UROCE_RUN SANITIZER
set -uo pipefail

run=$1 sanitizer=$2
if [[ $sanitizer == thread ]]; then
	echo "three-hosts: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
hosts=(a b c)
ns() { echo "uroce-3h-$1"; }
for h in "${hosts[@]}" br; do
	ip netns del "$(ns "$h")" 2>/dev/null
done
if ((EUID != 0)) || ! ip netns add "$(ns br)" 2>/dev/null; then
	echo "three-hosts: skipped: network namespaces need root (and ip netns)"
	exit 77
fi
dir=$(mktemp -d)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null
	for h in "${hosts[@]}" br; do
		ip netns del "$(ns "$h")" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT

ip -n "$(ns br)" link add br0 type bridge || exit 1
ip -n "$(ns br)" link set br0 up
declare -A addr
i=0
for h in "${hosts[@]}"; do
	i=$((i + 1))
	addr[$h]=10.201.0.$i
	ip netns add "$(ns "$h")" || exit 1
	ip link add "v$h" netns "$(ns "$h")" type veth peer name "p$h" netns "$(ns br)" || exit 1
	ip -n "$(ns br)" link set "p$h" master br0 up
	ip -n "$(ns "$h")" link set lo up
	ip -n "$(ns "$h")" addr add "${addr[$h]}/24" dev "v$h"
	ip -n "$(ns "$h")" link set "v$h" up
	# The multicast group's route: through the bridge.
	ip -n "$(ns "$h")" route add 224.0.0.0/4 dev "v$h"
done
in_host() { local h=$1; shift; ip netns exec "$(ns "$h")" timeout 60 "$run" "$@"; }

# Servers and receivers first.
in_host b mckey -m 239.1.2.3 -b "${addr[b]}" -C 20 >"$dir/mckey-b.out" 2>&1 &
pids+=($!)
in_host c mckey -m 239.1.2.3 -b "${addr[c]}" -C 20 >"$dir/mckey-c.out" 2>&1 &
pids+=($!)
in_host c ucmatose -b "${addr[c]}" -c 2 -C 10 >"$dir/ucmatose-c.out" 2>&1 &
pids+=($!)
in_host b rping -s -a "${addr[b]}" -C 50 -V >"$dir/rping-b.out" 2>&1 &
pids+=($!)
sleep 0.5
# Then the clients and the sender, at once.
in_host a mckey -m 239.1.2.3 -b "${addr[a]}" -s -C 20 >"$dir/mckey-a.out" 2>&1 &
pids+=($!)
in_host a ucmatose -s "${addr[c]}" -c 1 -C 10 >"$dir/ucmatose-a.out" 2>&1 &
pids+=($!)
in_host b ucmatose -s "${addr[c]}" -c 1 -C 10 >"$dir/ucmatose-b.out" 2>&1 &
pids+=($!)
in_host a rping -c -a "${addr[b]}" -C 50 -V >"$dir/rping-a.out" 2>&1 &
pids+=($!)

names=(mckey-b mckey-c ucmatose-c rping-b mckey-a ucmatose-a ucmatose-b rping-a)
fail=0
for k in "${!pids[@]}"; do
	wait "${pids[$k]}"
	rc=$?
	if ((rc != 0)); then
		echo "FAIL: ${names[$k]} exited $rc:" >&2
		sed 's/^/  | /' "$dir/${names[$k]}.out" >&2
		fail=1
	fi
done
for r in b c; do
	if ! grep -q "data transfers complete" "$dir/mckey-$r.out"; then
		echo "FAIL: host $r did not receive the multicast" >&2
		fail=1
	fi
done
pids=()
((fail == 0)) && echo "three hosts: mckey a->{b,c}, ucmatose {a,b}->c, rping a->b all passed"
exit $fail
