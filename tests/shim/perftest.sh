#!/usr/bin/env bash
# Run one unmodified perftest program (ib_send_bw, ib_write_lat, ...) as a server and a client
# process on loopback through uroce-run; both must exit 0 and the client must print its result
# row (the line after the "#bytes" header, starting with the message size).
# Usage: perftest.sh UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
set -uo pipefail

run=$1 sanitizer=$2 port=$3 prog=$4
shift 4
if [[ $sanitizer == thread ]]; then
	echo "perftest: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
export UROCE_UDP_PORT=$((port + 10000))

timeout 60 "$run" "$prog" -p "$port" "$@" >"$dir/server.out" 2>&1 &
server=$!
for ((i = 0; i < 100; i++)); do
	ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.05
done
timeout 60 "$run" "$prog" -p "$port" "$@" 127.0.0.1 >"$dir/client.out" 2>&1
client_rc=$?
wait $server
server_rc=$?
result=$(grep -A1 '#bytes' "$dir/client.out" | tail -n 1)
if [[ $client_rc != 0 || $server_rc != 0 || ! $result =~ ^\ *[0-9]+\ +[0-9]+ ]]; then
	echo "FAIL: $prog $* (client exited $client_rc, server $server_rc)" >&2
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
	exit 1
fi
echo "$prog $*: $result"
