#!/usr/bin/env bash
# bounded.sh SECONDS COMMAND [ARG...]: timeout(1) for the programs the tests run, which says
# where a program hung before killing it. A hang seen once in many CI runs leaves nothing but
# "killed at its bound" otherwise.
#
# COMMAND runs as a child (standard input passed on). If it has not ended after SECONDS, each
# thread of it and of its descendants is reported on standard error -- the system call it waits
# in and its kernel wait channel, and its backtrace where gdb is installed -- then they are all
# killed (SIGKILL) and the exit status is 124, as timeout(1)'s. Otherwise COMMAND's status.
# SIGTERM is passed on to COMMAND, as timeout(1) does (not SIGINT: bash cannot catch it where
# it started ignored, as in a script's background command; use timeout(1) for that).
set -u
if (($# < 2)) || [[ ! $1 =~ ^[0-9]+$ ]]; then
	echo "usage: bounded.sh SECONDS COMMAND [ARG...]" >&2
	exit 125
fi
secs=$1
shift
"$@" <&0 &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM

# The process PID and its descendants, parents first.
tree() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do
		tree "$c"
	done
}

report() {
	local p t
	for p in $(tree "$child"); do
		[[ -r /proc/$p/cmdline ]] || continue
		echo "bounded.sh: process $p hung: $(tr '\0' ' ' </proc/"$p"/cmdline)"
		for t in /proc/"$p"/task/*; do
			echo "  thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)):" \
				"syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)," \
				"waits in $(cat "$t/wchan" 2>/dev/null)"
		done
		if command -v gdb >/dev/null; then
			timeout 30 gdb -nx -batch -p "$p" -ex "set pagination off" \
				-ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' | sed 's/^/  | /'
		fi
	done
}

for ((tick = 0; tick < secs * 10; tick++)); do
	kill -0 $child 2>/dev/null || break
	sleep 0.1
done
if kill -0 $child 2>/dev/null && ((tick == secs * 10)); then
	report >&2
	kill -KILL $(tree "$child") 2>/dev/null
	wait $child 2>/dev/null
	exit 124
fi
wait $child
