#!/usr/bin/env bash
# The whole test suite: install what is missing, build every tree, run the tests.
#   scripts/test.sh            release, ASan+UBSan, TSan and fuzz trees
#   scripts/test.sh release    one tree only (release, debug, asan, tsan or fuzz)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
"$top/scripts/check-layers"
"$top/scripts/check-format"

kinds=("$@")
# TSan: Criterion cannot start under TSan on this kernel ("Could not initialize
# inheritable arena"), so the TSan tree runs the threaded engine's tests that do
# without it (label tsan).
((${#kinds[@]})) || kinds=(release asan tsan fuzz)
for kind in "${kinds[@]}"; do
	echo "== $kind: build"
	"$top/scripts/build.sh" "$kind"
	echo "== $kind: test"
	# The long matrices' extra runs are left out: `ctest -L compat-full` (tests/compat.cmake)
	# and `ctest -L middleware` (tests/middleware.cmake) run them.
	label=(-LE '^(compat-extra|middleware-full)$')
	# The fuzz tree exists to run the fuzzers; its other tests ran in the trees above.
	[[ $kind == fuzz ]] && label=(-L fuzz)
	[[ $kind == tsan ]] && label=(-L tsan)
	ctest --test-dir "$top/build/$kind" --output-on-failure -j2 "${label[@]}"
done
