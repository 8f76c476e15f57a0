# SPDX-License-Identifier: MIT
"""uroce-bench --quick produces every section with sane figures (not a timed test).

usage: bench_quick.py BIN_DIR SANITIZER UDP_PORT TCP_PORT

Runs the quick matrix into a temporary folder and checks: exit 0; report.md has each section
with a row per size or count (the tails: per program and system) and exactly the ratio
columns of its baselines, each cell with a figure; results.csv has a positive figure for
every workload on uroce, UDP (no connections) and TCP, for the latencies on UDP through
io_uring, for the tails (typical, 99th and 99.9th percentile, in that order) of ib_send_lat,
ib_write_lat and ib_read_lat on uroce and of the io_uring ping-pong, for the middleware (UCX's
tag_lat and tag_bw, Open MPI's ping-pong with its tail, in order) and rstream -S 65536 on uroce
and TCP, for the latency with
completion events on uroce (ib_send_lat -e) and on the blocking UDP ping-pong, for the 64 B
stream on the busy sendmmsg/recvmmsg baseline and for ib_send_bw's 64 B message rate on
uroce; latencies under a second and connections that completed; both SVG plots parse as XML
and draw a line per system that ran there (the single-question baselines only in their own
tables); on a machine without an RDMA device, the report says the hardware runs were
skipped. Exits 77 (skipped) for a ThreadSanitizer build, which perftest cannot load.
"""
import csv
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# The report's tables: their rows (the first cell) and their ratio columns, those with the
# hardware left out (a machine with a device has them too).
SECTIONS = {"Latency": (["2 B", "4 KiB"],
                        ["uroce / UDP", "uroce / UDP io_uring", "uroce / TCP"]),
            "Tail latency, 2 B": (["uroce ib_send_lat", "uroce ib_write_lat",
                                   "uroce ib_read_lat", "UDP io_uring ping-pong"],
                                  ["99th / typical", "99.9th / typical"]),
            "Latency with completion events": (["2 B"], ["uroce / UDP blocking"]),
            "Bandwidth, one way": (["64 B", "4 KiB", "64 KiB"], ["uroce / UDP", "uroce / TCP"]),
            "Bandwidth, both ways at once": (["64 KiB"], ["uroce / UDP", "uroce / TCP"]),
            "Message rate, 64 B": (["64 B"], ["uroce ib_write_bw / UDP",
                                              "uroce ib_write_bw / UDP mmsg busy",
                                              "uroce ib_write_bw / TCP",
                                              "uroce ib_send_bw / UDP mmsg busy"]),
            "Connection setup": (["1", "100"], ["uroce / TCP"]),
            "Middleware": (["UCX `ucx_perftest -t tag_lat -s 8`, one way, typical (us)",
                            "UCX `ucx_perftest -t tag_bw -s 1048576` (Gb/s)",
                            "Open MPI ping-pong 8 B, one way, median (us)",
                            "Open MPI ping-pong 8 B, one way, 99th percentile (us)",
                            "Open MPI ping-pong 8 B, one way, 99.9th percentile (us)",
                            "Open MPI ping-pong 1 MiB, both directions' bytes (Gb/s)"],
                           ["uroce / TCP"]),
            "rsockets": (["`rstream -S 65536`, both directions' bytes (Gb/s)"], ["uroce / TCP"])}
TAILS = ["typical", "p99", "p99.9"]
# The figures results.csv must hold: (section, points, systems, metrics).
FIGURES = [("latency", [2, 4096], ["uroce", "udp", "udp-uring", "tcp"], ["latency"]),
           ("tails", [2], ["uroce"], [f"{prog} {t}" for prog in ("ib_send_lat", "ib_write_lat",
                                                                 "ib_read_lat") for t in TAILS]),
           ("tails", [2], ["udp-uring"], [f"ping-pong {t}" for t in TAILS]),
           ("events", [2], ["uroce", "udp-blocking"], ["latency"]),
           ("bandwidth", [64, 4096, 65536], ["uroce", "udp", "tcp"], ["bandwidth", "rate"]),
           ("bandwidth", [64], ["udp-mmsg"], ["bandwidth", "rate"]),
           ("rate", [64], ["uroce"], ["bandwidth", "rate"]),
           ("bidirectional", [65536], ["uroce", "udp", "tcp"], ["bandwidth", "rate"]),
           ("connect", [1, 100], ["uroce", "tcp"], ["connect"]),
           ("middleware", [0], ["uroce", "tcp"], ["ucx tag_lat 8B latency",
                                                  "ucx tag_bw 1MiB bandwidth", "mpi 8B typical",
                                                  "mpi 8B p99", "mpi 8B p99.9",
                                                  "mpi 1MiB bandwidth"]),
           ("rsockets", [0], ["uroce", "tcp"], ["rstream 64KiB bandwidth"])]
