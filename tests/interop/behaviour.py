#!/usr/bin/env python3
"""Same behaviour, not only same bytes: uroce and the kernel's rxe side by side.

Each scenario of ix_scenario (tests/interop/ix_scenario.c: an RNR NAK and its timer, a lost
WRITE packet and go-back-N, a lost READ response, ACK coalescing over a long WRITE, a retried
atomic, a memory window written through and invalidated by a SEND with invalidate, the DREQ of
a client that exits, the REJ of a port nobody listens on) runs between
four pairs on one bridge, captured by the same harness:

    rxe   -> rxe      vm1 (10.77.0.3) client, vm0 (10.77.0.2) server: the reference
    uroce -> uroce    host h5 (10.77.0.5) client, host h4 (10.77.0.4) server
    uroce -> rxe      h5 client, vm0 server
    rxe   -> uroce    vm1 client, h4 server

(h4 and h5 are network namespaces on the bridge, each running uroce-run.) A loss is one exact
packet dropped on the bridge (nftables, bridge family, `numgen inc` counting the packets of
one opcode), so every pair loses the same packet of the exchange. Each port is captured: a
frame seen on its sender's port and not on its receiver's was dropped.

For each run the capture is reduced to the facts a scenario is about (the RNR NAK's timer and
the wait before the retry, the PSN a go-back-N restarts from, how many ACKs a long WRITE got,
...), checked against the rule of the spec the scenario exercises, and printed beside the
other pairs', so that every difference between the stacks shows; docs/INTEROP.md says why
each one is allowed. Exit 0 when every pair of every scenario passes its checks.

  behaviour.py --bin build/release/bin [--only REGEX] [--keep DIR] [--trace]
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm as vmlib  # noqa: E402

PORT = 7471
NO_LISTENER_PORT = 7479
# bytes of each frame the captures keep: Ethernet, IPv4, UDP, BTH, DETH and a CM MAD (322)
SNAP_LEN = 384

# BTH opcodes (IBA 9.2; PROTOCOL.md §1), RC and the UD SEND ONLY of the CM's MADs.
OPS = {0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x04: "SEND_ONLY",
       0x06: "WRITE_FIRST", 0x07: "WRITE_MIDDLE", 0x08: "WRITE_LAST", 0x0A: "WRITE_ONLY",
       0x0C: "READ_REQ", 0x0D: "READ_RESP_FIRST", 0x0E: "READ_RESP_MIDDLE",
       0x0F: "READ_RESP_LAST", 0x10: "READ_RESP_ONLY", 0x11: "ACK", 0x12: "ATOMIC_ACK",
       0x13: "CMP_SWAP", 0x14: "FETCH_ADD", 0x16: "SEND_LAST_INV", 0x17: "SEND_ONLY_INV",
       0x64: "UD_SEND_ONLY"}
REQUEST_OPS = set(range(0x00, 0x0D)) | {0x13, 0x14, 0x16, 0x17}
WITH_AETH = {0x0D, 0x0F, 0x10, 0x11, 0x12}
CM_ATTRS = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU", 0x15: "DREQ",
            0x16: "DREP"}
# NAK codes of an AETH (IBA table 44).
NAK_CODES = {0: "PSN_SEQ", 1: "INV_REQ", 2: "REM_ACCESS", 3: "REM_OP", 4: "INV_RD"}
# The RNR NAK timer codes (IBA table 45), in ms.
RNR_MS = [655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96,
          1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92,
          122.88, 163.84, 245.76, 327.68, 491.52]

# Which packet the bridge drops: (BTH opcode, the how-manieth of them, 1-based).
SCENARIOS = {
    "rnr": None,
    "write_long": None,
    "gbn": (0x07, 5),           # the 5th WRITE MIDDLE of the 64 KiB WRITE
    "read_lost": (0x0E, 3),     # the 3rd READ RESPONSE MIDDLE of the 64 KiB READ
    "atomic_retry": (0x12, 1),  # the ATOMIC ACKNOWLEDGE of the FETCH_ADD
    "send_inv": None,
    "dreq_exit": None,
    "rej": None,
}


class Endpoint:
    def __init__(self, name, stack, ip, port_dev):
        self.name, self.stack, self.ip, self.dev = name, stack, ip, port_dev


# ---- captures ------------------------------------------------------------------------

def read_pcap(path):
    """[(time in s, frame bytes)] of a pcap file (µs or ns timestamps)."""
    data = open(path, "rb").read()
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    endian, scale = {0xA1B2C3D4: ("<", 1e-6), 0xA1B23C4D: ("<", 1e-9),
                     0xD4C3B2A1: (">", 1e-6), 0x4D3CB2A1: (">", 1e-9)}[magic]
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        out.append((sec + frac * scale, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


class Pkt:
    """One RoCE frame, decoded as far as the comparison needs."""

    def __init__(self, t, frame):
        self.t = t
        ip = frame[14:]
        if frame[12:14] != b"\x08\x00":
            raise ValueError("not IPv4")
        hl = (ip[0] & 0x0F) * 4
        self.src = ".".join(str(b) for b in ip[12:16])
        # UDP onwards without the UDP checksum: a frame captured where it enters the bridge
        # may still wait for its checksum (offloaded: virtio, veth). The IPv4 identification
        # tells a resent packet from the first copy (the ICRC, which covers it, is past the
        # snap length)
        udp = bytes(ip[hl:struct.unpack(">H", ip[2:4])[0]])
        self.key = bytes(ip[4:6]) + udp[:6] + udp[8:]
        self.key_bth = udp[8:]
        bth = self.key_bth
        self.op = bth[0]
        self.dqpn = int.from_bytes(bth[5:8], "big")
        self.ackreq = bool(bth[8] & 0x80)
        self.psn = int.from_bytes(bth[9:12], "big")
        self.syndrome = self.msn = None
        self.cm = self.rej_reason = None
        if self.op in WITH_AETH:
            self.syndrome, self.msn = bth[12], int.from_bytes(bth[13:16], "big")
        if self.op == 0x64:
            mad = bth[20:]
            if len(mad) >= 24 and mad[1] == 0x07:  # the CM's management class
                self.cm = CM_ATTRS.get(int.from_bytes(mad[16:18], "big"), "CM?")
                if self.cm == "REJ":
                    self.rej_reason = int.from_bytes(mad[24 + 10:24 + 12], "big")
        self.dropped = False

    @property
    def is_nak(self):
        return self.op == 0x11 and self.syndrome >> 5 != 0

    def describe(self, base):
        if self.cm:
            s = self.cm + (f" reason {self.rej_reason}" if self.rej_reason is not None else "")
        else:
            s = f"{OPS.get(self.op, hex(self.op))} psn +{(self.psn - base) % (1 << 24)}"
            if self.ackreq:
                s += " A"
            if self.syndrome is not None:
                kind = self.syndrome >> 5
                if kind == 0:
                    s += f" ack(credits {self.syndrome & 0x1F})"
                elif kind == 1:
                    s += f" RNR_NAK(timer {self.syndrome & 0x1F}: {RNR_MS[self.syndrome & 0x1F]} ms)"
                elif kind == 3:
                    code = self.syndrome & 0x1F
                    s += f" NAK({NAK_CODES.get(code, code)})"
                s += f" msn {self.msn}"
        return s + ("   <- dropped on the bridge" if self.dropped else "")


def exchange(client, server, cap_client, cap_server):
    """The frames each side sent, in time order, marking those that never reached the other
    side's port (dropped on the bridge)."""
    at = {"c": [Pkt(t, f) for t, f in read_pcap(cap_client)],
          "s": [Pkt(t, f) for t, f in read_pcap(cap_server)]}
    sent = [p for p in at["c"] if p.src == client.ip] + [p for p in at["s"] if p.src == server.ip]
    got = {}
    for p in [p for p in at["s"] if p.src == client.ip] + [p for p in at["c"] if p.src == server.ip]:
        got.setdefault(p.key, []).append(p.t)
    for p in sorted(sent, key=lambda p: p.t):
        ts = got.get(p.key)
        if ts:
            ts.pop(0)
        else:
            p.dropped = True
        p.side = "C>S" if p.src == client.ip else "S>C"
    return sorted(sent, key=lambda p: p.t)


