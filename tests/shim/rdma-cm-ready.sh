# Sourced by two-procs.sh and netns/two-hosts.sh. perftest with -R listens on an rdma_cm port,
# which no socket shows to ss; uroce logs the listen at info (UROCE_LOG=info), and that line is
# the server's readiness.

# uses_rdma_cm ARGS...: true if perftest's arguments ask for the rdma_cm.
uses_rdma_cm() {
	local a
	for a in "$@"; do
		[[ $a == -R || $a == --rdma_cm ]] && return 0
	done
	return 1
}

# wait_rdma_cm_listen OUTPUT [PORT]: wait (5 s at most) until the server's OUTPUT file says it
# listens (on PORT, if given).
wait_rdma_cm_listen() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q "rdma_cm: listening on port ${2:-}" "$1" && return 0
		sleep 0.05
	done
	return 1
}
