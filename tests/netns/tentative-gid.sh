#!/usr/bin/env bash
# An IPv6 address in duplicate address detection is no GID until detection has passed: the
# kernel refuses a tentative address as a datagram's source (ip6_datagram_send_ctl), so a peer
# told of it would wait for ever. In a namespace with a veth pair: an address added with DAD is
# missing from ibv_devinfo's GIDs while `ip` calls it tentative, and present once it is valid.
#   tentative-gid.sh UROCE_RUN SANITIZER
set -uo pipefail
run=$1
. "$(dirname "$0")/../support/skip.sh"
skip_thread "$2"
skip_unless_root
ns=uroce-tentative
ip netns del $ns 2>/dev/null
ip netns add $ns || exit 1
trap 'ip netns del $ns 2>/dev/null' EXIT
ip -n $ns link add ta type veth peer name tb || exit 1
ip -n $ns addr add 10.205.0.1/24 dev ta
ip -n $ns link set ta up
ip -n $ns link set tb up
# The carrier first: its arrival restarts detection (addrconf_dad_run).
for ((i = 0; i < 100; i++)); do
	ip -n $ns -o link show ta | grep -q "state UP" && break
	sleep 0.05
done
# Detection sends 2 probes a second apart, so the address stays tentative about 2 s.
ip netns exec $ns sysctl -qw net.ipv6.conf.ta.dad_transmits=2
gids() { ip netns exec $ns "$run" ibv_devinfo -v -d uroce_ta 2>&1 | grep -c "$1\$\|$1,"; }
# The address's state as `ip` reports it: absent, dadfailed, tentative or valid.
state() {
	local line
	line=$(ip -n $ns -6 -o addr show dev ta | grep " $1/") || { echo absent; return; }
	case $line in
	*dadfailed*) echo dadfailed ;;
	*tentative*) echo tentative ;;
	*) echo valid ;;
	esac
}
dump() {
	echo "--- ip -6 addr show dev ta; ibv_devinfo's GIDs:" >&2
	ip -n $ns -6 addr show dev ta >&2
	ip netns exec $ns "$run" ibv_devinfo -v -d uroce_ta 2>&1 | grep GID >&2
}
# Each address is checked while tentative and again once valid. An address that leaves the
# tentative state other than by passing detection (the kernel flushes IPv6 addresses when a
# link loses its carrier) is reported and the next one tried.
for addr in 2001:db8:5::1 2001:db8:5::2 2001:db8:5::3; do
	ip -n $ns addr add $addr/64 dev ta || exit 1
	[[ $(state $addr) == tentative ]] || continue
	seen=$(gids $addr)
	[[ $(state $addr) == tentative ]] || continue
	if ((seen != 0)); then
		echo "FAIL: the tentative IPv6 address $addr is a GID of uroce_ta" >&2
		dump
		exit 1
	fi
	for ((i = 0; i < 100; i++)); do
		[[ $(state $addr) == tentative ]] || break
		sleep 0.1
	done
	st=$(state $addr)
	case $st in
	valid) ;;
	tentative)
		echo "FAIL: $addr is still tentative after 10 s" >&2
		dump
		exit 1
		;;
	*)
		echo "note: $addr is $st after detection; trying the next address" >&2
		dump
		continue
		;;
	esac
	if (($(gids $addr) != 1)); then
		echo "FAIL: $addr is no GID of uroce_ta once detection has passed" >&2
		dump
		exit 1
	fi
	echo "tentative-gid: a tentative IPv6 address becomes a GID once detection has passed"
	exit 0
done
echo "FAIL: no address stayed tentative long enough to be checked" >&2
dump
exit 1
