# SPDX-License-Identifier: MIT
"""Oracle: every ICRC in a uroce capture verifies, by scapy and by the reference.

usage: pcap_icrc.py FILE [UDP_PORT]

UDP_PORT is the RoCEv2 port the capture used (UROCE_UDP_PORT; default 4791), so that scapy
finds the BTH. Frames sent as UDP GSO trains carry the IPv4 IDs the kernel gave each segment.
"""
import sys

from roce_icrc import bind_roce_port, fail, require_scapy, verify_pcap


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: pcap_icrc.py FILE [UDP_PORT]")
    require_scapy()
    bind_roce_port(int(sys.argv[2]) if len(sys.argv) == 3 else 4791)
    n = verify_pcap(sys.argv[1], want_valid=True)
    print(f"ok: {n} ICRCs verified")


if __name__ == "__main__":
    main()
