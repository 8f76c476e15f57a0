# Sourced by the middleware tests: where their server and client run.
#   pair_setup SANITIZER WHERE NAME N
# WHERE is "loopback" (two processes, the server at 127.0.0.1) or "netns" (two network
# namespaces uroce-NAME-a and uroce-NAME-b joined by a veth pair, 10.204.N.1 and .2, each
# process the hub of its own host; PAIR_NS_PREFIX and PAIR_NET change "uroce" and "10.204"). Sets $dir (a temporary folder), $in_a and $in_b (the
# command prefixes that run in the server's and the client's host) and $addr (the server's
# address), and removes all of it at exit, stopping $server if set. Exits 77 (skipped, with a
# message) for a ThreadSanitizer build, which system programs cannot load, and for netns
# without root.
pair_setup() {
	local sanitizer=$1 ns
	pair_where=$2 pair_a=${PAIR_NS_PREFIX:-uroce}-$3-a pair_b=${PAIR_NS_PREFIX:-uroce}-$3-b
	local n=$4 net=${PAIR_NET:-10.204}
	if [[ $sanitizer == thread ]]; then
		echo "skipped: system programs cannot load a ThreadSanitizer build of uroce"
		exit 77
	fi
	dir=$(mktemp -d)
	server=
	trap pair_cleanup EXIT
	case $pair_where in
	loopback)
		in_a=() in_b=() addr=127.0.0.1
		;;
	netns)
		ip netns del "$pair_a" 2>/dev/null
		ip netns del "$pair_b" 2>/dev/null
		if ((EUID != 0)) || ! ip netns add "$pair_a" 2>/dev/null; then
			echo "skipped: network namespaces need root (and ip netns)"
			exit 77
		fi
		ip netns add "$pair_b" || exit 1
		ip link add va netns "$pair_a" type veth peer name vb netns "$pair_b" || exit 1
		ip -n "$pair_a" addr add "$net.$n.1/24" dev va
		ip -n "$pair_b" addr add "$net.$n.2/24" dev vb
		for ns in "$pair_a" "$pair_b"; do
			ip -n "$ns" link set lo up
		done
		ip -n "$pair_a" link set va up
		ip -n "$pair_b" link set vb up
		# A host's links are up before its programs start: a uroce port is active once its
		# interface's operational state is up (IFF_RUNNING), which the kernel's link watch
		# sets up to a second after the carrier.
		local i
		for ((i = 0; i < 100; i++)); do
			ip -n "$pair_a" -o link show va | grep -q "state UP" &&
				ip -n "$pair_b" -o link show vb | grep -q "state UP" && break
			sleep 0.05
		done
		in_a=(ip netns exec "$pair_a") in_b=(ip netns exec "$pair_b") addr=$net.$n.1
		;;
	*)
		echo "pair_setup: where: loopback or netns, not $pair_where" >&2
		exit 2
		;;
	esac
}

pair_cleanup() {
	[[ -n ${server:-} ]] && kill "$server" 2>/dev/null
	if [[ $pair_where == netns ]]; then
		ip netns del "$pair_a" 2>/dev/null
		ip netns del "$pair_b" 2>/dev/null
	fi
	rm -rf "$dir"
}

# pair_wait_tcp PORT: wait (5 s at most) until the server's host listens on TCP PORT.
pair_wait_tcp() {
	local i
	for ((i = 0; i < 100; i++)); do
		"${in_a[@]}" ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
	return 1
}
