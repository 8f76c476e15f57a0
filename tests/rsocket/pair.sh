#!/usr/bin/env bash
# rsockets over uroce (verbs-shim/rdmacm/rsocket*.c): a server and a client program, on one
# host (loopback) or between two network namespaces rs-PORT-a and rs-PORT-b (10.207.N.1, .2;
# tests/middleware/pair.sh). A test that cannot run fails: no skip.
# Usage: pair.sh UROCE_RUN SANITIZER UDP_PORT CM_PORT loopback|netns N PROGRAM [ARGS...]
#   rstream ARGS / riostream ARGS   both sides run with ARGS; every test the server reports
#                                   the client reports too, and both exit 0
#   rcopy                           a 3 MB file of random bytes is copied and compared
#   udpong ARGS                     both sides with ARGS; the client exits 0 with a report
#   rs_check BINARY [reset]         tests/rsocket/rs_check.c, server and client
#   sock_echo BINARY / iperf        an ordinary socket program under librspreload.so
# RS_PROG_TIMEOUT: seconds an rstream or riostream side may run (300; the -S all matrices
# get longer: tests/rsocket.cmake).
set -uo pipefail

run=$1 san=$2 udp=$3 port=$4 where=$5 n=$6 prog=$7
shift 7
here=$(dirname "$0")
. "$here/../middleware/pair.sh"
. "$here/../shim/rdma-cm-ready.sh"
if [[ $san == thread ]]; then
	echo "FAIL: system programs cannot load a ThreadSanitizer build; run this test elsewhere" >&2
	exit 1
fi
PAIR_NS_PREFIX=rs PAIR_NET=10.207 pair_setup "$san" "$where" "$port" "$n"
export UROCE_UDP_PORT=$udp UROCE_LOG=info

fail() {
	echo "FAIL: $prog $where: $*" >&2
	for f in "$dir"/server.out "$dir"/client.out; do
		[[ -f $f ]] || continue
		echo "--- $(basename "$f"):" >&2
		tail -40 "$f" | sed 's/^/  | /' >&2
	done
	exit 1
}

# start_server CMD...: the server in the server's host, ready once its rdma_cm listens.
start_server() {
	"${in_a[@]}" timeout "${RS_PROG_TIMEOUT:-300}" "$run" "$@" >"$dir/server.out" 2>&1 &
	server=$!
	wait_rdma_cm_listen "$dir/server.out" "$port" || fail "the server did not listen"
}

# finish_server: the server's exit status in $src.
finish_server() {
	wait "$server"
	src=$?
	server=
}

# The result lines of rstream and riostream: name, size, transfers, ... time ("0.12s").
results() {
	grep -cE '^[^ ]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+s ' "$1"
}

case $prog in
rstream | riostream)
	start_server "$prog" -p "$port" "$@"
	"${in_b[@]}" timeout "${RS_PROG_TIMEOUT:-300}" "$run" "$prog" -s "$addr" -p "$port" "$@" \
		>"$dir/client.out" 2>&1
	crc=$?
	finish_server
	((crc == 0 && src == 0)) || fail "exit $src (server), $crc (client)"
	ns=$(results "$dir/server.out") nc=$(results "$dir/client.out")
	((ns > 0 && ns == nc)) || fail "$ns results from the server, $nc from the client"
	if [[ " $* " == *" -k "* ]]; then
		grep -q "Keepalive: ON" "$dir/client.out" || fail "keepalive not on"
	fi
	echo "$prog $* ($where): $ns tests, both sides"
	grep -E 'bytes|_bw|_lat|custom' "$dir/client.out" | head -3
	;;
rcopy)
	head -c 3000000 /dev/urandom >"$dir/src.bin"
	# rcopy's server serves for ever: it is stopped once the copy is compared.
	start_server rcopy -p "$port"
	"${in_b[@]}" timeout 60 "$run" rcopy "$dir/src.bin" "$addr:$dir/dst.bin" -p "$port" \
		>"$dir/client.out" 2>&1
	crc=$?
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	server=
	((crc == 0)) || fail "the client exited $crc"
	cmp "$dir/src.bin" "$dir/dst.bin" || fail "the copy differs from the file"
	echo "rcopy ($where): 3000000 bytes copied, identical"
	;;
