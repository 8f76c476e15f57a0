#!/usr/bin/env bash
# Run one perftest program that waits on completion events (-e) RUNS times in a row
# (perftest.sh: a server and a client process on loopback, each bounded): a completion event
# lost once in RUNS runs hangs one of them, which then fails at its time limit.
# Usage: events-stress.sh UROCE_RUN SANITIZER TCP_PORT RUNS PROGRAM [ARGS...]
set -uo pipefail

run=$1 sanitizer=$2 port=$3 runs=$4
shift 4
here=$(dirname "$0")
for ((i = 1; i <= runs; i++)); do
	out=$("$here/perftest.sh" "$run" "$sanitizer" "$port" "$@" 2>&1)
	rc=$?
	((rc == 77)) && { echo "$out"; exit 77; }
	if ((rc != 0)); then
		echo "FAIL: run $i of $runs: $*" >&2
		echo "$out" >&2
		exit 1
	fi
	echo "run $i: ${out##*: }"
done
echo "$* : $runs runs, none hung"
