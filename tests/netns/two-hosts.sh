#!/usr/bin/env bash
# Run an unmodified rdma-core or perftest program between two "hosts": network namespaces joined
# by a veth pair, each process the only uroce process of its namespace (so each holds UDP 4791
# itself, as on two machines). Needs root; exits 77 (skipped, with a message) otherwise.
#
# Usage: two-hosts.sh UROCE_RUN SANITIZER NAME FAMILY CHECK PROGRAM [ARGS...]
#   NAME    short and unique per test: names the namespaces and picks the addresses
#   FAMILY  4, 6 or 6ll: the RoCE traffic's (the GIDs of 10.200.N.1/.2, fd00:200:N::1/::2, or
#           the veth's IPv6 link-local addresses); the programs' own TCP exchange always uses
#           IPv4, which the examples' servers listen on. 6only: the veths have no IPv4 address
#           at all (for rdma_cm programs, which need no TCP exchange)
#   CHECK   "bytes" (rdma-core examples print their throughput), "perftest" (a result row),
#           "rdmacm" (rping -s/-c -a, ucmatose, udaddy and cmtime -b/-s, rdma_server with
#           rdma_client, rdma_xserver with rdma_xclient: the server's address, no TCP; the
#           exit statuses say whether it went right, rping -V's every byte), "mckey" (host b receives, host a
#           sends, in group 239.1.2.3 or ff0e::1:2 joined through rdma_join_multicast_ex),
#           "unreachable" (rping -c to host b, where nothing runs: UNREACHABLE at once on the
#           ICMP port unreachable; with SILENT=1, b sends no ICMP: after the REQ's ~74 s)
# Each host's ibv_devices must list its own veth's device and not its peer's.
# Environment: LOSS=P drops P% of the RoCE packets entering either host (nftables numgen
# random, an independent check of retransmission: this kernel has no netem) -- all but RC
# ACKs (opcode 0x11), so that no program loses the last ACK of a peer that has already exited,
# which no retransmission could bring back. The veths then segment each UDP GSO train before
# it crosses (gso_max_segs 1), so that nftables sees and drops single packets as a switch
# would; TRAINS=1 leaves the trains whole, so that a drop takes a whole train (burst loss, a
# message lost whole: only the ACK timeout recovers it). An ACK that rides at the end of a
# train (the reply's) is lost with it, so with TRAINS=1 the drops stop after the first 48 MiB
# entering a host (nftables quota): a last exchange whose ACK and then its retransmission are
# lost would end ibv_rc_pingpong's server (no closing handshake) before its peer's last send
# is acknowledged, as it would on any lossy network. CAPTURE=1 records host b's
# frames and checks they decode in tshark as RoCE with no malformed frame and that scapy
# verifies every ICRC; FAULTS=SPEC sets UROCE_FAULTS for both processes; SILENT=1 drops the
# ICMP errors host b would send.
set -uo pipefail

run=$1 sanitizer=$2 name=$3 family=$4 check=$5 prog=$6
source "$(dirname "$0")/../shim/rdma-cm-ready.sh"
shift 6
if [[ $sanitizer == thread ]]; then
	echo "two-hosts: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi

a=uroce-$name-a b=uroce-$name-b
# Namespaces of this test left by a run killed at its timeout (no trap runs on SIGKILL).
ip netns del "$a" 2>/dev/null
ip netns del "$b" 2>/dev/null
if ((EUID != 0)) || ! ip netns add "$a" 2>/dev/null; then
	echo "two-hosts: skipped: network namespaces need root (and ip netns)"
	exit 77
