# SPDX-License-Identifier: MIT
"""uroce-bench's report: the Markdown tables, the CSV of every run and the SVG plots.

A result is (section, x, system, repetition, metric, value): section is latency, tails,
events, bandwidth, bidirectional, rate (ib_send_bw's message rate), connect, middleware or
rsockets; x the message size or the connection count (0 in middleware and rsockets, whose
metrics name their size);
system uroce, hardware, udp, udp-uring, udp-blocking, udp-mmsg or tcp. The tails' metrics are
"PROGRAM typical", "PROGRAM p99" and "PROGRAM p99.9", PROGRAM a perftest latency program or,
on the io_uring baseline, "ping-pong"; the middleware's and the rsockets' are those of
VERSUS_TCP_ROWS.
"""
import csv
import math
import os
import platform
import statistics
import subprocess
import sys
import time

NAMES = {"uroce": "uroce", "hardware": "hardware", "udp": "UDP", "udp-uring": "UDP io_uring",
         "udp-blocking": "UDP blocking", "udp-mmsg": "UDP mmsg busy", "tcp": "TCP"}
COLOURS = {"uroce": "#d62728", "hardware": "#1f77b4", "udp": "#2ca02c", "udp-uring": "#8c564b",
           "udp-blocking": "#7f7f7f", "udp-mmsg": "#17becf", "tcp": "#9467bd"}
# The baselines of one question each: the section they run in (at what sizes: planned()) and
# the metric of the one table they are a column of.
SINGLE = {"udp-uring": ("latency", "latency"), "udp-blocking": ("events", "latency"),
          "udp-mmsg": ("bandwidth", "rate")}
# The message size of the message rate (its table, and the size the udp-mmsg baseline runs).
RATE_SIZE = 64
# The largest message of the io_uring ping-pong (uroce-sockbench --uring: one datagram).
URING_MAX = 4096
UNITS = {"latency": "us", "bandwidth": "Gb/s", "rate": "Mmsg/s", "connect": "us",
         "typical": "us", "p99": "us", "p99.9": "us"}
# The tails table's rows: the baseline's ping-pong and the perftest programs (run on uroce and
# the hardware), each a row per system, and the percentiles each gives over its own typical.
TAIL_ROWS = ("ib_send_lat", "ib_write_lat", "ib_read_lat", "ping-pong")
TAIL_PERCENTILES = ("p99", "p99.9")
# The message rate table's RDMA programs: the 64 B run of the one-way bandwidth workload and
# the rate workload's SEND stream.
RATE_PROGRAMS = (("bandwidth", "ib_write_bw"), ("rate", "ib_send_bw"))

# The middleware table's rows: (metric, what it is, lower is better); each on uroce and on the
# same middleware over the kernel's TCP.
MIDDLEWARE_ROWS = (
    ("ucx tag_lat 8B latency", "UCX `ucx_perftest -t tag_lat -s 8`, one way, typical (us)", True),
    ("ucx tag_bw 1MiB bandwidth", "UCX `ucx_perftest -t tag_bw -s 1048576` (Gb/s)", False),
    ("mpi 8B typical", "Open MPI ping-pong 8 B, one way, median (us)", True),
    ("mpi 8B p99", "Open MPI ping-pong 8 B, one way, 99th percentile (us)", True),
    ("mpi 8B p99.9", "Open MPI ping-pong 8 B, one way, 99.9th percentile (us)", True),
    ("mpi 1MiB bandwidth", "Open MPI ping-pong 1 MiB, both directions' bytes (Gb/s)", False),
)
# The rsockets table's row, the same way.
RSOCKET_ROWS = (
    ("rstream 64KiB bandwidth", "`rstream -S 65536`, both directions' bytes (Gb/s)", False),
)
# The sections whose table sets uroce against TCP, row by row.
VERSUS_TCP_ROWS = {"middleware": MIDDLEWARE_ROWS, "rsockets": RSOCKET_ROWS}

