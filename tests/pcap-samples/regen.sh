#!/usr/bin/env bash
# pcap-samples/make-samples.sh regenerates every reference capture, on a UDP port and TCP ports
# of this test's own (tests run in parallel), into a temporary folder, and each capture is
# checked as the checked-in ones are (oracle/pcap_samples.py).
#   regen.sh PYTHON MAKE_SAMPLES BIN_DIR SANITIZER UDP_PORT TCP_PORT
# Exits 77 (skipped) for a ThreadSanitizer build, which system programs cannot load.
set -uo pipefail
python=$1 make_samples=$2 bin=$3 sanitizer=$4 udp=$5 tcp=$6
if [[ $sanitizer == thread ]]; then
	echo "pcap-samples: skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s%N)
"$make_samples" --udp-port "$udp" --tcp-port "$tcp" "$bin" "$dir" || exit 1
echo "regenerated in $((($(date +%s%N) - start) / 1000000)) ms"
"$python" "$(dirname "$0")/../oracle/pcap_samples.py" "$dir" "$udp"
