# SPDX-License-Identifier: MIT
"""Oracle: the reference captures of pcap-samples/ are what pcap-samples/README.md says.

usage: pcap_samples.py DIR [UDP_PORT]

For each sample DIR/NAME.pcap: tshark decodes every frame as RoCE with no malformed frame and
no error, every ICRC verifies (scapy for IPv4, and the reference, roce_icrc.py), and the
frames show what the sample is for (its CM messages, opcodes, NAKs and repeated PSNs).
UDP_PORT is the RoCEv2 port of the captures (default 4791, which tshark decodes by itself).

Run with /usr/bin/python3: the python3 on PATH has no scapy.
"""
import collections
import os
import subprocess
import sys

from roce_icrc import bind_roce_port, fail, require_scapy, verify_pcap

# CM attribute IDs (PROTOCOL.md §4.3).
REQ, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP = (
    0x10, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18)
# BTH opcodes (PROTOCOL.md §1.7): RC, UD, XRC.
SEND_FIRST, SEND_LAST, SEND_ONLY = 0x00, 0x02, 0x04
WRITE_ONLY, READ_REQ, READ_FIRST, READ_ONLY = 0x0A, 0x0C, 0x0D, 0x10
ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = 0x11, 0x12, 0x13, 0x14
UD_SEND_ONLY, UD_SEND_IMM = 0x64, 0x65
XRC_SEND_ONLY, XRC_ACK = 0xA4, 0xB1
# The opcodes of RC requests (the rest of 0x00-0x14 are responses).
REQUESTS = set(range(SEND_FIRST, READ_REQ + 1)) | {CMP_SWAP, FETCH_ADD}
# AETH syndrome classes (bits 6..5, PROTOCOL.md §1.6) and the PSN sequence error NAK.
AETH_ACK, AETH_RNR = 0, 1
NAK_PSN_SEQ = 0x60
# What the server of reject-private-data puts in its REJ (tools/samples/scenario_reject.c).
REJECT_TEXT = b"uroce-sample: not today, thanks\0"

FIELDS = ("eth.type", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
          "infiniband.aeth.syndrome", "infiniband.mad.attributeid", "infiniband.cm.rej.reason",
          "infiniband.cm.rej.private", "_ws.malformed", "_ws.expert.severity",
          "infiniband.cm.req.localqpn", "infiniband.cm.req.startpsn",
          "infiniband.cm.rep.localqpn", "infiniband.cm.rep.startpsn", "ip.src", "ipv6.src")
Frame = collections.namedtuple(
    "Frame", "eth op qp psn syn attr reason private broken cm_qpn cm_psn src")
# Wireshark's expert severity "error" (PI_ERROR): malformed or impossible fields.
PI_ERROR = 0x00800000


