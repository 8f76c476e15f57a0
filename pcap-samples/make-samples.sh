#!/usr/bin/env bash
# Regenerate every reference capture of pcap-samples/ (README.md there says what each shows):
# unmodified rdma-core programs where one plays the scenario, uroce-sample (tools/samples/)
# where none does, each as a server and a client process on loopback through uroce-run, one
# process's frames recorded (UROCE_PCAP).
#
#   make-samples.sh [--udp-port N] [--tcp-port N] BIN_DIR OUT_DIR
#
# BIN_DIR is a build tree's bin/ (uroce-run, uroce-sample); OUT_DIR receives NAME.pcap for each
# sample. --udp-port is the RoCEv2 port (default 4791, which Wireshark decodes as RoCE by
# itself); --tcp-port the first of the 9 ports the samples listen on (default 18800). Exits 0
# when every program ran as it should, 1 otherwise (with its output), 2 for a bad command line.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/shim/rdma-cm-ready.sh" # wait_rdma_cm_listen
bounded=$here/../tests/shim/bounded.sh # timeout(1) that reports where a program hung

# UROCE_FAULTS for the two samples of loss: faults.c's seeded generator loses the second packet
# the faulty process sends and none of the 38 after it (loss=0.1: seed 923 is the first with
# that pattern). In loss-retransmit that is the second packet of the client's first SEND, in
# read-retry the server's first READ response (its first packet is the REP).
LOSE_SECOND=loss=0.1,seed=923,dir=tx

udp=4791 tcp=18800
while (($# > 2)); do
	case $1 in
	--udp-port) udp=$2 ;;
	--tcp-port) tcp=$2 ;;
	*) break ;;
	esac
	shift 2