fi
n=$(( $(cksum <<<"$name" | cut -d' ' -f1) % 200 + 10 ))
dir=$(mktemp -d)
cleanup() {
	kill "${server:-}" 2>/dev/null
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$b" || exit 1
ip link add va netns "$a" type veth peer name vb netns "$b" || exit 1
for ns in "$a" "$b"; do
	ip -n "$ns" link set lo up
done
tcp_b=10.200.$n.2
if [[ $family != 6only ]]; then
	ip -n "$a" addr add "10.200.$n.1/24" dev va
	ip -n "$b" addr add "$tcp_b/24" dev vb
fi
if [[ $family == 6 || $family == 6only ]]; then
	addr_a=fd00:200:$n::1 addr_b=fd00:200:$n::2
	ip -n "$a" addr add "$addr_a/64" dev va nodad
	ip -n "$b" addr add "$addr_b/64" dev vb nodad
elif [[ $family == 6ll ]]; then
	addr_a=fe80::200:$n:1 addr_b=fe80::200:$n:2
	ip -n "$a" addr add "$addr_a/64" dev va nodad
	ip -n "$b" addr add "$addr_b/64" dev vb nodad
else
	addr_a=10.200.$n.1 addr_b=$tcp_b
fi
ip -n "$a" link set va up
ip -n "$b" link set vb up
for ((i = 0; i < 100; i++)); do
	ip -n "$a" link show va | grep -q LOWER_UP && ip -n "$b" link show vb | grep -q LOWER_UP &&
		break
	sleep 0.05
done
if [[ -n ${LOSS:-} ]]; then
	if [[ ${TRAINS:-0} != 1 ]]; then
		ip -n "$a" link set va gso_max_segs 1 && ip -n "$b" link set vb gso_max_segs 1 || exit 1
	fi
	until=
	[[ ${TRAINS:-0} == 1 ]] && until="quota until 48 mbytes"
	for ns in "$a" "$b"; do
		ip netns exec "$ns" nft -f - <<NFT || exit 1
table inet uroce_loss {
	chain input {
		type filter hook input priority 0;
		udp dport 4791 @th,64,8 != 0x11 $until numgen random mod 100 < $LOSS counter drop
	}
}
NFT
	done
fi
if [[ ${SILENT:-0} == 1 ]]; then
	# Host b answers nothing: not even the ICMP errors its kernel would send.
	ip netns exec "$b" nft -f - <<NFT || exit 1
table inet uroce_silent {
	chain output {
		type filter hook output priority 0;
		meta l4proto { icmp, ipv6-icmp } counter drop
	}
}
NFT
fi

# Each host sees its own interfaces only.
for ns in "$a" "$b"; do
	own=uroce_v${ns: -1} peer=uroce_v$([[ $ns == "$a" ]] && echo b || echo a)
	devices=$(ip netns exec "$ns" "$run" ibv_devices 2>&1)
	if ! grep -qw "$own" <<<"$devices" || grep -qw "$peer" <<<"$devices"; then
		echo "FAIL: ibv_devices in $ns lists no $own or lists $peer:" >&2
		echo "$devices" >&2
		exit 1
	fi
done

# The GID index of the address on the veth: the example programs take -g, perftest -x.
gid_index() {
	local ns=$1 want=$2
	ip netns exec "$ns" "$run" ibv_devinfo -d uroce_v"${ns: -1}" -v 2>/dev/null |
		awk -v want="$want" '/GID\[/ { gsub(/[\t ]+/, " "); split($0, f, " ");
			idx = f[2]; sub(/GID\[/, "", idx); sub(/\]:/, "", idx);
			if (index($0, want)) { print idx; exit } }'
}

env=()
# With faults, each engine's totals and any QP's state at an error, for the failure's report.
[[ -n ${FAULTS:-} ]] && env+=("UROCE_FAULTS=$FAULTS" UROCE_LOG=info)
capture=()
[[ ${CAPTURE:-0} == 1 ]] && capture=("UROCE_PCAP=$dir/b.pcap")
want_b=$addr_b want_a=$addr_a
[[ $family == 4 ]] && want_b=":$addr_b" want_a=":$addr_a"
gb=$(gid_index "$b" "$want_b") ga=$(gid_index "$a" "$want_a")
if [[ -z $gb || -z $ga ]]; then
	echo "FAIL: no GID for $addr_a / $addr_b in the devices of the namespaces" >&2
	ip netns exec "$b" "$run" ibv_devinfo -v >&2
	exit 1
fi
gflag=-g
[[ $prog == ib_* ]] && gflag=-x

if [[ $check == unreachable ]]; then
	# Nothing runs on host b. Its kernel answers the REQ with ICMP port unreachable: the
	# connection is UNREACHABLE at once, -ECONNREFUSED (uroce acts on the ICMP error; the
	# kernel's CM would wait out the REQ's retries). With SILENT=1 no ICMP comes back: the REQ
	# goes 16 times at its IBTA interval (2 x packet lifetime + remote CM response timeout:
	# 4.6 s), then UNREACHABLE with -ETIMEDOUT, as the kernel's rdma_cm (PROTOCOL.md §4.9).
	want="error -111" least=0 most=5
	[[ ${SILENT:-0} == 1 ]] && want="error -110" least=65 most=100
	start=$(date +%s)
	ip netns exec "$a" timeout 110 "$run" "$prog" -c -a "$addr_b" "$@" >"$dir/client.out" 2>&1
	rc=$? secs=$(($(date +%s) - start))
	cat "$dir/client.out"
	echo "the client ended after $secs s (exit $rc)"
	if ! grep -q "RDMA_CM_EVENT_UNREACHABLE, $want" "$dir/client.out" || ((rc == 0)) ||
		((secs < least || secs > most)); then
		echo "FAIL: no UNREACHABLE ($want) within $least..$most s" >&2
		exit 1
	fi
	exit 0
fi

