#!/usr/bin/env bash
# libfabric's fi_info (Debian's libfabric-bin) through uroce-run lists, for every uroce device
# whose interface has an address, the verbs provider's MSG endpoints, verbs;ofi_rxm's RDM
# endpoints and the verbs DGRAM endpoints ("<device>-dgram"), as it does for the kernel's rxe.
# The loopback device gets DGRAM only: rdma_cm counts 127.0.0.1 and ::1 as "any" address
# (cma_any_addr), so libfabric finds no device behind them for MSG. Runs in a namespace with
# two interfaces (a veth pair, each end its own IPv4 subnet, one with IPv6 too) and lo.
# Usage: fi-info.sh UROCE_RUN SANITIZER
set -uo pipefail
run=$1
. "$(dirname "$0")/../support/skip.sh"
skip_thread "$2"
skip_unless_root
command -v fi_info >/dev/null ||
	{ echo "fi-info.sh: fi_info not found (libfabric-bin; scripts/setup.sh installs it)" >&2; exit 1; }
ns=uroce-fi-info
ip netns del $ns 2>/dev/null
ip netns add $ns || exit 1
trap 'ip netns del $ns 2>/dev/null' EXIT
ip -n $ns link add fa type veth peer name fb || exit 1
ip -n $ns addr add 10.204.46.1/24 dev fa
ip -n $ns addr add 10.204.47.1/24 dev fb
ip -n $ns addr add fd00:46::1/64 dev fa nodad
for l in lo fa fb; do ip -n $ns link set $l up; done
for ((i = 0; i < 100; i++)); do
	ip -n $ns -o link show fa | grep -q "state UP" &&
		ip -n $ns -o link show fb | grep -q "state UP" && break
	sleep 0.05
done
out=$(ip netns exec $ns "$run" fi_info -p verbs 2>&1)
# One "provider|domain|type" line per fabric interface fi_info lists.
found=$(awk '$1 == "provider:" { p = $2 } $1 == "domain:" { d = $2 }
	$1 == "type:" { print p "|" d "|" $2 }' <<<"$out" | sort -u)
want=("verbs|uroce_lo-dgram|FI_EP_DGRAM")
for d in fa fb; do
	want+=("verbs|uroce_$d|FI_EP_MSG" "verbs;ofi_rxm|uroce_$d|FI_EP_RDM"
		"verbs|uroce_$d-dgram|FI_EP_DGRAM")
done
fail=0
for w in "${want[@]}"; do
	if ! grep -qxF "$w" <<<"$found"; then
		echo "FAIL: fi_info -p verbs lists no ${w//|/ } endpoint" >&2
		fail=1
	fi
done
if grep -q "|uroce_lo|FI_EP_MSG" <<<"$found"; then
	echo "FAIL: fi_info -p verbs lists MSG endpoints on uroce_lo, whose addresses rdma_cm calls any" >&2
	fail=1
fi
if ((fail)); then
	echo "--- fi_info -p verbs: provider|domain|type" >&2
	echo "$found" >&2
	tail -n 5 <<<"$out" >&2
	exit 1
fi
echo "$found"
echo "fi-info.sh: MSG, RDM (verbs;ofi_rxm) and DGRAM on uroce_fa and uroce_fb, DGRAM on uroce_lo"
