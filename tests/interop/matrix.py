#!/usr/bin/env python3
"""uroce against the Linux kernel's Soft-RoCE (rdma_rxe), program by program, both ways.

One VM (vm.py: Debian's Linux 6.1 with rdma_rxe in qemu, on a bridge in network namespace
uroce-ix) runs Debian's unmodified rdma-core and perftest programs on the kernel's rxe; the
host side of the bridge runs the same programs under uroce-run. Each case runs a program as
server on one side and client on the other, then the other way round. A case passes when
both ends exit as the program's own success says (perftest's and the examples' result rows,
rping -V's verified bytes), within a time limit, and the frames captured on the bridge decode
in tshark with no malformed frame and every ICRC verifies (oracle/roce_icrc.py).

usage: matrix.py --bin BUILD/bin [--only REGEX] [--list] [--keep DIR]

Prints a line per run and ends with 'N passed, M failed'; exit 0 only when all passed.
Needs root, qemu and the kernel scripts/setup.sh fetches: without them it fails, never skips.
"""
import argparse
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import vm as vmlib  # noqa: E402

RXE_DEV = "rxe0"
UROCE_DEV = "uroce_br0"


class Case:
    """A program run as server and client. Templates take {srv} (the server's address of the
    case's family), {srv4} (its IPv4 address: the verbs examples' and perftest's own TCP
    exchange), {own} (the side's own address), {dev} and {gid} (the device, and the GID index
    of the side's own address of the case's family), {port}.
    wait: how the server is known to be ready: "tcp" (listening on port), "rdma_cm" (an
    rdma_cm listen on port), or a number of seconds (mckey's receivers: no listen to see).
    check: what success also needs: "perftest" (a result row from both; "perftest-client"
    from the client, whose server prints none: READ and atomic latency), "bytes" (the
    examples' throughput line from both)."""

    def __init__(self, name, server, client, family=4, wait="tcp", port=None, check=None,
                 server_exits=True, timeout=120, client_rc=0, rpoll_hup=False):
        self.name, self.server, self.client = name, server, client
        self.rpoll_hup = rpoll_hup  # rstream -T a: run_lost's rpoll race applies
        self.family, self.wait, self.port = family, wait, port
        self.check, self.server_exits, self.timeout = check, server_exits, timeout
        self.client_rc = client_rc  # the client's exit status that means it went right


# Debian's perftest 4.5-0.17 with -R: its client connects the test QP the moment the last
# handshake message arrives, its server listens only once that message's send completes, and
# the client's retry (rdma_cm_client_connection) reuses the ids, channel and nodes that
# rdma_cm_destroy_cma has just freed: a lost race is a crash, on any stack. The kernel's
# server in a TCG guest takes milliseconds to listen, so a client on real CPUs, uroce's,
# often wins it: such runs are repeated (RACE_RUNS), and a case whose every run is lost is
# reported as not run, by name (docs/INTEROP.md).


def perftest(prog, extra="", name=None, family=4):
    """perftest's ib_* programs: the address exchange over TCP to {srv4}, or with -R through
    the rdma_cm to {srv}; the GID of the case's family (-x). The READ and atomic latency
    servers only answer, and print no result row."""
    check = "perftest-client" if prog in ("ib_read_lat", "ib_atomic_lat") else "perftest"
    rdma_cm = "-R" in extra.split()
    base = f"{prog} -d {{dev}} -x {{gid}} {extra}".strip()
    return Case(name or f"{prog}{extra.replace(' ', '')}", base,
                base + (" {srv}" if rdma_cm else " {srv4}"), family,
                wait="rdma_cm" if rdma_cm else "tcp", port=18515, check=check)


def pingpong(prog, extra="", name=None, family=4):
    """rdma-core's ibv_*_pingpong: the address exchange over TCP (IPv4: the server listens
    on it), the RoCE traffic from the GID of the case's family (-g)."""
    base = f"{prog} -d {{dev}} -g {{gid}} {extra}".strip()
    return Case(name or f"{prog}{extra.replace(' ', '')}", base, base + " {srv4}", family,
                wait="tcp", port=18515, check="bytes")


