#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""RDMA netlink under uroce-run agrees with sysfs and the verbs, on a socket that behaves as
the kernel's.

Run under uroce-run. Speaks NETLINK_RDMA itself (Python's socket module calls the C library's
socket, bind, sendto, recvfrom, as C programs do):
  - the socket: SO_DOMAIN, SO_PROTOCOL, SO_TYPE; bind and getsockname (the process ID, then
    negative port IDs); answers come from port 0 and make the descriptor readable (select);
    a dup'ed descriptor (dup, dup2, F_DUPFD) is the same socket, write() sends, the socket
    outlives one close; answers left unread overrun it (ENOBUFS once);
  - RDMA_NLDEV_CMD_GET (dump), PORT_GET, GET_CHARDEV, RES_GET against sysfs and /dev: the
    index is the uverbs number, GUIDs, port state, netdev, the device node's numbers and ABI;
  - RES_GET counts this process's objects among every process's: a context, a PD and a CQ
    opened with pyverbs, an rdma_cm id bound to the address of a device other than uroce_lo;
  - RES_QP_GET lists this process's QP (dump and doit) with its pid, type, state and port,
    and not once destroyed (ENOENT);
  - the kernel's errors: an unknown device, an unknown command, one uroce does not serve, a
    datagram shorter than a header;
  - NETLINK_ROUTE still reaches the kernel.
Prints "netlink: consistent" at the end; exits 1 listing the differences.
"""
import errno
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys

import pyverbs.cm_enums as ce
import pyverbs.device as d
from pyverbs.cmid import CMID, AddrInfo, CMEventChannel
from pyverbs.cq import CQ
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

# <linux/netlink.h>, <rdma/rdma_netlink.h>
NETLINK_RDMA = 20
SOL_NETLINK = 270
NETLINK_CAP_ACK, NETLINK_EXT_ACK = 10, 11
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
CMD_GET, CMD_PORT_GET, CMD_SYS_GET, CMD_RES_GET, CMD_GET_CHARDEV, CMD_STAT_GET = 1, 5, 6, 9, 15, 17
CMD_RES_QP_GET = 10
A_DEV_INDEX, A_DEV_NAME, A_PORT_INDEX, A_FW_VERSION, A_NODE_GUID, A_SYS_IMAGE_GUID = 1, 2, 3, 5, 6, 7
A_PORT_STATE, A_PORT_PHYS_STATE, A_RES_SUMMARY = 12, 13, 15
A_RES_QP, A_RES_LQPN, A_RES_TYPE, A_RES_STATE, A_RES_PID = 19, 21, 26, 27, 28
A_NDEV_INDEX, A_NDEV_NAME = 50, 51
A_NETNS_MODE, A_CHARDEV_TYPE, A_CHARDEV_NAME, A_CHARDEV_ABI, A_CHARDEV = 66, 69, 70, 71, 72
A_COPY_ON_FORK = 93

fails = []


def check(what, got, want):
    if got != want:
        fails.append(f"{what}: {got!r}, want {want!r}")


def read(path):
    with open(path) as f:
        return f.read().strip()


def nl_type(op):
    return (5 << 10) + op  # RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op)


def attr(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * (-n % 4)


def attrs(buf):
    """{type: payload} of a message's attributes (nested ones as bytes)."""
    out, off = {}, 0
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("=HH", buf, off)
        if n < 4:
            break
        out[t & 0x3FFF] = buf[off + 4 : off + n]
        off += (n + 3) & ~3
    return out


def u32(b):
    return struct.unpack("=I", b[:4])[0]


def u64(b):
    return struct.unpack("=Q", b[:8])[0]


def string(b):
    return b.split(b"\0", 1)[0].decode()


