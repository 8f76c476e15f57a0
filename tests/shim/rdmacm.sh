#!/usr/bin/env bash
# rdma-core's rdma_cm examples, unmodified, as a server and a client process on loopback through
# uroce-run (uroce's librdmacm.so.1 over the IB CM): the connection is set up, the data checked
# where the program can (rping -V), and the connection torn down, both exiting 0.
#   rdmacm.sh UROCE_RUN SANITIZER PORT NAME
# NAME: rping (-V, 100 pings of 4000 bytes; the server's capture must hold REQ, REP, RTU, DREQ
# and DREP, decode in tshark with no malformed frame and verify in scapy), rping_q (the
# application's own QP: CONNECT_RESPONSE and rdma_establish), ucmatose (the client sets TOS
# 0x60: every frame of the server's capture, MADs and data of both sides, carries it),
# rdma_server (with rdma_client: the synchronous API, rdma_create_ep and rdma_get_request),
# udaddy (UD: SIDR), rdma_xserver (with rdma_xclient, RC) and rdma_xserver_xrc (-c x: an XRC
# initiator connects to an XRC target with an XRC SRQ; the capture must hold XRC SEND Only),
# cmtime (100 connections set up and torn down; its server never exits, so it is stopped),
# rejected (no server: the host answers REQ with REJ 8 and SIDR_REQ with SIDR_REP 1 at once, as
# the kernel does), addrinuse (a second server on a port another process holds: EADDRINUSE,
# or EADDRNOTAVAIL for a wildcard or a loopback address),
# hubkilled (three servers; the first, the hub, is killed: the other two still get their
# clients, their listens claimed at the new hub, and the dead one's port draws REJ 8), mckey
# (two receivers and a sender in a multicast group, IPv4 then IPv6: every receiver gets every
# message), killed (a server that is not the hub is killed mid-transfer: the host sends its
# client a DREQ on its behalf, as the kernel does, and the client sees DISCONNECTED within a
# second, not after its QP's retries), killed_hub (the same with the server the hub: the process
# that takes the port over, here the client itself, sends the DREQ), direct (a server that is the
# hub and its client: the CM messages after the REQ go straight to the process whose
# communication ID they name, so the hub forwards nothing at all).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/rdma-cm-ready.sh"

run=$1 sanitizer=$2 port=$3 name=$4
if [[ $sanitizer == thread ]]; then
	echo "rdmacm: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
dir=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$dir"' EXIT
export UROCE_UDP_PORT=$((port + 10000))

case $name in
rping)
	server_cmd=(rping -s -a 127.0.0.1 -p "$port" -C 100 -S 4000 -V)
	client_cmd=(rping -c -a 127.0.0.1 -p "$port" -C 100 -S 4000 -V)
	;;
rping_q)
	server_cmd=(rping -s -q -a 127.0.0.1 -p "$port" -C 20 -V)
	client_cmd=(rping -c -q -a 127.0.0.1 -p "$port" -C 20 -V)
	;;
ucmatose)
	server_cmd=(ucmatose -p "$port" -c 4 -C 20)
	# With a TOS (RDMA_OPTION_ID_TOS) and an ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT).
	client_cmd=(ucmatose -p "$port" -c 4 -C 20 -s 127.0.0.1 -t 96 -a 20)
	;;
rdma_server)
	server_cmd=(rdma_server -p "$port")
	client_cmd=(rdma_client -s 127.0.0.1 -p "$port")
	;;
udaddy) # UD through SIDR; udaddy has no port option (its own, 7174)
	server_cmd=(udaddy -c 2 -C 20)
	client_cmd=(udaddy -c 2 -C 20 -s 127.0.0.1)
	;;
rdma_xserver)
	server_cmd=(rdma_xserver -p "$port")
	client_cmd=(rdma_xclient -s 127.0.0.1 -p "$port")
	;;
rdma_xserver_xrc)
	server_cmd=(rdma_xserver -p "$port" -c x)
	client_cmd=(rdma_xclient -s 127.0.0.1 -p "$port" -c x)
	;;
cmtime) # the client reports; the server runs until stopped (rdma-core 44)
	server_cmd=(cmtime -p "$port")
	client_cmd=(cmtime -s 127.0.0.1 -p "$port" -c 100)
	;;
rejected)
	# ucmatose exits with the REJECTED status, udaddy with the UNREACHABLE one (SIDR_REP 1).
	start=$(date +%s%N)
	timeout 20 "$run" ucmatose -p "$port" -s 127.0.0.1 >"$dir/tcp.out" 2>&1
	tcp_rc=$?
	timeout 20 "$run" udaddy -s 127.0.0.1 >"$dir/udp.out" 2>&1
	udp_rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	cat "$dir/tcp.out" "$dir/udp.out"
	echo "both answered in $ms ms"
	grep -q "RDMA_CM_EVENT_REJECTED, error: 8" "$dir/tcp.out" &&
		grep -q "RDMA_CM_EVENT_UNREACHABLE, error: 1" "$dir/udp.out" &&
		((tcp_rc == 8 && udp_rc == 1 && ms < 5000)) || {
		echo "FAIL: rejected: ucmatose $tcp_rc, udaddy $udp_rc, $ms ms" >&2
		exit 1
	}
	exit 0
	;;
