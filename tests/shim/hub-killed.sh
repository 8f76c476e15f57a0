#!/usr/bin/env bash
# Three processes on one address: a holder that starts first (and so holds UDP port 4791, the
# hub of the rendezvous) and a perftest pair; the holder is killed with SIGKILL in the middle of
# the pair's transfer, and the transfer must complete (the pair's datagrams go between their own
# sockets, and one of them takes the port over).
# Usage: hub-killed.sh UROCE_RUN SANITIZER TCP_PORT
set -uo pipefail

run=$1 sanitizer=$2 port=$3
if [[ $sanitizer == thread ]]; then
	echo "hub-killed: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
export UROCE_UDP_PORT=$((port + 10000))
dir=$(mktemp -d)
trap 'kill -9 $holder 2>/dev/null; kill $server 2>/dev/null; rm -rf "$dir"' EXIT  # timeout(1) passes TERM on

# The holder: an rc_pingpong server, which creates its QP and then waits for a client forever.
# Not under timeout(1): killing that would leave the holder alive (uroce-run execs the program,
# so $! is the holder itself); the EXIT trap ends it.
"$run" ibv_rc_pingpong -d uroce_lo -g 0 -p $((port + 1)) >/dev/null 2>&1 &
holder=$!
disown $holder # its death is the point: no "Killed" message from this shell
for ((i = 0; i < 100; i++)); do
	ss -Hltn "sport = :$((port + 1))" | grep -q . && break
	sleep 0.05
done
timeout 120 "$run" ib_write_bw -d uroce_lo -x 0 -p "$port" -D 4 >"$dir/server.out" 2>&1 &
server=$!
for ((i = 0; i < 100; i++)); do
	ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.05
done
(sleep 2 && kill -9 $holder) &
timeout 120 "$run" ib_write_bw -d uroce_lo -x 0 -p "$port" -D 4 127.0.0.1 >"$dir/client.out" 2>&1
client_rc=$?
wait $server
server_rc=$?
if kill -0 $holder 2>/dev/null; then
	echo "FAIL: the holder was not killed during the transfer" >&2
	exit 1
fi
result=$(grep -A1 '#bytes' "$dir/client.out" | tail -n 1)
if ((client_rc != 0 || server_rc != 0)) || ! [[ $result =~ ^\ *[0-9]+\ +[0-9]+ ]]; then
	echo "FAIL: the transfer did not survive the hub's death (client $client_rc, server $server_rc)" >&2
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
	exit 1
fi
echo "ib_write_bw -D 4 with the hub killed after 2 s: $result"
