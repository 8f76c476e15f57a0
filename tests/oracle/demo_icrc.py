# SPDX-License-Identifier: MIT
"""Oracle test: every ICRC in uroce-demo's capture verifies independently.

usage: demo_icrc.py UROCE_DEMO

IPv4 frames are checked with scapy and with the reference implementation in
roce_icrc.py (which must agree); the IPv6 frame with the reference alone.
vectors_icrc.py shows that both oracles reject a bad ICRC.
"""
import sys
import tempfile

from demo import EXPECTED, run_demo
from roce_icrc import check_frame, fail, read_frames, require_scapy, verify_pcap


def main():
    if len(sys.argv) != 2:
        fail("usage: demo_icrc.py UROCE_DEMO")
    require_scapy()
    with tempfile.TemporaryDirectory() as tmp:
        pcap, _ = run_demo(sys.argv[1], tmp)
        n = verify_pcap(pcap, want_valid=True)
        versions = [check_frame(f)[0] for f in read_frames(pcap)]
    want = [row[0] for row in EXPECTED]
    if n != len(EXPECTED) or versions != want:
        fail(f"capture has IP versions {versions}, the scenario {want}")
    print(f"ok: {versions.count(4)} IPv4 ICRCs verified by scapy and the reference, "
          f"{versions.count(6)} IPv6 by the reference")


if __name__ == "__main__":
    main()
