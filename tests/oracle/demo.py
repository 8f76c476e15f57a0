# SPDX-License-Identifier: MIT
"""Run uroce-demo, and what its capture must contain, written from the scenario
in tools/demo/conversation.c and the packet formats of PROTOCOL.md §1, not from
the program's output."""
import os
import subprocess

from roce_icrc import fail

RC, UD = 0x00, 0x60
SEND_ONLY, SEND_ONLY_IMM = 0x04, 0x05
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST = 0x06, 0x07, 0x08
READ_REQ, READ_FIRST, READ_LAST = 0x0C, 0x0D, 0x0F
ACK, ATOMIC_ACK, CMP_SWAP = 0x11, 0x12, 0x13
CNP = 0x81

QP_A, QP_B, UD_QP_B, QP6_B = 0x11, 0x12, 0x22, 0x32
HELLO = 17  # "Hello from uroce!"


def udp_len(hdrs, payload=0):
    """UDP length: UDP header, BTH + extension headers, payload, pad, ICRC (§1.8)."""
    return 8 + hdrs + payload + (-payload & 3) + 4


# One row per frame: IP version, opcode, DestQP, PSN, UDP length, and other
# tshark fields (-T fields names, PROTOCOL.md §5.2) with their values (byte
# fields as hex strings).
EXPECTED = [
    (4, RC | SEND_ONLY, QP_B, 0xFFFFFE, udp_len(12, HELLO),
     {"infiniband.bth.a": 1, "infiniband.bth.padcnt": 3}),
    (4, RC | ACK, QP_A, 0xFFFFFE, udp_len(16),
     {"infiniband.aeth.syndrome": 0x1F, "infiniband.aeth.msn": 1}),
    (4, RC | WRITE_FIRST, QP_B, 0xFFFFFF, udp_len(28, 1024),
     {"infiniband.reth.dmalen": 2500, "infiniband.bth.padcnt": 0, "ip.dsfield.ecn": 2}),
    (4, RC | WRITE_MIDDLE, QP_B, 0x000000, udp_len(12, 1024), {"ip.dsfield.ecn": 3}),
    (4, RC | WRITE_LAST, QP_B, 0x000001, udp_len(12, 452), {"infiniband.bth.a": 1}),
    (4, CNP, QP_A, 0, udp_len(28), {"ip.dsfield.dscp": 48}),
    (4, RC | ACK, QP_A, 0x000001, udp_len(16),
     {"infiniband.aeth.syndrome": 0x1F, "infiniband.aeth.msn": 2}),
    (4, RC | READ_REQ, QP_B, 0x000002, udp_len(28), {"infiniband.reth.dmalen": 1500}),
    (4, RC | READ_FIRST, QP_A, 0x000002, udp_len(16, 1024), {"infiniband.aeth.msn": 3}),
    (4, RC | READ_LAST, QP_A, 0x000003, udp_len(16, 476), {"infiniband.aeth.msn": 3}),
    (4, RC | CMP_SWAP, QP_B, 0x000004, udp_len(40),
     {"infiniband.atomiceth.swapdt": 1, "infiniband.atomiceth.cmpdt": 0}),
    (4, RC | ATOMIC_ACK, QP_A, 0x000004, udp_len(24),
     {"infiniband.aeth.msn": 4, "infiniband.atomicacketh.origremdt": 0}),
    (4, RC | SEND_ONLY, QP_B, 0x000005, udp_len(12, HELLO), {}),
    (4, RC | ACK, QP_A, 0x000005, udp_len(16),  # RNR NAK, 1.28 ms (§3.5)
     {"infiniband.aeth.syndrome.opcode": 1, "infiniband.aeth.syndrome.timer": 14,
      "infiniband.aeth.msn": 4}),
    (4, RC | SEND_ONLY, QP_B, 0x000005, udp_len(12, HELLO), {}),
    (4, RC | ACK, QP_A, 0x000005, udp_len(16),
     {"infiniband.aeth.syndrome": 0x1F, "infiniband.aeth.msn": 5}),
    (4, RC | SEND_ONLY, QP_B, 0x000007, udp_len(12, 64), {}),
    (4, RC | ACK, QP_A, 0x000006, udp_len(16),  # PSN sequence error NAK
     {"infiniband.aeth.syndrome.opcode": 3, "infiniband.aeth.syndrome.error_code": 0,
      "infiniband.aeth.msn": 5}),
    (4, UD | SEND_ONLY_IMM, UD_QP_B, 0x000001, udp_len(24, HELLO),
     {"infiniband.deth.q_key": 0x01234567, "infiniband.deth.srcqp": 0x21,
      "infiniband.immdt": "0badcafe"}),
    (6, RC | SEND_ONLY, QP6_B, 0x000100, udp_len(12, HELLO),
     {"ipv6.flow": 0x1C8CB, "infiniband.bth.a": 1}),
]


def run_demo(demo, directory):
    """Run uroce-demo into @directory; returns (pcap path, stdout lines)."""
    pcap = os.path.join(directory, "x.pcap")
    r = subprocess.run([demo, "--pcap", pcap], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"uroce-demo exited {r.returncode}: {r.stderr.strip()}")
    if r.stderr:
        fail(f"uroce-demo wrote to stderr: {r.stderr.strip()}")
    if not os.path.isfile(pcap):
        fail(f"uroce-demo did not create {pcap}")
    return pcap, r.stdout.splitlines()