# The report's tables: (title, section, metric, fixed x or None, x heading, lower is better,
# what it measures).
TABLES = [
    ("Latency", "latency", "latency", None, "size", True,
     "One-way latency of a ping-pong, median of the runs (us; lower is better). uroce and "
     "hardware: `ib_send_lat -s SIZE` (t_typical); UDP and TCP: `uroce-sockbench udp|tcp "
     "latency --size SIZE` (both sides busy polling with non-blocking `recv`, TCP_NODELAY); "
     "UDP io_uring: `uroce-sockbench udp latency --uring --size SIZE` (send and receive "
     "through io_uring with deferred task work, both sides polling its completions without "
     "sleeping; up to 4 KiB)."),
    ("Tail latency, 2 B", "tails", None, None, "program", True,
     "The typical (median), 99th and 99.9th percentile iteration of a 2 B ping-pong, "
     "the median of each over the runs (us; lower is better), and each percentile over its "
     "own typical (the goal of issue 22: 99th at most 2x, 99.9th at most 5x). uroce and "
     "hardware: `ib_send_lat`, `ib_write_lat` and `ib_read_lat -s 2 -n 100000` (`--quick`: "
     "10,000, `--smoke`: 1,000; t_typical and the 99% and 99.9% percentile columns; "
     "ib_read_lat's figures are a READ's round trip, the others one way); UDP io_uring: "
     "`uroce-sockbench udp latency --uring --size 2 --count` as many (one way), in the same "
     "run: a tail it has too is the machine's, not uroce's."),
    ("Latency with completion events", "events", "latency", None, "size", True,
     "One-way latency of a ping-pong in which both sides sleep until a message arrives, "
     "median of the runs (us; lower is better). uroce and hardware: `ib_send_lat -s SIZE -e` "
     "(t_typical; it waits in `ibv_get_cq_event` after `ibv_req_notify_cq`); UDP blocking: "
     "`uroce-sockbench udp latency --blocking --size SIZE` (both sides in a blocking "
     "`recvmsg`)."),
    ("Bandwidth, one way", "bandwidth", "bandwidth", None, "size", False,
     "Gb/s (higher is better). uroce and hardware: `ib_write_bw -s SIZE --report_gbits` (BW "
     "average); UDP and TCP: `uroce-sockbench udp|tcp stream --size SIZE` (UDP: messages "
     "above 4 KiB as GSO segments of 4 KiB received with GRO, small ones in sendmmsg "
     "batches)."),
    ("Bandwidth, both ways at once", "bidirectional", "bandwidth", None, "size", False,
     "Gb/s, both directions together (higher is better). uroce and hardware: `ib_write_bw "
     "-b`; UDP and TCP: `uroce-sockbench ... stream --bidir` (each process sends from a "
     "thread while it receives)."),
    ("Message rate, 64 B", "bandwidth", "rate", RATE_SIZE, "size", False,
     "Millions of messages per second, one way (higher is better): the 64 B runs of the "
     "one-way bandwidth table (uroce and hardware: `ib_write_bw -s 64`; UDP: sendmmsg batches "
     "of 64, the receiver waiting for the first datagram of each recvmmsg batch; TCP: one "
     "send call per message, Nagle coalescing), and beside them uroce's and the hardware's "
     "`ib_send_bw -s 64 --report_gbits` (MsgRate; `--sections rate`); UDP mmsg busy, the "
     "strong baseline: `uroce-sockbench udp stream --mmsg --size 64` (sendmmsg batches of 64 "
     "that never block, recvmmsg batches of 64 polled without sleeping). The WRITE stream is "
     "compared with every baseline, the SEND stream with the strong one (and the hardware's "
     "SEND)."),
    ("Middleware", "middleware", None, None, "workload", None,
     "The RDMA middleware between two processes on uroce against the same middleware over the "
     "kernel's TCP, medians of the runs. UCX: `ucx_perftest` (server and client, `-n` 20,000 "
     "for the latency, 2 GiB for the bandwidth; `--quick`: 2,000 and 128 MiB) with "
     "`UCX_TLS=rc_verbs,ud_verbs,self` through uroce-run, `UCX_TLS=tcp,self` for TCP. Open "
     "MPI: `mpirun -np 2 mpi_check 20000 1048576 timing` (uroce-bench's mpi_check: a "
     "ping-pong, 20,000 rounds of 8 B and 2,000 of 1 MiB, the first and last of each size "
     "checked; `--quick`: 2,000 and 200) "
     "with `--mca pml ucx --mca osc ucx --mca btl self` and those UCX_TLS through uroce-run, "
     "`--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo` for TCP. The last "
     "column says which is ahead."),
    ("rsockets", "rsockets", None, None, "workload", None,
     "rdma-core's rsockets between two processes on uroce against the same program over the "
     "kernel's TCP, medians of the runs: Debian's `rstream -S 65536 -C N` (blocking calls; "
     "each iteration sends N transfers of 64 KiB one way and N back; N: the bandwidth "
     "workload's bytes, at least 1,000) through uroce-run, and `rstream -T s` (its socket "
     "mode) on 127.0.0.1. The last column says which is ahead."),
    ("Connection setup", "connect", "connect", None, "connections", True,
     "Microseconds per connection, N connections started at once until all are established "
     "(lower is better). uroce and hardware: Debian's `cmtime -c N` (its `connect` step); "
     "TCP: `uroce-sockbench tcp connect --count N` (N non-blocking connects until the server "
     "accepted all). UDP has no connections."),
]


