#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo: two processes -- rdma-core's
# unmodified ibv_rc_pingpong, server and client -- talking RoCEv2 over uroce on loopback, the
# server's traffic captured to build/uroce-pingpong.pcap; then Debian's rping, connecting
# through the rdma_cm (REQ, REP, RTU ... DREQ, DREP on the wire), captured to
# build/uroce-rping.pcap. Then uroce-demo writes a reference conversation of every packet kind
# to build/uroce-demo.pcap.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
"$top/scripts/build.sh" release
run=$top/build/release/bin/uroce-run
pcap=$top/build/uroce-pingpong.pcap
args=(-d uroce_lo -g 0 -n 100 -s 4096 -m 1024 -c -p 18515)

echo "== ibv_rc_pingpong server and client over uroce (capture: $pcap)"
UROCE_PCAP=$pcap timeout 60 "$run" ibv_rc_pingpong "${args[@]}" &
server=$!
for ((i = 0; i < 100; i++)); do
	ss -Hltn "sport = :18515" | grep -q . && break
	sleep 0.05
done
timeout 60 "$run" ibv_rc_pingpong "${args[@]}" 127.0.0.1
wait "$server"
echo "== the capture, as tshark decodes it (first frames)"
tshark --disable-heuristic rpcrdma_infiniband -r "$pcap" -c 12 2>/dev/null
rping_pcap=$top/build/uroce-rping.pcap
echo "== rping server and client over uroce's rdma_cm (capture: $rping_pcap)"
server_out=$top/build/uroce-rping-server.out
UROCE_PCAP=$rping_pcap timeout 60 "$run" rping -s -a 127.0.0.1 -p 18516 -C 10 -V \
	>"$server_out" 2>&1 &
server=$!
sleep 0.3 # the server listens (on no TCP port ss could show)
timeout 60 "$run" rping -c -a 127.0.0.1 -p 18516 -C 10 -V -v
rc=0
wait "$server" || rc=$?
sed 's/^/server: /' "$server_out"
((rc == 0))
echo "== the connection manager's messages in that capture"
tshark --disable-heuristic rpcrdma_infiniband -r "$rping_pcap" -Y infiniband.mad 2>/dev/null
echo "== reference frames"
exec "$top/build/release/bin/uroce-demo" --pcap "$top/build/uroce-demo.pcap"
