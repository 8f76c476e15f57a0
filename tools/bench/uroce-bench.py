#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce-bench: how uroce compares, on this machine, to the RDMA hardware it has and to the
kernel's UDP and TCP paths, in one run.

usage: uroce-bench [--quick | --smoke] [--reps N] [--out DIR] [--sections LIST]
                   [--systems LIST] [--hw-device DEV --hw-gid N --hw-addr IP]
                   [--udp-port N] [--tcp-port N]

Workloads (between two processes on one host):
  latency     2 B .. 64 KiB ping-pong, median one-way latency (us), both sides polling
  tails       the 2 B ping-pong's tail: the typical (median), 99th and 99.9th percentile
              iteration of ib_send_lat, ib_write_lat and ib_read_lat -s 2 -n 100000 (--quick:
              10,000; --smoke: 1,000), each percentile also over its own typical, beside the
              same percentiles of the UDP io_uring ping-pong of as many round trips: whether
              the machine itself has the tail
  events      the 2 B ping-pong with both sides waiting for completion events
              (ib_send_lat -e), median one-way latency (us)
  bandwidth   64 B .. 1 MiB, one way and both ways at once (Gb/s)
  rate        64-byte message rate, one way (millions of messages per second): the 64 B
              ib_write_bw run of the bandwidth workload, and ib_send_bw -s 64 beside it
  connect     1, 100 and 1,000 connections set up at once (us per connection)
  middleware  the RDMA middleware on uroce against the same middleware on the kernel's TCP:
              ucx_perftest -t tag_lat -s 8 (one way, typical, us) and -t tag_bw -s 1048576
              (Gb/s) with UCX_TLS=rc_verbs,ud_verbs,self on uroce, UCX_TLS=tcp,self on TCP;
              Open MPI's ping-pong of uroce-bench's mpi_check (2 ranks: 8 B one way, median,
              99th and 99.9th percentile, us; 1 MiB, Gb/s) through pml ucx with those
              UCX_TLS on uroce, through pml ob1 with btl tcp,self on TCP (lo). Needs Debian's
              ucx-utils, openmpi-bin and libopenmpi-dev: without them the section is skipped
              with a line saying why (named in --sections, an error)
  rsockets    rdma-core's rsockets against the kernel's TCP: Debian's rstream -S 65536 (64 KiB
              transfers, blocking calls; Gb/s) through uroce-run, and the same rstream in its
              socket mode (-T s) over TCP on 127.0.0.1
Systems:
  uroce       unmodified perftest (ib_send_lat, with -e for events, ib_write_bw; for tails
              also ib_write_lat and ib_read_lat, for the rate also ib_send_bw) and cmtime
              through uroce-run
  hardware    the same programs on the system's rdma-core (uroce-run --backend verbs), when
              /sys/class/infiniband lists a device with a RoCE v2 IPv4 GID (or --hw-*);
              skipped with a line saying why otherwise
  UDP, TCP    the latency, bandwidth, rate and connect workloads over the kernel's sockets
              (uroce-sockbench); TCP is also the middleware's baseline (UCX's tcp transport,
              Open MPI's btl tcp) and the rsockets' (rstream -T s)
  UDP io_uring
              the latency ping-pong over UDP through io_uring, polling its completions
              without sleeping (uroce-sockbench udp latency --uring; sizes up to 4 KiB); also
              the tails workload's baseline
  UDP blocking
              the events workload's baseline: the UDP ping-pong with both sides asleep in a
              blocking recvmsg (uroce-sockbench udp latency --blocking)
  UDP mmsg busy
              the 64-byte message rate's strong baseline: sendmmsg batches of 64 that never
              block, received in recvmmsg batches of 64 polled without sleeping
              (uroce-sockbench udp stream --mmsg)
Every repetition runs each workload once on every system, one after the other, so that a
noisy machine's drift hits all alike; the report gives medians with their spread.

Writes DIR/report.md (Markdown, ratios to the baselines), DIR/results.csv (every run),
DIR/latency.svg and DIR/bandwidth.svg. Exits 0 when every run gave a figure, 1 when some
failed (the report says which), 2 on a bad option.

