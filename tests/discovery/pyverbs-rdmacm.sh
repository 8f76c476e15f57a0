#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma-core's own rdma_cm tests (python3-pyverbs: /usr/share/doc/rdma-core/tests, test_rdmacm.py)
# under uroce-run, unmodified: each test runs a passive and an active process (RC and UD
# connections, UD through SIDR, an external QP, multicast joins and a leave, RDMA READ and
# WRITE, a reject). They find their device through the kernel's view of it (the netdev in
# /sys/class/infiniband/<dev>/device/net/), so they need liburoce-preload.so. Passes only when
# every test of test_rdmacm.py ran and passed: none failed, none skipped.
# usage: pyverbs-rdmacm.sh UROCE_RUN
set -u
run=$(realpath "$1") || exit 1
fail() {
	echo "pyverbs-rdmacm.sh: $*" >&2
	exit 1
}

source "$(dirname "$0")/../support/rdma-core-tests.sh"
rdma_core_tests pyverbs-rdmacm.sh
[ -f test_rdmacm.py ] || fail "no test_rdmacm.py in rdma-core's tests"
want=$(grep -c '^    def test_' test_rdmacm.py)
((want > 0)) || fail "test_rdmacm.py holds no test"

# Each test bounds its own processes (15 s each when stuck); this bounds a hang outside them.
timeout 300 "$run" /usr/bin/python3 run_tests.py -v tests.test_rdmacm >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
summary=$(grep -E '^(Ran [0-9]+ tests? in|OK|FAILED)' "$dir/out" | tr '\n' ' ')
grep -q "^Ran $want tests\? in " "$dir/out" || fail "not all $want tests of test_rdmacm.py ran: $summary(exit $rc)"
grep -qx 'OK' "$dir/out" || fail "the tests did not all pass: $summary(exit $rc)"
! grep -qi 'skipped' "$dir/out" || fail "tests were skipped: $(grep -i 'skipped' "$dir/out" | head -3 | tr '\n' ' ')"
((rc == 0)) || fail "run_tests.py exited $rc"
echo "pyverbs-rdmacm.sh: all $want tests of rdma-core's test_rdmacm.py passed"
