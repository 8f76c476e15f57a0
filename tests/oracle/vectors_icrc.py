# SPDX-License-Identifier: MIT
"""Oracle self-test: the ICRC oracles accept the reference frames and reject bad ones.

usage: vectors_icrc.py VECTORS_DIR   (tests/vectors)

Valid: the project's 19 vectors (PROTOCOL.md §2.5; frame 19 is IPv6), a
ConnectX-4 Lx CNP (hardware), Linux rxe frames (non-zero IPv4 IDs), and
upstream scapy's IPv6 vector V2. Invalid: bad_icrc.pcap. Changing a field
the ICRC masks keeps a frame valid; changing a covered field breaks it.
"""
import os
import sys

from roce_icrc import check_frame, fail, icrc_reference, ip_packet, read_frames, \
    require_scapy, verify_pcap

# PROTOCOL.md §2.5 V2: scapy upstream's IPv6 UC SEND_ONLY, ICRC 3e 5b 74 3b.
SCAPY_V6 = bytes.fromhex(
    "248a07a8fa22248a07a8fa2286dd6e21face002c11ff20220000000000000000000000001023"
    "20230000000000000000000000001024c00012b7002ce7c52460ffff000000d300cf17104630"
    "818be28935d90e9a95505401be885e5000003e5b743b")

ETH = 14
# Byte offsets in the Ethernet frame that the ICRC masks (§2.1) or covers.
MASKED = {4: {"TOS": ETH + 1, "TTL": ETH + 8, "IP checksum": ETH + 10,
              "UDP checksum": ETH + 26, "BTH byte 4": ETH + 32},
          6: {"traffic class": ETH + 1, "flow label": ETH + 3, "hop limit": ETH + 7,
              "UDP checksum": ETH + 46, "BTH byte 4": ETH + 52}}
COVERED = {4: {"IP ID": ETH + 5, "source address": ETH + 15, "UDP source port": ETH + 21,
               "P_Key": ETH + 31, "resv7": ETH + 36, "PSN": ETH + 39, "last payload byte": -5},
           6: {"payload length": ETH + 5, "next header": ETH + 6, "source address": ETH + 23,
               "DestQP": ETH + 55, "PSN": ETH + 59, "last payload byte": -5}}


def check_mutations(frame, name):
    version = check_frame(frame)[0]
    for valid, table in ((True, MASKED[version]), (False, COVERED[version])):
        for field, off in table.items():
            m = bytearray(frame)
            m[off] ^= 0x5A
            _, wire, ref, sc = check_frame(bytes(m))
            if sc is not None and sc != ref:
                fail(f"{name} with {field} changed: the oracles disagree")
            if (wire == ref) != valid:
                fail(f"{name} with {field} changed: ICRC {'in' if valid else ''}valid, "
                     f"but {field} is {'masked' if valid else 'covered'} (PROTOCOL.md §2.1)")


def main():
    if len(sys.argv) != 2:
        fail("usage: vectors_icrc.py VECTORS_DIR")
    require_scapy()
    d = sys.argv[1]
    path = os.path.join(d, "roce_vectors.pcap")
    frames = read_frames(path)
    if verify_pcap(path, want_valid=True) != 19:
        fail(f"{path}: expected 19 frames")
    if check_frame(frames[18])[:3] != (6, bytes.fromhex("f869c310"), bytes.fromhex("f869c310")):
        fail(f"{path} frame 19: not the IPv6 frame with ICRC f869c310 (PROTOCOL.md §2.5)")
    if icrc_reference(ip_packet(SCAPY_V6)) != bytes.fromhex("3e5b743b"):
        fail("the reference does not reproduce scapy upstream's IPv6 ICRC 3e5b743b")
    verify_pcap(os.path.join(d, "cx4_cnp.pcap"), want_valid=True)
    verify_pcap(os.path.join(d, "kernel-rxe", "rping.pcap"), want_valid=True)
    verify_pcap(os.path.join(d, "bad_icrc.pcap"), want_valid=False)
    check_mutations(frames[4], "vector 5 (IPv4 ACK)")
    check_mutations(frames[18], "vector 19 (IPv6 SEND)")
    check_mutations(SCAPY_V6, "scapy's IPv6 vector")
    print("ok: the oracles accept the reference frames and reject the bad ones")


if __name__ == "__main__":
    main()
