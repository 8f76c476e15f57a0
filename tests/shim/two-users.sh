#!/usr/bin/env bash
# Two users on one host: a uroce process of one user neither joins another user's rendezvous
# hub nor is taken in by it, so that no user sees or changes another's uroce traffic
# (fabric/rdv.c same_user). As root: the hub is a process of uid 65534, the stranger uid
# 65533 (setpriv; no account needed).
#   1. the stranger's ibv_rc_pingpong fails at once, saying whose hub it met;
#   2. a raw connection of the stranger to the hub's socket is closed by the hub;
#   3. the hub's own user still connects, and the ping-pong completes.
# Usage: two-users.sh UROCE_RUN SANITIZER TCP_PORT
set -uo pipefail

run=$1 sanitizer=$2 port=$3
if [[ $sanitizer == thread ]]; then
	echo "skipped: system programs cannot load a ThreadSanitizer build of uroce"
	exit 77
fi
((EUID == 0)) || { echo "FAIL: needs root (it runs processes as two other uids)" >&2; exit 1; }
command -v setpriv >/dev/null || { echo "FAIL: setpriv missing (util-linux)" >&2; exit 1; }
export UROCE_UDP_PORT=$((port + 10000))
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
dir=$(mktemp -d)
chmod 755 "$dir"
server=
cleanup() { [[ -n $server ]] && kill -- "-$server" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# The other uids run uroce-run where they can reach it; a build tree they cannot (a clone under
# /root) is reached through a copy of its libraries.
runner=("$run")
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$run"; then
	mkdir "$dir/lib"
	cp -L "$(dirname "$run")"/../lib/lib*.so.1 "$dir/lib/"
	chmod -R a+rX "$dir/lib"
	runner=(env "LD_LIBRARY_PATH=$dir/lib")
	echo "(uid 65534 cannot reach $run: the libraries are copied to $dir/lib)"
fi
fail() { echo "FAIL: $*" >&2; for f in "$dir"/*.out; do echo "--- $f" >&2; cat "$f" >&2; done; exit 1; }

# (in a session of its own: a failure stops its whole process group)
setsid setpriv --reuid=65534 --regid=65534 --clear-groups timeout 60 "${runner[@]}" ibv_rc_pingpong \
	-d uroce_lo -g 0 -p "$port" -n 20 >"$dir/server.out" 2>&1 &
server=$!
for ((i = 0; i < 100; i++)); do
	ss -Hxl | grep -q "@uroce/$UROCE_UDP_PORT " && break
	sleep 0.05
done
ss -Hxl | grep -q "@uroce/$UROCE_UDP_PORT " || fail "uid 65534's process never became the hub"

# 1. the stranger
as 65533 timeout 30 "${runner[@]}" ibv_rc_pingpong -d uroce_lo -g 0 -p "$port" -n 20 127.0.0.1 \
	>"$dir/stranger.out" 2>&1
rc=$?
((rc != 0 && rc != 124)) || fail "uid 65533's ping-pong exited $rc: it should fail at once"
grep -q "its hub is process [0-9]* of uid 65534, another user" "$dir/stranger.out" ||
	fail "uid 65533's error does not name the other user's hub"
echo "1. a stranger's process fails: $(grep -o 'its hub is process [0-9]* of uid 65534, another user' "$dir/stranger.out")"

# 2. the hub closes a stranger's connection without a word
as 65533 /usr/bin/python3 - "$UROCE_UDP_PORT" <<'PY' || fail "the hub kept a stranger's connection"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect("\0uroce/" + sys.argv[1])
sys.exit(0 if s.recv(4096) == b"" else 1)
PY
echo "2. the hub closed a stranger's connection"

# 3. the hub's own user
as 65534 timeout 60 "${runner[@]}" ibv_rc_pingpong -d uroce_lo -g 0 -p "$port" -n 20 127.0.0.1 \
	>"$dir/client.out" 2>&1 || fail "uid 65534's own client failed"
wait "$server" || fail "the server failed"
server=
grep -q "bytes in" "$dir/client.out" || fail "no throughput line from uid 65534's client"
echo "3. the hub's own user: $(grep 'bytes in' "$dir/client.out")"
