# SPDX-License-Identifier: MIT
"""uroce-bench --quick produces every section with sane figures (not a timed test).

usage: bench_quick.py BIN_DIR SANITIZER UDP_PORT TCP_PORT

Runs the quick matrix into a temporary folder and checks: exit 0; report.md has each section
with a row per size or count and exactly the ratio columns of its baselines; results.csv has
a positive figure for every workload on uroce, UDP (no connections) and TCP, for the
latencies on UDP through io_uring, for the latency with completion events on uroce
(ib_send_lat -e) and on the blocking UDP ping-pong, and for the 64 B stream on the busy
sendmmsg/recvmmsg baseline; latencies under a second and connections that completed; both
SVG plots parse as XML and draw a line per system that ran there (the single-question
baselines only in their own tables); on a machine without an RDMA device, the report says the
hardware runs were skipped. Exits 77 (skipped) for a ThreadSanitizer build, which perftest
cannot load.
"""
import csv
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# The report's tables: their points and the baselines of their ratio columns.
SECTIONS = {"Latency": ([2, 4096], ["UDP", "UDP io_uring", "TCP"]),
            "Latency with completion events": ([2], ["UDP blocking"]),
            "Bandwidth, one way": ([64, 4096, 65536], ["UDP", "TCP"]),
            "Bandwidth, both ways at once": ([65536], ["UDP", "TCP"]),
            "Message rate, 64 B": ([64], ["UDP", "UDP mmsg busy", "TCP"]),
            "Connection setup": ([1, 100], ["TCP"])}
# The figures results.csv must hold: (section, points, systems, metrics).
FIGURES = [("latency", [2, 4096], ["uroce", "udp", "udp-uring", "tcp"], ["latency"]),
           ("events", [2], ["uroce", "udp-blocking"], ["latency"]),
           ("bandwidth", [64, 4096, 65536], ["uroce", "udp", "tcp"], ["bandwidth", "rate"]),
           ("bandwidth", [64], ["udp-mmsg"], ["bandwidth", "rate"]),
           ("bidirectional", [65536], ["uroce", "udp", "tcp"], ["bandwidth", "rate"]),
           ("connect", [1, 100], ["uroce", "tcp"], ["connect"])]
SANE = {"latency": (0.1, 1e6), "bandwidth": (1e-4, 1e4), "rate": (1e-4, 1e3), "connect": (0.1, 1e7)}


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
    for title, (xs, baselines) in SECTIONS.items():
        if f"## {title}\n" not in report:
            fail(f"report.md has no section '{title}'")
        part = report.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in part.splitlines() if line.startswith("| ") and "---" not in line]
        if len(rows) != len(xs) + 1:
            fail(f"section '{title}': {len(rows) - 1} rows for {len(xs)} points")
        ratios = [c.strip().removeprefix("uroce / ") for c in rows[0].strip("|").split("|")
                  if c.strip().startswith("uroce / ")]
        if [b for b in ratios if b != "hardware"] != baselines:  # a device here adds hardware
            fail(f"section '{title}': ratio columns {ratios}, not {baselines}")
        if "failed" in part:
            fail(f"section '{title}' has a failed run")
    got = {}
    with open(os.path.join(out, "results.csv")) as f:
        for row in csv.DictReader(f):
            got[(row["section"], int(row["x"]), row["system"], row["metric"])] = row["value"]
    for section, xs, systems, metrics in FIGURES:
        for x in xs:
            for system in systems:
                for m in metrics:
                    v = got.get((section, x, system, m))
                    lo, hi = SANE[m]
                    if v in (None, "") or not lo <= float(v) <= hi:
                        fail(f"{section} {x} on {system}: {m} = {v!r}, not in [{lo}, {hi}]")
    for plot, lines in (("latency.svg", 4), ("bandwidth.svg", 6)):
        root = ET.parse(os.path.join(out, plot)).getroot()
        n = len(root.findall("{http://www.w3.org/2000/svg}polyline"))
        if n != lines:
            fail(f"{plot}: {n} lines drawn, {lines} expected")
    print(f"ok: every section and figure present ({out})")
    subprocess.run(["rm", "-rf", out])


if __name__ == "__main__":
    main()