# ---- what each scenario is about -------------------------------------------------------

def facts(name, pkts):
    """The scenario's facts from its exchange, and a list of rule violations."""
    c_req = [p for p in pkts if p.side == "C>S" and p.op in REQUEST_OPS]
    s_rc = [p for p in pkts if p.side == "S>C" and p.op in OPS and p.op not in REQUEST_OPS
            and p.op != 0x64]
    base = c_req[0].psn if c_req else 0
    f, bad = {}, []
    f["base"] = base
    seen, retx = set(), 0
    for p in c_req:
        retx += p.psn in seen
        seen.add(p.psn)
    f["requests"] = len(c_req)
    f["retransmitted"] = retx
    f["cm"] = " ".join(f"{p.side[0]}:{p.cm}" for p in pkts if p.cm)

    if name == "rnr":
        naks = [p for p in s_rc if p.op == 0x11 and p.syndrome >> 5 == 1]
        if not naks:
            bad.append("no RNR NAK")
            return f, bad
        nak = naks[0]
        code = nak.syndrome & 0x1F
        f["RNR NAKs"] = len(naks)
        f["timer"] = f"{code} ({RNR_MS[code]} ms)"
        retry = [p for p in c_req if p.t > nak.t and p.psn == nak.psn]
        if not retry:
            bad.append("the SEND was never retried")
        else:
            wait = (retry[0].t - nak.t) * 1e3
            f["retry after"] = f"{wait:.1f} ms"
            # IBA 9.7.5.2.8: the requester waits at least the time the NAK asked for
            if wait < RNR_MS[code] * 0.95:
                bad.append(f"retried {wait:.2f} ms after an RNR NAK asking for {RNR_MS[code]} ms")
    elif name == "write_long":
        last = c_req[-1] if c_req else None
        acks = [p for p in s_rc if p.op == 0x11]
        f["packets"] = len(c_req)
        f["AckReq set"] = sum(p.ackreq for p in c_req)
        f["ACKs"] = len(acks)
        if not last or not last.ackreq:
            bad.append("the WRITE's last packet does not ask for an ACK")  # IBA 9.7.5.1.2
        if not acks or acks[-1].psn != last.psn:
            bad.append("no ACK for the last packet")
    elif name == "gbn":
        lost = [p for p in c_req if p.dropped]
        naks = [p for p in s_rc if p.is_nak]
        f["lost"] = ",".join(f"+{(p.psn - base) % (1 << 24)}" for p in lost)
        f["NAKs"] = " ".join(f"+{(p.psn - base) % (1 << 24)}:{p.syndrome:#x}" for p in naks)
        if len(lost) != 1:
            bad.append(f"{len(lost)} packets lost, expected 1")
            return f, bad
        lp = lost[0]
        seq_naks = [p for p in naks if p.syndrome == 0x60]
        if len(seq_naks) != 1 or seq_naks[0].psn != lp.psn:
            # IBA 9.7.5.1.4 / C9-110: one NAK (PSN sequence error) carrying the expected PSN
            bad.append("not exactly one PSN sequence error NAK for the lost PSN")
        after = [p for p in c_req if p.t > lp.t and p.psn == lp.psn]
        if not after:
            bad.append("the lost packet was never sent again")
        else:
            first_retx = c_req.index(after[0])
            later = [(p.psn - base) % (1 << 24) for p in c_req[first_retx:]]
            f["resent"] = f"+{later[0]}..+{later[-1]} ({len(later)})" if later else ""
            # go-back-N: resent from the lost PSN on, in order
            if later != list(range(later[0], later[0] + len(later))):
                bad.append(f"the resent PSNs are not consecutive from the lost one: {later[:10]}")
            f["resent after"] = f"{(after[0].t - lp.t) * 1e3:.1f} ms"
            if seq_naks:
                f["resent after NAK"] = f"{(after[0].t - seq_naks[0].t) * 1e3:.1f} ms"
    elif name == "read_lost":
        lost = [p for p in s_rc if p.dropped]
        reads = [p for p in c_req if p.op == 0x0C]
        f["lost"] = ",".join(f"+{(p.psn - base) % (1 << 24)}" for p in lost)
        f["READ requests"] = " ".join(f"+{(p.psn - base) % (1 << 24)}" for p in reads)
        if len(lost) != 1:
            bad.append(f"{len(lost)} packets lost, expected 1")
            return f, bad
        # IBA 9.7.5.2.2 (C9-153): the requester asks again from the first missing PSN
        again = [p for p in reads if p.t > lost[0].t]
        if not again or again[0].psn != lost[0].psn:
            bad.append("no READ request again from the missing PSN")
        else:
            f["asked again after"] = f"{(again[0].t - lost[0].t) * 1e3:.1f} ms"
        responses = [p for p in s_rc if p.op in (0x0D, 0x0E, 0x0F, 0x10)]
        f["responses"] = len(responses)
    elif name == "atomic_retry":
        atom = [p for p in c_req if p.op == 0x14]
        acks = [p for p in s_rc if p.op == 0x12]
        f["FETCH_ADDs"] = len(atom)
        f["ATOMIC_ACKs"] = f"{len(acks)} ({sum(p.dropped for p in acks)} dropped)"
        if len(atom) < 2 or atom[1].psn != atom[0].psn:
            bad.append("the FETCH_ADD was not sent again with its PSN")
        else:
            f["resent after"] = f"{(atom[1].t - atom[0].t) * 1e3:.0f} ms"
        if len([p for p in acks if not p.dropped]) < 1:
            bad.append("no ATOMIC ACKNOWLEDGE reached the requester")
    elif name == "send_inv":
        # IBA 9.2.6: the last packet of a SEND with invalidate carries the R_Key in an IETH
        inv = [p for p in c_req if p.op in (0x16, 0x17)]
        naks = [p for p in s_rc if p.is_nak]
        f["SEND with invalidate"] = " ".join(OPS[p.op] for p in c_req if p.op in (0x00, 0x01, 0x16, 0x17))
        if len(inv) != 1 or inv[0].op != 0x16:
            bad.append("not one SEND LAST WITH INVALIDATE (3000 B at MTU 1024)")
        else:
            f["IETH R_Key"] = f"{int.from_bytes(inv[0].key_bth[12:16], 'big'):#x}"
        if naks:
            bad.append("NAKed: " + " ".join(f"{p.syndrome:#x}" for p in naks))
    elif name == "dreq_exit":
        if "C:DREQ" not in f["cm"] or "S:DREP" not in f["cm"]:
            bad.append("no DREQ from the exiting client answered by a DREP")
    elif name == "rej":
        rej = [p for p in pkts if p.cm == "REJ"]
        f["REJ reason"] = rej[0].rej_reason if rej else None
        if not rej or rej[0].rej_reason != 8:
            bad.append("no REJ with reason 8 (invalid service ID)")
    return f, bad


