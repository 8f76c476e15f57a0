# SPDX-License-Identifier: MIT
"""Oracle test: tshark decodes uroce-demo's capture as the intended conversation.

usage: demo_tshark.py UROCE_DEMO

Checks that tshark (4.0, PROTOCOL.md §5) finds no malformed frame and no
expert warning, that its own IPv4 and UDP checksum validation passes, and
that every frame has the BTH, extension-header and length fields of the
scenario (demo.EXPECTED). Also shows that the malformed check can fail, on
the reference vectors with the RPC-over-RDMA heuristic left on (§5.1).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from demo import EXPECTED, run_demo
from roce_icrc import fail

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors")
# Without this, SEND payloads can be mis-claimed by RPC-over-RDMA (PROTOCOL.md §5.1).
NO_HEURISTIC = ["--disable-heuristic", "rpcrdma_infiniband"]
CHECKSUMS = ["-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"]
CHECKSUM_GOOD = 1  # *.checksum.status: 0 bad, 1 good, 2 unverified, 3 not present
BASE_FIELDS = ["frame.len", "eth.type", "udp.dstport", "udp.length", "ip.checksum.status",
               "udp.checksum.status", "infiniband.bth.opcode", "infiniband.bth.destqp",
               "infiniband.bth.psn"]


def tshark(args):
    r = subprocess.run(["tshark"] + args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"tshark {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def number(text):
    """A -T fields integer value: decimal or 0x-hex."""
    return int(text, 0)


def same(text, value):
    """Byte fields are expected as hex strings ("0badcafe"), integers as ints."""
    return text == value if isinstance(value, str) else number(text) == value


def check_display_filter(pcap, display_filter, extra=()):
    out = tshark(["-r", pcap, *NO_HEURISTIC, *extra, "-Y", display_filter])
    if out.strip():
        fail(f"frames match '{display_filter}':\n{out}")


def check_malformed_check_can_fail():
    """With the heuristic on, the two SEND vectors are shown as malformed (§5.1)."""
    pcap = os.path.join(VECTORS, "roce_vectors.pcap")
    out = tshark(["-r", pcap, "-Y", "_ws.malformed", "-T", "fields", "-e", "frame.number"])
    if out.split() != ["4", "19"]:
        fail(f"the malformed-frame check no longer detects the known case: {out.split()}")


def check_fields(pcap):
    fields = BASE_FIELDS + sorted({k for row in EXPECTED for k in row[5]})
    args = ["-r", pcap, *NO_HEURISTIC, *CHECKSUMS, "-T", "fields", "-E", "separator=\t",
            "-E", "occurrence=f"]  # infiniband.immdt names both the header and its value
    for f in fields:
        args += ["-e", f]
    lines = tshark(args).splitlines()
    if len(lines) != len(EXPECTED):
        fail(f"tshark shows {len(lines)} frames, the scenario has {len(EXPECTED)}")
    decoded = []
    for n, (line, row) in enumerate(zip(lines, EXPECTED), 1):
        got = dict(zip(fields, line.split("\t")))
        version, opcode, qp, psn, udp_length, extra = row
        want = {"eth.type": 0x0800 if version == 4 else 0x86DD, "udp.dstport": 4791,
                "udp.length": udp_length,
                "frame.len": 14 + (20 if version == 4 else 40) + udp_length,
                "udp.checksum.status": CHECKSUM_GOOD, "infiniband.bth.opcode": opcode,
                "infiniband.bth.destqp": qp, "infiniband.bth.psn": psn, **extra}
        if version == 4:
            want["ip.checksum.status"] = CHECKSUM_GOOD
        for field, value in want.items():
            if not got.get(field):
                fail(f"frame {n}: tshark shows no {field} (want {value!r})")
            if not same(got[field], value):
                fail(f"frame {n}: {field} is {got[field]}, want {value!r}")
        decoded.append((number(got["infiniband.bth.destqp"]), number(got["infiniband.bth.psn"]),
                        number(got["frame.len"])))
    return decoded


def check_demo_output(lines, decoded, pcap):
    """The demo's one line per frame says what tshark decodes, then where the file is."""
    rows = [re.fullmatch(r"\s*(\d+)\s+(A->B|B->A)\s+(\w+)\s+0x([0-9a-f]{6})\s+"
                         r"0x([0-9a-f]{6})\s+(\d+)(\s.*)?", line) for line in lines]
    rows = [m for m in rows if m]
    if len(rows) != len(decoded):
        fail(f"uroce-demo printed {len(rows)} frame lines for {len(decoded)} frames")
    for m, (qp, psn, length) in zip(rows, decoded):
        printed = (int(m[4], 16), int(m[5], 16), int(m[6]))
        if printed != (qp, psn, length):
            fail(f"uroce-demo line {m[1]} says QP/PSN/length {printed}, tshark {(qp, psn, length)}")
    hint = f"tshark -r {pcap} --disable-heuristic rpcrdma_infiniband"
    if pcap not in lines[-2] or hint not in lines[-1]:
        fail(f"uroce-demo's last lines do not say where the pcap is and how to open it:\n"
             f"{lines[-2:]}")


def main():
    if len(sys.argv) != 2:
        fail("usage: demo_tshark.py UROCE_DEMO")
    if not shutil.which("tshark"):
        fail("tshark is required for this test (Debian: apt-get install tshark)")
    check_malformed_check_can_fail()
    with tempfile.TemporaryDirectory() as tmp:
        pcap, out = run_demo(sys.argv[1], tmp)
        check_display_filter(pcap, "_ws.malformed")
        check_display_filter(pcap, "_ws.expert.severity >= warning", CHECKSUMS)
        check_display_filter(pcap, "!(udp.dstport == 4791)")
        decoded = check_fields(pcap)
        check_demo_output(out, decoded, pcap)
    print(f"ok: tshark decodes all {len(EXPECTED)} frames as intended")


if __name__ == "__main__":
    main()
