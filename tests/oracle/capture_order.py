# SPDX-License-Identifier: MIT
"""Oracle: a capture records each frame before any frame that answers it.

usage: capture_order.py FILE...

For one RC connection's capture (its two QPs; CM MADs on QP 1): every answer -- an ACK or NAK,
a READ response, an atomic ACKnowledge -- comes after a request to the other QP with a PSN at
or below its own (within 1,024), and every CM message after the one it answers (REP after REQ,
RTU after REP, DREP after DREQ). A process that records its sent frames only after the send
call returns can record the peer's answer, received meanwhile by another thread, first.
"""
import sys

from roce_icrc import fail, ip_packet, read_frames

# BTH opcodes (low 5 bits of RC opcodes) that answer a request: IBA 9.2, PROTOCOL.md §1.
ANSWERS = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}
# CM attribute IDs: each answer and the message it answers (IBA 12.6).
CM_ANSWERS = {0x0013: 0x0010, 0x0014: 0x0013, 0x0016: 0x0015}
CM_NAMES = {0x0010: "REQ", 0x0013: "REP", 0x0014: "RTU", 0x0015: "DREQ", 0x0016: "DREP"}


def roce_payload(frame):
    ip = ip_packet(frame)
    hdr = (ip[0] & 0x0F) * 4 if ip[0] >> 4 == 4 else 40
    return ip[hdr + 8:]


def check(path):
    requests = []  # (dqpn, psn) of the requests seen so far
    cm_seen = set()
    n = 0
    for i, frame in enumerate(read_frames(path), 1):
        b = roce_payload(frame)
        opcode, dqpn = b[0], int.from_bytes(b[5:8], "big")
        psn = int.from_bytes(b[9:12], "big") & 0xFFFFFF
        if dqpn == 1:  # a CM MAD: BTH, DETH, then the MAD (attribute ID at bytes 16..17)
            attr = int.from_bytes(b[20 + 16:20 + 18], "big")
            want = CM_ANSWERS.get(attr)
            if want is not None and want not in cm_seen:
                fail(f"{path}: frame {i}: {CM_NAMES[attr]} before any {CM_NAMES[want]}")
            cm_seen.add(attr)
            continue
        if opcode >> 5 != 0 or (opcode & 0x1F) not in ANSWERS:
            requests.append((dqpn, psn))
            continue
        if not any(q != dqpn and 0 <= (psn - p) % (1 << 24) < 1024 for q, p in requests):
            fail(f"{path}: frame {i}: answer (opcode 0x{opcode:02x}, PSN {psn}) to QP "
                 f"0x{dqpn:06x} before any request it answers")
        n += 1
    return n


def main():
    if len(sys.argv) < 2:
        fail("usage: capture_order.py FILE...")
    for path in sys.argv[1:]:
        print(f"ok: {path}: {check(path)} answers, each after its request")


if __name__ == "__main__":
    main()
