#!/usr/bin/env bash
# An MPI program of our own (middleware/mpi_check.c: ping-pong with data checks up to 4 MiB,
# MPI_Allreduce, MPI_Alltoall, MPI_Put and MPI_Get) under uroce-run, NP ranks on this host,
# through Debian's Open MPI and the RDMA path named, with no shared memory to hide it:
#   ucx   mpirun --mca pml ucx --mca osc ucx, UCX_TLS=rc_verbs,ud_verbs,self
#   ofi   mpirun --mca pml cm --mca mtl ofi --mca osc pt2pt, FI_PROVIDER="verbs;ofi_rxm"
# Every rank must end well and rank 0 print "mpi_check: ok".
# Usage: mpi.sh UROCE_RUN SANITIZER ucx|ofi NP
set -uo pipefail

run=$1 path=$3 np=$4 impl=openmpi
if [[ $2 == thread ]]; then
	echo "skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
mpicc=mpicc.openmpi mpirun=mpirun.openmpi
for p in $mpicc $mpirun; do
	command -v $p >/dev/null ||
		{ echo "mpi.sh: $p not found (openmpi-bin, libopenmpi-dev; scripts/setup.sh installs them)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$mpicc -O2 -o "$dir/mpi_check" "$(dirname "$0")/mpi_check.c" || exit 1

export UROCE_UDP_PORT=${UROCE_UDP_PORT:-28930}
case $impl/$path in
openmpi/ucx)
	export UCX_TLS=rc_verbs,ud_verbs,self
	args=(--allow-run-as-root --oversubscribe --mca pml ucx --mca osc ucx
		--mca btl self -x UCX_TLS -x UROCE_UDP_PORT)
	;;
openmpi/ofi)
	export FI_PROVIDER="verbs;ofi_rxm"
	args=(--allow-run-as-root --oversubscribe --mca pml cm --mca mtl ofi
		--mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self --mca osc pt2pt -x FI_PROVIDER
		-x UROCE_UDP_PORT)
	;;
*) echo "mpi.sh: ucx or ofi, not $path" >&2; exit 2 ;;
esac
timeout -k 5 120 "$run" $mpirun "${args[@]}" -np "$np" "$dir/mpi_check" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
if ((rc != 0)) || ! grep -q "^mpi_check: ok" "$dir/out"; then
	echo "FAIL: mpi_check, $impl over $path, $np ranks: exit $rc" >&2
	exit 1
fi
echo "mpi.sh: $impl over $path, $np ranks: every check passed"
