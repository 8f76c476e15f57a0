#!/usr/bin/env bash
# A live view through a pipe: uroce-run --pcap - streams an rping server's capture to its
# standard output, into tshark -i -, with rping's own output on standard error (so that the
# stream stays a capture); rping's handshake and traffic, no malformed frame (common.sh). Then
# uroce-run's side of it: the exit status is the program's, nothing but the capture reaches
# standard output, the private FIFO is removed, the program reads uroce-run's standard input
# and ends with it on SIGTERM, and UROCE_PCAP=- itself is refused by the library with a
# message pointing at uroce-run --pcap -.
#   stdout.sh UROCE_RUN SANITIZER TCP_PORT UDP_PORT
set -uo pipefail
. "$(dirname "$0")/common.sh"
live_setup "$@"
mkdir "$dir/tmp"
export TMPDIR=$dir/tmp # where uroce-run makes its FIFO

: >"$dir/server.err" # read for the server's readiness before the pipeline writes it
(
	timeout 25 "$run" --pcap - --log info rping -s -a 127.0.0.1 -p "$port" -C 10 -V -v \
		2>"$dir/server.err" |
		timeout 25 tshark -i - "${tshark_live[@]}" >"$dir/tshark.out" 2>"$dir/tshark.log"
	echo "${PIPESTATUS[*]}" >"$dir/status"
) &
pipeline=$!
live_pids+=("$pipeline")
wait_rdma_cm_listen "$dir/server.err" "$port " || fail "the rping server did not listen"
timeout 20 "$run" rping -c -a 127.0.0.1 -p "$port" -C 10 -V >"$dir/client.out" 2>&1
client_rc=$?
wait "$pipeline"
read -r server_rc tshark_rc <"$dir/status"
((client_rc == 0 && server_rc == 0)) || fail "rping: client $client_rc, server (uroce-run) $server_rc"
((tshark_rc == 0)) || fail "tshark -i - exited $tshark_rc"
# rping -v prints each ping on its standard output: it must be on uroce-run's standard error.
grep -q "ping data: rdma-ping-" "$dir/server.err" || fail "rping's own output is not on standard error"
check_live "$dir/tshark.out"

"$run" --help | grep -Eq '^ +--pcap - +stream the capture to standard output' ||
	fail "uroce-run --help does not document --pcap -"
# uroce-run's side: the program's status, its output on standard error, the FIFO removed.
"$run" --pcap - sh -c 'echo text; exit 3' >"$dir/stdout.bin" 2>"$dir/stderr.out"
rc=$?
((rc == 3)) || fail "uroce-run --pcap - exited $rc, the program 3"
[[ ! -s $dir/stdout.bin ]] || fail "uroce-run --pcap - wrote other than the capture to standard output"
grep -qx text "$dir/stderr.out" || fail "the program's output is not on standard error"
[[ -z $(ls -A "$dir/tmp") ]] || fail "uroce-run --pcap - left $(ls -A "$dir/tmp") in TMPDIR"
# The program reads uroce-run's standard input (a background job's would be /dev/null).
got=$("$run" --pcap - sh -c 'read -r x; echo "$x" >&2' <<<hello 2>&1 >/dev/null)
[[ $got == hello ]] || fail "the program did not read uroce-run's standard input (got '$got')"
# A signal to uroce-run ends the program too, and uroce-run exits as it did (143: SIGTERM).
"$run" --pcap - sleep 30 >/dev/null 2>&1 &
wrapper=$!
live_pids+=("$wrapper")
for ((i = 0; i < 100; i++)); do
	prog=$(pgrep -P "$wrapper" -x sleep) && break
	sleep 0.05
done
[[ -n $prog ]] || fail "uroce-run --pcap - did not start the program"
kill -TERM "$wrapper"
wait "$wrapper"
rc=$?
((rc == 143)) || fail "uroce-run --pcap - exited $rc after SIGTERM (want 143, the program's)"
! kill -0 "$prog" 2>/dev/null || fail "the program outlived uroce-run's SIGTERM"
# An inherited UROCE_PCAP=- is the library's to refuse, naming uroce-run's option.
UROCE_PCAP=- "$run" true 2>"$dir/dash.err"
rc=$?
if ((rc != 2)) || ! grep -q 'UROCE_PCAP="-" is not valid.*uroce-run --pcap -' "$dir/dash.err"; then
	fail "UROCE_PCAP=- was not refused (exit $rc) with a message naming uroce-run --pcap -"
fi
# The option wins over an inherited setting.
UROCE_PCAP=- "$run" --pcap - true >/dev/null || fail "uroce-run --pcap - with UROCE_PCAP=- inherited"
echo "live: uroce-run --pcap -: the program's status, output, input and signals kept, FIFO removed"