class Nl:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_RDMA)
        self.s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        self.s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.s.bind((0, 0))
        self.seq = 100

    def ask(self, op, flags, body=b"", raw=None):
        """Send one request; the messages of the answer: [(type, flags, payload)]."""
        self.seq += 1
        msg = raw or struct.pack("=IHHII", 16 + len(body), nl_type(op), flags, self.seq, 0) + body
        self.s.sendto(msg, (0, 0))
        msgs = []
        while True:
            if not select.select([self.s], [], [], 5)[0]:
                fails.append(f"op {op}: no answer within 5 s")
                return msgs
            data, addr = self.s.recvfrom(65536)
            check(f"op {op}: the answer's sender", addr, (0, 0))
            off, last = 0, False
            while off + 16 <= len(data):
                n, t, f, seq, pid = struct.unpack_from("=IHHII", data, off)
                check(f"op {op}: nlmsg_pid", pid, self.s.getsockname()[0])
                if raw is None:
                    check(f"op {op}: nlmsg_seq", seq, self.seq)
                msgs.append((t, f, data[off + 16 : off + n]))
                last = last or t in (NLMSG_ERROR, NLMSG_DONE)
                off += (n + 3) & ~3
            if last or not (flags & (NLM_F_ACK | NLM_F_DUMP)):
                return msgs

    def error(self, op, flags, body=b"", raw=None):
        t, _, payload = self.ask(op, flags, body, raw)[-1]
        check(f"op {op}: the answer", t, NLMSG_ERROR)
        return struct.unpack_from("=i", payload)[0]


nl = Nl()
s = nl.s
check("SO_DOMAIN", s.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN), socket.AF_NETLINK)
check("SO_PROTOCOL", s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL), NETLINK_RDMA)
check("SO_TYPE", s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE), socket.SOCK_RAW)
check("NETLINK_CAP_ACK", s.getsockopt(SOL_NETLINK, NETLINK_CAP_ACK), 1)
check("the first port ID", s.getsockname(), (os.getpid(), 0))
other = Nl()
check("the second port ID is negative", other.s.getsockname()[0] >= 1 << 31, True)

# The devices, in uverbs order, as sysfs lists them.
uverbs = {}
for name in os.listdir("/sys/class/infiniband_verbs"):
    if name.startswith("uverbs"):
        uverbs[read(f"/sys/class/infiniband_verbs/{name}/ibdev")] = int(name[6:])
dump = nl.ask(CMD_GET, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP)
check("GET dump ends with NLMSG_DONE", dump[-1][:2], (NLMSG_DONE, 2))
devs = [attrs(p) for t, f, p in dump if t == nl_type(CMD_GET)]
check("devices", [string(a[A_DEV_NAME]) for a in devs], sorted(uverbs, key=uverbs.get))
for a in devs:
    name, index = string(a[A_DEV_NAME]), u32(a[A_DEV_INDEX])
    sysfs = f"/sys/class/infiniband/{name}"
    check(f"{name}: index", index, uverbs.get(name))
    guid = f"{u64(a[A_NODE_GUID]):016x}"
    check(f"{name}: node_guid", ":".join(guid[i : i + 4] for i in range(0, 16, 4)),
          read(f"{sysfs}/node_guid"))
    check(f"{name}: sys_image_guid", u64(a[A_SYS_IMAGE_GUID]), u64(a[A_NODE_GUID]))
    check(f"{name}: fw", string(a[A_FW_VERSION]), read(f"{sysfs}/fw_ver"))

    port = nl.ask(CMD_PORT_GET, NLM_F_REQUEST | NLM_F_ACK,
                  attr(A_DEV_INDEX, struct.pack("=I", index)) + attr(A_PORT_INDEX, struct.pack("=I", 1)))
    p = attrs(port[0][2])
    check(f"{name}/1: state", p[A_PORT_STATE][0], int(read(f"{sysfs}/ports/1/state").split(":")[0]))
    check(f"{name}/1: phys_state", p[A_PORT_PHYS_STATE][0],
          int(read(f"{sysfs}/ports/1/phys_state").split(":")[0]))
    netdev = os.listdir(f"{sysfs}/device/net")[0]
    check(f"{name}/1: netdev", string(p[A_NDEV_NAME]), netdev)
    check(f"{name}/1: netdev index", u32(p[A_NDEV_INDEX]), int(read(f"/sys/class/net/{netdev}/ifindex")))
    check(f"{name}/1: acknowledged", port[-1][0], NLMSG_ERROR)

    # How rdma-core's libibverbs finds the device node (ibdev_nl.c: no NLM_F_ACK).
    c = attrs(nl.ask(CMD_GET_CHARDEV, NLM_F_REQUEST,
                     attr(A_DEV_INDEX, struct.pack("=I", index)) + attr(A_CHARDEV_TYPE, b"uverbs\0"))[0][2])
    node = f"uverbs{index}"
    rdev = os.stat(f"/dev/infiniband/{node}").st_rdev
    check(f"{name}: chardev name", string(c[A_CHARDEV_NAME]), node)
    check(f"{name}: chardev", u64(c[A_CHARDEV]),
          (os.minor(rdev) & 0xFF) | (os.major(rdev) << 8) | ((os.minor(rdev) & ~0xFF) << 12))
    check(f"{name}: chardev dev file", read(f"/sys/class/infiniband_verbs/{node}/dev"),
          f"{os.major(rdev)}:{os.minor(rdev)}")
    check(f"{name}: chardev ABI", u64(c[A_CHARDEV_ABI]), int(read(f"/sys/class/infiniband_verbs/{node}/abi_version")))

