#!/usr/bin/env bash
# uroce-cmbench: rdma_cm connection setup over uroce between two processes on loopback, measured
# with Debian's unmodified cmtime through uroce-run (its "connect" step: N rdma_connect calls
# started at once, until every one is ESTABLISHED, per connection), against the kernel's TCP
# connect/accept of N connections started at once between two processes (uroce-tcpbench), in
# the same run, interleaved (docs/PERFORMANCE.md, "Connection setup").
#
# usage: uroce-cmbench [--reps N] [--count N]      (run it from the build tree's bin/)
set -uo pipefail

bin=$(dirname "$(readlink -f "$0")")
reps=5 count=1000
while (($#)); do
	case $1 in
	--reps) reps=$2; shift ;;
	--count) count=$2; shift ;;
	-h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "uroce-cmbench: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for v in "$reps" "$count"; do
	if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
		echo "uroce-cmbench: --reps and --count take a positive number" >&2
		exit 2
	fi
done
command -v cmtime >/dev/null || { echo "uroce-cmbench: cmtime (Debian: rdmacm-utils) is missing" >&2; exit 1; }
export UROCE_UDP_PORT=28991
port=18991

# cmtime over uroce: its server runs until stopped (rdma-core 44); prints the client's us/conn.
cm() {
	timeout 120 "$bin/uroce-run" cmtime -p $port >/dev/null 2>&1 &
	local server=$!
	sleep 0.3
	timeout 120 "$bin/uroce-run" cmtime -s 127.0.0.1 -p $port -c "$count" |
		awk '$1 == "connect" { print $NF }'
	kill -INT $server 2>/dev/null
	wait $server 2>/dev/null
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

u="" t=""
for ((r = 1; r <= reps; r++)); do
	echo "uroce-cmbench: repetition $r of $reps" >&2
	u+="$(cm) "
	t+="$("$bin/uroce-tcpbench" connect --count "$count" | awk '{print $2}') "
done
mu=$(tr ' ' '\n' <<<"$u" | grep . | median)
mt=$(tr ' ' '\n' <<<"$t" | grep . | median)
echo "| measurement | uroce rdma_cm (median) | TCP (median) | uroce / TCP | uroce, every repetition | TCP, every repetition |"
echo "|---|---|---|---|---|---|"
awk -v c="$count" -v u="$mu" -v t="$mt" -v all_u="$u" -v all_t="$t" \
	'BEGIN { printf "| %d connections set up, per connection | %s us | %s us | %.2fx | %s | %s |\n", c, u, t, u / t, all_u, all_t }'
echo "($reps repetitions; $(nproc) CPUs; $(uname -r))"