addrinuse)
	# On an address of a device other than uroce_lo: rdma_cm counts loopback addresses as
	# "any" (the kernel's cma_any_addr), with a wildcard's conflicts.
	host=$(ip -4 -o addr show scope global up | awk '{ sub("/.*", "", $4); print $4; exit }')
	[[ -n $host ]] || { echo "FAIL: addrinuse needs an interface besides lo with an IPv4 address" >&2; exit 1; }
	timeout 20 "$run" rping -s -a "$host" -p "$port" -C 1 >"$dir/first.out" 2>&1 &
	server=$!
	sleep 0.3
	# The kernel's rdma_cm: the same address is in use; a wildcard cannot be assigned.
	for case in "$host|Address already in use" "0.0.0.0|Cannot assign requested address" \
		"127.0.0.1|Cannot assign requested address"; do
		addr=${case%%|*}
		timeout 5 "$run" rping -s -a "$addr" -p "$port" -C 1 >"$dir/second.out" 2>&1
		rc=$?
		cat "$dir/second.out"
		if ((rc == 0 || rc == 124)) || ! grep -q "rdma_bind_addr: ${case#*|}" "$dir/second.out"
		then
			echo "FAIL: addrinuse: a second server at $addr:$port got rc $rc" >&2
			exit 1
		fi
	done
	exit 0
	;;
mckey) # each process sleeps 3 s after joining, as mckey does for an SM
	for fam in "239.1.2.3|127.0.0.1" "ff0e::1:2|::1"; do
		group=${fam%%|*} bind=${fam#*|}
		pids=()
		for r in 1 2; do
			timeout 30 "$run" mckey -m "$group" -b "$bind" -C 20 >"$dir/recv$r.out" 2>&1 &
			pids+=($!)
		done
		sleep 0.5
		timeout 30 "$run" mckey -m "$group" -b "$bind" -s -C 20 || exit 1
		for r in 1 2; do
			wait "${pids[$((r - 1))]}"
			rc=$?
			cat "$dir/recv$r.out"
			if ((rc != 0)) || ! grep -q "data transfers complete" "$dir/recv$r.out"; then
				echo "FAIL: mckey $group: receiver $r ($rc)" >&2
				exit 1
			fi
		done
	done
	exit 0
	;;
killed | killed_hub)
	if [[ $name == killed ]]; then
		timeout 30 "$run" rping -s -a 127.0.0.1 -p $((port + 100)) -C 1 >/dev/null 2>&1 &
		server=$! # the hub, idle
		sleep 0.3
	fi
	UROCE_LOG=info timeout 30 "$run" rping -s -a 127.0.0.1 -p "$port" -C 1000000 \
		>"$dir/server.out" 2>&1 &
	wait_rdma_cm_listen "$dir/server.out" "$port" || exit 1
	UROCE_LOG=info timeout 30 "$run" rping -c -a 127.0.0.1 -p "$port" -C 1000000 -v >"$dir/client.out" 2>&1 &
	client=$!
	# Killed once the transfer runs: a loaded machine may take a while to connect, and a kill
	# before the connection is established leaves the client's REQ to its retries.
	for ((i = 0; i < 100; i++)); do
		grep -q "ping data" "$dir/client.out" && break
		sleep 0.1
	done
	sleep 0.2
	pkill -9 -f "rping -s -a 127.0.0.1 -p $port " || exit 1
	start=$(date +%s%N)
	wait $client
	ms=$((($(date +%s%N) - start) / 1000000))
	grep -Ev "ping data|^[[:alnum:]]*$" "$dir/client.out" # what rping said besides the pings
	echo "the client ended $ms ms after the kill"
	if ! grep -q "client DISCONNECT EVENT" "$dir/client.out" || ((ms > 1000)); then
		echo "FAIL: $name: no prompt DISCONNECTED for the client" >&2
		exit 1
	fi
	exit 0
	;;
