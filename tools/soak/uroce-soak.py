#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce-soak: several RDMA programs over uroce at once, for a while; it fails on the first
hang, data error or memory growth.

usage: uroce-soak [--seconds N] [--faults SPEC] [--rss-growth-mb N] [--udp-port N]
                  [--tcp-port N] [--uroce-run PATH] [--log FILE]

Workers, all at once, each repeating its program pair (a server and a client process on
127.0.0.1, through uroce-run, unmodified Debian programs) until the time is up:
  rping        rping -V -S 4096 -C 100: every ping's data verified
  send_lat_e   ib_send_lat -e -n 2000: completion events on every hop
  write_bw     ib_write_bw -n 500
  ud_send_bw   ib_send_bw -c UD -n 500
  ucmatose     ucmatose -c 4 -C 50: four connections at once, SENDs both ways
and two long-lived processes for the whole time, whose memory is sampled:
  persistent   rping -s -P (one server for every rping client above)
  duration     ib_send_bw -D SECONDS: a transfer as long as the soak
All processes share one rendezvous (one UDP port): the hub is one of them.

It fails (exit 1), saying which run and why, when:
  - a run does not end within its limit (a hang: the run is killed),
  - a program exits with an error or without its success line (rping -V's checks, perftest's
    result row, ucmatose's "test complete"),
  - a long-lived process's resident memory grows by more than --rss-growth-mb between the
    end of the first fifth of the time and its last sample, 5 s before the end (a leak grows
    with the runs; allocator caches do not).
The first failure stops the soak: the runs under way finish, the duration transfer is ended
(not judged). A perftest run that completed but whose client could not measure its CPU clock
(perftest's clock fit fails on a loaded host: every figure "inf", or "Can't produce a
report" and exit 1) is no failure; the summary counts such runs.
Exit 0 when every run passed; 2 on a bad option. Prints a line per finished run and a summary.

Options:
  --seconds N        how long (default 60)
  --faults SPEC      uroce's fault injection for every process (uroce-run --faults), e.g.
                     loss=0.01,reorder=0.01: retransmission must carry every run through.
                     send_lat_e and ud_send_bw are then left out: UD loses datagrams by
                     design, and perftest 4.5's -e loop hangs when a lost ACK brings a
                     reply's receive completion before the send's, on any stack
  --rss-growth-mb N  the memory growth allowed a long-lived process (default 16)
  --udp-port N       uroce's UDP port (UROCE_UDP_PORT; default 28790): keep it apart from
                     other uroce programs' on this host
  --tcp-port N       the first of the TCP and rdma_cm ports the workers use (default 18770;
                     it uses 8 from there)
  --uroce-run PATH   the uroce-run to use (default: the one beside this program)
  --log FILE         also write every run's outputs there
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_LIMIT = 90  # seconds a single run may take before it counts as hung
PERFTEST_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+", re.M)
# perftest when its CPU clock fit failed (sample_get_cpu_mhz on a loaded host), after an
# exchange that completed: a latency test prints every figure "inf"; a bandwidth test says
# so and exits 1
PERFTEST_NO_CLOCK = re.compile(r"^\s*\d+\s+\d+\s+inf\s|"
                               r"^Correlation coefficient r\^2: [\d.e-]+ < 0\.9\n"
                               r"Can't produce a report", re.M)


class Soak:
    def __init__(self, args):
        self.a = args
        self.end = time.monotonic() + args.seconds
        self.lock = threading.Lock()
        self.failures = []
        self.runs = {}
        self.no_clock = {}
        self.log = open(args.log, "w") if args.log else None
        self.env = dict(os.environ, UROCE_UDP_PORT=str(args.udp_port), UROCE_LOG="info")

    def argv(self, cmd):
        pre = [self.a.uroce_run]
        if self.a.faults:
            pre += ["--faults", self.a.faults]
        return pre + ["--"] + cmd.split()

    def start(self, cmd):
        return subprocess.Popen(self.argv(cmd), env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    @staticmethod
    def finish(p, limit):
        """(rc, output, hung) of a process, killed with its group at the limit."""
        try:
            out, _ = p.communicate(timeout=limit)
            return p.returncode, out, False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return None, out, True

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
        print(f"FAIL {what}", flush=True)

    def note(self, name, text):
        with self.lock:
            self.runs[name] = self.runs.get(name, 0) + 1
            if self.log:
                self.log.write(text)
                self.log.flush()

    def untimed(self, name):
        """A perftest run that completed without figures: its clock fit failed."""
        with self.lock:
            self.no_clock[name] = self.no_clock.get(name, 0) + 1

    def stopping(self):
        return self.failures or time.monotonic() >= self.end


def wait_tcp(port, deadline):
    while time.monotonic() < deadline:
        r = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
        if r.stdout.strip():
            return True
        time.sleep(0.05)
    return False


def wait_text(lines, text, deadline):
    while time.monotonic() < deadline:
        if any(text in line for line in lines):
            return True
        time.sleep(0.05)
    return False


def wait_ready(ready, port, lines, deadline):
    """A server is ready: listening on TCP @port (perftest), or uroce's log says its rdma_cm
    listens on @port."""
    if ready == "tcp":
        return wait_tcp(port, deadline)
    return wait_text(lines, f"rdma_cm: listening on port {port}", deadline)


def reader(p, lines):
    for line in p.stdout:
        lines.append(line)


def pair(soak, name, server, client, port, ready, check):
    """One worker: the server/client pair, again and again until the time is up."""
    n = 0
    while not soak.stopping():
        n += 1
        s = soak.start(server)
        lines = []
        t = threading.Thread(target=reader, args=(s, lines), daemon=True)
        t.start()
        if not wait_ready(ready, port, lines, time.monotonic() + 30):
            os.killpg(s.pid, signal.SIGKILL)
            t.join(5)
            soak.fail(f"{name} run {n}: the server never listened:\n{''.join(lines)[-1500:]}")
            return
        c = soak.start(client)
        crc, cout, chung = Soak.finish(c, RUN_LIMIT)
        try:
            s.wait(timeout=RUN_LIMIT if not chung else 1)
            shung = False
        except subprocess.TimeoutExpired:
            os.killpg(s.pid, signal.SIGKILL)
            s.wait()
            shung = True
        t.join(5)
        sout = "".join(lines)
        why = []
        if chung or shung:
            why.append(f"{'client' if chung else 'server'} hung (killed after {RUN_LIMIT} s)")
        else:
            checked = check(cout, sout)
            if checked is None and crc in (0, 1) and s.returncode in (0, 1):
                soak.untimed(name)
            else:
                if crc != 0 or s.returncode != 0:
                    why.append(f"client exited {crc}, server {s.returncode}")
                why += checked or []
        soak.note(name, f"=== {name} run {n}: {'; '.join(why) or 'ok'}\n--- server: {server}\n"
                        f"{sout}\n--- client: {client}\n{cout}\n")
        if why:
            soak.fail(f"{name} run {n}: {'; '.join(why)}\n--- server: {server}\n{sout[-1500:]}"
                      f"\n--- client: {client}\n{cout[-1500:]}")
            return


def perftest_check(cout, sout):
    """Problems of a perftest run, or None when one side could not time it (its clock fit
    failed) after the exchange completed."""
    if PERFTEST_NO_CLOCK.search(cout) or PERFTEST_NO_CLOCK.search(sout):
        return None
    return [] if PERFTEST_ROW.search(cout) else ["no result row from the client"]


def rss_kib(pid):
    """Resident memory of a process and its children (uroce-run execs: one process)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def long_lived(soak, name, cmd, port, ready):
    """A process for the whole soak (and, for a persistent server, nothing else); its RSS is
    sampled after the first fifth of the time and at the end."""
    p = soak.start(cmd)
    lines = []
    t = threading.Thread(target=reader, args=(p, lines), daemon=True)
    t.start()
    if ready:
        if not wait_ready(ready, port, lines, time.monotonic() + 30):
            soak.fail(f"{name}: never listened:\n{''.join(lines)[-1500:]}")
            os.killpg(p.pid, signal.SIGKILL)
            return p, lines, None
    return p, lines, t


def main():
    ap = argparse.ArgumentParser(prog="uroce-soak", add_help=False)
    ap.add_argument("-h", "--help", action="store_true")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--faults")
    ap.add_argument("--rss-growth-mb", type=float, default=16)
    ap.add_argument("--udp-port", type=int, default=28790)
    ap.add_argument("--tcp-port", type=int, default=18770)
    ap.add_argument("--uroce-run", default=os.path.join(HERE, "uroce-run"))
    ap.add_argument("--log")
    try:
        a = ap.parse_args()
    except SystemExit:
        return 2
    if a.help:
        print(__doc__.strip())
        return 0
    if a.seconds < 10:
        print("uroce-soak: --seconds must be at least 10", file=sys.stderr)
        return 2
    if not os.access(a.uroce_run, os.X_OK):
        print(f"uroce-soak: {a.uroce_run} is not an executable uroce-run (--uroce-run)",
              file=sys.stderr)
        return 2
    soak = Soak(a)
    p0 = a.tcp_port
    # the long-lived: a persistent rping server the rping worker's clients use, and a
    # perftest transfer as long as the soak
    prs, prs_lines, prs_t = long_lived(soak, "persistent rping -s -P",
                                       f"rping -s -P -a 127.0.0.1 -p {p0} -V -S 4096", p0,
                                       "rdma_cm")
    dur = max(5, a.seconds - 5)
    dsrv, dsrv_lines, dsrv_t = long_lived(soak, "duration ib_send_bw server",
                                          f"ib_send_bw -d uroce_lo -x 0 -p {p0 + 1} -D {dur}",
                                          p0 + 1, "tcp")
    dcli = soak.start(f"ib_send_bw -d uroce_lo -x 0 -p {p0 + 1} -D {dur} 127.0.0.1")
    workers = [
        ("rping", None, f"rping -c -a 127.0.0.1 -p {p0} -V -S 4096 -C 100", p0, None, None),
        ("send_lat_e", f"ib_send_lat -d uroce_lo -x 0 -p {p0 + 2} -n 2000 -e",
         f"ib_send_lat -d uroce_lo -x 0 -p {p0 + 2} -n 2000 -e 127.0.0.1", p0 + 2, "tcp",
         perftest_check),
        ("write_bw", f"ib_write_bw -d uroce_lo -x 0 -p {p0 + 3} -n 500",
         f"ib_write_bw -d uroce_lo -x 0 -p {p0 + 3} -n 500 127.0.0.1", p0 + 3, "tcp",
         perftest_check),
        ("ud_send_bw", f"ib_send_bw -d uroce_lo -x 0 -p {p0 + 4} -n 500 -c UD",
         f"ib_send_bw -d uroce_lo -x 0 -p {p0 + 4} -n 500 -c UD 127.0.0.1", p0 + 4, "tcp",
         perftest_check),
        ("ucmatose", f"ucmatose -p {p0 + 5} -c 4 -C 50",
         f"ucmatose -s 127.0.0.1 -p {p0 + 5} -c 4 -C 50", p0 + 5, "rdma_cm",
         lambda c, s: [] if "test complete" in c and "test complete" in s
         else ["no \"test complete\" from both sides"]),
    ]
    if a.faults:
        # Left out under loss, on any stack: UD loses datagrams by design (perftest's UD
        # server waits for every one), and perftest 4.5's -e latency loop waits for the send
        # and the receive completion one after the other on one channel (a lost ACK brings
        # the reply's receive first, and the loop then waits for an event it consumed).
        workers = [w for w in workers if w[0] not in ("send_lat_e", "ud_send_bw")]
        print("with faults: send_lat_e and ud_send_bw left out (--help)")
    threads = []
    for name, srv, cli, port, ready, check in workers:
        if srv is None:  # rping: its server is the persistent one
            t = threading.Thread(target=client_only, args=(soak, name, cli), daemon=True)
        else:
            t = threading.Thread(target=pair, args=(soak, name, srv, cli, port, ready, check),
                                 daemon=True)
        t.start()
        threads.append(t)
    start = time.monotonic()
    first, last = {}, {}
    longs = (("persistent", prs), ("duration", dsrv))
    while not soak.stopping():
        time.sleep(0.5)
        elapsed = time.monotonic() - start
        if not first and elapsed >= a.seconds / 5:
            first = {n: rss_kib(p.pid) for n, p in longs}
        if elapsed < dur:  # the duration transfer ends 5 s before the soak
            last = {n: rss_kib(p.pid) for n, p in longs}
    for t in threads:
        t.join(RUN_LIMIT + 10)
    # the duration transfer ends by itself, unless a failure stopped the soak early: then it
    # is ended (and not judged); the persistent server is stopped
    early = time.monotonic() - start < dur
    if early:
        for p in (dcli, dsrv):
            os.killpg(p.pid, signal.SIGTERM)
    rc, out, hung = Soak.finish(dcli, 30)
    if early:
        pass
    elif hung or rc != 0 or not (PERFTEST_ROW.search(out or "") or
                                 PERFTEST_NO_CLOCK.search(out or "")):
        soak.fail(f"duration ib_send_bw client: {'hung' if hung else f'exited {rc}'}\n"
                  f"{(out or '')[-1500:]}")
    for who, p, lines, t in (("duration ib_send_bw server", dsrv, dsrv_lines, dsrv_t),
                             ("persistent rping server", prs, prs_lines, prs_t)):
        if p is prs:
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            if not (early and p is dsrv):
                soak.fail(f"{who}: hung at the end\n{''.join(lines)[-1500:]}")
        if t:
            t.join(5)
        if p is dsrv and p.returncode != 0 and not early:
            soak.fail(f"{who}: exited {p.returncode}\n{''.join(lines)[-1500:]}")
    for n in first:
        if first[n] is None or last[n] is None:
            continue
        growth = (last[n] - first[n]) / 1024
        print(f"rss {n}: {first[n] / 1024:.1f} MiB after {a.seconds / 5:.0f} s, "
              f"{last[n] / 1024:.1f} MiB at the last sample ({growth:+.1f})")
        if growth > a.rss_growth_mb:
            soak.fail(f"{n}: resident memory grew {growth:.1f} MiB (> {a.rss_growth_mb})")
    for name, count in sorted(soak.no_clock.items()):
        print(f"note: {count} {name} run(s) completed but perftest could not measure its CPU "
              f"clock (figures \"inf\"): not a uroce failure")
    total = sum(soak.runs.values())
    print("runs: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.runs.items())) +
          f"; {total} in {a.seconds} s" + (f" with faults {a.faults}" if a.faults else ""))
    if soak.failures:
        print(f"uroce-soak: {len(soak.failures)} failure(s)")
        return 1
    print("uroce-soak: no hang, no data error, no memory growth")
    return 0


def client_only(soak, name, client):
    """rping clients against the persistent server, one after the other."""
    n = 0
    while not soak.stopping():
        n += 1
        c = soak.start(client)
        rc, out, hung = Soak.finish(c, RUN_LIMIT)
        why = []
        if hung:
            why.append(f"client hung (killed after {RUN_LIMIT} s)")
        elif rc != 0:
            why.append(f"client exited {rc}")
        elif "mismatch" in out:
            why.append("rping -V found a data mismatch")
        soak.note(name, f"=== {name} run {n}: {'; '.join(why) or 'ok'}\n{out}\n")
        if why:
            soak.fail(f"{name} run {n}: {'; '.join(why)}\n{client}\n{out[-1500:]}")
            return


if __name__ == "__main__":
    sys.exit(main())
