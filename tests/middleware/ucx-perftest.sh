#!/usr/bin/env bash
# Debian's ucx_perftest (ucx-utils) as a server and a client process through uroce-run, on
# loopback or between two network namespaces (middleware/pair.sh), with UCX's defaults apart
# from the transports named: both must end, and the client print its "Final:" row.
# Usage: ucx-perftest.sh UROCE_RUN SANITIZER TCP_PORT UCX_TLS TEST loopback|netns [N]
#   N: the namespaces' subnet (10.204.N.0/24), unique per test
set -uo pipefail

run=$1 port=$3 test=$5
export UCX_TLS=$4
command -v ucx_perftest >/dev/null ||
	{ echo "ucx-perftest.sh: ucx_perftest not found (ucx-utils; scripts/setup.sh installs it)" >&2; exit 1; }
. "$(dirname "$0")/pair.sh"
pair_setup "$2" "$6" "ucx$port" "${7:-0}"
export UROCE_UDP_PORT=$((port + 10000))

"${in_a[@]}" timeout -k 5 60 "$run" ucx_perftest -p "$port" >"$dir/server.out" 2>&1 &
server=$!
pair_wait_tcp "$port" || { echo "FAIL: ucx_perftest's server did not listen" >&2; exit 1; }
"${in_b[@]}" timeout -k 5 60 "$run" ucx_perftest -p "$port" -t "$test" -n 1000 "$addr" \
	>"$dir/client.out" 2>&1
client_rc=$?
wait "$server"
server_rc=$?
server=
if [[ $server_rc != 0 || $client_rc != 0 ]] || ! grep -q "^Final:" "$dir/client.out"; then
	echo "FAIL: UCX_TLS=$UCX_TLS ucx_perftest -t $test ($pair_where): server exited $server_rc, client $client_rc" >&2
	tail -n 20 "$dir/server.out" "$dir/client.out" >&2
	exit 1
fi
grep "^Final:" "$dir/client.out"
