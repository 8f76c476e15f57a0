#!/usr/bin/env python3
"""Under loss: uroce and the kernel's rxe with a share of RoCE packets dropped on the bridge.

The topology of behaviour.py (two VMs with rxe, two namespace hosts with uroce, one bridge);
nftables drops each RoCE packet (UDP port 4791, both directions, the CM's MADs included) with
probability P (`numgen random`), all but the CM's DREQ (KEEP_DREQ). Each program runs with its defaults, between each pair asked
for; a run passes when the program's own check passes (rping -V's verified pings,
perftest's result row on both sides) within the time limit. For each run the captures (every
port) give the number of requests sent and how many of them were retransmissions (a request
whose QP and PSN were sent before), and the number of packets the bridge dropped.

  loss.py --bin build/release/bin [--loss 5,20] [--pairs uroce-rxe,rxe-uroce,rxe-rxe,uroce-uroce]
          [--only REGEX] [--timeout S] [--keep DIR] [--repeat N] [--required]

--required runs what the interop issue requires to complete (uroce <-> rxe both ways at 5 %)
and exits 1 if any of it fails; without it the table is printed and every outcome is data.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import behaviour as beh  # noqa: E402
import vm as vmlib  # noqa: E402

PROGRAMS = {
    # name: (server, client, check); {dev} {gid} {srv} are filled in per side
    "rping": ("rping -s -a {srv} -V -S 60000 -C 20",
              "rping -c -a {srv} -V -S 60000 -C 20", "rping"),
    "ib_write_bw": ("ib_write_bw -d {dev} -x {gid} -s 1048576 -n 5",
                    "ib_write_bw -d {dev} -x {gid} -s 1048576 -n 5 {srv}", "perftest"),
    "ib_read_bw": ("ib_read_bw -d {dev} -x {gid} -s 1048576 -n 5",
                   "ib_read_bw -d {dev} -x {gid} -s 1048576 -n 5 {srv}", "perftest"),
}
PERFTEST_ROW = re.compile(r"^\s*1048576\s+5\s+[\d.]+", re.M)


def gid_index(bench, stack, role):
    """The RoCE v2 GID index of the endpoint's IPv4 address (IPv4-mapped)."""
    end = bench.ends[(stack, role)]
    want = f"::ffff:{end.ip}"
    for _ in range(20):
        if stack == "rxe":
            vm = bench.vm0 if role == "s" else bench.vm1
            out = vm.run("ibv_devinfo -v -d rxe0", timeout=60).output
        else:
            out = beh.run_bounded(bench.uroce(end, ["ibv_devinfo", "-v", "-d", "uroce_eth0"]),
                                  60).output
        for m in re.finditer(r"GID\[\s*(\d+)\]:\s+(\S+?),?\s+RoCE v2", out):
            if m.group(2) == want:
                return int(m.group(1))
        time.sleep(0.5)
    raise vmlib.VMError(f"{stack}: no RoCE v2 GID for {end.ip}:\n{out}")


# The CM's DREQ (a MAD: BTH opcode UD SEND ONLY at UDP payload byte 0, attribute ID at byte 36
# after the BTH, DETH and the MAD's first 16 bytes) is never dropped. Linux stops resending a
# DREQ when its ID is destroyed (cm_destroy_id, state DREQ_SENT), and rping's client destroys
# its ID right after rdma_disconnect(): a lost DREQ leaves the server, of any stack, waiting
# for a DISCONNECTED event for ever, with nothing in flight on its RC QP to time out. That is
# the program's design, not a behaviour under test; tests/interop/behaviour.py's dreq_exit
# covers a DREQ its sender exits after.
KEEP_DREQ = "ether type ip udp dport 4791 @th,64,8 0x64 @th,352,16 0x0015 accept"


def set_loss(bench, percent):
    bench.nft_table("ixloss", percent and
                    f"{KEEP_DREQ}; ether type ip udp dport 4791 numgen random mod 100 < {percent} "
                    "counter drop")


