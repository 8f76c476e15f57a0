#!/usr/bin/env bash
# The client's capture of a connection doing every RC operation (uroce-sample ops), five times:
# each frame comes before any frame answering it (oracle/capture_order.py). The client's
# requests are answered while its sending thread is still in the send call, which is where a
# capture recorded after the send went wrong.
# Usage: capture-order.sh PYTHON BIN_DIR SANITIZER UDP_PORT TCP_PORT
set -uo pipefail
python=$1 bin=$2 sanitizer=$3 udp=$4 tcp=$5
here=$(dirname "$0")
. "$here/rdma-cm-ready.sh"
if [[ $sanitizer == thread ]]; then
	echo "capture-order: skipped: a ThreadSanitizer build cannot be loaded by other programs"
	exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export UROCE_UDP_PORT=$udp
for i in 1 2 3 4 5; do
	UROCE_LOG=info timeout 30 "$bin/uroce-run" "$bin/uroce-sample" ops server 127.0.0.1 "$tcp" >"$dir/server.out" 2>&1 &
	server=$!
	wait_rdma_cm_listen "$dir/server.out" "$tcp " || { cat "$dir/server.out"; exit 1; }
	UROCE_PCAP=$dir/client$i.pcap timeout 30 "$bin/uroce-run" "$bin/uroce-sample" ops client 127.0.0.1 "$tcp" \
		>"$dir/client.out" 2>&1 || { echo "client $i failed:"; cat "$dir/client.out"; exit 1; }
	wait $server || { echo "server $i failed:"; cat "$dir/server.out"; exit 1; }
done
"$python" "$here/../oracle/capture_order.py" "$dir"/client*.pcap