def rdmacm(name, server, client, port, family=4, **kw):
    """An rdma_cm program: the server named by address {srv}, ready when it listens."""
    return Case(name, server, client, family, wait="rdma_cm", port=port, **kw)


def rsocket(name, cmd, port, family=4):
    """rstream or riostream: the same options on both sides, the client given the server's
    address; each side prints a result row."""
    return Case(name, cmd, cmd + " -s {srv}", family, wait="rdma_cm", port=port, check="rows",
                rpoll_hup="-T a" in cmd)


RPING = "rping -{side} -a {{srv}} -C 20 -S 4000 -V"
CASES = [
    # rdma_cm programs (rping -V checks every byte it receives)
    rdmacm("rping", RPING.format(side="s"), RPING.format(side="c"), 7174),
    rdmacm("rping6", RPING.format(side="s"), RPING.format(side="c"), 7174, family=6),
    rdmacm("rping_q", "rping -s -q -a {srv} -C 10 -V", "rping -c -q -a {srv} -C 10 -V", 7174),
    rdmacm("rping_small", "rping -s -a {srv} -C 50 -S 64 -V", "rping -c -a {srv} -C 50 -S 64 -V",
           7174),
    rdmacm("ucmatose", "ucmatose -c 2 -C 10", "ucmatose -c 2 -C 10 -s {srv}", 7471),
    rdmacm("ucmatose6", "ucmatose -b {own} -c 2 -C 10", "ucmatose -c 2 -C 10 -s {srv}", 7471,
           family=6),
    rdmacm("udaddy", "udaddy -c 2 -C 10", "udaddy -c 2 -C 10 -s {srv}", 7174),
    rdmacm("udaddy6", "udaddy -b {own} -c 2 -C 10", "udaddy -c 2 -C 10 -s {srv}", 7174,
           family=6),
    rdmacm("rdma_server", "rdma_server", "rdma_client -s {srv}", 7471),
    rdmacm("cmtime", "cmtime -c 20", "cmtime -c 20 -s {srv}", 7471, server_exits=False),
    # Refusals, as the kernel's CM words them. A REQ for a port nobody listens on: REJ
    # "invalid service ID" (8; ucmatose exits with the REJECTED event's status). A REQ for a
    # port someone listens on, but at another address family: REJ "consumer defined" (28).
    # UD: SIDR_REP "unsupported" (1) and "rejected" (2) (udaddy's UNREACHABLE status; udaddy
    # has no port option: 7174 of the UDP port space, where rping listens in the TCP one).
    # The server side runs a listener on another service, so that a uroce process answers.
    rdmacm("rej_no_listener", "rping -s -a {srv} -p 7475 -C 1", "ucmatose -s {srv} -p 7476",
           7475, server_exits=False, client_rc=8),
    rdmacm("rej_other_family", "ucmatose -b {srv4} -p 7477", "ucmatose -s {srv} -p 7477",
           7477, family=6, server_exits=False, client_rc=28),
    rdmacm("sidr_no_listener", "rping -s -a {srv} -p 7174 -C 1", "udaddy -s {srv}",
           7174, server_exits=False, client_rc=1),
    rdmacm("sidr_other_family", "udaddy -b {srv4}", "udaddy -s {srv}",
           7174, family=6, server_exits=False, client_rc=2),
    # mckey: the "server" receives, the client sends, in a group both join. IPv4 only: the
    # kernel's rdma_cm refuses an IPv6 join on RoCE v2 (ENOTSUPP; docs/INTEROP.md)
    Case("mckey", "mckey -m 239.1.2.3 -b {own} -C 10", "mckey -m 239.1.2.3 -b {own} -s -C 10",
         wait=1.0),
    # verbs examples: addresses over TCP, then RoCE; 4096 B messages are 4 packets at MTU 1024
    pingpong("ibv_rc_pingpong", "-n 100 -s 4096"),
    pingpong("ibv_rc_pingpong", "-n 50 -s 65536 -m 1024", name="ibv_rc_pingpong64k"),
    pingpong("ibv_rc_pingpong", "-n 100 -s 4096", name="ibv_rc_pingpong6", family=6),
    pingpong("ibv_uc_pingpong", "-n 100 -s 4096"),
    pingpong("ibv_ud_pingpong", "-n 100 -s 1024"),
    pingpong("ibv_ud_pingpong", "-n 100 -s 1024", name="ibv_ud_pingpong6", family=6),
    pingpong("ibv_srq_pingpong", "-n 50 -s 4096"),
    # perftest, without and with the rdma_cm (its defaults otherwise: 64 KiB for bandwidth, 2 B
    # for latency), and latency at sizes of several packets
    perftest("ib_send_bw", "-n 200"),
    perftest("ib_write_bw", "-n 200"),
    perftest("ib_read_bw", "-n 200"),
    perftest("ib_atomic_bw", "-n 200"),
    perftest("ib_send_lat", "-n 200"),
    perftest("ib_send_lat", "-n 200 -s 5000"),
    perftest("ib_write_lat", "-n 200"),
    perftest("ib_write_lat", "-n 200 -s 3000"),
    perftest("ib_read_lat", "-n 200"),
    perftest("ib_read_lat", "-n 200 -s 3000"),
    perftest("ib_atomic_lat", "-n 200"),
    perftest("ib_write_bw", "-n 200", name="ib_write_bw6", family=6),
    perftest("ib_send_bw", "-n 200 -R"),
    perftest("ib_write_bw", "-n 200 -R"),
    perftest("ib_read_bw", "-n 200 -R"),
    perftest("ib_atomic_bw", "-n 200 -R"),
    perftest("ib_send_lat", "-n 200 -R"),
    perftest("ib_write_lat", "-n 200 -R"),
    perftest("ib_read_lat", "-n 200 -R"),
    perftest("ib_atomic_lat", "-n 200 -R"),
    # rsockets (rdma-core's rsocket protocol over RC: docs/INTEROP.md "rsockets"): rstream's
    # modes (blocking, non-blocking, rpoll, data verified, keepalive), riostream's riowrite
    # into the peer's iomap (verified), rcopy's file (compared by MD5 on both sides)
    rsocket("rstream_b", "rstream -p {port} -T b -S 4096 -C 100", 7480),
    rsocket("rstream_n", "rstream -p {port} -T n -S 1000 -C 100", 7481),
    rsocket("rstream_a", "rstream -p {port} -T a -S 1000 -C 100", 7482),
    rsocket("rstream_v", "rstream -p {port} -T v -S 65536 -C 20", 7483),
    rsocket("rstream_k", "rstream -p {port} -T b -k 1 -S 4096 -C 50", 7484),
    rsocket("riostream_v", "riostream -p {port} -T v -S 4096 -C 20", 7485),
    rdmacm("rcopy", "sh -c 'rm -f /tmp/rs-rcopy.dst; exec rcopy -p {port}'",
           "sh -c 'head -c 2000000 /dev/urandom > /tmp/rs-rcopy.src && "
           "rcopy /tmp/rs-rcopy.src {srv}:/tmp/rs-rcopy.dst -p {port} && "
           "md5sum /tmp/rs-rcopy.src'", 7486, server_exits=False, check="rcopy"),
]