def tshark(path, port, *args):
    cmd = ["tshark", "-r", path, "--disable-heuristic", "rpcrdma_infiniband", *args]
    if port != 4791:
        cmd[1:1] = ["-d", f"udp.port=={port},infiniband"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        fail(f"{path}: tshark exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout.splitlines()


def number(text):
    """The first value of a field (tshark joins repeated ones with commas), or None."""
    return int(text.split(",")[0], 0) if text else None


def frames(path, port):
    """The frames of @path as tshark decodes them, one tshark run."""
    args = ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]
    for f in FIELDS:
        args += ["-e", f]
    out = []
    for line in tshark(path, port, *args):
        v = line.split("\t")
        severities = [int(x) for x in v[9].split(",") if x]
        broken = bool(v[8]) or any(x >= PI_ERROR for x in severities)
        priv = bytes.fromhex(v[7].split(",")[0]) if v[7] else b""
        cm_qpn = number(v[10]) if v[10] else number(v[12])
        cm_psn = number(v[11]) if v[11] else number(v[13])
        src = v[14] or v[15]
        out.append(Frame(*[number(x) for x in v[:7]], priv, broken, cm_qpn, cm_psn, src))
    return out


def aeth_class(f):
    return None if f.syn is None else (f.syn >> 5) & 3


def requests_by_psn(fs, ops):
    """How often each (QP, PSN) of a request with an opcode in @ops was captured."""
    return collections.Counter((f.qp, f.psn) for f in fs if f.op in ops)


def need(cond, path, what):
    if not cond:
        fail(f"{path}: {what}")


def check_starting_psns(path, fs):
    """A REQ's or REP's Starting PSN is its sender's receive PSN (PROTOCOL.md §3.1, as the
    kernel-rxe capture rping.pcap shows): the first request the active side (the REQ's
    sender) sends to the REP's QP carries the REP's Starting PSN, and the first the passive
    side sends to the REQ's QP the REQ's. Sides are told apart by address, since two hosts
    may number their QPs alike (on one address, the QP numbers alone)."""
    req = next((f for f in fs if f.attr == REQ), None)
    rep = next((f for f in fs if f.attr == REP), None)
    if req is None or rep is None:
        return
    for cm, name, sender in ((rep, "REP", req.src), (req, "REQ", rep.src)):
        first = next((f for f in fs if f.op is not None and f.qp == cm.cm_qpn
                      and (f.src == sender or req.src == rep.src)
                      and f.op & 0x1F in REQUESTS), None)
        if first is None:
            continue  # that side sent no request (an XRC target only answers)
        need(first.psn == cm.cm_psn, path,
             f"the first request to QP {cm.cm_qpn:#x} carries PSN {first.psn:#x}, "
             f"not the {name}'s Starting PSN {cm.cm_psn:#x}")


def check_rc_ops(path, fs):
    attrs = {f.attr for f in fs}
    ops = {f.op for f in fs}
    for a, name in ((REQ, "REQ"), (REP, "REP"), (RTU, "RTU"), (DREQ, "DREQ"), (DREP, "DREP")):
        need(a in attrs, path, f"no CM {name}")
    for op, name in ((SEND_ONLY, "SEND Only"), (WRITE_ONLY, "RDMA WRITE Only"),
                     (READ_REQ, "RDMA READ Request"), (READ_ONLY, "RDMA READ Response Only"),
                     (CMP_SWAP, "CompareSwap"), (FETCH_ADD, "FetchAdd"),
                     (ATOMIC_ACK, "Atomic Acknowledge"), (ACK, "Acknowledge")):
        need(op in ops, path, f"no {name}")
    need(all(aeth_class(f) in (None, AETH_ACK) for f in fs), path, "a NAK in a clean exchange")
    need(max(requests_by_psn(fs, REQUESTS).values()) == 1, path, "a request sent twice")


def check_reject_no_listener(path, fs):
    need(any(f.attr == REQ for f in fs), path, "no REQ")
    need(any(f.attr == REJ and f.reason == 8 for f in fs), path, "no REJ with reason 8")
    need(not any(f.attr == REP for f in fs), path, "a REP")


def check_reject_private_data(path, fs):
    need(any(f.attr == REQ for f in fs), path, "no REQ")
    rej = [f for f in fs if f.attr == REJ]
    need(len(rej) == 1 and rej[0].reason == 28, path, "not one REJ with reason 28")
    need(rej[0].private.startswith(REJECT_TEXT), path,
         f"the REJ's private data is not the server's: {rej[0].private[:40]!r}")


def check_ud_sidr(path, fs):
    attrs = {f.attr for f in fs}
    need(SIDR_REQ in attrs and SIDR_REP in attrs, path, "no SIDR_REQ and SIDR_REP")
    ud = [f for f in fs if f.op in (UD_SEND_ONLY, UD_SEND_IMM) and f.qp != 1]
    need(len(ud) >= 2, path, "no UD SENDs between the two QPs")
    need(not any(f.op is not None and f.op < 0x20 for f in fs), path, "RC packets in UD")


def check_rnr_nak(path, fs):
    rnr = [f for f in fs if f.op == ACK and aeth_class(f) == AETH_RNR]
    need(rnr and len({f.psn for f in rnr}) == 1, path, "no RNR NAK, or RNR NAKs at two PSNs")
    # One RNR NAK, unless the server was held up past the RNR timer: each one, a retry.
    psn = rnr[0].psn
    sends = [f for f in fs if f.op == SEND_ONLY and f.psn == psn]
    need(len(sends) == len(rnr) + 1, path,
         f"the SEND of PSN {psn} was captured {len(sends)} times for {len(rnr)} RNR NAKs")
    need(any(f.op == ACK and aeth_class(f) == AETH_ACK and f.psn == psn for f in fs), path,
         "the retried SEND was not ACKed")


def check_loss_retransmit(path, fs):
    need(any(f.op == ACK and f.syn == NAK_PSN_SEQ for f in fs), path,
         "no PSN sequence error NAK")
    again = [k for k, n in requests_by_psn(fs, REQUESTS).items() if n > 1]
    need(again, path, "no request PSN sent twice (no retransmission)")


def check_read_retry(path, fs):
    again = [k for k, n in requests_by_psn(fs, [READ_REQ]).items() if n > 1]
    need(len(again) == 1, path, "not one RDMA READ Request sent twice with the same PSN")
    qp, psn = again[0]
    need(any(f.op == READ_FIRST and f.psn == psn for f in fs), path,
         "the READ asked again has no response First at its PSN")


def check_xrc(path, fs):
    attrs = {f.attr for f in fs}
    need(REQ in attrs and REP in attrs and RTU in attrs, path, "no CM handshake")
    ops = {f.op for f in fs}
    need(XRC_SEND_ONLY in ops and XRC_ACK in ops, path, "no XRC SEND Only and XRC Acknowledge")


def check_ipv6(path, fs):
    need(all(f.eth == 0x86DD for f in fs), path, "a frame that is not IPv6")
    attrs = {f.attr for f in fs}
    for a in (REQ, REP, RTU, DREQ, DREP):
        need(a in attrs, path, f"no CM attribute {a:#06x}")
    need(any(f.op == READ_REQ for f in fs) and any(f.op == WRITE_ONLY for f in fs), path,
         "no RDMA READ and WRITE")


SAMPLES = {
    "rc-ops": check_rc_ops,
    "reject-no-listener": check_reject_no_listener,
    "reject-private-data": check_reject_private_data,
    "ud-sidr": check_ud_sidr,
    "rnr-nak": check_rnr_nak,
    "loss-retransmit": check_loss_retransmit,
    "read-retry": check_read_retry,
    "xrc": check_xrc,
    "ipv6-rping": check_ipv6,
}


def check(path, port, what):
    fs = frames(path, port)
    need(fs, path, "no frames")
    bad = [n for n, f in enumerate(fs, 1) if f.broken]
    need(not bad, path, f"malformed frames (or errors) in tshark: {bad}")
    need(all(f.op is not None for f in fs), path, "a frame tshark does not decode as RoCE")
    n = verify_pcap(path, want_valid=True)
    check_starting_psns(path, fs)
    what(path, fs)
    print(f"ok: {path}: {len(fs)} frames, {n} ICRCs verified, shows what it is for")


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: pcap_samples.py DIR [UDP_PORT]")
    require_scapy()
    port = int(sys.argv[2]) if len(sys.argv) == 3 else 4791
    bind_roce_port(port)
    # The Starting PSN rule is Linux's: the kernel-rxe captures must pass it too.
    for name in ("rping", "ucma"):
        path = os.path.join(os.path.dirname(__file__), "..", "vectors", "kernel-rxe",
                            f"{name}.pcap")
        check_starting_psns(path, frames(path, 4791))
    for name, what in SAMPLES.items():
        check(f"{sys.argv[1]}/{name}.pcap", port, what)


if __name__ == "__main__":
    main()