# librdmacm's question: "rdma_cm" of no device.
c = attrs(nl.ask(CMD_GET_CHARDEV, NLM_F_REQUEST, attr(A_CHARDEV_TYPE, b"rdma_cm\0"))[0][2])
rdev = os.stat("/dev/infiniband/rdma_cm").st_rdev
check("rdma_cm", (string(c[A_CHARDEV_NAME]), u64(c[A_CHARDEV])), ("rdma_cm", (os.major(rdev) << 8) | os.minor(rdev)))
sysget = attrs(nl.ask(CMD_SYS_GET, NLM_F_REQUEST)[0][2])
check("netns mode, copy-on-fork", (sysget[A_NETNS_MODE][0], sysget[A_COPY_ON_FORK][0]), (0, 1))


def summary(index):
    """{name: count} of RES_GET for the device @index."""
    a = attrs(nl.ask(CMD_RES_GET, NLM_F_REQUEST, attr(A_DEV_INDEX, struct.pack("=I", index)))[0][2])
    out = {}
    table, off = a[A_RES_SUMMARY], 0
    while off + 4 <= len(table):
        n, _ = struct.unpack_from("=HH", table, off)
        e = attrs(table[off + 4 : off + n])
        out[string(e[17])] = u64(e[18])
        off += (n + 3) & ~3
    return out


def without_others(trial):
    """Run @trial (it returns its differences) until it finds none, at most 20 times: the
    counts are every process's of this user and namespace (the registry, resreg.h), and other
    uroce processes may make or drop objects meanwhile. Keeps the last try's differences."""
    for _ in range(20):
        diffs = trial()
        if not diffs:
            return
    fails.extend(diffs)


def differences(what, got, want):
    return [] if got == want else [f"{what}: {got!r}, want {want!r}"]


# This process's objects, counted on their device.
dev0 = d.get_device_list()[0]
name0 = dev0.name.decode()
check("summary names", list(summary(uverbs[name0])), ["pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"])


def own_objects():
    before = summary(uverbs[name0])
    ctx = d.Context(name=name0)
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    during = summary(uverbs[name0])
    cq.close()
    pd.close()
    ctx.close()
    diffs = []
    for k, more in (("ctx", 1), ("pd", 1), ("cq", 1), ("qp", 0)):
        diffs += differences(f"{name0}: {k} with a context, PD and CQ", during[k], before[k] + more)
    return diffs + differences(f"{name0}: summary after closing them", summary(uverbs[name0]), before)


without_others(own_objects)

