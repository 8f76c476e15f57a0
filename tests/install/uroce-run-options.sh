#!/usr/bin/env bash
# uroce-run's options: each documented in --help and passed on as its UROCE_* variable, bad
# values refused with the library's own message before the program starts (also when they come
# from the environment), --backend verbs on the system's rdma-core refused without a device,
# and uroce's options refused with it.
# Usage: uroce-run-options.sh UROCE_RUN SANITIZER
# shellcheck disable=SC2016 # the 'sh -c' scripts below expand in the program, not here
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
expect "a value for an option that takes none" 2 "option '--help' takes no value" \
	"$run" --help=x ibv_devices
expect "bad log level, the library's message" 2 'UROCE_LOG="bogus" is not valid' \
	"$run" --log bogus ibv_devices
expect "bad faults" 2 'UROCE_FAULTS="loss=2" is not valid' "$run" --faults=loss=2 ibv_devices
expect "bad engine" 2 'UROCE_BACKEND="turbo" is not valid' "$run" --engine turbo ibv_devices
expect "bad backend" 2 "--backend 'hardware': expected soft or verbs" \
	"$run" --backend hardware ibv_devices
expect "inherited bad variable" 2 'UROCE_LOG="loud" is not valid' \
	env UROCE_LOG=loud "$run" ibv_devices
expect "a bad setting before a missing program" 2 'UROCE_LOG="bogus" is not valid' \
	"$run" --log bogus no-such-program
expect "a missing program" 127 'no-such-program: program not found' "$run" no-such-program
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
expect "verbs without a device says what needs none" 2 "The default, --backend soft, needs none" \
	env UROCE_RUN_SYSFS="$empty" "$run" --backend verbs ibv_devices
# The same through the kernel's own list, on a machine with no RDMA device.
if [[ -n $(ls -A /sys/class/infiniband 2>/dev/null) ]]; then
	echo "uroce-run-options: /sys/class/infiniband lists RDMA devices: its check without one skipped"
else
	expect "verbs without a device in /sys/class/infiniband" 2 \
		"no RDMA device found \(the kernel lists none in /sys/class/infiniband\)" \
		env -u UROCE_RUN_SYSFS "$run" --backend verbs ibv_devices
fi
expect "UROCE_RUN_SYSFS is uroce-run's, not passed on to the library" 0 'uroce_lo' \
	env UROCE_RUN_SYSFS="$empty" "$run" ibv_devices
expect "verbs refuses uroce options" 2 "option '--pcap' applies to uroce only" \
	"$run" --backend verbs --pcap x.pcap ibv_devices
expect "verbs refuses uroce options before looking for the program" 2 \
	"option '--pcap' applies to uroce only" "$run" --backend verbs --pcap x.pcap no-such-program
expect "verbs refuses uroce options given before it" 2 "option '--faults' applies to uroce only" \
	"$run" --faults=loss=0.1 --engine epoll --backend=verbs ibv_devices
fake=$dir/one-device
mkdir -p "$fake/mlx5_0"
expect "verbs runs the program without uroce's folder" 0 '^system$' \
	env UROCE_RUN_SYSFS="$fake" "$run" --backend verbs sh -c \
	'case ":${LD_LIBRARY_PATH:-}:" in *uroce*|*/lib:*) echo uroce;; *) echo system;; esac'
# An inherited path keeps its other folders, uroce's is taken off (however it is spelt).
expect "verbs takes uroce's folder off an inherited library path" 0 '^/opt/a:/opt/b$' \
	env UROCE_RUN_SYSFS="$fake" LD_LIBRARY_PATH="/opt/a:$(dirname "$run")/../lib/:/opt/b" \
	"$run" --backend verbs sh -c 'echo "$LD_LIBRARY_PATH"'

((fail == 0)) && echo "uroce-run-options: ok"
exit $fail
