#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma-core v44's own test suite (Debian's python3-pyverbs: /usr/share/doc/rdma-core/tests),
# all of it, unmodified, under uroce-run. Fails if fewer tests pass than MIN_PASS, or if any
# fails or errs; prints each skip reason with its count (docs/UNSUPPORTED.md "rdma-core's test
# suite" says why each remains).
#
# Two runs: every module but test_rdmacm in one process, then test_rdmacm in another. Its
# tests fork their passive and active sides, and a child of fork() cannot use the data path
# its parent started (docs/UNSUPPORTED.md): in one process with the rest, the parent has.
# usage: rdma-core-suite.sh UROCE_RUN
set -u
run=$(realpath "$1") || exit 1
# The passing tests uroce reaches on a host without huge pages, GPUs or RDMA hardware
# (docs/UNSUPPORTED.md lists the rest).
MIN_PASS=107
fail() {
	echo "rdma-core-suite.sh: $*" >&2
	exit 1
}

source "$(dirname "$0")/../support/rdma-core-tests.sh"
rdma_core_tests rdma-core-suite.sh
[ -f test_rdmacm.py ] || fail "no test_rdmacm.py in rdma-core's tests"
mods=()
for f in test_*.py; do
	[[ $f == test_rdmacm.py ]] || mods+=("tests.${f%.py}")
done

# One run of run_tests.py over the modules given; its output goes to $dir/out.N.
n=0
suite() {
	n=$((n + 1))
	# Each test bounds its own processes; this bounds a hang outside them.
	timeout 600 "$run" /usr/bin/python3 run_tests.py -v "$@" >"$dir/out.$n" 2>&1
	echo "run $n ($# modules): exit $?, $(grep -E '^(Ran [0-9]+ tests?|OK|FAILED)' "$dir/out.$n" | tr '\n' ' ')"
}
suite "${mods[@]}"
suite tests.test_rdmacm

ran=0 failed=0 errors=0 skipped=0
for f in "$dir"/out.*; do
	r=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$f")
	[ -n "$r" ] || {
		cat "$f"
		fail "run $f did not finish"
	}
	ran=$((ran + r))
	last=$(grep -E '^(OK|FAILED)' "$f" | tail -1)
	for k in failures errors skipped; do
		v=$(sed -n "s/.*[(, ]$k=\([0-9]*\).*/\1/p" <<<"$last")
		case $k in
		failures) failed=$((failed + ${v:-0})) ;;
		errors) errors=$((errors + ${v:-0})) ;;
		skipped) skipped=$((skipped + ${v:-0})) ;;
		esac
	done
done
pass=$((ran - failed - errors - skipped))

echo "skips, by reason:"
cat "$dir"/out.* | grep -oE "\.\.\. skipped .*" | sed 's/^\.\.\. skipped //' | sort | uniq -c |
	sort -rn
if ((failed + errors)); then
	cat "$dir"/out.* | grep -E '^(FAIL|ERROR):|Error:|rror: ' | head -40
fi
echo "rdma-core-suite.sh: $ran tests: $pass passed, $skipped skipped, $failed failed, $errors errors"
((failed + errors == 0)) || fail "tests failed or erred"
((pass >= MIN_PASS)) || fail "$pass tests passed, fewer than the $MIN_PASS uroce reaches"
echo "rdma-core-suite.sh: at least $MIN_PASS pass"
