#!/usr/bin/env bash
# check-layers must hold the module order inside a folder: on a copy of the real fabric/, a lower
# module including a higher one, two modules of one level including each other, and a file of no
# listed module are each refused with the file named; the copy as it is passes.
# Usage: modules_negative.sh CHECK_LAYERS SOURCE_ROOT
set -euo pipefail
check=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/fabric" "$tmp/fabric"
rm -f "$tmp/fabric/CMakeLists.txt"
"$check" "$tmp" >/dev/null || { echo "the real fabric/ was rejected"; exit 1; }

# expect_refused FILE LINE: appending LINE to FILE must make check-layers fail naming FILE.
expect_refused() {
	cp "$tmp/fabric/$1" "$tmp/saved"
	printf '%s\n' "$2" >>"$tmp/fabric/$1"
	if "$check" "$tmp" 2>"$tmp/err" >/dev/null; then
		echo "check-layers accepted fabric/$1 with: $2"
		exit 1
	fi
	grep -q "fabric/$1:" "$tmp/err" || { echo "the complaint does not name fabric/$1:"; cat "$tmp/err"; exit 1; }
	mv "$tmp/saved" "$tmp/fabric/$1"
}
expect_refused log.c '#include "fabric/net.h"'          # the bottom including the top
expect_refused timer.h '#include "fabric/progress.h"'   # one level up
expect_refused udp.c '#include "fabric/timer.h"'        # the same level
expect_refused progress_int.h '#include "fabric/rdv.h"' # a helper counts as its module
expect_refused net.c '#include "fabric/unlisted.h"'     # a header of no module

touch "$tmp/fabric/unlisted.c"
if "$check" "$tmp" 2>"$tmp/err" >/dev/null; then echo "check-layers accepted a file of no module"; exit 1; fi
grep -q "fabric/unlisted.c" "$tmp/err" || { echo "the complaint does not name fabric/unlisted.c"; exit 1; }
rm "$tmp/fabric/unlisted.c"
"$check" "$tmp" >/dev/null || { echo "the restored copy was rejected"; exit 1; }
echo "ok"