def progress(msg):
    """One progress line on stderr, rewritten in place on a terminal; None ends it."""
    tty = sys.stderr.isatty()
    if msg is None:
        if tty:
            sys.stderr.write("\n")
    elif tty:
        sys.stderr.write("\r\033[K" + msg)
    else:
        sys.stderr.write(f"uroce-bench: {msg}\n")
    sys.stderr.flush()


def size_name(x):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if x >= div and x % div == 0:
            return f"{x // div} {unit}"
    return f"{x} B"


def machine(version):
    """What the report says about the machine and the software measured (uroce @version)."""
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(line.split()[1]) for line in open("/proc/meminfo")
                   if line.startswith("MemTotal"))
        info["memory"] = f"{mem / (1 << 20):.1f} GiB"
    except (OSError, StopIteration):
        pass
    info["cpu"] = f"{os.cpu_count()} x {cpu}"
    info["kernel"] = f"{platform.system()} {platform.release()}"
    try:
        info["os"] = "Debian " + open("/etc/debian_version").read().strip()
    except OSError:
        pass
    info["uroce"] = version
    try:
        q = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}, ", "perftest",
                            "rdmacm-utils", "rdma-core", "ucx-utils", "openmpi-bin"],
                           capture_output=True, text=True)
        info["packages"] = q.stdout.strip(", ")
    except OSError:
        pass
    return info


def planned(section, x, system):
    """Whether @system runs @section at @x: UDP has no connections, the io_uring ping-pong
    is a latency baseline of single datagrams (and the tails' baseline), the blocking
    ping-pong the baseline of the events workload alone (which the other baselines do not
    run), the busy sendmmsg stream the message rate's alone; ib_send_bw's message rate
    (rate) runs on the RDMA systems alone, the middleware and rsockets on uroce and TCP
    alone."""
    if system == "udp-uring":
        return section in ("latency", "tails") and x <= URING_MAX
    if system == "udp-blocking":
        return section == "events"
    if system == "udp-mmsg":
        return section == "bandwidth" and x == RATE_SIZE
    if section in VERSUS_TCP_ROWS:
        return system in ("uroce", "tcp")
    if section in ("events", "rate", "tails"):
        return system in ("uroce", "hardware")
    return not (system == "udp" and section == "connect")


def shown(section, metric, system):
    """Whether @system has a column in the table of @metric over @section."""
    return system not in SINGLE or SINGLE[system] == (section, metric)


def values(results, section, metric, x, system):
    return [v for (s, xx, sy, _, m, v) in results
            if s == section and m == metric and xx == x and sy == system and v is not None]


def fmt(v):
    """Three significant digits, never in exponent notation."""
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def cell(vs):
    if not vs:
        return "failed"
    med = statistics.median(vs)
    if len(vs) == 1:
        return fmt(med)
    return f"{fmt(med)} ({fmt(min(vs))}-{fmt(max(vs))})"


def ratio(vu, vb):
    """The ratio of two lists' medians, or "-"."""
    return (f"{statistics.median(vu) / statistics.median(vb):.2f}x"
            if vu and vb and statistics.median(vb) else "-")


BASELINES = ("udp", "udp-uring", "udp-blocking", "udp-mmsg", "tcp", "hardware")


def columns(results, section, metric, here):
    """A table's columns, (heading, section, system), and its ratio columns, (numerator,
    denominator) indexes into them: a column per system and uroce over each baseline; in the
    message rate table a column per RDMA program on uroce and the hardware (the rate
    workload's only where it ran), the WRITE stream over every baseline and the SEND stream
    over the strong one."""
    if (section, metric) != ("bandwidth", "rate"):
        cols = [(NAMES[sy], section, sy) for sy in here]
        u = here.index("uroce") if "uroce" in here else None
        return cols, [(u, here.index(b)) for b in BASELINES if b in here and u is not None]
    ran = {s for (s, *_) in results}
    cols = []
    for sy in here:
        if sy in ("uroce", "hardware"):
            cols += [(f"{NAMES[sy]} {prog}", sec, sy) for sec, prog in RATE_PROGRAMS
                     if sec == section or sec in ran]
        else:
            cols.append((NAMES[sy], section, sy))
    ratios = []
    for i, (_, sec, sy) in enumerate(cols):
        if sy != "uroce":
            continue
        for b in BASELINES:
            for j, (_, bsec, bsy) in enumerate(cols):
                if bsy == b and (bsy != "hardware" or bsec == sec) and \
                        (sec == section or bsy in ("udp-mmsg", "hardware")):
                    ratios.append((i, j))
    return cols, ratios