def my_qps(index):
    """{lqpn: entry attributes} of this process's QPs in RES_QP_GET's dump of device @index."""
    out = {}
    for t, f, p in nl.ask(CMD_RES_QP_GET, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP,
                          attr(A_DEV_INDEX, struct.pack("=I", index))):
        if t != nl_type(CMD_RES_QP_GET):
            continue
        table, off = attrs(p)[A_RES_QP], 0
        while off + 4 <= len(table):
            n, _ = struct.unpack_from("=HH", table, off)
            e = attrs(table[off + 4 : off + n])
            if u32(e[A_RES_PID]) == os.getpid():
                out[u32(e[A_RES_LQPN])] = e
            off += (n + 3) & ~3
    return out


# This process's QP in RES_QP_GET, dump and doit: its number, type and state, from creation
# (no port yet) to INIT on port 1, and gone once destroyed.
ctx = d.Context(name=name0)
pd = PD(ctx)
cq = CQ(ctx, 8)
qp = QP(pd, QPInitAttr(qp_type=2, scq=cq, rcq=cq, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
mine = my_qps(uverbs[name0])
check("my QPs when created", list(mine), [qp.qp_num])
e = mine.get(qp.qp_num, {})
check("a new QP: no port, type RC, state RESET",
      (A_PORT_INDEX in e, e.get(A_RES_TYPE, b"?")[:1], e.get(A_RES_STATE, b"?")[:1]), (False, b"\x02", b"\x00"))
qp.to_init(QPAttr(port_num=1))
e = my_qps(uverbs[name0]).get(qp.qp_num, {})
check("in INIT: port 1, state INIT", (u32(e.get(A_PORT_INDEX, b"\0" * 4)), e.get(A_RES_STATE, b"?")[:1]), (1, b"\x01"))
one = nl.ask(CMD_RES_QP_GET, NLM_F_REQUEST, attr(A_DEV_INDEX, struct.pack("=I", uverbs[name0])) +
             attr(A_PORT_INDEX, struct.pack("=I", 1)) + attr(A_RES_LQPN, struct.pack("=I", qp.qp_num)))
a = attrs(one[0][2])
check("RES_QP_GET of my QP", (one[0][0], u32(a.get(A_RES_LQPN, b"\0" * 4)), u32(a.get(A_RES_PID, b"\0" * 4))),
      (nl_type(CMD_RES_QP_GET), qp.qp_num, os.getpid()))
qpn = qp.qp_num
qp.close()
check("my QPs once destroyed", list(my_qps(uverbs[name0])), [])
check("RES_QP_GET of a destroyed QP",
      nl.error(CMD_RES_QP_GET, NLM_F_REQUEST, attr(A_DEV_INDEX, struct.pack("=I", uverbs[name0])) +
               attr(A_PORT_INDEX, struct.pack("=I", 1)) + attr(A_RES_LQPN, struct.pack("=I", qpn))),
      -errno.ENOENT)
cq.close()
pd.close()
ctx.close()

# An rdma_cm id bound to an address is counted on the device holding it, and on no other. (Not
# tried: 127.0.0.1, which binds no device, as the kernel's rdma_cm counts loopback addresses as
# "any"; pyverbs' bind_addr then makes a Context of the id's NULL verbs and crashes, on Linux too.)
def ipv4_of(ifname):
    out = subprocess.run(["ip", "-j", "-4", "addr", "show", "dev", ifname], check=True,
                         capture_output=True, text=True).stdout
    return [a["local"] for i in json.loads(out) for a in i["addr_info"]]


def cm_ids():
    return {n: summary(uverbs[n])["cm_id"] for n in uverbs}


held = [(n, ipv4_of(i[0])[0]) for n in uverbs
        for i in [os.listdir(f"/sys/class/infiniband/{n}/device/net")]
        if i != ["lo"] and ipv4_of(i[0])]
check("a uroce device besides uroce_lo with an IPv4 address", bool(held), True)


def bound_id(where, at):
    before = cm_ids()
    channel = CMEventChannel()
    cmid = CMID(creator=channel, port_space=ce.RDMA_PS_TCP)
    cmid.bind_addr(AddrInfo(src=at, src_service="0", port_space=ce.RDMA_PS_TCP,
                            flags=ce.RAI_PASSIVE))
    during = cm_ids()
    cmid.close()
    channel.close()
    want = {n: c + (n == where) for n, c in before.items()}
    return (differences(f"cm_id counts with an id bound to {at}", during, want) +
            differences(f"cm_id counts after closing the id bound to {at}", cm_ids(), before))


for where, at in held[:1]:
    without_others(lambda: bound_id(where, at))

# The kernel's errors.
check("an unknown device", nl.error(CMD_GET, NLM_F_REQUEST, attr(A_DEV_INDEX, struct.pack("=I", 4242))), -errno.EINVAL)
check("a command without a handler", nl.error(8, NLM_F_REQUEST), -errno.EINVAL)
check("a command uroce does not serve", nl.error(CMD_STAT_GET, NLM_F_REQUEST | NLM_F_DUMP), -errno.EOPNOTSUPP)
check("a datagram shorter than a header", nl.error(0, 0, raw=struct.pack("=IHH", 8, nl_type(CMD_GET), 1)), -errno.EINVAL)

# A descriptor dup'ed from it is the same socket; write() sends; it lives on after one close.
fd2 = os.dup(s.fileno())
nl.seq += 1
os.write(fd2, struct.pack("=IHHII", 16, nl_type(CMD_SYS_GET), NLM_F_REQUEST, nl.seq, 0))
check("an answer to write() on a dup", select.select([s], [], [], 5)[0], [s])
check("read", struct.unpack_from("=IHHII", os.read(s.fileno(), 4096))[1:4], (nl_type(CMD_SYS_GET), 0, nl.seq))
s.close()
nl.seq += 1
os.write(fd2, struct.pack("=IHHII", 16, nl_type(CMD_SYS_GET), NLM_F_REQUEST, nl.seq, 0))
check("the dup after the first close", struct.unpack_from("=IHHII", os.read(fd2, 4096))[3], nl.seq)
os.set_blocking(fd2, False)
try:
    os.read(fd2, 4096)
    fails.append("a read with nothing queued returned")
except BlockingIOError:
    pass
os.close(fd2)

# dup2 and F_DUPFD give the socket too; answers nobody reads overrun it: ENOBUFS once
# (netlink_overrun), then the answers that fitted.
o = Nl()
o.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
fd3 = fcntl.fcntl(o.s.fileno(), fcntl.F_DUPFD, 100)
fd4 = os.dup2(fd3, fd3 + 1)
o.s.close()
os.close(fd3)
for i in range(100):
    os.write(fd4, struct.pack("=IHHII", 16, nl_type(CMD_SYS_GET), NLM_F_REQUEST, i + 1, 0))
try:
    os.read(fd4, 4096)
    fails.append("no ENOBUFS after 100 answers left unread with SO_RCVBUF 4096")
except OSError as e:
    check("after 100 answers left unread", e.errno, errno.ENOBUFS)
check("the first answer after ENOBUFS", struct.unpack_from("=IHHII", os.read(fd4, 4096))[3], 1)
os.close(fd4)

# NETLINK_ROUTE goes to the kernel: RTM_GETLINK lists the interfaces.
r = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
r.sendto(struct.pack("=IHHIIBxxxiII", 32, 18, NLM_F_REQUEST | NLM_F_DUMP, 1, 0, 0, 0, 0, 0), (0, 0))
links, done = 0, False
while not done:
    data, off = r.recv(65536), 0
    while off + 16 <= len(data) and not done:
        n, t = struct.unpack_from("=IH", data, off)
        done = t == NLMSG_DONE
        links += t == 16  # RTM_NEWLINK
        off += (n + 3) & ~3
r.close()
check("NETLINK_ROUTE's links", links >= len(os.listdir("/sys/class/net")), True)

if fails:
    print("\n".join(fails))
    sys.exit(1)
print(f"netlink: {len(devs)} devices; consistent")
