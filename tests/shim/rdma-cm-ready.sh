# Sourced by two-procs.sh, rdmacm.sh and netns/two-hosts.sh. perftest with -R (and any rdma_cm
# server) listens on an rdma_cm port, which no socket shows to ss; uroce logs the listen at info
# (UROCE_LOG=info), and that line is the server's readiness. Also what both say of a run's end:
# a perftest run that says nothing of uroce (its clock), and a server left waiting by a client
# that failed.

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

# perftest_run_lost OUTPUT: true, with the reason in $lost_why, if a failed perftest run's
# OUTPUT shows that the run says nothing of uroce and is to be run again: perftest could not
# measure the CPU's clock (get_cpu_mhz prints "Correlation coefficient r^2: ... < 0.9", then
# "Can't produce a report": it fits a busy loop's cycles against gettimeofday, a fit that a
# loaded machine spoils). perftest -R's own race (its client connects the test QP before its
# server listens for it) is no excuse on uroce: the host holds such a request for the listen
# it expects (fabric/rdv_int.h, rdv_held_req), so a rejection fails the test.
perftest_run_lost() {
	lost_why=
	if grep -qF 'Correlation coefficient r^2:' "$1"; then
		lost_why="perftest could not measure the CPU's clock (r^2 < 0.9: a loaded machine)"
	fi
	[[ -n $lost_why ]]
}

# stop_server PID CLIENT_RC: wait for server PID (a child of this shell) and set $server_rc to
# its exit status; a server whose client failed may wait for it for ever, so it gets 2 s to
# end and is then stopped.
stop_server() {
	local pid=$1 client_rc=$2 i
	for ((i = 0; client_rc && i < 20; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	((client_rc)) && kill "$pid" 2>/dev/null
	wait "$pid"
	server_rc=$?
}