Options:
  --quick          a one-minute run: fewer sizes and connection counts, one repetition
  --smoke          each workload at one point with the fewest iterations (perftest's
                   1,000), one repetition: proves that every program runs and reports a
                   figure, on a machine too slow for --quick (an emulated one); its
                   figures measure little
  --reps N         repetitions (default 3)
  --out DIR        where the report goes (default: uroce-bench-report)
  --sections LIST  a comma-separated subset of latency,tails,events,bandwidth,rate,connect,
                   middleware,rsockets
  --systems LIST   a comma-separated subset of uroce,hardware,udp,udp-uring,udp-blocking,
                   udp-mmsg,tcp (default: all; hardware only where a device is found).
                   Named here, hardware without a device is an error (exit 1), not a skip
  --hw-device DEV, --hw-gid N, --hw-addr IP
                   the RDMA device, its GID index and its IPv4 address for the hardware runs
                   (default: the first device with a RoCE v2 IPv4 GID)
  --udp-port N     uroce's RoCE UDP port (UROCE_UDP_PORT; default 28990)
  --tcp-port N     the TCP port of perftest's and cmtime's exchange (default 18990)

UROCE_BENCH_SYSFS=DIR looks for devices in DIR instead of /sys/class/infiniband (for tests).
"""
import argparse
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.path.dirname(os.path.realpath(__file__))
# Where bench_report.py and mpi_check.c are: beside this tool (build tree) or share/uroce.
SHARE = (BIN, os.path.join(BIN, "..", "share", "uroce"))
for d in SHARE:
    if os.path.exists(os.path.join(d, "bench_report.py")):
        sys.path.insert(0, d)
        break
import bench_report  # noqa: E402

PROG = "uroce-bench"
# The version of the uroce this tool was built with (CMake fills it in). The library itself is
# not loaded here: a sanitized build of it cannot be loaded into python.
VERSION = "@PROJECT_VERSION@"
SECTIONS = ("latency", "tails", "events", "bandwidth", "rate", "connect", "middleware",
            "rsockets")
SYSTEMS = ("uroce", "hardware", "udp", "udp-uring", "udp-blocking", "udp-mmsg", "tcp")
# Where the kernel lists RDMA devices; UROCE_BENCH_SYSFS names another folder (for tests).
SYSFS = os.environ.pop("UROCE_BENCH_SYSFS", "/sys/class/infiniband")
RUN_TIMEOUT = 120


def die(msg, code=2):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


def positive(name):
    def parse(s):
        try:
            v = int(s)
        except ValueError:
            v = 0
        if not 1 <= v <= 65535:
            raise argparse.ArgumentTypeError(f"{name}: '{s}' is not a number in 1..65535")
        return v
    return parse


def options():
    p = argparse.ArgumentParser(prog=PROG, add_help=False)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--reps", type=positive("--reps"))
    p.add_argument("--out", default="uroce-bench-report")
    p.add_argument("--sections")
    p.add_argument("--systems")
    p.add_argument("--hw-device")
    p.add_argument("--hw-gid", type=int)
    p.add_argument("--hw-addr")
    p.add_argument("--udp-port", type=positive("--udp-port"), default=28990)
    p.add_argument("--tcp-port", type=positive("--tcp-port"), default=18990)
    p.add_argument("-h", "--help", action="store_true")
    try:
        a = p.parse_args()
    except SystemExit:
        die("bad option (see --help)")
    if a.help:
        print(__doc__.strip())
        sys.exit(0)
    a.sections_named = a.sections is not None
    a.sections = [s for s in (a.sections or ",".join(SECTIONS)).split(",") if s]
    for s in a.sections:
        if s not in SECTIONS:
            die(f"--sections: unknown section '{s}' (one of {','.join(SECTIONS)})")
    # None: every system, the hardware only where a device is found
    if a.systems is not None:
        a.systems = [s for s in a.systems.split(",") if s]
        for s in a.systems:
            if s not in SYSTEMS:
                die(f"--systems: unknown system '{s}' (one of {','.join(SYSTEMS)})")
        if not a.systems:
            die("--systems: no system named")
    if a.quick and a.smoke:
        die("--quick and --smoke: one or the other")
    if a.reps is None:
        a.reps = 1 if a.quick or a.smoke else 3
    return a


def plan(a):
    """The sizes and counts of each workload, and the effort per run."""
    if a.smoke:  # bw_bytes 0: every bandwidth run at bandwidth()'s floor of 1,000 iterations
        return dict(lat_sizes=[2], bw_sizes=[4096], bidir_sizes=[4096], conns=[10],
                    lat_iters=1000, tail_iters=1000, bw_bytes=0, seconds=0.2, mw_iters=1000)
    if a.quick:
        return dict(lat_sizes=[2, 4096], bw_sizes=[4096, 65536], bidir_sizes=[65536],
                    conns=[1, 100], lat_iters=2000, tail_iters=10000, bw_bytes=128 << 20,
                    seconds=0.5, mw_iters=2000)
    return dict(lat_sizes=[2, 64, 1024, 4096, 16384, 65536],
                bw_sizes=[64, 1024, 4096, 65536, 1 << 20], bidir_sizes=[4096, 65536, 1 << 20],
                conns=[1, 100, 1000], lat_iters=20000, tail_iters=100000, bw_bytes=2 << 30,
                seconds=2, mw_iters=20000)


# --- the hardware path ---------------------------------------------------------------------

def find_hardware(a):
    """(device, gid index, IPv4 address) for the hardware runs, or a string saying why not."""
    devs = sorted(os.listdir(SYSFS)) if os.path.isdir(SYSFS) else []
    if not devs:
        return f"skipped: no RDMA device ({SYSFS} is empty or missing)"
    if a.hw_device and a.hw_gid is not None and a.hw_addr:
        return (a.hw_device, a.hw_gid, a.hw_addr)
    for dev in ([a.hw_device] if a.hw_device else devs):
        port = os.path.join(SYSFS, dev, "ports", "1")
        for i in range(256):
            try:
                kind = open(os.path.join(port, "gid_attrs", "types", str(i))).read().strip()
                gid = open(os.path.join(port, "gids", str(i))).read().strip()
            except OSError:
                continue
            if kind == "RoCE v2" and gid.startswith("0000:0000:0000:0000:0000:ffff:"):
                h = gid.replace(":", "")[-8:]
                ip = ".".join(str(int(h[k:k + 2], 16)) for k in range(0, 8, 2))
                return (dev, i, a.hw_addr or ip)
    return ("skipped: no device with a RoCE v2 IPv4 GID (give --hw-device, --hw-gid and "
            "--hw-addr)")


# --- running the programs ------------------------------------------------------------------

class Runner:
    def __init__(self, a, hw):
        self.a = a
        self.hw = hw if isinstance(hw, tuple) else None
        self.env = dict(os.environ, UROCE_UDP_PORT=str(a.udp_port))
        self.last = ""  # the last command run, for a failure's report
        self.mpi_exe = None  # mpi_check, once built ("" when it could not be)
        self.tmp = None  # the folder it was built in

    def rdma(self, system, prog_args):
        """(server command, client command) of an RDMA program on a system."""
        run = os.path.join(BIN, "uroce-run")
        if system == "uroce":
            base, dev, addr = [run], ["-d", "uroce_lo", "-x", "0"], "127.0.0.1"
        else:
            d, gid, addr = self.hw
            base, dev = [run, "--backend", "verbs"], ["-d", d, "-x", str(gid)]
        port = ["-p", str(self.a.tcp_port)]
        if prog_args[0] == "cmtime":
            srv = base + prog_args[:1] + port + (["-b", addr] if system != "uroce" else [])
            return srv, base + prog_args + port + ["-s", addr]
        return base + prog_args + dev + port, base + prog_args + dev + port + [addr]

    def listening(self):
        """Whether something listens on the exchange port (perftest's TCP, or ready cmtime)."""
        want = f":{self.a.tcp_port:04X} "
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                for line in open(f).readlines()[1:]:
                    cols = line.split()
                    if cols[1].endswith(want.strip()) and cols[3] == "0A":
                        return True
            except OSError:
                pass
        return False

    def cm_listening(self):
        """Whether a kernel rdma_cm id listens on the exchange port, from the kernel's own
        list (iproute2's `rdma resource show cm_id`); None without the rdma tool."""
        try:
            out = subprocess.run(["rdma", "resource", "show", "cm_id"], capture_output=True,
                                 text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        want = re.compile(rf"state LISTEN .*src-addr \S+:{self.a.tcp_port} ")
        return any(want.search(line) for line in out.splitlines())

    def pair(self, system, prog_args, ready, timeout=RUN_TIMEOUT, cmds=None, env=None):
        """Run server and client, each for at most @timeout seconds; the client's output, or
        None (a failure is recorded). @cmds: (server, client) commands in place of the RDMA
        program @prog_args's; @env: their environment in place of the runner's."""
        srv_cmd, cli_cmd = cmds or self.rdma(system, prog_args)
        self.last = " ".join(cli_cmd)
        env = dict(env or self.env)
        if system == "uroce" and ready == "log":
            env["UROCE_LOG"] = "info"
        server = subprocess.Popen(srv_cmd, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        deadline = time.monotonic() + 10
        if ready == "log" and system == "uroce":
            # uroce says when an rdma_cm id listens: "rdma_cm: listening on port N ..."
            while time.monotonic() < deadline:
                line = server.stderr.readline()
                if not line or f"listening on port {self.a.tcp_port} " in line:
                    break
        elif ready == "log":
            # A hardware cmtime server says nothing when it listens, and a client that comes
            # first is refused (connect() then has no figure): wait until the kernel lists
            # its listener (with no rdma tool to ask, half a second: ample on real CPUs, not
            # under emulation).
            while server.poll() is None and time.monotonic() < deadline:
                listening = self.cm_listening()
                if listening is None:
                    time.sleep(0.5)
                if listening is not False:
                    break
                time.sleep(0.05)
        else:
            while (not self.listening() and server.poll() is None and
                   time.monotonic() < deadline):
                time.sleep(0.02)
        try:
            cli = subprocess.run(cli_cmd, env=env, capture_output=True, text=True,
                                 timeout=timeout)
            out, ok = cli.stdout, cli.returncode == 0
            if not ok:
                said = (cli.stderr.strip() or cli.stdout.strip()).splitlines()
                self.last += f" (exit {cli.returncode}{': ' + said[-1] if said else ''})"
        except subprocess.TimeoutExpired:
            out, ok = "", False
            self.last += f" (no end within {timeout} s)"
        if prog_args and prog_args[0] == "cmtime":
            server.send_signal(signal.SIGINT)  # cmtime's server runs until interrupted
        try:
            server.communicate(timeout=timeout if ok else 5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
            if ok:
                self.last += " (the server did not end)"
            ok = False
        return out if ok else None

    def ucx_perftest(self, system, args, timeout=RUN_TIMEOUT):
        """ucx_perftest's server and client (@args and the address) with the transports of
        @system; the client's output, or None."""
        base = [os.path.join(BIN, "uroce-run")] if system == "uroce" else []
        prog = base + ["ucx_perftest", "-p", str(self.a.tcp_port)]
        env = dict(self.env, UCX_TLS=UCX_TLS[system])
        return self.pair(system, [], "tcp", timeout, (prog, prog + args + ["127.0.0.1"]), env)

    def mpi(self, system, args, timeout=RUN_TIMEOUT):
        """Open MPI's mpirun of 2 ranks of mpi_check @args through @system's path; its output,
        or None."""
        exe = self.mpi_check()
        if exe is None:
            return None
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", "2"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        env = dict(self.env)
        if system == "uroce":
            env["UCX_TLS"] = UCX_TLS[system]
            cmd = [os.path.join(BIN, "uroce-run")] + cmd + [
                "--mca", "pml", "ucx", "--mca", "osc", "ucx", "--mca", "btl", "self",
                "-x", "UCX_TLS", "-x", "UROCE_UDP_PORT"]
        else:  # Open MPI leaves lo out of btl tcp unless asked for it
            cmd += ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                    "--mca", "btl_tcp_if_include", "lo", "--mca", "osc", "pt2pt"]
        return self.output(cmd + [exe] + args, timeout, env)

    def mpi_check(self):
        """mpi_check built (once) from its source beside this tool, or None."""
        if self.mpi_exe is None:
            src = next((os.path.join(d, "mpi_check.c") for d in SHARE
                        if os.path.exists(os.path.join(d, "mpi_check.c"))), None)
            if src is None:
                self.last = f"mpi_check.c: in none of {', '.join(SHARE)}"
                self.mpi_exe = ""
            else:
                self.tmp = tempfile.mkdtemp(prefix="uroce-bench-")
                exe = os.path.join(self.tmp, "mpi_check")
                built = self.output(["mpicc.openmpi", "-O2", "-o", exe, src], RUN_TIMEOUT)
                self.mpi_exe = exe if built is not None else ""
        return self.mpi_exe or None

    def sock(self, args, timeout=RUN_TIMEOUT):
        out = self.output([os.path.join(BIN, "uroce-sockbench")] + args, timeout)
        return out.split() if out is not None else None

    def output(self, cmd, timeout, env=None):
        """Run @cmd (recorded as the last command) for at most @timeout seconds: its standard
        output if it exits 0, else None."""
        self.last = " ".join(cmd)
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            if r.returncode == 0:
                return r.stdout
        except subprocess.TimeoutExpired:
            pass
        return None


def default_sigint():
    """In a server, before it starts: SIGINT's default action, which ends cmtime's server.
    An ignored signal stays ignored across exec, and a non-interactive shell's `&` ignores
    SIGINT (the interop VM's agent starts its commands so): sent an ignored SIGINT, the
    server would run until the time limit and its run count as failed."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def perftest_row(out):
    """The result row of a perftest client's output (the line after the '#bytes' header)."""
    lines = (out or "").splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and i + 1 < len(lines):
            cols = lines[i + 1].split()
            if cols and cols[0].isdigit():
                return cols
    return None


def perftest_lat(out):
    """A latency program's typical (median), 99th and 99.9th percentile iteration (us), from
    its row's columns #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%; {}
    without a row."""
    row = perftest_row(out)
    if not row:
        return {}
    cols = row + [None] * 9
    return {"typical": number(cols[4]), "p99": number(cols[7]), "p99.9": number(cols[8])}


def sock_lat(out):
    """The same three figures of a uroce-sockbench ping-pong's line
    "latency MEDIAN us p99 P99 us p99.9 P999 us"; {} without one."""
    if not out:
        return {}
    cols = out + [None] * 9  # a short line: the missing figures are None, a failed run
    return {"typical": number(cols[1]), "p99": number(cols[4]), "p99.9": number(cols[7])}


def number(s):
    """A figure, or None: perftest prints inf and nan when it could not measure its clock."""
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# --- the workloads: each returns {metric: value} for one run on one system -----------------

# The ping-pongs of uroce-sockbench: system -> its arguments before --size.
SOCK_LATENCY = {"udp": ["udp", "latency"], "tcp": ["tcp", "latency"],
                "udp-uring": ["udp", "latency", "--uring"],
                "udp-blocking": ["udp", "latency", "--blocking"]}


# The middleware's transports: UCX_TLS on uroce (RC set up through UD, no shared memory) and
# on its TCP baseline.
UCX_TLS = {"uroce": "rc_verbs,ud_verbs,self", "tcp": "tcp,self"}
# The programs the middleware workload needs (Debian: ucx-utils, openmpi-bin, libopenmpi-dev).
MIDDLEWARE_PROGRAMS = ("ucx_perftest", "mpirun.openmpi", "mpicc.openmpi")


# The programs of the tails workload on uroce and the hardware (the io_uring ping-pong is
# their baseline).
TAIL_PROGRAMS = ("ib_send_lat", "ib_write_lat", "ib_read_lat")


def ping_pong(r, system, prog, size, iters, extra=()):
    """The typical (median), 99th and 99.9th percentile iteration (us) of @iters round trips
    of @size bytes: the perftest latency program @prog on uroce and the hardware (one way;
    ib_read_lat's figures are a READ's round trip), the system's uroce-sockbench ping-pong
    otherwise (one way); {} when nothing ran. A run with a tail is a figure, not a failure:
    the time limit allows every round trip 2 ms (the tail issue 22 found) beyond the usual
    limit."""
    timeout = RUN_TIMEOUT + iters * 0.002
    if system in SOCK_LATENCY:
        return sock_lat(r.sock(SOCK_LATENCY[system] + ["--size", str(size), "--count",
                                                       str(iters)], timeout))
    return perftest_lat(r.pair(system, [prog, "-s", str(size), "-n", str(iters)] + list(extra),
                               "tcp", timeout))


def latency(r, p, system, size, events=False):
    """The median one way of a ping-pong; @events: perftest waits for completion events
    (-e), and its baseline (udp-blocking) sleeps in recvmsg."""
    got = ping_pong(r, system, "ib_send_lat", size, p["lat_iters"], ["-e"] if events else [])
    return {"latency": got["typical"]} if got else {}


def tails(r, p, system, prog):
    """The tail of @prog's 2 B ping-pong (the sockbench ping-pong's on the baselines): metrics
    "PROGRAM typical", "PROGRAM p99" and "PROGRAM p99.9", PROGRAM "ping-pong" for the
    baselines."""
    got = ping_pong(r, system, prog, 2, p["tail_iters"])
    name = "ping-pong" if system in SOCK_LATENCY else prog
    return {f"{name} {stat}": v for stat, v in got.items()}


def stream(r, p, system, size, bidir=False, prog="ib_write_bw"):
    """Gb/s and millions of messages per second of a one-way (@bidir: two-way) stream of
    @size-byte messages: @prog on uroce and the hardware, uroce-sockbench's stream on the
    baselines."""
    if system in ("udp", "tcp", "udp-mmsg"):
        proto = ["udp", "stream", "--mmsg"] if system == "udp-mmsg" else [system, "stream"]
        out = r.sock(proto + ["--size", str(size), "--seconds", str(p["seconds"])]
                     + (["--bidir"] if bidir else []))
        return {"bandwidth": number(out[1]), "rate": number(out[3])} if out else {}
    iters = max(1000, min(200000, p["bw_bytes"] // size))
    args = [prog, "-s", str(size), "-n", str(iters), "--report_gbits"]
    row = perftest_row(r.pair(system, args + (["-b"] if bidir else []), "tcp"))
    # BW average [Gb/s] and MsgRate [Mpps]
    return {"bandwidth": number(row[3]), "rate": number(row[4])} if row else {}


def connect(r, p, system, count):
    if system == "tcp":
        out = r.sock(["tcp", "connect", "--count", str(count)])
        return {"connect": number(out[1])} if out else {}
    out = r.pair(system, ["cmtime", "-c", str(count)], "log")
    # cmtime times its steps even when connections failed ("event: RDMA_CM_EVENT_REJECTED,
    # error: 8"), and exits 0: the time of a failed setup is no figure.
    if out is None or ", error: " in out:
        return {}
    for line in out.splitlines():
        cols = line.split()
        if cols and cols[0] == "connect":
            return {"connect": number(cols[-1])}  # us / conn
    return {}


def scaled(v, k):
    """A figure @v in another unit (times @k), or None for no figure."""
    return v * k if v is not None else None


def ucx_final(out):
    """The columns of ucx_perftest's "Final:" row (iterations, then latency typical, average
    and overall in us, bandwidth average and overall in MB/s of 2^20 bytes, message rate
    average and overall), or None."""
    for line in (out or "").splitlines():
        cols = line.split()
        if cols[:1] == ["Final:"] and len(cols) >= 9:
            return cols
    return None


def ucx_row(r, p, system, test):
    """ucx_perftest -t tag_lat -s 8 (metric "ucx tag_lat 8B latency": the typical one way, us)
    or -t tag_bw -s 1048576 ("ucx tag_bw 1MiB bandwidth": the overall, Gb/s)."""
    if test == "tag_lat":
        cols = ucx_final(r.ucx_perftest(system, ["-t", "tag_lat", "-s", "8", "-n",
                                                 str(p["mw_iters"])]))
        return {"ucx tag_lat 8B latency": number(cols[2])} if cols else {}
    iters = max(100, p["bw_bytes"] >> 20)
    cols = ucx_final(r.ucx_perftest(system, ["-t", "tag_bw", "-s", str(1 << 20), "-n",
                                             str(iters)]))
    return {"ucx tag_bw 1MiB bandwidth": scaled(number(cols[6]), 8 * (1 << 20) / 1e9)} \
        if cols else {}


def mpi_row(r, p, system):
    """mpi_check's ping-pong between 2 ranks: metrics "mpi 8B typical", "mpi 8B p99",
    "mpi 8B p99.9" (one way, us) and "mpi 1MiB bandwidth" (Gb/s)."""
    iters = p["mw_iters"]
    out = r.mpi(system, [str(iters), str(1 << 20), "timing"], RUN_TIMEOUT + iters * 0.002)
    m = re.search(r"^mpi_check: ok latency_8B_us=(\S+) p99_us=(\S+) p99.9_us=(\S+) "
                  r"bandwidth_1MiB_MBps=(\S+)", out or "", re.M)
    if not m:
        return {}
    return {"mpi 8B typical": number(m[1]), "mpi 8B p99": number(m[2]),
            "mpi 8B p99.9": number(m[3]), "mpi 1MiB bandwidth": scaled(number(m[4]), 8 / 1e3)}


# rstream's transfer size in the rsockets workload.
RSTREAM_SIZE = 65536


def rstream_row(r, p, system):
    """rstream -S 65536 between two processes (metric "rstream 64KiB bandwidth", Gb/s): over
    uroce's rsockets through uroce-run, over TCP in rstream's socket mode (-T s). Each of
    rstream's iterations sends -C transfers one way and as many back; the transfer count
    gives the bandwidth workload's bytes (at least rstream's own 1,000)."""
    count = max(1000, p["bw_bytes"] // RSTREAM_SIZE // 2)
    # Both sides need the same size and count: each runs the exchange's own half.
    srv = ["rstream", "-p", str(r.a.tcp_port), "-S", str(RSTREAM_SIZE), "-C", str(count)]
    if system == "uroce":
        srv = [os.path.join(BIN, "uroce-run")] + srv
    else:
        srv += ["-T", "s"]
    cli = srv + ["-s", "127.0.0.1"]
    out = r.pair(system, [], "log" if system == "uroce" else "tcp", RUN_TIMEOUT, (srv, cli))
    # rstream's row: name bytes xfers iters total time Gb/sec usec/xfer
    for line in (out or "").splitlines():
        cols = line.split()
        if cols[:1] == ["custom"] and len(cols) >= 8:
            return {"rstream 64KiB bandwidth": number(cols[6])}
    return {}


def workloads(a, p):
    """(section, size or count, what, function, systems) for every measurement point, in run
    order: what names the program where a section runs several at one point (else ""),
    systems those of the section's (bench_report.planned) that run this one (None: all)."""
    w = []
    if "latency" in a.sections:
        w += [("latency", s, "", lambda r, sy, s=s: latency(r, p, sy, s), None)
              for s in p["lat_sizes"]]
    if "tails" in a.sections:
        # The baseline first, then each program on uroce (and the hardware) in turn.
        w += [("tails", 2, "ping-pong", lambda r, sy: tails(r, p, sy, None), ("udp-uring",))]
        w += [("tails", 2, prog, lambda r, sy, prog=prog: tails(r, p, sy, prog),
               ("uroce", "hardware")) for prog in TAIL_PROGRAMS]
    if "events" in a.sections:
        w += [("events", 2, "", lambda r, sy: latency(r, p, sy, 2, events=True), None)]
    bw = "bandwidth" in a.sections
    if bw or "rate" in a.sections:
        sizes = sorted(set((p["bw_sizes"] if bw else []) + ([bench_report.RATE_SIZE]
                                                            if "rate" in a.sections else [])))
        w += [("bandwidth", s, "", lambda r, sy, s=s: stream(r, p, sy, s), None)
              for s in sizes]
    if "rate" in a.sections:
        w += [("rate", bench_report.RATE_SIZE, "ib_send_bw",
               lambda r, sy: stream(r, p, sy, bench_report.RATE_SIZE, prog="ib_send_bw"),
               None)]
    if bw:
        w += [("bidirectional", s, "", lambda r, sy, s=s: stream(r, p, sy, s, bidir=True),
               None) for s in p["bidir_sizes"]]
    if "connect" in a.sections:
        w += [("connect", c, "", lambda r, sy, c=c: connect(r, p, sy, c), None)
              for c in p["conns"]]
    if "middleware" in a.sections:
        w += [("middleware", 0, f"ucx_perftest {t}", lambda r, sy, t=t: ucx_row(r, p, sy, t),
               None) for t in ("tag_lat", "tag_bw")]
        w += [("middleware", 0, "MPI ping-pong", lambda r, sy: mpi_row(r, p, sy), None)]
    if "rsockets" in a.sections:
        w += [("rsockets", 0, "rstream", lambda r, sy: rstream_row(r, p, sy), None)]
    return w


def programs(a):
    """The RDMA programs the uroce and hardware runs of @a.sections need."""
    need = {"latency": ["ib_send_lat"], "events": ["ib_send_lat"],
            "tails": list(TAIL_PROGRAMS), "bandwidth": ["ib_write_bw"],
            "rate": ["ib_write_bw", "ib_send_bw"], "connect": ["cmtime"], "middleware": [], "rsockets": ["rstream"]}
    return sorted({prog for s in a.sections for prog in need[s]})


def main():
    a = options()
    p = plan(a)
    asked = a.systems or SYSTEMS
    missing = [t for t in programs(a) if not shutil.which(t)]
    if missing and ("uroce" in asked or "hardware" in asked):
        die(f"{', '.join(missing)} missing (Debian: perftest, rdmacm-utils)", 1)
    hw = find_hardware(a) if "hardware" in asked else "not measured (--systems)"
    if not isinstance(hw, tuple) and "hardware" in asked:
        # Asked for by name, a missing device is this run's failure; by default, a skip.
        if a.systems:
            die(f"hardware (--systems): {hw.removeprefix('skipped: ')}", 1)
        print(f"{PROG}: hardware: {hw}", file=sys.stderr)
    systems = [s for s in SYSTEMS if s in asked and (s != "hardware" or isinstance(hw, tuple))]
    mw_missing = [t for t in MIDDLEWARE_PROGRAMS if not shutil.which(t)]
    middleware = "measured"
    if "middleware" in a.sections and mw_missing:
        middleware = (f"skipped: {', '.join(mw_missing)} missing (Debian: ucx-utils, "
                      "openmpi-bin, libopenmpi-dev)")
        # Named in --sections, the missing programs are this run's failure; by default, a skip.
        if a.sections_named:
            die(f"middleware (--sections): {middleware.removeprefix('skipped: ')}", 1)
        print(f"{PROG}: middleware: {middleware}", file=sys.stderr)
        a.sections.remove("middleware")
    r = Runner(a, hw)
    w = workloads(a, p)
    runs = [(section, x, what, fn, [sy for sy in systems if bench_report.planned(section, x, sy)
                                    and (only is None or sy in only)])
            for section, x, what, fn, only in w]
    runs = [run for run in runs if run[4]]
    if not runs:  # e.g. connect on UDP alone
        die("no workload of --sections runs on --systems")
    total = sum(len(on) for *_, on in runs) * a.reps
    results = []  # (section, x, system, rep, metric, value)
    done = 0
    failures = []
    started = time.monotonic()
    for rep in range(1, a.reps + 1):
        for section, x, what, fn, here in runs:
            # Rotate the systems' order each repetition, so that none always runs first.
            order = here[rep % len(here):] + here[:rep % len(here)]
            for system in order:
                done += 1
                bench_report.progress(f"[{done}/{total}] {section} {x}{' ' + what if what else ''}"
                                      f" {system} (repetition {rep} of {a.reps})")
                got = fn(r, system)
                for metric, value in got.items():
                    results.append((section, x, system, rep, metric, value))
                if not got or any(v is None for v in got.values()):
                    failures.append(f"{section} {x}{' ' + what if what else ''} on {system} "
                                    f"(repetition {rep}): {r.last}")
    bench_report.progress(None)
    if r.tmp:
        shutil.rmtree(r.tmp, ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    info = bench_report.machine(VERSION)
    info["hardware"] = f"{hw[0]} (GID {hw[1]}, {hw[2]})" if isinstance(hw, tuple) else hw
    if middleware != "measured":
        info["middleware"] = middleware
    info["run"] = (f"{' '.join(sys.argv)}: {a.reps} repetition(s), "
                   f"{time.monotonic() - started:.0f} s")
    bench_report.write(a.out, results, systems, info, failures)
    print(f"{PROG}: report in {os.path.join(a.out, 'report.md')}")
    if failures:
        print(f"{PROG}: {len(failures)} run(s) gave no figure, first: {failures[0]}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
