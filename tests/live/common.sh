# shellcheck shell=bash disable=SC2034 # sets variables for the test that sources it
# Sourced by the live-view tests (live.cmake): a running program's frames seen by tshark as they
# come, through a FIFO the library writes (fabric/pcap.c) or uroce-run --pcap -.
#   live_setup UROCE_RUN SANITIZER TCP_PORT UDP_PORT
# sets $run, $port (rping's rdma_cm port), $dir (a temporary folder, removed at exit),
# UROCE_UDP_PORT, and $tshark_live (tshark's options for a live capture on that UDP port: a line
# per frame as it comes, and the frames saved in $dir/saved.pcapng for the checks afterwards).
# Exits 77 (skipped) for a ThreadSanitizer build, which system programs cannot load.
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/../shim/rdma-cm-ready.sh"

live_setup() {
	run=$1 port=$3
	if [[ $2 == thread ]]; then
		echo "live: skipped: system programs cannot load a ThreadSanitizer build of uroce"
		exit 77
	fi
	dir=$(mktemp -d)
	trap 'live_cleanup' EXIT
	export UROCE_UDP_PORT=$4
	tshark_live=(-l -d "udp.port==$UROCE_UDP_PORT,infiniband"
		--disable-heuristic rpcrdma_infiniband -P -w "$dir/saved.pcapng"
		-T fields -e frame.number -e _ws.col.Info)
}

# Background processes a failed test leaves are ended (by their own ids) before the folder goes.
live_pids=()
live_cleanup() {
	local p
	for p in "${live_pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$dir"
}

fail() {
	echo "FAIL: $*" >&2
	local f
	for f in "$dir"/*.out "$dir"/*.err; do
		[[ -e $f ]] || continue
		echo "--- ${f##*/} (its last 40 lines):" >&2
		tail -n 40 "$f" | sed 's/^/  | /' >&2
	done
	exit 1
}

# check_live OUTPUT: tshark's lines (OUTPUT, printed as the frames came) hold rping's rdma_cm
# handshake and teardown (CM MADs, IB spec vol. 1 12.6) and its RoCE traffic (RC SEND, RDMA
# READ and WRITE, ACKs); every frame tshark saved is listed; none is malformed or has an error.
check_live() {
	local out=$1 what n saved malformed
	for what in "CM: ConnectRequest" "CM: ConnectReply" "CM: ReadyToUse" \
		"CM: DisconnectRequest" "CM: DisconnectReply" "RC Send Only" \
		"RC RDMA Read Request" "RC RDMA Read Response" "RC RDMA Write" "RC Acknowledge"; do
		grep -q "$what" "$out" || fail "tshark showed no '$what' frame"
	done
	n=$(wc -l <"$out")
	saved=$(tshark -r "$dir/saved.pcapng" 2>/dev/null | wc -l)
	((n > 0 && n == saved)) || fail "tshark printed $n frames but saved $saved"
	malformed=$(tshark -r "$dir/saved.pcapng" -d "udp.port==$UROCE_UDP_PORT,infiniband" \
		--disable-heuristic rpcrdma_infiniband \
		-Y '_ws.malformed || _ws.expert.severity >= error' 2>/dev/null | wc -l)
	((malformed == 0)) || fail "$malformed malformed frames"
	echo "live: tshark showed $n frames as they came: $(grep -c 'CM: ' "$out") CM MADs," \
		"$(grep -c $'\tRC ' "$out") RC packets, none malformed"
}
