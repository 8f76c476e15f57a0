# SPDX-License-Identifier: MIT
"""Two ICRC oracles independent of uroce, for frames read from pcap files.

- scapy's BTH.compute_icrc (python3-scapy 2.5, scapy.contrib.roce): IPv4 only.
- icrc_reference(): PROTOCOL.md §2.3 written out here with zlib's CRC-32,
  for IPv4 and IPv6 (scapy 2.5 has no IPv6 ICRC).

Run with /usr/bin/python3: the python3 on PATH has no scapy.
"""
import importlib
import sys
import zlib


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def require_scapy():
    """Import scapy, or fail the test: it is a required test dependency."""
    try:
        for module in ("scapy.contrib.roce", "scapy.layers.l2", "scapy.utils"):
            importlib.import_module(module)
    except ImportError as e:
        fail(f"scapy is required for this test (Debian: apt-get install python3-scapy; "
             f"run with /usr/bin/python3, not {sys.executable}): {e}")


def bind_roce_port(port):
    """Have scapy decode UDP datagrams to @port as RoCE too (it knows 4791 already)."""
    if port != 4791:
        from scapy.contrib.roce import BTH
        from scapy.layers.inet import UDP
        from scapy.packet import bind_layers
        bind_layers(UDP, BTH, dport=port)


def read_frames(path):
    """The frames of a pcap file, as bytes (scapy's reader: ns and µs pcaps)."""
    from scapy.utils import RawPcapReader
    r = RawPcapReader(path)
    try:
        return [bytes(data) for data, _ in r]
    finally:
        r.close()


def ip_packet(frame):
    """The IP packet of an untagged Ethernet frame, without link-layer padding."""
    ethertype = int.from_bytes(frame[12:14], "big")
    ip = frame[14:]
    if ethertype == 0x0800:
        return ip[:int.from_bytes(ip[2:4], "big")]
    if ethertype == 0x86DD:
        return ip[:40 + int.from_bytes(ip[4:6], "big")]
    raise ValueError(f"ethertype 0x{ethertype:04x} is neither IPv4 nor IPv6")


def icrc_reference(ip):
    """ICRC wire bytes of an IP packet ending in its ICRC (PROTOCOL.md §2.1-§2.4)."""
    b = bytearray(ip[:-4])
    version = b[0] >> 4
    if version == 4:
        if b[0] & 0x0F != 5:
            raise ValueError("IPv4 options")
        b[1] = 0xFF                     # TOS
        b[8] = 0xFF                     # TTL
        b[10] = b[11] = 0xFF            # header checksum
        udp = 20
    elif version == 6:
        b[0] |= 0x0F                    # traffic class, flow label
        b[1] = b[2] = b[3] = 0xFF
        b[7] = 0xFF                     # hop limit
        udp = 40
    else:
        raise ValueError(f"IP version {version}")
    b[udp + 6] = b[udp + 7] = 0xFF      # UDP checksum
    b[udp + 8 + 4] = 0xFF               # BTH byte 4: FECN, BECN, resv6
    return zlib.crc32(b"\xff" * 8 + bytes(b)).to_bytes(4, "little")


def icrc_scapy(frame):
    """ICRC wire bytes as scapy computes them for an IPv4 frame."""
    from scapy.contrib.roce import BTH
    from scapy.layers.l2 import Ether
    p = Ether(frame)
    if BTH not in p:
        raise ValueError("scapy finds no BTH (not UDP port 4791?)")
    return p[BTH].compute_icrc(None)


def check_frame(frame, use_scapy=True):
    """(IP version, wire ICRC, reference ICRC, scapy ICRC or None for IPv6 or not used)."""
    ip = ip_packet(frame)
    version = ip[0] >> 4
    scapy_icrc = icrc_scapy(frame) if version == 4 and use_scapy else None
    return version, ip[-4:], icrc_reference(ip), scapy_icrc


def verify_pcap(path, want_valid, scapy_frames=None):
    """Check every frame of @path; fail unless each ICRC is valid (or each invalid). Scapy
    checks the reference on the first @scapy_frames frames (None: all): it takes ~1 ms a
    frame, the reference a few us."""
    frames = read_frames(path)
    if not frames:
        fail(f"{path}: no frames")
    for n, frame in enumerate(frames, 1):
        version, wire, ref, sc = check_frame(frame, scapy_frames is None or n <= scapy_frames)
        where = f"{path} frame {n} (IPv{version})"
        if sc is not None and sc != ref:
            fail(f"{where}: the oracles disagree: scapy {sc.hex()}, reference {ref.hex()}")
        valid = wire == ref
        if valid != want_valid:
            fail(f"{where}: ICRC {wire.hex()} is {'valid' if valid else 'invalid'} "
                 f"(computed {ref.hex()}), expected {'valid' if want_valid else 'invalid'}")
    return len(frames)