RACE_RUNS = 20  # a run lost to the program itself (run_lost) is run again, 19 times at most
PERFTEST_RACE = re.compile(r"Event: RDMA_CM_EVENT_(REJECTED; error: 8|UNREACHABLE; error: 1)\.")
PERFTEST_CLOCK = re.compile(r"Correlation coefficient r\^2: [\d.]+ < 0\.9")
# rstream's do_poll returns the revents' POLLERR | POLLHUP bits: 16 is POLLHUP alone
RSTREAM_POLLHUP = 16
RSTREAM_PERROR = re.compile(r"^(rsend|rrecv|rpoll)\b", re.M)


def run_lost(case, server_side, client_rc, client_out, server_out):
    """Why a failed run says nothing of either stack, or None (docs/INTEROP.md).
    perftest -R's own race with the kernel's server: its client's REQ came before its server
    listened, and the kernel's CM rejected it at once (a uroce host holds such a request for
    the listen it expects: fabric/rdv_int.h, so with uroce's server the race is no excuse).
    perftest could not measure its CPU's clock (get_cpu_mhz fits a busy loop against
    gettimeofday; a TCG guest's clock fails the fit now and then) and produced no report.
    rstream -T a's client (rdma-core's, in the guest) took uroce's last data and its
    disconnect message in one rpoll: rdma-core's rs_poll_rs reports POLLHUP beside POLLIN
    then, and rstream's do_poll fails on any POLLHUP, before reading the data. Only that: the
    client exited with POLLHUP and no call failed, and uroce's server printed its row, so it
    took all the client's transfers and its own were acknowledged (rshutdown sends the
    disconnect only then)."""
    if case.check and case.check.startswith("perftest"):
        if case.wait == "rdma_cm" and server_side == "rxe" and PERFTEST_RACE.search(client_out):
            return "perftest -R's client came before its server listened"
        if PERFTEST_CLOCK.search(client_out) or PERFTEST_CLOCK.search(server_out):
            return "perftest could not measure the CPU's clock"
    if case.rpoll_hup and server_side == "uroce" and client_rc == RSTREAM_POLLHUP and \
            not RSTREAM_PERROR.search(client_out) and RSTREAM_ROW.search(server_out):
        return "rstream -T a's client took the last data and the disconnect in one rpoll"
    return None


