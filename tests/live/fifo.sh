#!/usr/bin/env bash
# A live view through a FIFO: tshark -i FIFO reads what an rping server over uroce writes to its
# UROCE_PCAP=FIFO, and shows the connection's frames while the stream is still open (the test
# holds an end of the FIFO until tshark has printed the teardown, then closes it, and tshark's
# capture ends). Checks: rping's handshake and traffic, no malformed frame (common.sh).
#   fifo.sh UROCE_RUN SANITIZER TCP_PORT UDP_PORT
set -uo pipefail
. "$(dirname "$0")/common.sh"
live_setup "$@"
fifo=$dir/live.pcap
mkfifo "$fifo"
# The test's own end: the pipe and what is written into it stay while tshark starts (dumpcap
# opens the FIFO after tshark says it captures), and the stream ends only when it is closed.
exec 5<>"$fifo"
timeout 25 tshark -i "$fifo" "${tshark_live[@]}" >"$dir/tshark.out" 2>"$dir/tshark.err" 5<&- &
tshark_pid=$!
live_pids+=("$tshark_pid")
UROCE_PCAP=$fifo UROCE_LOG=info timeout 20 "$run" rping -s -a 127.0.0.1 -p "$port" -C 10 -V \
	>"$dir/server.out" 2>&1 5<&- &
server=$!
live_pids+=("$server")
wait_rdma_cm_listen "$dir/server.out" "$port " || fail "the rping server did not listen"
timeout 20 "$run" rping -c -a 127.0.0.1 -p "$port" -C 10 -V >"$dir/client.out" 2>&1 5<&-
client_rc=$?
wait "$server"
server_rc=$?
((client_rc == 0 && server_rc == 0)) || fail "rping: client $client_rc, server $server_rc"

# Live: the last frames are on tshark's output while the FIFO is still open.
for ((i = 0; i < 200; i++)); do
	grep -q "CM: DisconnectReply" "$dir/tshark.out" && break
	sleep 0.05
done
grep -q "CM: DisconnectReply" "$dir/tshark.out" ||
	fail "tshark did not show the frames while the stream was open"
exec 5<&-
wait "$tshark_pid"
rc=$?
((rc == 0)) || fail "tshark exited $rc (124: it did not see the stream end)"
check_live "$dir/tshark.out"