def run_one(bench, prog, c_stack, s_stack, percent, stem, timeout, gids):
    srv_t, cli_t, check = PROGRAMS[prog]
    srv, cli = bench.ends[(s_stack, "s")], bench.ends[(c_stack, "c")]
    fill = {"s": dict(srv=srv.ip, dev="rxe0" if s_stack == "rxe" else "uroce_eth0",
                      gid=gids[(s_stack, "s")]),
            "c": dict(srv=srv.ip, dev="rxe0" if c_stack == "rxe" else "uroce_eth0",
                      gid=gids[(c_stack, "c")])}
    scmd, ccmd = srv_t.format(**fill["s"]), cli_t.format(**fill["c"])
    caps, files = bench.capture_start(stem, (("c", cli), ("s", srv)), buffer_kib=65536)
    set_loss(bench, percent)
    t0 = time.monotonic()
    why, sjob = [], None
    try:
        if s_stack == "rxe":
            bench.vm0.start("lsrv", f"exec {scmd}")
        else:
            sjob = subprocess.Popen(bench.uroce(srv, scmd.split()), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(1.5 if s_stack == "rxe" else 0.5)  # listening (rdma_cm or perftest's TCP)
        if c_stack == "rxe":
            c = bench.vm1.run(f"exec {ccmd}", timeout=timeout)
        else:
            c = beh.run_bounded(bench.uroce(cli, ccmd.split()), timeout)
        left = max(5, timeout - (time.monotonic() - t0))
        if s_stack == "rxe":
            s = bench.vm0.wait("lsrv", timeout=left)
            if s.timed_out:
                bench.vm0.kill("lsrv")
        else:
            try:
                out, _ = sjob.communicate(timeout=left)
                s = vmlib.Result(sjob.returncode, out.decode(errors="replace"))
            except subprocess.TimeoutExpired:
                s = vmlib.Result(None, beh.kill_timed_out(sjob), timed_out=True)
        seconds = time.monotonic() - t0
        for r, who in ((c, "client"), (s, "server")):
            if r.timed_out:
                why.append(f"{who} timed out")
            elif r.rc != 0:
                why.append(f"{who} exited {r.rc}")
            elif check == "perftest" and not PERFTEST_ROW.search(r.output):
                why.append(f"no result row from the {who}")
        drops = bench.nft_counter("ixloss")
    finally:
        set_loss(bench, 0)
        bench.capture_stop(caps)
    pkts = beh.exchange(cli, srv, files["c"], files["s"])
    seen, requests, retx = set(), 0, 0
    for p in pkts:
        if p.op in beh.REQUEST_OPS:
            requests += 1
            key = (p.side, p.dqpn, p.psn)
            retx += key in seen
            seen.add(key)
    return dict(ok=not why, why="; ".join(why), seconds=seconds, requests=requests,
                 retransmitted=retx, dropped=drops, client=c.output, server=s.output)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--loss", default="5,20", help="loss percentages, comma-separated")
    ap.add_argument("--pairs", default="uroce-rxe,rxe-uroce,rxe-rxe,uroce-uroce",
                    help="CLIENT-SERVER stacks, comma-separated")
    ap.add_argument("--only", help="the programs whose name matches this regex")
    ap.add_argument("--timeout", type=int, default=240, help="seconds a run may take")
    ap.add_argument("--keep", help="keep the captures here")
    ap.add_argument("--repeat", type=int, default=1, help="run each case this many times")
    ap.add_argument("--required", action="store_true",
                    help="uroce <-> rxe both ways at 5 %%: exit 1 unless all complete")
    ap.add_argument("--ns", default="uroce-ix-loss")
    args = ap.parse_args()
    if args.required:
        args.loss, args.pairs = "5", "uroce-rxe,rxe-uroce"
    bin_dir = os.path.abspath(args.bin)
    for tool in ("tcpdump", "nft"):
        if not shutil.which(tool):
            sys.exit(f"loss: {tool} missing: run scripts/setup.sh")
    work = args.keep or tempfile.mkdtemp(prefix="uroce-loss-")
    os.makedirs(work, exist_ok=True)
    losses = [int(x) for x in args.loss.split(",")]
    pairs = [tuple(p.split("-")) for p in args.pairs.split(",")]
    progs = [p for p in PROGRAMS if not args.only or re.search(args.only, p)]
    failed = 0
    with vmlib.Fabric(args.ns) as net, vmlib.VM(0, net) as vm0, vmlib.VM(1, net) as vm1:
        bench = beh.Bench(net, vm0, vm1, bin_dir, os.path.join(bin_dir, "ix_scenario"), work)
        try:
            gids = {(st, r): gid_index(bench, st, r) for st in ("rxe", "uroce") for r in "sc"}
            print(f"{'program':12s} {'loss':>4s} {'client->server':15s} {'result':8s} "
                  f"{'time':>7s} {'requests':>9s} {'resent':>7s} {'dropped':>8s}")
            for percent in losses:
                for prog in progs:
                    for (c_stack, s_stack), rep in [(p, n) for p in pairs
                                                     for n in range(args.repeat)]:
                        stem = os.path.join(work, f"{prog}-{percent}-{c_stack}-to-{s_stack}"
                                            + (f"-{rep}" if rep else ""))
                        r = run_one(bench, prog, c_stack, s_stack, percent, stem, args.timeout,
                                    gids)
                        failed += not r["ok"]
                        print(f"{prog:12s} {percent:3d}% {c_stack + '->' + s_stack:15s} "
                              f"{'ok' if r['ok'] else 'FAIL':8s} {r['seconds']:6.1f}s "
                              f"{r['requests']:9d} {r['retransmitted']:7d} {r['dropped']:8d}"
                              + (f"  ({r['why']})" if not r["ok"] else ""), flush=True)
                        if not r["ok"]:
                            for who in ("client", "server"):
                                print(f"     {who}: {r[who][:400]!r}")
                                if "--- stacks of" in r[who]:
                                    print(r[who][r[who].index("--- stacks of"):])
        finally:
            bench.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"loss: {failed} run(s) did not complete")
    return 1 if (failed and args.required) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except vmlib.VMError as e:
        print(f"loss: {e}", file=sys.stderr)
        sys.exit(2)
