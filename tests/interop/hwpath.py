#!/usr/bin/env python3
"""The hardware path, end to end: uroce-run --backend verbs and uroce-bench's hardware column
on a real kernel RDMA device, the kernel's rxe in the interop VM.

To rdma-core, the guest's rxe0 is a device like an RDMA NIC: the system's libibverbs finds it
in /sys/class/infiniband and drives it through the kernel's uverbs. A uroce build goes into
the guest as an extra initramfs archive (mkinitramfs-uroce.sh: uroce-run, uroce's libraries,
uroce-bench and Debian's python3 for it), and the guest runs:

  1. `uroce-run --backend verbs ibv_devinfo`: exits 0, lists rxe0 with its port active, and
     prints exactly what `ibv_devinfo` without uroce-run prints (the system's rdma-core);
  2. `uroce-run ibv_devinfo` (the soft backend, the default): exits 0 and lists uroce's own
     devices (uroce_eth0, uroce_lo), not rxe0 -- the two backends are two stacks;
  3. the real `uroce-bench --smoke --systems hardware --sections SECTIONS`: it finds rxe0 and
     its RoCE v2 IPv4 GID itself, runs its hardware column (ib_send_lat, ib_write_bw one way
     and both ways, cmtime through uroce-run --backend verbs) and must exit 0, every run with
     a figure: each
     row of its results.csv a finite number above 0, each of latency, bandwidth, message rate
     and connection setup present; and rxe0's packet counters must have grown by at least
     the messages those runs exchanged, so that the traffic went through the kernel's rxe.

The guest's clock source is its TSC (vm.py boots every VM with clocksource=tsc
tsc=reliable): perftest turns cycles into microseconds with a rate it fits against
gettimeofday, and with the TCG guest's default HPET (its TSCs are found unsynchronized at
smp 2) the fit fails ("Correlation coefficient r^2 < 0.9") and perftest prints inf; with the
TSC as clock source, both clocks are one.

usage: hwpath.py --bin BUILD/bin [--ns uroce-ix-hw] [--smp 2] [--keep DIR]

Prints each check and the bench's figures; exit 0 only when every check passed, 1 otherwise.
Needs root, qemu and the kernel scripts/setup.sh fetches: without them it fails, never skips.
"""
import argparse
import csv
import io
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vm as vmlib  # noqa: E402

GUEST_BIN = "/opt/uroce/bin"  # where mkinitramfs-uroce.sh puts the build's bin/
OUT = "/tmp/hwpath"           # the bench's report, in the guest
COUNTERS = "/sys/class/infiniband/rxe0/ports/1/hw_counters"
# The bench's sections run on rxe0: all but events (see above) and middleware (the guest has
# no UCX or MPI).
SECTIONS = "latency,tails,bandwidth,rate,connect"
# The bench's metrics, one per question its hardware column answers.
METRICS = ("latency", "bandwidth", "rate", "connect")
# Packets the smoke runs send through rxe0 at the least: ib_send_lat's 1,000 round trips alone.
MIN_PACKETS = 2000


