#!/usr/bin/env bash
# Debian's qperf with the rdma_cm (-cm1): every RC test, RUNS times in a row, between a server
# and a client process, on loopback or between two network namespaces (middleware/pair.sh).
# Each test is a connection of its own, made right after the server bound its port (qperf
# 0.4.11 sends the port before it listens): no connection may be rejected (fabric/rdv_int.h,
# rdv_held_req).
# Usage: qperf.sh UROCE_RUN SANITIZER TCP_PORT RUNS loopback|netns
set -uo pipefail

run=$1 port=$3 runs=$4
tests=(rc_bi_bw rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw rc_rdma_write_lat
	rc_rdma_write_poll_lat rc_compare_swap_mr rc_fetch_add_mr ver_rc_compare_swap
	ver_rc_fetch_add)
command -v qperf >/dev/null ||
	{ echo "qperf.sh: qperf not found (Debian's qperf; scripts/setup.sh installs it)" >&2; exit 1; }
. "$(dirname "$0")/pair.sh"
pair_setup "$2" "$5" qperf 3
export UROCE_UDP_PORT=$((port + 10000))

"${in_a[@]}" timeout 600 "$run" qperf -lp "$port" >"$dir/server.out" 2>&1 &
server=$!
pair_wait_tcp "$port" || { echo "FAIL: qperf's server did not listen" >&2; exit 1; }
for ((r = 1; r <= runs; r++)); do
	"${in_b[@]}" timeout 120 "$run" qperf -lp "$port" -cm1 "$addr" -t 1 "${tests[@]}" \
		>"$dir/client.out" 2>&1
	rc=$?
	if ((rc != 0)) || grep -Eqi "rejected|failed|error" "$dir/client.out" ||
		(($(grep -c " = " "$dir/client.out") != ${#tests[@]})); then
		echo "FAIL: qperf -cm1 run $r of $runs ($pair_where): exit $rc" >&2
		sed 's/^/  | /' "$dir/client.out" >&2
		echo "--- server:" >&2
		sed 's/^/  | /' "$dir/server.out" >&2
		exit 1
	fi
done
tr -s ' ' <"$dir/client.out" | paste -sd' '
echo "qperf -cm1: $runs runs of ${#tests[@]} RC tests ($pair_where), every connection accepted"
