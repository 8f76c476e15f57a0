#!/bin/bash
# The interop VM's command agent: runs the host's commands, one at a time, from a serial
# port (qemu exposes it to the host as a unix socket), and sends back output and status.
#
# One long-lived shell (this one) owns every job, so a job started by one request can be
# waited for or killed by a later one. Each command runs in `/bin/sh -c` (dash) in its own
# session (setsid), so a kill reaches its whole process group.
#
# Requests (host -> guest): one line, VERB ID NAME ARG [PAYLOAD]
#     RUN   ID -    TIMEOUT_MS CMD  run in the foreground; killed when the time is up
#     START ID NAME -          CMD  start a background job NAME (output to a file)
#     WAIT  ID NAME TIMEOUT_MS      wait for NAME; on a timeout it keeps running
#     KILL  ID NAME SIGNAL          signal NAME's process group, then reap it (KILL after 3 s)
#     PING  ID -    -               liveness
#     POWEROFF ID - -               power the VM off (after the reply)
#   CMD is escaped so that it is one word: every byte outside printable ASCII, and every
#   space and backslash, as \xHH; `printf %b` (a builtin) undoes it. (Not a length and raw
#   bytes: bash's read -N on a tty loses input that is already queued.)
# Replies (guest -> host): "\n@@UROCE ID STATUS RC LEN\n" then LEN bytes of output.
#   STATUS: OK (RC is the exit status), TIMEOUT (RUN: killed, RC its status; WAIT: still
#   running, RC -1), ERR (bad request; the output says why). ID 0 READY is sent once at start.
# Output bytes are sent as they are (the port is raw), framed by their length, so a
# command's output can hold anything, including something that looks like a header.
set -uo pipefail # no -e: a failing command must never end the loop
export LC_ALL=C  # read -N counts bytes
CHAN=${1:-/dev/ttyS1}
JOBS=${UROCE_AGENT_JOBS:-/tmp/jobs}
mkdir -p "$JOBS"

exec 3<>"$CHAN"
# raw: no echo, no line editing, no CR/LF translation either way; 115200 so the 16550's
# receive-timeout interrupt comes after 4 character times of ~87 us, not of 1 ms (9600).
stty -F "$CHAN" raw -echo 115200 || { echo "agent: stty failed" >&2; exit 1; }
# A fifo nobody writes: `read -t` on it is a sleep without a fork.
mkfifo "$JOBS/.tick"
exec 4<>"$JOBS/.tick"

declare -A PID=()
read -r _ _ KVER _ </proc/version

now_us() { local t=$EPOCHREALTIME; echo $((10#${t/./})); }

# reply ID STATUS RC [FILE]
reply() {
	local n=0 out=
	if [[ -n ${4:-} && -f $4 ]]; then
		# Without a fork (each costs tens of ms under TCG): read the whole file, which works
		# when it holds no NUL byte (read stops at the first one and then succeeds).
		if ! IFS= read -r -d '' out <"$4"; then
			printf '\n@@UROCE %s %s %s %s\n%s' "$1" "$2" "$3" "${#out}" "$out" >&3
			return 0
		fi
		n=$(wc -c <"$4")
	fi
	printf '\n@@UROCE %s %s %s %s\n' "$1" "$2" "$3" "$n" >&3
	# head -c: the file of a job still running may grow; send exactly what was announced
	((n > 0)) && head -c "$n" "$4" >&3
	return 0
}
reply_text() { # ID STATUS RC TEXT
	printf '\n@@UROCE %s %s %s %s\n%s' "$1" "$2" "$3" "${#4}" "$4" >&3
}

start_job() { # NAME CMD
	setsid /bin/sh -c "$2" </dev/null >"$JOBS/$1.out" 2>&1 &
	PID[$1]=$!
}

# A job runs while its /proc entry exists and is not a zombie. (kill -0 is not enough: a
# zombie our shell has not reaped yet still answers it.)
running() {
	local line
	read -r line 2>/dev/null <"/proc/$1/stat" || return 1
	line=${line##*) }
	[[ ${line%% *} != Z ]]
}

# wait_job NAME TIMEOUT_MS: sets RC and STATUS (OK, or TIMEOUT with the job left running)
wait_job() {
	local pid=${PID[$1]} start now step=0.01
	start=$(now_us)
	while running "$pid"; do
		now=$(now_us)
		if ((now - start >= $2 * 1000)); then
			STATUS=TIMEOUT RC=-1
			return
		fi
		# poll every 10 ms for a second (short commands), then every 50 ms (a bash that
		# sleeps in `read -t` is not woken by SIGCHLD, even with a trap)
		((now - start > 1000000)) && step=0.05
		read -r -t "$step" _ <&4
	done
	wait "$pid"
	RC=$?
	STATUS=OK
	unset "PID[$1]"
}

kill_job() { # NAME SIGNAL: sets RC, STATUS
	local pid=${PID[$1]}
	kill -s "$2" -- "-$pid" 2>/dev/null || kill -s "$2" "$pid" 2>/dev/null
	wait_job "$1" 3000
	if [[ $STATUS == TIMEOUT ]]; then
		kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "$pid" 2>/dev/null
		wait_job "$1" 3000
	fi
}

valid_name() { [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]]; } # _run is RUN's own

echo "uroce-agent: ready on $CHAN" >&2
reply 0 READY 0

while true; do
	if ! IFS=' ' read -r verb id name arg payload <&3; then
		read -r -t 0.1 _ <&4 # nothing to read (should not happen on a tty): do not spin
		continue
	fi
	if [[ ! ${id:-} =~ ^[0-9]+$ ]]; then
		reply_text 0 ERR 2 "bad request: $verb $id $name $arg"
		continue
	fi
	printf -v payload '%b' "${payload:-}"
	case $verb in
	RUN)
		[[ $arg =~ ^[0-9]+$ ]] || { reply_text "$id" ERR 2 "bad timeout: $arg"; continue; }
		start_job _run "$payload" # (its output file is rewritten each time)
		wait_job _run "$arg"
		if [[ $STATUS == TIMEOUT ]]; then
			kill_job _run TERM
			STATUS=TIMEOUT
		fi
		reply "$id" "$STATUS" "$RC" "$JOBS/_run.out"
		;;
	START)
		valid_name "$name" || { reply_text "$id" ERR 2 "bad job name: $name"; continue; }
		[[ -n ${PID[$name]:-} ]] && { reply_text "$id" ERR 2 "job $name exists"; continue; }
		start_job "$name" "$payload"
		reply_text "$id" OK 0 "${PID[$name]}"
		;;
	WAIT | KILL)
		[[ -n ${PID[$name]:-} ]] || { reply_text "$id" ERR 2 "no job $name"; continue; }
		if [[ $verb == WAIT ]]; then
			[[ $arg =~ ^[0-9]+$ ]] || { reply_text "$id" ERR 2 "bad timeout: $arg"; continue; }
			wait_job "$name" "$arg"
		else
			kill_job "$name" "${arg:-TERM}"
		fi
		reply "$id" "$STATUS" "$RC" "$JOBS/$name.out"
		;;
	PING) reply_text "$id" OK 0 "pong $KVER" ;;
	POWEROFF)
		reply "$id" OK 0
		sync
		exec /bin/busybox poweroff -f
		;;
	*) reply_text "$id" ERR 2 "unknown verb: $verb" ;;
	esac
done
