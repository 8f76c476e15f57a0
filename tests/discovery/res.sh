#!/bin/bash
# SPDX-License-Identifier: MIT
# RDMA netlink's resources under uroce-run (the registry of verbs-shim/resreg.h, read by
# liburoce-preload.so), against rxe's (tests/discovery/rxe-reference.txt: `rdma res show qp`
# with an ibv_rc_pingpong server waiting):
#   - two ibv_rc_pingpong servers and an ibv_ud_pingpong server wait for their peers: `rdma res
#     show qp` and `rdma -j res show qp` list each one's QP with rxe's fields (UD without the
#     remote QP, receive PSN and migration state, as the kernel leaves them out), the number the
#     program printed ("local address: ... QPN"), its pid and name, type and state INIT;
#   - `rdma res show qp link DEV/1 lqpn N` finds one QP (the kernel's doit);
#   - `rdma res show` counts the objects of all three;
#   - one killed with SIGKILL leaves its file, which the next `rdma` skips and removes; the
#     others, once their clients ran, exit and take theirs: nothing stale is listed, counts
#     are back to zero.
# It runs in a network namespace of its own (unshare -n; -rn without root; skipped, 77, when
# neither works), so that no other uroce process of the user is listed.
# usage: res.sh UROCE_RUN REFERENCE
set -u
run=$1
ref=$2
if [ "${RES_SH_INSIDE:-}" != 1 ]; then
	if [ "$(id -u)" = 0 ]; then unshare=(unshare -n); else unshare=(unshare -rn); fi
	"${unshare[@]}" true 2>/dev/null || { echo "res.sh: no network namespace of its own (${unshare[*]}): skipped"; exit 77; }
	RES_SH_INSIDE=1 exec "${unshare[@]}" -- "$0" "$@"
fi
ip link set lo up || { echo "res.sh: cannot bring lo up" >&2; exit 1; }

