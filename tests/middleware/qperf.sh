#!/usr/bin/env bash
# Debian's qperf with the rdma_cm (-cm1): every RC test, RUNS times in a row, between a server
# and a client process, on loopback or between two network namespaces ("hosts" joined by a
# veth pair, each process the hub of its own). Each test is a connection of its own, made
# right after the server bound its port (qperf 0.4.11 sends the port before it listens): no
# connection may be rejected (fabric/rdv_int.h, rdv_held_req).
# Usage: qperf.sh UROCE_RUN SANITIZER TCP_PORT RUNS loopback|netns
set -uo pipefail

run=$1 sanitizer=$2 port=$3 runs=$4 where=$5
tests=(rc_bi_bw rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw rc_rdma_write_lat
	rc_rdma_write_poll_lat rc_compare_swap_mr rc_fetch_add_mr ver_rc_compare_swap
	ver_rc_fetch_add)
command -v qperf >/dev/null ||
	{ echo "qperf.sh: qperf not found (Debian's qperf; scripts/setup.sh installs it)" >&2; exit 1; }
if [[ $sanitizer == thread ]]; then
	echo "qperf.sh: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
dir=$(mktemp -d)
server=
a=uroce-qperf-a b=uroce-qperf-b
cleanup() {
	[[ -n $server ]] && kill "$server" 2>/dev/null
	if [[ $where == netns ]]; then
		ip netns del "$a" 2>/dev/null
		ip netns del "$b" 2>/dev/null
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
export UROCE_UDP_PORT=$((port + 10000))
case $where in
loopback)
	in_a=() in_b=() addr=127.0.0.1
	;;
netns)
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
	if ((EUID != 0)) || ! ip netns add "$a" 2>/dev/null; then
		echo "qperf.sh: skipped: network namespaces need root (and ip netns)"
		exit 77
	fi
	ip netns add "$b" || exit 1
	ip link add va netns "$a" type veth peer name vb netns "$b" || exit 1
	ip -n "$a" addr add 10.203.0.1/24 dev va
	ip -n "$b" addr add 10.203.0.2/24 dev vb
	for ns in "$a" "$b"; do
		ip -n "$ns" link set lo up
		ip -n "$ns" link set "v${ns: -1}" up
	done
	in_a=(ip netns exec "$a") in_b=(ip netns exec "$b") addr=10.203.0.1
	;;
*)
	echo "qperf.sh: where: loopback or netns, not $where" >&2
	exit 2
	;;
esac

"${in_a[@]}" timeout 600 "$run" qperf -lp "$port" >"$dir/server.out" 2>&1 &
server=$!
for ((i = 0; i < 100; i++)); do
	"${in_a[@]}" ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.05
done
for ((r = 1; r <= runs; r++)); do
	"${in_b[@]}" timeout 120 "$run" qperf -lp "$port" -cm1 "$addr" -t 1 "${tests[@]}" \
		>"$dir/client.out" 2>&1
	rc=$?
	if ((rc != 0)) || grep -Eqi "rejected|failed|error" "$dir/client.out" ||
		(($(grep -c " = " "$dir/client.out") != ${#tests[@]})); then
		echo "FAIL: qperf -cm1 run $r of $runs ($where): exit $rc" >&2
		sed 's/^/  | /' "$dir/client.out" >&2
		echo "--- server:" >&2
		sed 's/^/  | /' "$dir/server.out" >&2
		exit 1
	fi
done
tr -s ' ' <"$dir/client.out" | paste -sd' '
echo "qperf -cm1: $runs runs of ${#tests[@]} RC tests ($where), every connection accepted"
