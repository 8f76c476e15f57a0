#!/usr/bin/env bash
# A FIFO nobody reads: an rping server capturing to it (UROCE_PCAP=FIFO) opens it at once, never
# waits and never dies of SIGPIPE; once the pipe is full, records are dropped whole and counted
# (fabric/pcap.c), and the connection completes as without a capture.
#   no-reader.sh UROCE_RUN SANITIZER TCP_PORT UDP_PORT
set -uo pipefail
. "$(dirname "$0")/common.sh"
live_setup "$@"
fifo=$dir/live.pcap
mkfifo "$fifo"
# 200 pings of 16 KB (RDMA READ and WRITE of each) capture several MB: more than the pipe holds.
UROCE_PCAP=$fifo UROCE_LOG=info timeout 20 "$run" rping -s -a 127.0.0.1 -p "$port" -C 200 \
	-S 16000 -V >"$dir/server.out" 2>&1 &
server=$!
live_pids+=("$server")
wait_rdma_cm_listen "$dir/server.out" "$port " || fail "the rping server did not listen"
timeout 20 "$run" rping -c -a 127.0.0.1 -p "$port" -C 200 -S 16000 -V >"$dir/client.out" 2>&1
client_rc=$?
wait "$server"
server_rc=$?
((client_rc == 0 && server_rc == 0)) || fail "rping: client $client_rc, server $server_rc"
dropped=$(grep -o "[0-9]* frames dropped: the reader did not keep up" "$dir/server.out")
[[ -n $dropped ]] || fail "the server did not report the frames the full FIFO dropped"
echo "live: no reader: rping completed; $dropped"