# Sane figures by a metric's last word (the tails': "PROGRAM typical", "PROGRAM p99", ...).
LATENCY = (0.1, 1e6)
SANE = {"latency": LATENCY, "bandwidth": (1e-4, 1e4), "rate": (1e-4, 1e3), "connect": (0.1, 1e7),
        "typical": LATENCY, "p99": LATENCY, "p99.9": LATENCY}


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    bin_dir, sanitizer, udp_port, tcp_port = sys.argv[1:5]
    if sanitizer == "thread":
        print("skipped: perftest cannot load a ThreadSanitizer build of uroce")
        sys.exit(77)
    out = tempfile.mkdtemp(prefix="uroce-bench-")
    r = subprocess.run([os.path.join(bin_dir, "uroce-bench"), "--quick", "--out", out,
                        "--udp-port", udp_port, "--tcp-port", tcp_port],
                       capture_output=True, text=True, timeout=600)
    print(r.stdout + r.stderr)
    if r.returncode != 0:
        fail(f"uroce-bench exited {r.returncode}")
    report = open(os.path.join(out, "report.md")).read()
    sysfs = "/sys/class/infiniband"
    if not (os.path.isdir(sysfs) and os.listdir(sysfs)) and \
            "- **hardware**: skipped: no RDMA device" not in report:
        fail("no RDMA device here, and the report does not say the hardware runs were skipped")
    for title, (labels, want) in SECTIONS.items():
        if f"## {title}\n" not in report:
            fail(f"report.md has no section '{title}'")
        part = report.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in part.splitlines() if line.startswith("| ") and "---" not in line]
        # A device here adds hardware rows (the tails) and ratio columns.
        firsts = [row[0] for row in rows[1:] if not row[0].startswith("hardware ")]
        if firsts != labels:
            fail(f"section '{title}': rows {firsts}, not {labels}")
        ratios = [c for c in rows[0] if " / " in c and "hardware" not in c]
        if ratios != want:
            fail(f"section '{title}': ratio columns {ratios}, not {want}")
        if "failed" in part:
            fail(f"section '{title}' has a failed run")
        for row in rows[1:]:
            if len(row) != len(rows[0]) or "-" in row:
                fail(f"section '{title}': row {row} lacks a figure")
    got = {}
    with open(os.path.join(out, "results.csv")) as f:
        for row in csv.DictReader(f):
            got[(row["section"], int(row["x"]), row["system"], row["metric"])] = row["value"]
    for section, xs, systems, metrics in FIGURES:
        for x in xs:
            for system in systems:
                for m in metrics:
                    v = got.get((section, x, system, m))
                    lo, hi = SANE[m.split()[-1]]
                    if v in (None, "") or not lo <= float(v) <= hi:
                        fail(f"{section} {x} on {system}: {m} = {v!r}, not in [{lo}, {hi}]")
    for section, system, progs in (("tails", "uroce", ("ib_send_lat", "ib_write_lat",
                                                       "ib_read_lat")),
                                   ("tails", "udp-uring", ("ping-pong",)),
                                   ("middleware", "uroce", ("mpi 8B",)),
                                   ("middleware", "tcp", ("mpi 8B",))):
        x = 2 if section == "tails" else 0
        for prog in progs:
            v = [float(got[(section, x, system, f"{prog} {t}")]) for t in TAILS]
            if v != sorted(v):
                fail(f"tails of {prog} on {system}: typical, 99th, 99.9th = {v}, not in order")
    for plot, lines in (("latency.svg", 4), ("bandwidth.svg", 6)):
        root = ET.parse(os.path.join(out, plot)).getroot()
        n = len(root.findall("{http://www.w3.org/2000/svg}polyline"))
        if n != lines:
            fail(f"{plot}: {n} lines drawn, {lines} expected")
    print(f"ok: every section and figure present ({out})")
    subprocess.run(["rm", "-rf", out])


if __name__ == "__main__":
    main()