# ---- the harness -----------------------------------------------------------------------

def sh(*args, check=True):
    return vmlib._run(list(args), check=check)


class Bench:
    def __init__(self, fabric, vm0, vm1, bin_dir, scenario_bin, work):
        self.f, self.vm0, self.vm1 = fabric, vm0, vm1
        self.bin, self.work = bin_dir, work
        self.scenario_bin = scenario_bin
        p4 = fabric.prefix4
        self.hosts = {}
        for i in (4, 5):
            self.add_host(i)
        self.ends = {
            ("rxe", "s"): Endpoint("vm0", "rxe", vm0.ip, "tapvm0"),
            ("rxe", "c"): Endpoint("vm1", "rxe", vm1.ip, "tapvm1"),
            ("uroce", "s"): Endpoint("h4", "uroce", f"{p4}.4", "vh4"),
            ("uroce", "c"): Endpoint("h5", "uroce", f"{p4}.5", "vh5"),
        }
        for vm in (vm0, vm1):
            vm.put("/bin/ix_scenario", open(scenario_bin, "rb").read(), mode=0o755)

    def hostns(self, i):
        return f"{self.f.ns}-h{i}"

    def add_host(self, i):
        """A uroce host: network namespace NS-hI, its eth0 on the bridge at .I."""
        ns = self.hostns(i)
        if os.path.exists(f"/run/netns/{ns}"):
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                vmlib._kill_pid(int(pid))
            sh("ip", "netns", "del", ns)
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", self.f.ns, "link", "add", f"vh{i}", "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        sh("ip", "-n", self.f.ns, "link", "set", f"vh{i}", "mtu", "1500", "master",
           self.f.bridge, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", f"{self.f.prefix4}.{i}/24", "dev", "eth0")
        # gso_max_segs 1: uroce's UDP GSO trains are cut into packets before the veth, as a
        # NIC's segmentation puts them on a wire, so that the captures show packets
        sh("ip", "-n", ns, "link", "set", "dev", "eth0", "mtu", "1500", "gso_max_segs", "1", "up")
        self.hosts[i] = ns

    def close(self):
        for ns in self.hosts.values():
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                vmlib._kill_pid(int(pid))
            sh("ip", "netns", "del", ns, check=False)

    def nft_table(self, name, chain=None):
        """Replace the bridge-family table @name by one whose forward chain holds @chain (a
        rule), or just delete it (None)."""
        sh("ip", "netns", "exec", self.f.ns, "nft", "delete", "table", "bridge", name, check=False)
        if not chain:
            return
        r = sh("ip", "netns", "exec", self.f.ns, "nft",
               f"table bridge {name} {{ chain fwd_{name} {{ type filter hook forward priority 0; "
               f"{chain}; }}; }}", check=False)
        if r.returncode:
            raise vmlib.VMError(f"nft refused {chain!r}: {r.stdout.strip()}")

    def nft_counter(self, name):
        """The packets table @name's counter has seen."""
        r = sh("ip", "netns", "exec", self.f.ns, "nft", "list", "table", "bridge", name,
               check=False)
        m = re.search(r"counter packets (\d+)", r.stdout)
        return int(m.group(1)) if m else 0

    def set_drop(self, drop):
        if not drop:
            self.nft_table("ixdrop")
            return
        op, nth = drop
        # numgen inc counts the packets that reach it (those of this opcode, to port 4791):
        # the nth of them, and only it, is dropped
        self.nft_table("ixdrop", f"ether type ip udp dport 4791 @th,64,8 {op:#x} "
                                 f"numgen inc mod 1000000 {nth - 1} counter drop")

    def capture_start(self, stem, ends, buffer_kib=32768):
        """tcpdump on each bridge port of @ends ((who, Endpoint) pairs) into STEM-WHO.pcap,
        each listening when this returns. -> (processes, {who: file})."""
        caps, files = [], {}
        for who, end in ends:
            files[who] = f"{stem}-{who}.pcap"
            # -s SNAP_LEN: libpcap's ring holds frames of the snap length, and a full one is
            # 64 KiB where the port has offloads (GSO, GRO), so a buffer held ~500 frames and
            # a burst of a 1 MiB WRITE overran it on a busy host; the headers and a CM MAD
            # are all that is read
            p = subprocess.Popen(["ip", "netns", "exec", self.f.ns, "tcpdump", "-i", end.dev,
                                  "-s", str(SNAP_LEN), "-B", str(buffer_kib), "--immediate-mode",
                                  "-U", "-w", files[who], "udp port 4791"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for line in p.stderr:
                if "listening on" in line:
                    break
            caps.append(p)
        return caps, files

    @staticmethod
    def capture_stop(caps):
        """Stop the captures; -> the frames they missed (tcpdump's "dropped by kernel")."""
        time.sleep(0.3)  # the last frames' way through the bridge
        lost = 0
        for p in caps:
            p.terminate()
            m = re.search(r"(\d+) packets? dropped by kernel", p.communicate(timeout=10)[1])
            lost += int(m.group(1)) if m else 0
        return lost

    def uroce(self, end, argv):
        """@argv under uroce-run on the namespace host of @end."""
        return ["ip", "netns", "exec", self.hosts[int(end.name[1:])], f"{self.bin}/uroce-run"] \
            + argv

    def host_cmd(self, end, args):
        return self.uroce(end, [self.scenario_bin] + args)

    def run(self, name, s_stack, c_stack, stem, timeout=60):
        srv, cli = self.ends[(s_stack, "s")], self.ends[(c_stack, "c")]
        self.set_drop(SCENARIOS[name])
        caps, files = self.capture_start(stem, (("c", cli), ("s", srv)))
        why, outs = [], {}
        # rej: the server host runs a listener, on another port, so that its stack has a CM
        # (a host without a uroce process has none: docs/INTEROP.md)
        sargs = ["-s", "-a", srv.ip, "-p", str(PORT), "-t", name]
        cargs = ["-c", "-a", srv.ip, "-p", str(NO_LISTENER_PORT if name == "rej" else PORT),
                 "-t", name]
        sjob = None
        try:
            if s_stack == "rxe":
                self.vm0.start("ixs", "exec ix_scenario " + " ".join(sargs))
                self.vm0.wait_listen(PORT, timeout=30)
            else:
                sjob = subprocess.Popen(self.host_cmd(srv, sargs), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
                line = sjob.stdout.readline()
                if "listening" not in line:
                    why.append(f"the uroce server did not listen: {line.strip()}")
            if not why:
                if c_stack == "rxe":
                    r = self.vm1.run("exec ix_scenario " + " ".join(cargs), timeout=timeout)
                else:
                    r = run_bounded(self.host_cmd(cli, cargs), timeout)
                outs["client"] = r.output.strip()
                if r.timed_out or r.rc != 0:
                    why.append(f"client: rc {r.rc}{' (timed out)' if r.timed_out else ''}")
            if name == "rej":  # the listener has nothing to do: stop it
                if s_stack == "rxe":
                    self.vm0.kill("ixs")
                elif sjob:
                    os.killpg(sjob.pid, 9)
                    sjob.communicate()
            else:
                if s_stack == "rxe":
                    r = self.vm0.wait("ixs", timeout=timeout if not why else 1)
                    if r.timed_out:
                        self.vm0.kill("ixs")
                    outs["server"] = r.output.strip()
                else:
                    try:
                        out, _ = sjob.communicate(timeout=timeout if not why else 1)
                        r = vmlib.Result(sjob.returncode, line + out)
                    except subprocess.TimeoutExpired:
                        os.killpg(sjob.pid, 9)
                        out, _ = sjob.communicate()
                        r = vmlib.Result(None, line + out, timed_out=True)
                    outs["server"] = r.output.strip()
                if r.timed_out or r.rc != 0:
                    why.append(f"server: rc {r.rc}{' (timed out)' if r.timed_out else ''}")
        finally:
            lost = self.capture_stop(caps)
            self.set_drop(None)
        return files, outs, why, lost


def stacks(session):
    """Every thread's stack of each process in @session (gdb), for a run that timed out."""
    pids = subprocess.run(["pgrep", "-s", str(session)], capture_output=True,
                          text=True).stdout.split()
    out = []
    for pid in pids:
        r = subprocess.run(["gdb", "-batch", "-nx", "-p", pid, "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=60)
        out.append(f"--- stacks of {pid}:\n" + "\n".join(
            line for line in r.stdout.splitlines() if line.startswith(("#", "Thread"))))
    return "\n".join(out)


def kill_timed_out(p):
    """Kill the session of @p, which timed out, after printing its threads' stacks: ->
    its output, the stacks last."""
    try:
        trace = stacks(p.pid)
    except (OSError, subprocess.SubprocessError) as e:
        trace = f"--- no stacks: {e}"
    os.killpg(p.pid, 9)
    out, _ = p.communicate()
    return out.decode(errors="replace") + "\n" + trace


def run_bounded(argv, timeout):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return vmlib.Result(p.returncode, out.decode(errors="replace"))
    except subprocess.TimeoutExpired:
        return vmlib.Result(None, kill_timed_out(p), timed_out=True)


def print_trace(pkts, base):
    """The exchange frame by frame; a run of packets that differ only by consecutive PSNs
    (the middle of a long message) on one line."""
    t_first = pkts[0].t if pkts else 0
    i = 0
    while i < len(pkts):
        p, j = pkts[i], i + 1
        while (j < len(pkts) and pkts[j].side == p.side and pkts[j].op == p.op and
               not pkts[j].dropped and not p.dropped and not pkts[j].ackreq and
               pkts[j].syndrome is None and p.syndrome is None and not p.cm and
               pkts[j].psn == (pkts[j - 1].psn + 1) % (1 << 24)):
            j += 1
        run = f" .. +{(pkts[j - 1].psn - base) % (1 << 24)} ({j - i})" if j - i > 1 else ""
        print(f"       {(p.t - t_first) * 1e3:9.3f} ms {p.side} {p.describe(base)}{run}")
        i = j


PAIRS = [("rxe", "rxe"), ("uroce", "uroce"), ("rxe", "uroce"), ("uroce", "rxe")]  # (client, server)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="a uroce build's bin/ (uroce-run, ix_scenario)")
    ap.add_argument("--only", help="the scenarios whose name matches this regex")
    ap.add_argument("--keep", help="keep the captures and outputs in this folder")
    ap.add_argument("--trace", action="store_true", help="print every exchange frame by frame")
    ap.add_argument("--ns", default="uroce-ix-beh", help="the network namespace's name")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    scenario_bin = os.path.join(bin_dir, "ix_scenario")
    for need in (os.path.join(bin_dir, "uroce-run"), scenario_bin):
        if not os.access(need, os.X_OK):
            sys.exit(f"behaviour: {need} missing (build the release tree)")
    for tool in ("tcpdump", "nft"):
        if not shutil.which(tool):
            sys.exit(f"behaviour: {tool} missing: run scripts/setup.sh")
    names = [n for n in SCENARIOS if not args.only or re.search(args.only, n)]
    work = args.keep or tempfile.mkdtemp(prefix="uroce-beh-")
    os.makedirs(work, exist_ok=True)
    failures, table = [], []
    t_start = time.monotonic()
    with vmlib.Fabric(args.ns) as net, vmlib.VM(0, net) as vm0, vmlib.VM(1, net) as vm1:
        bench = Bench(net, vm0, vm1, bin_dir, scenario_bin, work)
        try:
            for name in names:
                for c_stack, s_stack in PAIRS:
                    label = f"{name} {c_stack}->{s_stack}"
                    stem = os.path.join(work, f"{name}-{c_stack}-to-{s_stack}")
                    t0 = time.monotonic()
                    # a capture that missed frames (tcpdump's buffer, on a busy host) says
                    # nothing: run again
                    for attempt in range(3):
                        files, outs, why, lost = bench.run(name, s_stack, c_stack, stem)
                        if not lost:
                            break
                        print(f"     {label}: the capture missed {lost} frames; again", flush=True)
                    if lost:
                        why.append(f"the capture missed {lost} frames in each of 3 runs")
                    cli = bench.ends[(c_stack, "c")]
                    srv = bench.ends[(s_stack, "s")]
                    pkts = exchange(cli, srv, files["c"], files["s"])
                    f, bad = facts(name, pkts)
                    why += bad
                    shown = {k: v for k, v in f.items() if k != "base"}
                    table.append((name, f"{c_stack}->{s_stack}", shown))
                    status = "ok  " if not why else "FAIL"
                    print(f"{status} {label:28s} {time.monotonic() - t0:5.1f} s  " +
                          "; ".join(f"{k} {v}" for k, v in shown.items()), flush=True)
                    if why:
                        failures.append(label)
                        print("     " + "\n     ".join(why))
                        for k, v in outs.items():
                            print(f"     {k}: {v[-600:]}")
                    if args.trace or why:
                        print_trace(pkts, f["base"])
        finally:
            bench.close()
    print(f"behaviour: {len(table) - len(failures)} passed, {len(failures)} failed "
          f"({time.monotonic() - t_start:.0f} s)" + (f"; captures in {work}" if args.keep else ""))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f"FAILED {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except vmlib.VMError as e:
        print(f"behaviour: {e}", file=sys.stderr)
        sys.exit(2)