client_prog=$prog
if [[ $check == rdmacm ]]; then
	# The rdma_cm finds device and GID from the address; no TCP side channel.
	case $prog in
	rping) server_args=(-s -a "$addr_b" "$@") client_args=(-c -a "$addr_b" "$@") ;;
	ucmatose | udaddy | cmtime)
		server_args=(-b "$addr_b" "$@") client_args=(-s "$addr_b" "$@") ;;
	rdma_server) server_args=(-s "$addr_b" "$@") client_args=(-s "$addr_b" "$@")
		client_prog=rdma_client ;;
	rdma_xserver) server_args=("$@") client_args=(-s "$addr_b" "$@")
		client_prog=rdma_xclient ;;
	*) echo "two-hosts: no rdma_cm arguments known for $prog" >&2; exit 2 ;;
	esac
elif [[ $check == mckey ]]; then
	group=239.1.2.3
	[[ $family == 6* ]] && group=ff0e::1:2
	server_args=(-m "$group" -b "$addr_b" "$@") client_args=(-m "$group" -b "$addr_a" -s "$@")
else
	server_args=(-d uroce_vb "$gflag" "$gb" "$@")
	client_args=(-d uroce_va "$gflag" "$ga" "$@" "$tcp_b")
fi
rdma_cm=0 server_env=()
uses_rdma_cm "$@" && rdma_cm=1 && server_env=("UROCE_LOG=info")
# Server on host b, client on host a; sets $client_rc and $server_rc.
run_pair() {
	ip netns exec "$b" env "${env[@]}" "${server_env[@]}" "${capture[@]}" timeout 90 "$run" \
		"$prog" "${server_args[@]}" >"$dir/server.out" 2>&1 &
	server=$!
	if ((rdma_cm)); then
		wait_rdma_cm_listen "$dir/server.out"
	elif [[ $check == rdmacm || $check == mckey ]]; then
		sleep 0.3 # it listens on no TCP port that ss could show
	else
		for ((i = 0; i < 100; i++)); do
			ip netns exec "$b" ss -Hltn | grep -q . && break
			sleep 0.05
		done
	fi
	ip netns exec "$a" env "${env[@]}" "$(dirname "$0")/../shim/bounded.sh" 90 "$run" \
		"$client_prog" "${client_args[@]}" >"$dir/client.out" 2>&1
	client_rc=$?
	[[ $prog == cmtime ]] && kill -INT "$server" # its server runs until stopped (rdma-core 44)
	stop_server "$server" "$client_rc"
}
# A run lost to perftest's clock is run again, nine times at most (rdma-cm-ready.sh).
attempt=1
while run_pair
	((attempt < 10 && (client_rc || server_rc))) &&
		{ perftest_run_lost "$dir/client.out" || perftest_run_lost "$dir/server.out"; }; do
	echo "$prog: run $attempt: $lost_why; again"
	((attempt++))
done
[[ $prog == cmtime ]] && ((server_rc == 130 || server_rc == 124)) && server_rc=0

ok=1
case $check in
bytes)
	# With -c the examples' server checks the data received but only says so ("invalid data
	# in page N"), still exiting 0.
	for side in server client; do
		grep -qE "bytes in .* seconds|^success$" "$dir/$side.out" || ok=0
		grep -q "invalid data" "$dir/$side.out" && ok=0
	done
	;;
perftest)
	# The first row after the header (UROCE_LOG=info messages may come between).
	awk '/#bytes/ { seen = 1; next } seen && /^ *[0-9]+ +[0-9]+/ { found = 1; exit }
		END { exit !found }' "$dir/client.out" || ok=0
	;;
rdmacm) ;; # rping -V exits non-zero on a wrong byte
mckey) # the receiver waits for every message
	grep -q "data transfers complete" "$dir/server.out" || ok=0
	;;

esac
if ((client_rc != 0 || server_rc != 0 || !ok)); then
	echo "FAIL: $prog $* between two namespaces (client $client_rc, server $server_rc)" >&2
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
	exit 1
fi
tail -n 3 "$dir/client.out"
if [[ -n ${LOSS:-} ]]; then
	for ns in "$a" "$b"; do
		echo "nftables dropped in $ns: $(ip netns exec "$ns" nft list table inet uroce_loss |
			grep -o 'used [0-9]* [a-z]*\|packets [0-9]*' | tr '\n' ' ')"
	done
fi
if [[ ${CAPTURE:-0} == 1 ]]; then
	tshark=(tshark --disable-heuristic rpcrdma_infiniband -r "$dir/b.pcap")
	frames=$("${tshark[@]}" -T fields -e frame.number | wc -l)
	roce=$("${tshark[@]}" -Y infiniband.bth -T fields -e frame.number | wc -l)
	malformed=$("${tshark[@]}" -Y '_ws.malformed || _ws.expert.severity >= error' | wc -l)
	echo "capture: $frames frames, $roce RoCE, $malformed malformed"
	if ((frames == 0 || roce != frames || malformed != 0)); then
		echo "FAIL: the capture is not clean RoCE" >&2
		"${tshark[@]}" | head -20 >&2
		exit 1
	fi
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$(dirname "$0")/../oracle/pcap_icrc.py" \
		"$dir/b.pcap" || exit 1
fi