direct)
	UROCE_LOG=info timeout 30 "$run" rping -s -a 127.0.0.1 -p "$port" -C 10 >"$dir/server.out" 2>&1 &
	server=$! # the hub
	sleep 0.3
	timeout 30 "$run" rping -c -a 127.0.0.1 -p "$port" -C 10 -V >"$dir/client.out" 2>&1
	client_rc=$?
	wait $server
	server_rc=$?
	server=
	cat "$dir/server.out" "$dir/client.out"
	if ((client_rc != 0 || server_rc != 0)) ||
		! grep -Eq "packets: [1-9][0-9]* sent, [1-9][0-9]* received \(0 forwarded for other processes\)" "$dir/server.out"; then
		echo "FAIL: direct: client $client_rc, server $server_rc, or the hub forwarded (or counted no packets)" >&2
		exit 1
	fi
	exit 0
	;;
hubkilled)
	pids=()
	for p in 0 1 2; do
		timeout 30 "$run" rping -s -a 127.0.0.1 -p $((port + p * 100)) -C 3 \
			>"$dir/server$p.out" 2>&1 &
		pids+=($!)
		sleep 0.3 # the first is the hub
	done
	pkill -9 -f "rping -s -a 127.0.0.1 -p $port " || exit 1
	sleep 0.5
	for p in 1 2; do
		timeout 20 "$run" rping -c -a 127.0.0.1 -p $((port + p * 100)) -C 3 -V || {
			echo "FAIL: hubkilled: server $p did not serve its client" >&2
			exit 1
		}
		wait "${pids[$p]}" || exit 1
	done
	timeout 20 "$run" rping -c -a 127.0.0.1 -p "$port" -C 3 >"$dir/dead.out" 2>&1
	cat "$dir/dead.out"
	grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$dir/dead.out" || exit 1
	exit 0
	;;
*)
	echo "rdmacm.sh: unknown test $name" >&2
	exit 2
	;;
esac

UROCE_PCAP=$dir/server.pcap timeout 60 "$run" "${server_cmd[@]}" >"$dir/server.out" 2>&1 &
server=$!
sleep 0.3 # the server binds and listens (rdma_cm ports are no sockets ss could see)
timeout 60 "$run" "${client_cmd[@]}" >"$dir/client.out" 2>&1
client_rc=$?
[[ $name == cmtime ]] && kill -INT $server
wait $server
server_rc=$?
# cmtime's server stops at the signal (130 from the shell's view): that is its normal end.
[[ $name == cmtime ]] && ((server_rc == 130 || server_rc == 124)) && server_rc=0
if ((client_rc != 0 || server_rc != 0)); then
	echo "FAIL: $name: client $client_rc, server $server_rc" >&2
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
	exit 1
fi
tail -n 2 "$dir/client.out"
if [[ $name == rdma_xserver_xrc ]]; then
	ops=$(tshark -r "$dir/server.pcap" -d "udp.port==$UROCE_UDP_PORT,infiniband" \
		-T fields -e infiniband.bth.opcode 2>/dev/null | sort -u | tr '\n' ' ')
	echo "capture: BTH opcodes $ops"
	if ! grep -qw 164 <<<"$ops"; then # 0xA4: XRC SEND Only
		echo "FAIL: rdma_xserver_xrc: no XRC SEND Only in the capture" >&2
		exit 1
	fi
fi
if [[ $name == ucmatose ]]; then
	tos=$(tshark -r "$dir/server.pcap" -d "udp.port==$UROCE_UDP_PORT,infiniband" \
		-T fields -e ip.dsfield 2>/dev/null | sort | uniq -c)
	echo "capture: IP TOS of the frames: $tos"
	if [[ $(awk '{print $2}' <<<"$tos") != 0x60 ]]; then
		echo "FAIL: ucmatose: frames without the TOS the client set" >&2
		exit 1
	fi
fi
if [[ $name == cmtime ]] && { ! grep -q "^connect " "$dir/client.out" ||
	grep -qiE "error|fail" "$dir/client.out"; }; then
	echo "FAIL: cmtime: not every connection was made" >&2
	cat "$dir/client.out" >&2
	exit 1
fi
if [[ $name == rping ]]; then
	tshark=(tshark --disable-heuristic rpcrdma_infiniband -d "udp.port==$UROCE_UDP_PORT,infiniband"
		-r "$dir/server.pcap")
	cm=$("${tshark[@]}" -Y infiniband.mad -T fields -e infiniband.mad.attributeid 2>/dev/null |
		sort -u | tr '\n' ' ')
	malformed=$("${tshark[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null |
		wc -l)
	echo "capture: CM attributes $cm; $malformed malformed"
	# REQ 0x0010, REP 0x0013, RTU 0x0014, DREQ 0x0015, DREP 0x0016.
	for a in 0x0010 0x0013 0x0014 0x0015 0x0016; do
		if ! grep -q "$a" <<<"$cm"; then
			echo "FAIL: no CM attribute $a in the capture" >&2
			exit 1
		fi
	done
	((malformed == 0)) || exit 1
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$(dirname "$0")/../oracle/pcap_icrc.py" \
		"$dir/server.pcap" "$UROCE_UDP_PORT" || exit 1
fi
