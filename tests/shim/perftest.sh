#!/usr/bin/env bash
# Run one unmodified perftest program (ib_send_bw, ib_write_lat, ...) as a server and a client
# process on loopback through uroce-run; both must exit 0 and the client must print its result
# row (the first line after the "#bytes" header that starts with the message size: with
# UROCE_LOG=info the engine's messages share the output).
# Usage: perftest.sh UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
set -uo pipefail

prog=$4
. "$(dirname "$0")/two-procs.sh"
# With -R, perftest's client connects the test QP as soon as the last handshake on the exchange
# connection brings the server's message, while the server only creates, binds and listens on
# the id for it once that message's send has completed (create_rdma_cm_connection). Nothing
# orders the two: under load the REQ comes first now and then and is rejected, as the kernel's
# CM rejects it (REJ "invalid service ID", 8; for UD a SIDR_REP "unsupported": UNREACHABLE, 1),
# and perftest's own retry reuses the ids it has just destroyed and crashes. Such a run says
# nothing of uroce: run it again (the race's odds follow the load: one run in seven with a busy
# loop beside the test on two CPUs, one in two with more), nine times at most.
race='Event: RDMA_CM_EVENT_(REJECTED; error: 8|UNREACHABLE; error: 1)\.'
attempt=1
while two_procs "$@"
	((client_rc && attempt < 10)) && uses_rdma_cm "${@:5}" && grep -Eq "$race" "$dir/client.out"; do
	echo "$prog: run $attempt: the client's request came before the server's rdma_listen (perftest's race); again"
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
