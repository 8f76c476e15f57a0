#!/usr/bin/env bash
# check-layers must reject an upward include and an impure transport or cm header.
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/transport" "$tmp/cm" "$tmp/fabric"
printf '#include "transport/wire.h"\n' >"$tmp/cm/wire.c"
"$check" "$tmp" >/dev/null || { echo "a clean tree was rejected"; exit 1; }
for bad in '#include "fabric/pcap.h"' '#include <pthread.h>' '#include <time.h>'; do
	printf '%s\n' "$bad" >"$tmp/transport/bad.c"
	if "$check" "$tmp" 2>/dev/null; then
		echo "check-layers accepted transport/bad.c with: $bad"
		exit 1
	fi
done
rm "$tmp/transport/bad.c"
printf '#include <sys/socket.h>\n' >"$tmp/cm/route.c"
if "$check" "$tmp" 2>/dev/null; then echo "check-layers accepted cm/route.c with a socket header"; exit 1; fi
rm "$tmp/cm/route.c"
printf '#include "verbs-shim/x.h"\n' >"$tmp/fabric/net.c"
if "$check" "$tmp" 2>/dev/null; then echo "check-layers accepted fabric including verbs-shim"; exit 1; fi
echo "ok"