udpong)
	# udpong's server binds a UDP socket (no rdma_cm listen) and serves for ever.
	"${in_a[@]}" timeout 300 "$run" udpong -b "$addr" -p "$port" "$@" >"$dir/server.out" 2>&1 &
	server=$!
	for ((i = 0; i < 100; i++)); do
		"${in_a[@]}" ss -Hlun "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	"${in_b[@]}" timeout 120 "$run" udpong -s "$addr" -p "$port" "$@" >"$dir/client.out" 2>&1
	crc=$?
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	server=
	((crc == 0)) || fail "the client exited $crc"
	nc=$(grep -cE '^[^ ]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+s ' "$dir/client.out")
	((nc > 0)) || fail "no result row"
	echo "udpong $* ($where): $(tail -1 "$dir/client.out")"
	;;
sock_echo | iperf)
	# An ordinary socket program over rsockets through Debian's librspreload.so; its RoCE
	# packets (UROCE_LOG=info's count at exit) show that the data went over uroce.
	preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
	[[ -f $preload ]] || fail "$preload missing (Debian's librdmacm1)"
	if [[ $prog == sock_echo ]]; then
		srv=("$1" server "$port") cli=("$1" client "$addr" "$port" 3000000)
	else
		command -v iperf >/dev/null || fail "iperf missing (scripts/setup.sh installs it)"
		srv=(iperf -s -p "$port") cli=(iperf -c "$addr" -p "$port" -t 2)
	fi
	# librspreload.so goes after what uroce-run preloads (a sanitizer's runtime must come
	# first, also for uroce-run's own configuration check), for the program alone.
	with_preload=(sh -c 'LD_PRELOAD="$LD_PRELOAD $0" exec "$@"' "$preload")
	"${in_a[@]}" timeout 60 "$run" "${with_preload[@]}" "${srv[@]}" >"$dir/server.out" 2>&1 &
	server=$!
	wait_rdma_cm_listen "$dir/server.out" "$port" || fail "the server did not listen"
	"${in_b[@]}" timeout 60 "$run" "${with_preload[@]}" "${cli[@]}" >"$dir/client.out" 2>&1
	crc=$?
	if [[ $prog == iperf ]]; then
		sleep 0.5
		kill "$server" 2>/dev/null
	fi
	wait "$server" 2>/dev/null
	src=$?
	server=
	((crc == 0)) || fail "the client exited $crc"
	if [[ $prog == sock_echo ]]; then
		((src == 0)) || fail "the server exited $src"
		grep -q "bytes back intact" "$dir/client.out" || fail "no intact echo"
	else
		grep -qE "[0-9.]+ [MG]Bytes +[0-9.]+ [MG]bits/sec" "$dir/server.out" ||
			fail "iperf's server reports no transfer"
	fi
	sent=$(sed -n 's/.*packets: \([0-9]*\) sent.*/\1/p' "$dir/client.out")
	((${sent:-0} > 100)) || fail "the client sent ${sent:-no} RoCE packets: not over uroce"
	echo "$prog over librspreload.so ($where): $sent RoCE packets from the client"
	grep -hE "bytes back|bits/sec" "$dir/client.out" | tail -1
	;;
rs_check)
	bin=$1
	shift
	start_server "$bin" server "$port"
	"${in_b[@]}" timeout 120 "$run" "$bin" client "$addr" "$port" "$@" >"$dir/client.out" 2>&1
	crc=$?
	finish_server
	((crc == 0)) || fail "the client exited $crc"
	((src == 0)) || fail "the server exited $src"
	tail -1 "$dir/client.out"
	;;
*)
	echo "pair.sh: unknown program $prog" >&2
	exit 2
	;;
esac
exit 0