PERFTEST_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+", re.M)
BYTES_ROW = re.compile(r"\d+ bytes in [\d.]+ seconds")
# rstream's and riostream's: name, size, transfers, iterations, total, "0.12s", ...
RSTREAM_ROW = re.compile(r"^\S+\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+[\d.]+[kmg]?\s+"
                         r"[\d.]+s\s", re.M)
MD5 = re.compile(r"\b([0-9a-f]{32})\b")


class Matrix:
    def __init__(self, vm, bin_dir, keep):
        self.vm, self.bin, self.keep = vm, bin_dir, keep
        self.gids = {}  # (side, family) -> index
        self.runs = 0  # numbers each run's files in the work folder

    # --- the two sides ---------------------------------------------------------------
    def addr(self, side, family):
        f = self.vm.fabric
        if side == "rxe":
            return self.vm.ip if family == 4 else self.vm.ip6
        return f.host_ip if family == 4 else f.host_ip6

    def gid_index(self, side, family):
        """The GID index of the side's own address (IPv4-mapped for 4), from ibv_devinfo."""
        key = (side, family)
        if key in self.gids:
            return self.gids[key]
        want = ipaddress.ip_address(self.addr(side, family))
        if family == 4:
            want = ipaddress.IPv6Address("::ffff:" + str(want))
        # Right after the boot the bridge may still be coming up: ask again for a while.
        for _ in range(20):
            if side == "rxe":
                r = self.vm.run(f"ibv_devinfo -v -d {RXE_DEV}", timeout=60)
            else:
                r = self.vm.host(f"{self.bin}/uroce-run ibv_devinfo -v -d {UROCE_DEV}",
                                 timeout=60)
            for m in re.finditer(r"GID\[\s*(\d+)\]:\s+(\S+?),?\s+RoCE v2", r.output):
                try:
                    if ipaddress.ip_address(m.group(2)) == want:
                        self.gids[key] = int(m.group(1))
                        return self.gids[key]
                except ValueError:
                    continue
            time.sleep(0.5)
        raise vmlib.VMError(f"{side}: no RoCE v2 GID for {want} (ibv_devinfo exited {r.rc}, "
                            f"timed out {r.timed_out}):\n{r.output}")

    def fill(self, template, side, case, server_side):
        return template.format(srv=self.addr(server_side, case.family),
                               srv4=self.addr(server_side, 4),
                               own=self.addr(side, case.family),
                               dev=RXE_DEV if side == "rxe" else UROCE_DEV,
                               gid=self.gid_index(side, case.family), port=case.port)

    # --- readiness -------------------------------------------------------------------
    def listening(self, side, case, host_out):
        if isinstance(case.wait, float):
            time.sleep(case.wait)
            return True
        if case.wait == "tcp":
            if side == "rxe":
                r = self.vm.run("netstat -ltn", timeout=20)
            else:
                r = self.vm.host("ss -ltn", timeout=20)
            return re.search(rf"[:.]{case.port}\s", r.output) is not None
        if side == "rxe":
            r = self.vm.run("rdma res show cm_id", timeout=20)
            return re.search(rf"state LISTEN.*:{case.port}\b", r.output) is not None
        try:
            return f"rdma_cm: listening on port {case.port}" in open(host_out).read()
        except OSError:
            return False

    def rcopy_same(self, server_side, client_out):
        """rcopy's copy on the server side has the MD5 the client printed of its file."""
        want = MD5.search(client_out)
        if server_side == "rxe":
            r = self.vm.run("md5sum /tmp/rs-rcopy.dst", timeout=30)
        else:
            r = self.vm.host("md5sum /tmp/rs-rcopy.dst", timeout=30)
        got = MD5.search(r.output)
        if not want or not got or want.group(1) != got.group(1):
            return [f"rcopy's copy differs: {want and want.group(1)} sent, "
                    f"{got and got.group(1)} written"]
        return []

    # --- one run ---------------------------------------------------------------------
    def run(self, case, server_side, work):
        client_side = "uroce" if server_side == "rxe" else "rxe"
        label = f"{case.name}:{server_side}-server"
        srv = self.fill(case.server, server_side, case, server_side)
        cli = self.fill(case.client, client_side, case, server_side)
        self.runs += 1
        stem = os.path.join(work, f"{self.runs:03d}-{label.replace(':', '_')}")
        pcap = stem + ".pcap"
        # --immediate-mode: frames reach the file as they come, not in blocks a stop can lose
        cap = subprocess.Popen(["ip", "netns", "exec", self.vm.fabric.ns, "tcpdump", "-i", "br0",
                                "--immediate-mode", "-U", "-w", pcap, "udp port 4791"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on" once its socket is open: nothing is missed after that
        for line in cap.stderr:
            if "listening on" in line:
                break
        host_out = stem + ".host.out"
        env = dict(os.environ, UROCE_LOG="info")
        host_job = None
        t0 = time.monotonic()
        why = []
        try:
            # the server
            if server_side == "rxe":
                self.vm.start("srv", f"ulimit -l unlimited; exec {srv}")
            else:
                host_job = subprocess.Popen(
                    ["ip", "netns", "exec", self.vm.fabric.ns, "sh", "-c",
                     f"exec {self.bin}/uroce-run {srv} > {host_out} 2>&1"],
                    env=env, start_new_session=True)
            deadline = time.monotonic() + 60
            while not self.listening(server_side, case, host_out):
                if time.monotonic() > deadline:
                    why.append("the server never listened")
                    break
                time.sleep(0.2)
            # the client
            if not why:
                if client_side == "rxe":
                    c = self.vm.run(f"ulimit -l unlimited; exec {cli}", timeout=case.timeout)
                else:
                    c = self.vm.host(f"{self.bin}/uroce-run {cli}", timeout=case.timeout, env=env)
                client_rc, client_out = c.rc, c.output
                if c.timed_out:
                    why.append(f"client timed out after {case.timeout} s")
                elif client_rc != case.client_rc:
                    why.append(f"client exited {client_rc}, not {case.client_rc}")
            else:
                client_rc, client_out = None, ""
            # the server's end
            if server_side == "rxe":
                if case.server_exits:
                    s = self.vm.wait("srv", timeout=30 if not why else 1)
                    if s.timed_out:
                        self.vm.kill("srv")
                        s = vmlib.Result(None, self.vm.run("cat /tmp/jobs/srv.out").output)
                else:
                    s = self.vm.kill("srv")
                server_rc, server_out = s.rc, s.output
            else:
                if not case.server_exits:
                    host_job.send_signal(signal.SIGTERM)
                try:
                    server_rc = host_job.wait(timeout=30 if not why else 1)
                except subprocess.TimeoutExpired:
                    os.killpg(host_job.pid, signal.SIGKILL)
                    server_rc = host_job.wait()
                    if case.server_exits:
                        why.append("server did not exit")
                server_out = open(host_out).read()
            if case.server_exits and server_rc not in (0,) and not why:
                why.append(f"server exited {server_rc}")
            for out, who in ((client_out, "client"), (server_out, "server")):
                if case.check == "perftest-client" and who == "client" and \
                        not PERFTEST_ROW.search(out or ""):
                    why.append("no perftest result row from the client")
                if case.check == "perftest" and not PERFTEST_ROW.search(out or ""):
                    why.append(f"no perftest result row from the {who}")
                if case.check == "bytes" and not BYTES_ROW.search(out or ""):
                    why.append(f"no throughput line from the {who}")
                if case.check == "rows" and not RSTREAM_ROW.search(out or ""):
                    why.append(f"no result row from the {who}")
            if case.check == "rcopy" and not why:
                why += self.rcopy_same(server_side, client_out or "")
        finally:
            if host_job and host_job.poll() is None:
                os.killpg(host_job.pid, signal.SIGKILL)
                host_job.wait()
            cap.send_signal(signal.SIGINT)
            try:
                cap.wait(timeout=10)
            except subprocess.TimeoutExpired:
                cap.kill()
                cap.wait()
        seconds = time.monotonic() - t0
        if self.keep:  # both sides' words, for a run that has to be explained later
            with open(stem + ".outputs.txt", "w") as f:
                f.write(f"server ({server_side}) exit {server_rc}: {srv}\n{server_out or ''}\n"
                        f"client ({client_side}) exit {client_rc}: {cli}\n{client_out or ''}\n"
                        f"verdict: {'; '.join(why) or 'ok'} ({seconds:.1f} s)\n")
        lost = why and run_lost(case, server_side, client_rc, client_out or "", server_out or "")
        if lost:
            print(f"lost {label} ({seconds:.1f} s): {lost}; again", flush=True)
            return None
        if not why:
            why += check_capture(pcap)
        if why:
            detail = "; ".join(why)
            print(f"FAIL {label} ({seconds:.1f} s): {detail}\n--- server: {srv}\n"
                  f"{(server_out or '')[-1500:]}\n--- client: {cli}\n{(client_out or '')[-1500:]}",
                  flush=True)
            return False
        print(f"ok   {label} ({seconds:.1f} s)", flush=True)
        return True


# tshark's guesses at what a RoCE payload carries: off, since the payloads here are the
# programs' own bytes (a WRITE of perftest's pattern otherwise decodes as a broken Ethernet
# frame and counts as malformed).
PAYLOAD_HEURISTICS = ("eth_over_ib", "fc_infiniband", "sdp_infiniband", "iser_infiniband",
                      "lnet_ib", "rpcrdma_infiniband", "smb_direct_infiniband", "smcr_infiniband")


def check_capture(pcap):
    """Every frame decodes in tshark as RoCE with no malformed part and no error, and scapy
    verifies every ICRC. One error is allowed, on IPv6 only: a UDP checksum of zero, which
    the kernel's rxe sends (rxe_net.c prepare_udp_hdr leaves it 0 for both families: the
    ICRC covers the packet, and RFC 6935 allows it for tunnels) and tshark calls illegal."""
    import roce_icrc
    from pcap_samples import PI_ERROR
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
           "-e", "frame.number", "-e", "ipv6.src", "-e", "infiniband.bth.opcode",
           "-e", "_ws.malformed", "-e", "_ws.expert.severity", "-e", "_ws.expert.message"]
    for h in PAYLOAD_HEURISTICS:
        cmd += ["--disable-heuristic", h]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return [f"tshark could not read {pcap}: {r.stderr.strip()[-300:]}"]
    lines = [ln.split("\t") for ln in r.stdout.splitlines()]
    if not lines:
        return ["no RoCE frame captured"]
    bad, not_roce = [], []
    for num, ip6, op, malformed, sev, msg in lines:
        errors = [m for s_, m in zip(sev.split(","), msg.split(","))
                  if s_ and int(s_, 0) >= PI_ERROR]
        if ip6:
            errors = [m for m in errors if m != "Illegal checksum value (0)"]
        if malformed or errors:
            bad.append(f"{num} ({'; '.join(errors) or 'malformed'})")
        if not op:
            not_roce.append(num)
    if bad:
        return [f"tshark finds malformed frames or errors: {', '.join(bad[:8])}"]
    if not_roce:
        return [f"frames tshark does not decode as RoCE: {not_roce[:8]}"]
    try:
        roce_icrc.verify_pcap(pcap, want_valid=True, scapy_frames=300)
    except SystemExit:
        return ["an ICRC did not verify"]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="a uroce build's bin/ (uroce-run)")
    ap.add_argument("--only", help="run the cases whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("--keep", help="keep captures and outputs in this folder")
    ap.add_argument("--ns", default=vmlib.DEFAULT_NS, help="the network namespace's name")
    ap.add_argument("--smp", type=int, default=2, help="the VM's vCPUs")
    ap.add_argument("--server", choices=("rxe", "uroce"), help="only runs with this side as server")
    ap.add_argument("--repeat", type=int, default=1, help="run each case this many times")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or re.search(args.only, c.name)]
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    if not cases:
        print(f"matrix: no case matches {args.only!r}", file=sys.stderr)
        return 2
    run = os.path.join(args.bin, "uroce-run")
    if not os.access(run, os.X_OK):
        print(f"matrix: {run} missing (build the tree first)", file=sys.stderr)
        return 1
    for tool in ("tshark", "tcpdump"):
        if not shutil.which(tool):
            print(f"matrix: {tool} missing: run scripts/setup.sh", file=sys.stderr)
            return 1
    require = __import__("roce_icrc").require_scapy
    require()
    work = args.keep or tempfile.mkdtemp(prefix="uroce-interop-")
    os.makedirs(work, exist_ok=True)
    passed = failed = not_run = flaky = 0
    try:
        with vmlib.VM(smp=args.smp, ns=args.ns) as vm:
            m = Matrix(vm, os.path.abspath(args.bin), work)
            for c in [c for c in cases for _ in range(args.repeat)]:
                for server_side in (args.server,) if args.server else ("rxe", "uroce"):
                    for _ in range(RACE_RUNS):
                        ok = m.run(c, server_side, work)
                        if ok is not None:
                            break
                    if ok is False:
                        # Once more, said loudly: an intermittent failure is a bug to chase
                        # (docs/INTEROP.md lists the open ones), and one that comes back twice
                        # in a row fails the suite.
                        ok = m.run(c, server_side, work)
                        if ok:
                            print(f"FLAKY {c.name}:{server_side}-server: failed, then passed "
                                  "(docs/INTEROP.md)", flush=True)
                            flaky += 1
                    if ok is None:
                        # every run lost to the program itself (run_lost): no verdict on
                        # either stack, said as such, and no run that completed went wrong
                        print(f"not run {c.name}:{server_side}-server: the program lost its "
                              f"own race {RACE_RUNS} times in a row (docs/INTEROP.md)",
                              flush=True)
                        not_run += 1
                    elif ok:
                        passed += 1
                    else:
                        failed += 1
    except vmlib.VMError as e:
        print(f"matrix: the VM failed: {e}", file=sys.stderr)
        failed += 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if not_run:
        print(f"{not_run} not run (each named above, with the reason)")
    if flaky:
        print(f"{flaky} failed once and passed when run again (each named FLAKY above)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
