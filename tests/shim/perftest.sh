#!/usr/bin/env bash
# Run one unmodified perftest program (ib_send_bw, ib_write_lat, ...) as a server and a client
# process on loopback through uroce-run; both must exit 0 and the client must print its result
# row (the first line after the "#bytes" header that starts with the message size: with
# UROCE_LOG=info the engine's messages share the output).
# Usage: perftest.sh UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
set -uo pipefail

prog=$4
. "$(dirname "$0")/two-procs.sh"
# A run lost to perftest's clock is run again, nine times at most (rdma-cm-ready.sh).
attempt=1
while two_procs "$@"
	((attempt < 10 && (client_rc || server_rc))) &&
		{ perftest_run_lost "$dir/client.out" || perftest_run_lost "$dir/server.out"; }; do
	echo "$prog: run $attempt: $lost_why; again"
	rm -rf "$dir"
	((attempt++))
done
shift 4
result=$(awk '/#bytes/ { seen = 1; next } seen && /^ *[0-9]+ +[0-9]+/ { print; exit }' \
	"$dir/client.out")
if [[ $client_rc != 0 || $server_rc != 0 || ! $result =~ ^\ *[0-9]+\ +[0-9]+ ]]; then
	echo "FAIL: $prog $* (client exited $client_rc, server $server_rc)" >&2
	show_outputs
	exit 1
fi
echo "$prog $*: $result"