fail=0
bad() {
	echo "res.sh: $*" >&2
	fail=1
}
rdma=$(command -v rdma || echo /sbin/rdma)
[ -x "$rdma" ] || { echo "res.sh: rdma (iproute2) not found" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
dev=uroce_lo
shm=/dev/shm/uroce-res-$(id -u)-
# The field names of an rdma line: every other word from the @1-th.
keys() {
	awk -v from="$1" '{ for (i = from; i <= NF; i += 2) printf "%s ", $i; print "" }'
}
rxe_qp=$(grep -m1 '^link rxe0/1 lqpn .* comm ibv_rc_pingpong' "$ref")
rxe_rc_keys=$(keys 3 <<<"$rxe_qp")
# UD: fill_res_qp_entry_query() puts no RQPN, RQ_PSN or PATH_MIG_STATE
rxe_ud_keys=$(sed 's/rqpn //; s/rq-psn //; s/path-mig-state //' <<<"$rxe_rc_keys")
[ -n "$rxe_qp" ] || { echo "res.sh: no RC QP line in $ref" >&2; exit 1; }

# The servers: NAME PORT each, waiting for their clients with their QP in INIT.
servers=("ibv_rc_pingpong 18711" "ibv_rc_pingpong 18712" "ibv_ud_pingpong 18713")
declare -A qpn type
for i in "${!servers[@]}"; do
	read -r prog port <<<"${servers[$i]}"
	"$run" stdbuf -oL "$prog" -d $dev -g 0 -p "$port" -n 5 >"$tmp/$i.out" 2>&1 &
	pids[i]=$!
done
for i in "${!servers[@]}"; do
	read -r prog port <<<"${servers[$i]}"
	for _ in $(seq 100); do grep -q "local address" "$tmp/$i.out" && break; sleep 0.1; done
	hex=$(grep -o 'QPN 0x[0-9a-f]*' "$tmp/$i.out" | head -1 | cut -d' ' -f2)
	[ -n "$hex" ] || { bad "$prog did not print its address: $(cat "$tmp/$i.out")"; exit 1; }
	[ "$(cat /proc/${pids[i]}/comm)" = "$prog" ] || bad "pid ${pids[i]} is not $prog"
	qpn[$i]=$((hex))
	if [ "$prog" = ibv_ud_pingpong ]; then type[$i]=UD; else type[$i]=RC; fi
done
n=${#servers[@]}

# rdma res show qp: one line per server, rxe's fields, the server's number, pid and name.
out=$("$run" "$rdma" res show qp) || bad "rdma res show qp failed: $out"
[ "$(grep -c . <<<"$out")" = "$n" ] || bad "rdma res show qp lists $(grep -c . <<<"$out") QPs, not $n:
$out"
for i in "${!servers[@]}"; do
	read -r prog port <<<"${servers[$i]}"
	line=$(grep "^link $dev/1 lqpn ${qpn[$i]} " <<<"$out") || { bad "rdma res show qp: no QP ${qpn[$i]} of $prog:
$out"; continue; }
	if [ "${type[$i]}" = RC ]; then want=$rxe_rc_keys; else want=$rxe_ud_keys; fi
	[ "$(keys 3 <<<"$line")" = "$want" ] || bad "rdma res show qp: '$line' has not the fields [$want] (rxe: '$rxe_qp')"
	grep -q " type ${type[$i]} state INIT .* pid ${pids[i]} comm $prog *$" <<<"$line" ||
		bad "rdma res show qp: '$line': not ${type[$i]}, INIT, pid ${pids[i]}, $prog"
	[ "$(sed 's/ *$//' <<<"$("$run" "$rdma" res show qp link $dev/1 lqpn "${qpn[$i]}")")" = "$(sed 's/ *$//' <<<"$line")" ] ||
		bad "rdma res show qp link $dev/1 lqpn ${qpn[$i]}: not '$line'"
done

# rdma -j res show qp: rxe's keys and the same values.
json=$("$run" "$rdma" -j res show qp)
rxe_json=$(grep -m1 '"lqpn":17,' "$ref")
expect=$(for i in "${!servers[@]}"; do echo "${servers[$i]%% *} ${pids[i]} ${qpn[$i]} ${type[$i]}"; done)
/usr/bin/python3 - "$json" "$rxe_json" "$dev" "$expect" <<'EOF' || fail=1
import json, sys
got, rxe, dev = json.loads(sys.argv[1]), json.loads(sys.argv[2])[0], sys.argv[3]
expect = [line.split() for line in sys.argv[4].splitlines()]
bad = []
if len(got) != len(expect):
    bad.append(f"{len(got)} QPs, not {len(expect)}: {got}")
for prog, pid, qpn, qp_type in expect:
    o = [q for q in got if q.get("lqpn") == int(qpn)]
    if len(o) != 1:
        bad.append(f"QP {qpn} of {prog}: {o}")
        continue
    o = o[0]
    keys = [k for k in rxe if qp_type == "RC" or k not in ("rqpn", "rq-psn", "path-mig-state")]
    if list(o) != keys:
        bad.append(f"{prog}: keys {list(o)}, rxe's {keys}")
    want = {"ifname": dev, "port": 1, "type": qp_type, "state": "INIT", "pid": int(pid), "comm": prog}
    for k, v in want.items():
        if o.get(k) != v:
            bad.append(f"{prog}: {k} {o.get(k)!r}, want {v!r}")
for b in bad:
    print("res.sh: rdma -j res show qp:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

# rdma res show: each server holds a context, a PD, an MR, a CQ and a QP.
count_line() {
	"$run" "$rdma" res show | grep -E "^[0-9]+: $dev: " | sed 's/^[0-9]*: //; s/ *$//'
}
want="$dev: pd $n cq $n qp $n cm_id 0 mr $n ctx $n srq 0"
[ "$(count_line)" = "$want" ] || bad "rdma res show: '$(count_line)', want '$want'"

# SIGKILL: the file stays; rdma skips it and removes it.
last=$((n - 1))
{
	kill -9 "${pids[last]}"
	wait "${pids[last]}"
} 2>/dev/null
[ -e "$shm${pids[last]}" ] || bad "no file $shm${pids[last]} after SIGKILL (was there one?)"
out=$("$run" "$rdma" res show qp)
grep -q "pid ${pids[last]} " <<<"$out" && bad "rdma res show qp lists the killed ${pids[last]}:
$out"
[ -e "$shm${pids[last]}" ] && bad "$shm${pids[last]} of the killed process was not removed"
want="$dev: pd $last cq $last qp $last cm_id 0 mr $last ctx $last srq 0"
[ "$(count_line)" = "$want" ] || bad "rdma res show after a SIGKILL: '$(count_line)', want '$want'"

# The other servers' clients: both sides exit, and their files go with them.
for ((i = 0; i < last; i++)); do
	read -r prog port <<<"${servers[$i]}"
	"$run" "$prog" -d $dev -g 0 -p "$port" -n 5 127.0.0.1 >"$tmp/client$i.out" 2>&1 ||
		bad "$prog client: $(cat "$tmp/client$i.out")"
	wait "${pids[i]}" || bad "$prog server: $(cat "$tmp/$i.out")"
	[ -e "$shm${pids[i]}" ] && bad "$shm${pids[i]} stays after $prog exited"
done
out=$("$run" "$rdma" res show qp)
[ -z "$out" ] || bad "rdma res show qp after every process exited:
$out"
want="$dev: pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0 srq 0"
[ "$(count_line)" = "$want" ] || bad "rdma res show at the end: '$(count_line)', want '$want'"

[ $fail = 0 ] && echo "res.sh: rdma res show lists every process's QPs, as rxe's; none stale"
exit $fail
