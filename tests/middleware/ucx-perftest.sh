#!/usr/bin/env bash
# Debian's ucx_perftest (ucx-utils) as a server and a client process on loopback through
# uroce-run, with UCX's defaults apart from the transports named: both must end, and the client
# print its "Final:" row.
# Usage: ucx-perftest.sh UROCE_RUN SANITIZER TCP_PORT UCX_TLS TEST
set -uo pipefail

run=$1 sanitizer=$2 port=$3
export UCX_TLS=$4
test=$5
command -v ucx_perftest >/dev/null ||
	{ echo "ucx-perftest.sh: ucx_perftest not found (ucx-utils; scripts/setup.sh installs it)" >&2; exit 1; }
. "$(dirname "$0")/../shim/two-procs.sh"
two_procs "$run" "$sanitizer" "$port" ucx_perftest -t "$test" -n 1000
if [[ $server_rc != 0 || $client_rc != 0 ]] || ! grep -q "^Final:" "$dir/client.out"; then
	echo "FAIL: UCX_TLS=$UCX_TLS ucx_perftest -t $test: server exited $server_rc, client $client_rc" >&2
	tail -n 20 "$dir/server.out" "$dir/client.out" >&2
	exit 1
fi
grep "^Final:" "$dir/client.out"
