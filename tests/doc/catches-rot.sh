#!/usr/bin/env bash
# The doc test can fail: given a README whose second command fails and which no longer has the
# commands its NOT_RUN list names, it must fail, naming the failing line and each stale entry,
# after running the command that works.
#   catches-rot.sh README_TEST BUILD_TREE
set -uo pipefail
test=$1 tree=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '# a README\n\n```sh\ntrue\nfalse   # a command that fails\n```\n' >"$dir/README.md"
/usr/bin/python3 "$test" "$dir" "$tree" "" Release >"$dir/out" 2>&1
rc=$?
fail=0
check() { # check WHAT REGEX
	grep -Eq -- "$2" "$dir/out" || {
		echo "FAIL: the doc test did not $1 (/$2/)" >&2
		fail=1
	}
}
((rc == 1)) || {
	echo "FAIL: the doc test exited $rc on a rotten README (want 1)" >&2
	fail=1
}
check "run the command that works" '^ok +README.md:4 \([0-9.]+ s\): true$'
check "name the failing line" '^FAIL README.md:5: false$'
check "report a stale NOT_RUN entry" "NOT_RUN lists './scripts/test.sh', which the README no longer has"
if ((fail)); then
	sed 's/^/  | /' "$dir/out" >&2
	exit 1
fi
echo "doc: a failing command and stale NOT_RUN entries fail the doc test"
