#!/usr/bin/env bash
# Run one of rdma-core's unmodified pingpong examples as a server and a client process on
# loopback through uroce-run, and check both finish and report their transfer. With
# PCAP_CHECK=1 the server's capture (UROCE_PCAP) must decode in tshark with no malformed frame
# and show RoCE traffic with the expected opcodes.
# Usage: pingpong.sh UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
set -uo pipefail

prog=$4
. "$(dirname "$0")/two-procs.sh"
SERVER_CAPTURE=${PCAP_CHECK:-0} two_procs "$@"
shift 4
fail=0
for side in server client; do
	rc_var=${side}_rc
	# The examples end with their throughput; ibv_xsrq_pingpong with "success". With -c a
	# server that received wrong bytes only prints "invalid data in page N" and exits 0.
	if [[ ${!rc_var} != 0 ]] || ! grep -qE "bytes in .* seconds|^success$" "$dir/$side.out" ||
		grep -q "invalid data" "$dir/$side.out"; then
		echo "FAIL: $prog $* ($side) exited ${!rc_var}" >&2
		fail=1
	fi
done
((fail)) && show_outputs && exit 1
cat "$dir/client.out"

if [[ ${PCAP_CHECK:-0} == 1 ]]; then
	tshark=(tshark --disable-heuristic rpcrdma_infiniband -d "udp.port==$UROCE_UDP_PORT,infiniband"
		-r "$dir/server.pcap")
	frames=$("${tshark[@]}" -T fields -e frame.number | wc -l)
	malformed=$("${tshark[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' | wc -l)
	sends=$("${tshark[@]}" -Y 'infiniband.bth.opcode <= 5' | wc -l)
	acks=$("${tshark[@]}" -Y 'infiniband.bth.opcode == 17' | wc -l)
	# Received frames too keep the TTL they came with (the sockets report it while capturing).
	ttls=$("${tshark[@]}" -T fields -e ip.ttl -e ipv6.hlim | sort | uniq -c | tr -s ' \n' ' ')
	echo "capture: $frames frames, $sends RC SEND, $acks ACK, $malformed malformed; TTLs:$ttls"
	if ((frames == 0 || malformed != 0 || sends == 0 || acks == 0)) ||
		[[ $("${tshark[@]}" -Y 'ip.ttl == 0 || ipv6.hlim == 0' | wc -l) != 0 ]]; then
		echo "FAIL: the capture is not a clean RoCE pingpong" >&2
		"${tshark[@]}" | head -20 >&2
		exit 1
	fi
	# Each ICRC, checked by scapy and the reference oracle (tshark does not check them).
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$(dirname "$0")/../oracle/pcap_icrc.py" \
		"$dir/server.pcap" "$UROCE_UDP_PORT" || exit 1
fi