def table(results, systems, spec):
    title, section, metric, fixed, xname, lower, what = spec
    if section == "tails":
        return tails_table(results, systems, spec)
    if section in VERSUS_TCP_ROWS:
        return versus_tcp_table(results, systems, spec)
    xs = sorted({x for (s, x, _, _, m, _) in results if s == section and m == metric})
    if fixed is not None:
        xs = [x for x in xs if x == fixed]
    if not xs:
        return []
    here = [sy for sy in systems
            if shown(section, metric, sy) and any(planned(section, x, sy) for x in xs)]
    cols, ratios = columns(results, section, metric, here)
    head = [xname] + [h for h, _, _ in cols] + [f"{cols[i][0]} / {cols[j][0]}"
                                                 for i, j in ratios]
    out = [f"## {title}", "", what, "", "| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
    for x in xs:
        row = [size_name(x) if xname == "size" else f"{x:,}"]
        row += [cell(values(results, sec, metric, x, sy)) if planned(sec, x, sy)
                else "-" for _, sec, sy in cols]
        for i, j in ratios:
            row.append(ratio(values(results, cols[i][1], metric, x, cols[i][2]),
                             values(results, cols[j][1], metric, x, cols[j][2])))
        out.append("| " + " | ".join(row) + " |")
    return out + [""]


def tails_table(results, systems, spec):
    """The tails table: a row per program on each system that ran the tails workload (the
    RDMA systems first, the baseline last), its typical, 99th and 99.9th percentile and each
    percentile over the typical."""
    title, section, _, _, xname, _, what = spec
    xs = sorted({x for (s, x, *_) in results if s == section})
    if not xs:
        return []
    x = xs[0]
    order = [sy for sy in ("uroce", "hardware") if sy in systems] + \
        [sy for sy in systems if sy not in ("uroce", "hardware")]
    head = [xname, "typical", "99th", "99.9th", "99th / typical", "99.9th / typical"]
    out = [f"## {title}", "", what, "", "| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
    for sy in order:
        if not planned(section, x, sy):
            continue
        for prog in TAIL_ROWS:
            if (prog == "ping-pong") != (sy not in ("uroce", "hardware")):
                continue
            vs = {stat: values(results, section, f"{prog} {stat}", x, sy)
                  for stat in ("typical",) + TAIL_PERCENTILES}
            row = [f"{NAMES[sy]} {prog}"] + [cell(vs[stat]) for stat in vs]
            row += [ratio(vs[stat], vs["typical"]) for stat in TAIL_PERCENTILES]
            out.append("| " + " | ".join(row) + " |")
    return out + [""]


def versus_tcp_table(results, systems, spec):
    """The middleware's or the rsockets' table: a row per VERSUS_TCP_ROWS metric of the
    section that ran, uroce's and TCP's medians, their ratio and which is ahead."""
    title, section, _, _, xname, _, what = spec
    ran = {m for (s, _, _, _, m, _) in results if s == section}
    if not ran:
        return []
    here = [sy for sy in ("uroce", "tcp") if sy in systems]
    head = [xname] + [NAMES[sy] for sy in here]
    if len(here) == 2:
        head += ["uroce / TCP", "ahead"]
    out = [f"## {title}", "", what, "", "| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
    for metric, name, lower in VERSUS_TCP_ROWS[section]:
        if metric not in ran:
            continue
        vs = [values(results, section, metric, 0, sy) for sy in here]
        row = [name] + [cell(v) for v in vs]
        if len(here) == 2:
            row.append(ratio(vs[0], vs[1]))
            if vs[0] and vs[1]:
                u, t = statistics.median(vs[0]), statistics.median(vs[1])
                row.append("uroce" if (u < t) == lower and u != t else "TCP")
            else:
                row.append("-")
        out.append("| " + " | ".join(row) + " |")
    return out + [""]


def write(out_dir, results, systems, info, failures):
    """Write report.md, results.csv, latency.svg and bandwidth.svg into @out_dir."""
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "x", "system", "repetition", "metric", "value", "unit"])
        for (s, x, sy, rep, m, v) in results:
            w.writerow([s, x, sy, rep, m, "" if v is None else v,
                        UNITS.get(m.split()[-1], "")])
    plot_latency(out_dir, results, systems)
    plot_bandwidth(out_dir, results, systems)
    md = ["# uroce-bench report", "",
          "Medians of the repetitions, the spread (min-max) in brackets; each repetition ran "
          "every workload on every system in turn. Ratios are of the medians.", ""]
    md += [f"- **{k}**: {v}" for k, v in info.items()] + [""]
    for spec in TABLES:
        md += table(results, systems, spec)
    md += ["## Plots", "", "![latency](latency.svg)", "", "![bandwidth](bandwidth.svg)", ""]
    if failures:
        md += ["## Runs that gave no figure", ""] + [f"- `{f}`" for f in failures] + [""]
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md))


