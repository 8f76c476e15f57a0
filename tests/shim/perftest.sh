#!/usr/bin/env bash
# Run one unmodified perftest program (ib_send_bw, ib_write_lat, ...) as a server and a client
# process on loopback through uroce-run; both must exit 0 and the client must print its result
# row (the line after the "#bytes" header, starting with the message size).
# Usage: perftest.sh UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
set -uo pipefail

prog=$4
. "$(dirname "$0")/two-procs.sh"
two_procs "$@"
shift 4
result=$(grep -A1 '#bytes' "$dir/client.out" | tail -n 1)
if [[ $client_rc != 0 || $server_rc != 0 || ! $result =~ ^\ *[0-9]+\ +[0-9]+ ]]; then
	echo "FAIL: $prog $* (client exited $client_rc, server $server_rc)" >&2
	show_outputs
	exit 1
fi
echo "$prog $*: $result"