done
if (($# != 2)) || [[ ! $udp =~ ^[0-9]+$ || ! $tcp =~ ^[0-9]+$ ]]; then
	echo "usage: make-samples.sh [--udp-port N] [--tcp-port N] BIN_DIR OUT_DIR" >&2
	exit 2
fi
run=$1/uroce-run sample=$1/uroce-sample out=$2
for f in "$run" "$sample"; do
	[[ -x $f ]] || { echo "make-samples: no $f (build the tree first)" >&2; exit 1; }
done
mkdir -p "$out" || exit 1
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
# Nothing inherited may change what the programs do or record.
unset UROCE_PCAP UROCE_FAULTS UROCE_LOG
export UROCE_UDP_PORT=$udp

fail() {
	echo "make-samples: $1: $2" >&2
	for f in "$work/$1".*; do
		echo "--- ${f##*/}:" >&2
		sed 's/^/  | /' "$f" >&2
	done
	exit 1
}

# Wait until the server of sample NAME is ready: it logs its rdma_cm listen on PORT, or (READY
# tcp) it listens on TCP PORT (the pingpong examples exchange their QP numbers over TCP).
await_server() {
	local name=$1 ready=$2 port=$3 i
	if [[ $ready == tcp ]]; then
		for ((i = 0; i < 100; i++)); do
			ss -Hltn "sport = :$port" | grep -q . && return 0
			sleep 0.05
		done
		return 1
	fi
	wait_rdma_cm_listen "$work/$name.server" "$port "
}

# pair NAME SIDE READY PORT: run the server command "${server[@]}" (UROCE_FAULTS $server_faults
# if set), once it is ready the client "${client[@]}" (likewise $client_faults), and record
# SIDE's frames (server or client) in OUT_DIR/NAME.pcap. Both must exit 0.
pair() {
	local name=$1 side=$2 ready=$3 port=$4 src crc
	local sopt=(--log info) copt=()
	[[ -n ${server_faults:-} ]] && sopt+=(--faults "$server_faults")
	[[ -n ${client_faults:-} ]] && copt+=(--faults "$client_faults")
	[[ $side == server ]] && sopt+=(--pcap "$out/$name.pcap") || copt+=(--pcap "$out/$name.pcap")
	rm -f "$out/$name.pcap"
	"$bounded" 30 "$run" "${sopt[@]}" "${server[@]}" >"$work/$name.server" 2>&1 &
	pid=$!
	await_server "$name" "$ready" "$port" || fail "$name" "the server did not start"
	"$bounded" 30 "$run" "${copt[@]}" "${client[@]}" >"$work/$name.client" 2>&1
	crc=$?
	wait $pid
	src=$?
	pid=
	((crc == 0 && src == 0)) || fail "$name" "the client exited $crc, the server $src"
	server_faults= client_faults=
	echo "make-samples: $out/$name.pcap"
}

# 1. Every RC operation on one rdma_cm connection.
server=("$sample" ops server 127.0.0.1 $tcp) client=("$sample" ops client 127.0.0.1 $tcp)
pair rc-ops server rdma_cm $tcp

# 2a. No listener: the host answers the REQ with REJ 8. An idle rping server is the host's hub
# (the process holding the RoCE port, which answers), so that the client's capture shows its REQ
# and the hub's REJ rather than the REJ sent to itself and received.
name=reject-no-listener
rm -f "$out/$name.pcap"
"$bounded" 30 "$run" --log info rping -s -a 127.0.0.1 -p $((tcp + 1)) >"$work/$name.server" 2>&1 &
pid=$!
await_server $name rdma_cm $((tcp + 1)) || fail $name "the idle server did not start"
"$bounded" 30 "$run" --pcap "$out/$name.pcap" rdma_client -s 127.0.0.1 -p $((tcp + 2)) \
	>"$work/$name.client" 2>&1
grep -q "rdma_connect: Connection refused" "$work/$name.client" ||
	fail $name "rdma_client was not refused"
kill $pid
wait $pid
pid=
echo "make-samples: $out/$name.pcap"

# 2b. The server's application rejects, with private data.
server=("$sample" reject server 127.0.0.1 $((tcp + 3)))
client=("$sample" reject client 127.0.0.1 $((tcp + 3)))
pair reject-private-data server rdma_cm $((tcp + 3))

# 3. UD through SIDR: udaddy (its own rdma_cm port, 7174), one connection, 3 messages each way.
server=(udaddy -c 1 -C 3) client=(udaddy -c 1 -C 3 -s 127.0.0.1)
pair ud-sidr server rdma_cm 7174

# 4. A SEND before the receive: RNR NAK, then the retry.
server=("$sample" rnr server 127.0.0.1 $((tcp + 4)))
client=("$sample" rnr client 127.0.0.1 $((tcp + 4)))
pair rnr-nak server rdma_cm $((tcp + 4))

# 5. ibv_rc_pingpong, 3 messages of 4 packets each way; the client loses a packet: the server
# NAKs the gap (PSN sequence error) and the client sends again from the lost one.
server=(ibv_rc_pingpong -d uroce_lo -g 0 -p $((tcp + 5)) -n 3 -s 4096 -m 1024)
client=("${server[@]}" 127.0.0.1) client_faults=$LOSE_SECOND
pair loss-retransmit server tcp $((tcp + 5))

# 6. An RDMA READ of three packets whose first response is lost: the READ is asked again.
server=("$sample" read server 127.0.0.1 $((tcp + 6))) server_faults=$LOSE_SECOND
client=("$sample" read client 127.0.0.1 $((tcp + 6)))
pair read-retry server rdma_cm $((tcp + 6))

# 7. XRC over rdma_cm: rdma_xclient's XRC initiator sends to rdma_xserver's XRC target.
server=(rdma_xserver -p $((tcp + 7)) -c x) client=(rdma_xclient -s 127.0.0.1 -p $((tcp + 7)) -c x)
pair xrc server rdma_cm $((tcp + 7))

# 8. IPv6: rping over ::1, two pings with their data verified.
server=(rping -s -a ::1 -p $((tcp + 8)) -C 2 -V) client=(rping -c -a ::1 -p $((tcp + 8)) -C 2 -V)
pair ipv6-rping server rdma_cm $((tcp + 8))