# --- SVG plots -----------------------------------------------------------------------------

W, H, L, R, T, B = 720, 420, 70, 150, 40, 50


def svg_plot(path, title, ylabel, series, logy):
    """A line plot over message size (log scale) of @series: [(name, colour, dashed, pts)]."""
    pts = [p for (_, _, _, ps) in series for p in ps if p[1] > 0]
    if not pts:
        pts = [(2, 1), (4, 2)]
    xs = [math.log2(x) for x, _ in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    ymax = max(y for _, y in pts)
    if logy:
        y0 = math.floor(math.log10(min(y for _, y in pts)))
        y1 = max(math.ceil(math.log10(ymax)), y0 + 1)
        ticks = [m * 10 ** e for e in range(y0, y1 + 1) for m in (1, 2, 5)
                 if 10 ** y0 <= m * 10 ** e <= 10 ** y1]
    else:
        step = 10 ** math.floor(math.log10(ymax / 5)) if ymax > 0 else 1
        step *= next((m for m in (1, 2, 5, 10) if ymax / (step * m) <= 6), 10)
        ticks = [i * step for i in range(int(ymax / step) + 2)]
        y0, y1 = 0, ticks[-1]

    def px(x):
        return L + (math.log2(x) - x0) / (x1 - x0) * (W - L - R)

    def py(y):
        f = ((math.log10(y) - y0) / (y1 - y0)) if logy else (y - y0) / (y1 - y0)
        return H - B - f * (H - T - B)

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
         f'<text x="16" y="{H / 2}" transform="rotate(-90 16 {H / 2})" '
         f'text-anchor="middle">{ylabel}</text>',
         f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">message size</text>']
    for t in ticks:
        y = py(t)
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for e in range(math.floor(x1), math.ceil(x0) - 1, -2):  # the largest size labelled
        x = px(2 ** e)
        o.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">'
                 f'{size_name(2 ** e).replace(" ", "")}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" '
             f'stroke="#444"/>')
    for i, (name, colour, dashed, ps) in enumerate(series):
        ps = [(x, y) for x, y in ps if y > 0]
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        if ps:
            line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in ps)
            o.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                     f'stroke-width="2"{dash}/>')
            o += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>'
                  for x, y in ps]
        ly = T + 14 + 18 * i
        o.append(f'<line x1="{W - R + 12}" x2="{W - R + 36}" y1="{ly - 4}" y2="{ly - 4}" '
                 f'stroke="{colour}" stroke-width="2"{dash}/>')
        o.append(f'<text x="{W - R + 42}" y="{ly}">{name}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def medians(results, section, metric, system):
    xs = sorted({x for (s, x, sy, _, m, _) in results
                 if s == section and m == metric and sy == system})
    return [(x, statistics.median(values(results, section, metric, x, system)))
            for x in xs if values(results, section, metric, x, system)]


def plot_latency(out_dir, results, systems):
    series = [(NAMES[sy], COLOURS[sy], False, medians(results, "latency", "latency", sy))
              for sy in systems if shown("latency", "latency", sy)]
    svg_plot(os.path.join(out_dir, "latency.svg"), "One-way latency (median)", "us",
             series, True)


def plot_bandwidth(out_dir, results, systems):
    series = []
    for section, label, dashed in (("bandwidth", "", False), ("bidirectional", ", both ways",
                                                              True)):
        series += [(NAMES[sy] + label, COLOURS[sy], dashed,
                    medians(results, section, "bandwidth", sy)) for sy in systems
                   if planned(section, 0, sy) and shown(section, "bandwidth", sy)]
    svg_plot(os.path.join(out_dir, "bandwidth.svg"), "Bandwidth (median)", "Gb/s", series,
             False)
