# Sourced by pingpong.sh and perftest.sh: run an rdma-core example or a perftest program as a
# server and a client process on loopback through uroce-run, the way their users do.
#   two_procs UROCE_RUN SANITIZER TCP_PORT PROGRAM [ARGS...]
# sets $dir (a temporary folder, removed at exit) holding server.out and client.out, and
# $server_rc and $client_rc; a server still running 2 s after its client failed is stopped.
# Each test uses its own TCP port and UDP port TCP_PORT + 10000 (the rendezvous is per UDP
# port), so tests run in parallel. With SERVER_CAPTURE=1 the server records its frames in
# $dir/server.pcap (UROCE_PCAP). A perftest server with -R (rdma_cm) is ready when uroce logs
# its listen (UROCE_LOG=info). Exits 77 (skipped) for a ThreadSanitizer build, which system
# programs cannot load.
. "$(dirname "${BASH_SOURCE[0]}")/rdma-cm-ready.sh"

two_procs() {
	local run=$1 sanitizer=$2 port=$3 prog=$4 server i
	shift 4
	if [[ $sanitizer == thread ]]; then
		echo "$prog: skipped: system programs cannot load a ThreadSanitizer build of uroce"
		exit 77
	fi
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	export UROCE_UDP_PORT=$((port + 10000))
	local senv=(env) rdma_cm=0
	[[ ${SERVER_CAPTURE:-0} == 1 ]] && senv+=("UROCE_PCAP=$dir/server.pcap")
	uses_rdma_cm "$@" && rdma_cm=1 && senv+=("UROCE_LOG=${UROCE_LOG:-info}")
	"${senv[@]}" timeout 60 "$run" "$prog" -p "$port" "$@" >"$dir/server.out" 2>&1 &
	server=$!
	# The server listens on its TCP port (or rdma_cm port) once its QP exists.
	if ((rdma_cm)); then
		wait_rdma_cm_listen "$dir/server.out" "$port "
	else
		for ((i = 0; i < 100; i++)); do
			ss -Hltn "sport = :$port" | grep -q . && break
			sleep 0.05
		done
	fi
	"$(dirname "${BASH_SOURCE[0]}")/bounded.sh" 60 "$run" "$prog" -p "$port" "$@" 127.0.0.1 >"$dir/client.out" 2>&1
	client_rc=$?
	stop_server "$server" "$client_rc"
}

# Print both outputs on stderr (after a failure).
show_outputs() {
	for side in server client; do
		echo "--- $side:" >&2
		sed 's/^/  | /' "$dir/$side.out" >&2
	done
}
