#!/usr/bin/env bash
# rdma-core's rdma_cm examples, unmodified, as a server and a client process on loopback through
# uroce-run (uroce's librdmacm.so.1 over the IB CM): the connection is set up, the data checked
# where the program can (rping -V), and the connection torn down, both exiting 0.
#   rdmacm.sh UROCE_RUN SANITIZER PORT NAME
# NAME: rping (-V, 100 pings of 4000 bytes; the server's capture must hold REQ, REP, RTU, DREQ
# and DREP, decode in tshark with no malformed frame and verify in scapy), rping_q (the
# application's own QP: CONNECT_RESPONSE and rdma_establish), ucmatose, rdma_server (with
# rdma_client: the synchronous API, rdma_create_ep and rdma_get_request), udaddy (UD: SIDR).
set -uo pipefail

run=$1 sanitizer=$2 port=$3 name=$4
if [[ $sanitizer == thread ]]; then
	echo "rdmacm: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
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
	client_cmd=(ucmatose -p "$port" -c 4 -C 20 -s 127.0.0.1)
	;;
rdma_server)
	server_cmd=(rdma_server -p "$port")
	client_cmd=(rdma_client -s 127.0.0.1 -p "$port")
	;;
udaddy) # UD through SIDR; udaddy has no port option (its own, 7174)
	server_cmd=(udaddy -c 2 -C 20)
	client_cmd=(udaddy -c 2 -C 20 -s 127.0.0.1)
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
wait $server
server_rc=$?
if ((client_rc != 0 || server_rc != 0)); then
	echo "FAIL: $name: client $client_rc, server $server_rc" >&2
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
	exit 1
fi
tail -n 2 "$dir/client.out"
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
