#!/usr/bin/env bash
# An MPI program of our own (tools/bench/mpi_check.c, uroce-bench's too: ping-pong with data
# checks up to 4 MiB, MPI_Allreduce, MPI_Alltoall, MPI_Put and MPI_Get) under uroce-run, NP
# ranks, through one of Debian's MPI libraries and the RDMA path named, with no shared memory
# between the ranks that ping-pong:
#   openmpi ucx   mpirun --mca pml ucx --mca osc ucx, UCX_TLS=rc_verbs,ud_verbs,self
#   openmpi ofi   mpirun --mca pml cm --mca mtl ofi --mca osc pt2pt, FI_PROVIDER="verbs;ofi_rxm"
#   mpich   ucx   mpiexec.mpich (Debian builds MPICH with ch4:ucx, not ch4:ofi),
#                 UCX_TLS=rc_verbs,ud_verbs,self
# WHERE is "loopback" (every rank on this host) or "netns" (two namespace hosts joined by a
# veth pair, middleware/pair.sh; ranks alternate between them, so ranks 0 and 1 are on
# different hosts; the launcher reaches host b through middleware/netns-launch.sh, no ssh).
# MPICH keeps the ranks of one host on its own shared memory: on loopback its launcher starts
# the ranks on two "hosts" that differ in name only (netns-launch.sh), as a cluster would.
# Every rank must end well and rank 0 print "mpi_check: ok"; where ranks 0 and 1 are on
# different hosts, mpi_check's host names must say so; and the ping-pong's messages must have
# travelled as RoCE: between namespaces host b's nftables counts the datagrams it receives,
# on loopback uroce's captures (UROCE_PCAP) count the frames.
# Usage: mpi.sh UROCE_RUN SANITIZER openmpi|mpich ucx|ofi NP loopback|netns [N]
set -uo pipefail

run=$1 impl=$3 path=$4 np=$5 where=$6
here=$(cd "$(dirname "$0")" && pwd)
case $impl in
openmpi) mpicc=mpicc.openmpi mpirun=mpirun.openmpi pkgs="openmpi-bin, libopenmpi-dev" ;;
mpich) mpicc=mpicc.mpich mpirun=mpiexec.mpich pkgs="mpich, libmpich-dev" ;;
*) echo "mpi.sh: openmpi or mpich, not $impl" >&2; exit 2 ;;
esac
for p in $mpicc $mpirun; do
	command -v $p >/dev/null ||
		{ echo "mpi.sh: $p not found ($pkgs; scripts/setup.sh installs them)" >&2; exit 1; }
done
if [[ $impl == mpich && $where == loopback && $EUID != 0 ]]; then
	echo "skipped: MPICH's two hosts on loopback need root (unshare --uts)"
	exit 77
fi
. "$here/pair.sh"
pair_setup "$2" "$where" "mpi-$impl-$path-$np" "${7:-0}"
$mpicc -O2 -o "$dir/mpi_check" "$here/../../tools/bench/mpi_check.c" || exit 1

export UROCE_UDP_PORT=${UROCE_UDP_PORT:-28930}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case $impl/$path in
openmpi/ucx)
	export UCX_TLS=rc_verbs,ud_verbs,self
	args=(--oversubscribe --mca pml ucx --mca osc ucx --mca btl self -x UCX_TLS -x UROCE_UDP_PORT)
	;;
openmpi/ofi)
	export FI_PROVIDER="verbs;ofi_rxm"
	args=(--oversubscribe --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm"
		--mca btl self --mca osc pt2pt -x FI_PROVIDER -x UROCE_UDP_PORT)
	;;
mpich/ucx)
	export UCX_TLS=rc_verbs,ud_verbs,self
	args=()
	;;
*) echo "mpi.sh: $impl over $path: not a combination this test knows" >&2; exit 2 ;;
esac
if [[ $where == netns ]]; then
	addr_b=${addr%.1}.2
	export NETNS_LAUNCH_HOSTS="$addr=$pair_a $addr_b=$pair_b" NETNS_LAUNCH_RUN=$run
	# Host b counts the RoCE datagrams it receives (a GSO train crossing the veth whole counts
	# once): the ping-pong alone sends host b 420 messages.
	ip netns exec "$pair_b" nft -f - <<NFT || exit 1
table inet uroce_mpi {
	chain input {
		type filter hook input priority 0;
		udp dport $UROCE_UDP_PORT counter
	}
}
NFT
	if [[ $impl == openmpi ]]; then
		printf '%s slots=%d\n%s slots=%d\n' "$addr" "$np" "$addr_b" "$np" >"$dir/hosts"
		args+=(--hostfile "$dir/hosts" --map-by node --mca plm_rsh_agent "$here/netns-launch.sh"
			--mca plm_rsh_no_tree_spawn 1)
	else
		args+=(-launcher ssh -launcher-exec "$here/netns-launch.sh" -hosts "$addr,$addr_b"
			-ppn 1 -iface va)
	fi
else
	export UROCE_PCAP=$dir/cap.%p.pcap
	if [[ $impl == mpich ]]; then
		export NETNS_LAUNCH_HOSTS="uroce-mpi-a=- uroce-mpi-b=-" NETNS_LAUNCH_RUN=$run
		args+=(-launcher ssh -launcher-exec "$here/netns-launch.sh"
			-hosts uroce-mpi-a,uroce-mpi-b -ppn 1 -iface lo)
	fi
fi
cmd=($mpirun "${args[@]}" -np "$np" "$dir/mpi_check")
if [[ $where == netns ]]; then
	# mpirun itself runs on host a, under its own host name, as the ranks on host b do: a
	# remote shell's command line, quoted.
	timeout -k 5 120 "$here/netns-launch.sh" "$addr" "$(printf '%q ' "${cmd[@]}")" >"$dir/out" 2>&1
else
	timeout -k 5 120 "$run" "${cmd[@]}" >"$dir/out" 2>&1
fi
rc=$?
cat "$dir/out"
if ((rc != 0)) || ! grep -q "^mpi_check: ok" "$dir/out"; then
	echo "FAIL: mpi_check, $impl over $path, $np ranks ($where): exit $rc" >&2
	exit 1
fi
# mpi_check prints each rank's host name: ranks 0 and 1 must be on different hosts.
hosts=$(sed -n 's/^mpi_check: hosts: //p' "$dir/out")
if [[ $where == netns || $impl == mpich ]] &&
	[[ $(tr ' ' '\n' <<<"$hosts" | head -2 | sort -u | wc -l) != 2 ]]; then
	echo "FAIL: ranks 0 and 1 ran on one host ($hosts)" >&2
	exit 1
fi
# The ping-pong alone is 420 messages each way.
if [[ $where == netns ]]; then
	packets=$(ip netns exec "$pair_b" nft list table inet uroce_mpi |
		sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
	if ((${packets:-0} < 420)); then
		echo "FAIL: host b received ${packets:-no} RoCE datagrams, fewer than the ping-pong's 420" >&2
		exit 1
	fi
	echo "mpi.sh: host b received $packets RoCE datagrams"
else
	# Each frame is in its sender's capture and its receiver's (capinfos: tshark's package).
	frames=$(capinfos -c -M -T -r "$dir"/cap.*.pcap | awk '{ n += $2 } END { print n + 0 }')
	if ((${frames:-0} < 1680)); then
		echo "FAIL: uroce's captures hold ${frames:-no} frames, fewer than the ping-pong's 1680" >&2
		exit 1
	fi
	echo "mpi.sh: uroce's captures hold $frames frames"
fi
echo "mpi.sh: $impl over $path, $np ranks ($where): every check passed"