def images(bin_dir):
    """(base initramfs, the uroce build's extra archive), built or found in the cache."""
    p = subprocess.run([os.path.join(HERE, "mkinitramfs.sh")], stdout=subprocess.PIPE, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise vmlib.VMError("mkinitramfs.sh failed (its messages are above)")
    base = p.stdout.strip().splitlines()[-1]
    p = subprocess.run([os.path.join(HERE, "mkinitramfs-uroce.sh"), bin_dir, base],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise vmlib.VMError("mkinitramfs-uroce.sh failed (its messages are above)")
    return base, p.stdout.strip().splitlines()[-1]


def counters(vm):
    """rxe0's packet counters: {name: value}."""
    r = vm.run(f"cd {COUNTERS} && grep . *", timeout=30)
    out = {}
    for line in r.output.splitlines():
        name, _, value = line.partition(":")
        if value.strip().isdigit():
            out[name] = int(value)
    return out


def devinfo(vm, c):
    run = f"{GUEST_BIN}/uroce-run"
    verbs = vm.run(f"{run} --backend verbs ibv_devinfo", timeout=60)
    plain = vm.run("ibv_devinfo", timeout=60)
    c.check(verbs.rc == 0 and "hca_id:\trxe0" in verbs.output and "PORT_ACTIVE" in verbs.output,
            f"uroce-run --backend verbs ibv_devinfo: exit {verbs.rc}, rxe0 with an active port",
            verbs.output)
    c.check(verbs.output == plain.output,
            "uroce-run --backend verbs ibv_devinfo prints what ibv_devinfo prints",
            f"--- uroce-run --backend verbs:\n{verbs.output}\n--- ibv_devinfo:\n{plain.output}")
    soft = vm.run(f"{run} ibv_devinfo", timeout=60)
    c.check(soft.rc == 0 and "hca_id:\turoce_eth0" in soft.output and
            "hca_id:\turoce_lo" in soft.output and "rxe0" not in soft.output,
            f"uroce-run ibv_devinfo (soft backend): exit {soft.rc}, uroce_eth0 and uroce_lo, "
            "no rxe0", soft.output)


def bench(vm, c, keep):
    before = counters(vm)
    cmd = f"{GUEST_BIN}/uroce-bench --smoke --systems hardware --sections {SECTIONS} --out {OUT}"
    t = time.monotonic()
    r = vm.run(f"cd /tmp && {cmd}", timeout=400)
    took = time.monotonic() - t
    after = counters(vm)
    print(f"--- {cmd} (in the guest: exit {r.rc}, {took:.0f} s)\n{r.output.rstrip()}", flush=True)
    c.check(r.rc == 0 and not r.timed_out,
            f"uroce-bench --smoke --systems hardware: exit {r.rc}"
            f"{' (timed out)' if r.timed_out else ''}, every run with a figure")
    try:
        report = vm.get(f"{OUT}/report.md").decode(errors="replace")
        rows = list(csv.DictReader(io.StringIO(vm.get(f"{OUT}/results.csv").decode())))
    except vmlib.VMError as e:
        c.check(False, "the bench's report.md and results.csv", str(e))
        return
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, "report.md"), "w") as f:
            f.write(report)
    c.check("- **hardware**: rxe0 (GID 1, 10.77.0.2)" in report,
            "the bench found rxe0, its RoCE v2 IPv4 GID 1 and 10.77.0.2 itself",
            "\n".join(line for line in report.splitlines() if line.startswith("- **")))
    bad = []
    for row in rows:
        try:
            v = float(row["value"])
        except ValueError:
            v = math.nan
        if row["system"] != "hardware" or not (math.isfinite(v) and v > 0):
            bad.append(row)
    c.check(rows and not bad, f"{len(rows)} figures, each a number above 0, all of the hardware",
            "\n".join(str(b) for b in bad) or "results.csv is empty")
    for m in METRICS:
        got = [f"{row['section']} {row['x']}: {row['value']} {row['unit']}" for row in rows
               if row["metric"] == m]
        c.check(bool(got), f"{m}: {', '.join(got) or 'no figure'}")
    sent = after.get("sent_pkts", 0) - before.get("sent_pkts", 0)
    rcvd = after.get("rcvd_pkts", 0) - before.get("rcvd_pkts", 0)
    c.check(sent >= MIN_PACKETS and rcvd >= MIN_PACKETS,
            f"rxe0 carried the runs: {sent} packets sent, {rcvd} received",
            f"before {before}\nafter {after}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin/ (its lib/ is beside it)")
    ap.add_argument("--ns", default="uroce-ix-hw", help="network namespace (default %(default)s)")
    ap.add_argument("--smp", type=int, default=2, help="the guest's vCPUs (default %(default)s)")
    ap.add_argument("--keep", help="keep the bench's report.md in this folder")
    a = ap.parse_args()
    c = vmlib.Checks()
    started = time.monotonic()
    try:
        base, extra = images(os.path.abspath(a.bin))
        with vmlib.VM(ns=a.ns, smp=a.smp, initrd=base, extra_initrd=[extra]) as vm:
            devinfo(vm, c)
            bench(vm, c, a.keep)
    except vmlib.VMError as e:
        c.check(False, f"the VM: {e}")
    return c.summary("hwpath", time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
