#!/usr/bin/env bash
# uroce-netbench: uroce's data path between two processes on loopback, measured with unmodified
# perftest through uroce-run, against the kernel's UDP path between two processes measured by
# uroce-udpbench in the same run (docs/PERFORMANCE.md, "Data path between two processes"):
#
#   latency  ib_send_lat 2 B (t_typical, one way)    vs  UDP busy-poll ping-pong, median one way
#   bulk     ib_write_bw 64 KiB (average Gb/s)        vs  UDP 4 KiB with GSO/GRO (Gb/s)
#   rate     ib_write_bw 64 B (message rate)          vs  UDP 64 B with sendmmsg/recvmmsg
#
# Every repetition runs each measurement once (interleaved, so that a noisy machine's drift
# hits all alike); the report gives the median of the repetitions and the ratio of the medians.
#
# usage: uroce-netbench [--reps N] [--quick]      (run it from the build tree's bin/)
set -uo pipefail

bin=$(dirname "$(readlink -f "$0")")
reps=5 iters_lat=20000 iters_bw=20000 iters_rate=300000 secs=2
while (($#)); do
	case $1 in
	--reps) reps=$2; shift ;;
	--quick) reps=1 iters_lat=3000 iters_bw=3000 iters_rate=50000 secs=1 ;;
	-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "uroce-netbench: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
	echo "uroce-netbench: --reps takes a positive number" >&2
	exit 2
fi
for p in ib_send_lat ib_write_bw; do
	command -v $p >/dev/null || { echo "uroce-netbench: $p (Debian: perftest) is missing" >&2; exit 1; }
done
export UROCE_UDP_PORT=28990
tcp=18990

# perftest server and client over uroce; prints the client's result row.
perf() {
	local out
	timeout 120 "$bin/uroce-run" "$@" -d uroce_lo -x 0 -p $tcp >/dev/null 2>&1 &
	local server=$!
	for ((i = 0; i < 100; i++)); do
		ss -Hltn "sport = :$tcp" | grep -q . && break
		sleep 0.05
	done
	out=$(timeout 120 "$bin/uroce-run" "$@" -d uroce_lo -x 0 -p $tcp 127.0.0.1 2>&1)
	wait $server
	grep -A1 '#bytes' <<<"$out" | tail -n 1
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A res
for ((r = 1; r <= reps; r++)); do
	echo "uroce-netbench: repetition $r of $reps" >&2
	res[udp_lat]+="$("$bin/uroce-udpbench" latency --count $iters_lat | awk '{print $2}') "
	res[uroce_lat]+="$(perf ib_send_lat -s 2 -n $iters_lat | awk '{print $5}') "
	res[udp_bulk]+="$("$bin/uroce-udpbench" bulk --seconds $secs | awk '{print $2}') "
	res[uroce_bulk]+="$(perf ib_write_bw -s 65536 -n $iters_bw --report_gbits | awk '{print $4}') "
	res[udp_rate]+="$("$bin/uroce-udpbench" rate --seconds $secs | awk '{print $2}') "
	res[uroce_rate]+="$(perf ib_write_bw -s 64 -n $iters_rate | awk '{print $5}') "
done

row() { # name unit uroce-key udp-key higher-is-better(1|0)
	local u d
	u=$(tr ' ' '\n' <<<"${res[$3]}" | grep . | median)
	d=$(tr ' ' '\n' <<<"${res[$4]}" | grep . | median)
	awk -v n="$1" -v un="$2" -v u="$u" -v d="$d" -v all_u="${res[$3]}" \
		'BEGIN { printf "| %s | %s %s | %s %s | %.2fx | %s |\n", n, u, un, d, un, u / d, all_u }'
}
echo "| measurement | uroce (median) | UDP baseline (median) | uroce / UDP | uroce, every repetition |"
echo "|---|---|---|---|---|"
row "latency, one way (lower is better)" us uroce_lat udp_lat
row "bandwidth 64 KiB vs 4 KiB GSO/GRO" Gb/s uroce_bulk udp_bulk
row "message rate 64 B" Mmsg/s uroce_rate udp_rate
echo "($reps repetitions; $(nproc) CPUs; $(uname -r))"
