#!/usr/bin/env bash
# uroce-run's options: each documented in --help and passed on as its UROCE_* variable, bad
# values refused with the library's own message before the program starts (also when they come
# from the environment), --backend verbs on the system's rdma-core refused without a device,
# and uroce's options refused with it.
# Usage: uroce-run-options.sh UROCE_RUN SANITIZER
set -uo pipefail
run=$1
if [[ ${2:-} == thread ]]; then
	echo "uroce-run-options: skipped: system programs cannot load a ThreadSanitizer build"
	exit 77
fi
fail=0
out=$(mktemp)
dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT

expect() { # expect DESCRIPTION STATUS REGEX COMMAND...: exit status and a matching line
	local desc=$1 want=$2 regex=$3 rc
	shift 3
	"$@" >"$out" 2>&1
	rc=$?
	if [[ $rc != "$want" ]] || { [[ -n $regex ]] && ! grep -Eq -- "$regex" "$out"; }; then
		echo "FAIL: $desc: '$*' exited $rc (want $want), output should match /$regex/:" >&2
		sed 's/^/  | /' "$out" >&2
		fail=1
	fi
}

for opt in --pcap --faults --log --engine --backend; do
	expect "--help documents $opt" 0 "^ +$opt " "$run" --help
done
expect "unknown option" 2 "unknown option '--bogus'" "$run" --bogus ibv_devices
expect "missing value" 2 "option '--pcap' needs a value" "$run" --pcap
expect "bad log level, the library's message" 2 'UROCE_LOG="bogus" is not valid' \
	"$run" --log bogus ibv_devices
expect "bad faults" 2 'UROCE_FAULTS="loss=2" is not valid' "$run" --faults=loss=2 ibv_devices
expect "bad engine" 2 'UROCE_BACKEND="turbo" is not valid' "$run" --engine turbo ibv_devices
expect "bad backend" 2 "--backend 'hardware': expected soft or verbs" \
	"$run" --backend hardware ibv_devices
expect "inherited bad variable" 2 'UROCE_LOG="loud" is not valid' \
	env UROCE_LOG=loud "$run" ibv_devices
expect "inherited unknown variable" 2 'UROCE_PCAPP is not a uroce variable' \
	env UROCE_PCAPP=x "$run" ibv_devices

# A program that starts uroce's engine: a UD QP made with pyverbs.
qp_program=(/usr/bin/python3 -c '
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPCap, QPInitAttr
import pyverbs.enums as e
with Context(name="uroce_lo") as ctx:
    pd, cq = PD(ctx), CQ(ctx, 4)
    QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=QPCap()))
')
expect "options reach the library" 0 'engine: epoll receive backend' \
	"$run" --engine epoll --log info --faults seed=3 "${qp_program[@]}"
expect "--log=LEVEL form" 0 'engine: (io_uring|epoll) receive backend' "$run" --log=info "${qp_program[@]}"
# A capture through --pcap, %p becoming the process id.
expect "--pcap" 0 '' "$run" --pcap "$dir/cap-%p.pcap" "${qp_program[@]}"
compgen -G "$dir/cap-[0-9]*.pcap" >/dev/null || {
	echo "FAIL: --pcap wrote no $dir/cap-PID.pcap" >&2
	fail=1
}

# --backend verbs: the system's rdma-core, never uroce's libraries.
empty=$dir/no-devices
mkdir -p "$empty"
expect "verbs without a device" 2 "no RDMA device found" \
	env UROCE_RUN_SYSFS="$empty" "$run" --backend verbs ibv_devices
expect "verbs refuses uroce options" 2 "option --pcap applies to uroce only" \
	"$run" --backend verbs --pcap x.pcap ibv_devices
fake=$dir/one-device
mkdir -p "$fake/mlx5_0"
expect "verbs runs the program without uroce's folder" 0 '^system$' \
	env UROCE_RUN_SYSFS="$fake" "$run" --backend verbs sh -c \
	'case ":${LD_LIBRARY_PATH:-}:" in *uroce*|*/lib:*) echo uroce;; *) echo system;; esac'

((fail == 0)) && echo "uroce-run-options: ok"
exit $fail
