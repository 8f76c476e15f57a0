#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The kernel's view of uroce's devices agrees with what uroce's verbs report.

Run under uroce-run. For every device pyverbs lists: the sysfs files a program reads (node
GUID, port state, every GID and its type and netdev, the uverbs folder) hold what
ibv_query_device, ibv_query_port, ibv_query_gid and ibv_query_gid_type say, and
/dev/infiniband/<dev_name> is the character device UCX looks for. Prints one line per device
and "discovery: consistent" at the end; exits 1 with the first difference.
"""
import os
import stat
import sys

import pyverbs.device as d
import pyverbs.enums as e

fails = []


def check(what, got, want):
    if got != want:
        fails.append(f"{what}: {got!r}, verbs say {want!r}")


def guid_text(raw):
    # ibv_device_attr.node_guid is in network order; pyverbs hands over its bytes as a host
    # integer.
    g = int.from_bytes(raw.to_bytes(8, "little"), "big")
    return ":".join(f"{(g >> s) & 0xffff:04x}" for s in (48, 32, 16, 0))


def read(path):
    with open(path) as f:
        return f.read()


devices = d.get_device_list()
if not devices:
    sys.exit("discovery: pyverbs lists no device")
for dev in devices:
    name = dev.name.decode()
    ibdev = f"/sys/class/infiniband/{name}"
    with d.Context(name=name) as ctx:
        attr = ctx.query_device()
        check(f"{ibdev}/node_guid", read(f"{ibdev}/node_guid").strip(), guid_text(attr.node_guid))
        check(f"{ibdev}/node_type", read(f"{ibdev}/node_type"), "1: CA\n")
        port = ctx.query_port(1)
        states = {e.IBV_PORT_ACTIVE: "4: ACTIVE\n", e.IBV_PORT_DOWN: "1: DOWN\n"}
        check(f"{ibdev}/ports/1/state", read(f"{ibdev}/ports/1/state"), states[port.state])
        check(f"{ibdev}/ports/1/link_layer", read(f"{ibdev}/ports/1/link_layer"), "Ethernet\n")
        ngids = 0
        for i in range(port.gid_tbl_len):
            gid = ctx.query_gid(1, i)
            text = read(f"{ibdev}/ports/1/gids/{i}").strip()
            check(f"{ibdev}/ports/1/gids/{i}", text, str(gid.gid))
            if text == "0000:0000:0000:0000:0000:0000:0000:0000":
                try:
                    read(f"{ibdev}/ports/1/gid_attrs/types/{i}")
                    fails.append(f"{ibdev}/ports/1/gid_attrs/types/{i}: an empty slot reads")
                except OSError as err:
                    check(f"{ibdev}/ports/1/gid_attrs/types/{i} errno", err.errno, 22)
                continue
            ngids += 1
            gtype = ctx.query_gid_type(1, i)
            want = "RoCE v2\n" if gtype == e.IBV_GID_TYPE_SYSFS_ROCE_V2 else "IB/RoCE v1\n"
            check(f"{ibdev}/ports/1/gid_attrs/types/{i}",
                  read(f"{ibdev}/ports/1/gid_attrs/types/{i}"), want)
            ndev = read(f"{ibdev}/ports/1/gid_attrs/ndevs/{i}").strip()
            check(f"{ibdev}/ports/1/gid_attrs/ndevs/{i}", f"uroce_{ndev}", name)
        netdevs = os.listdir(f"{ibdev}/device/net")
        check(f"{ibdev}/device/net", netdevs, [read(f"{ibdev}/parent").strip()])
        check(f"{ibdev}/device/net/{netdevs[0]}/mtu exists",
              os.path.exists(f"{ibdev}/device/net/{netdevs[0]}/mtu"), True)
    # UCX's test of a device (uct_ib_device_is_accessible): /dev/infiniband/<dev_name> is a
    # character device. uroce names it uverbs<ibv_get_device_index()> (pyverbs has no
    # dev_name); the ibdev file below names the device back.
    dev_name = f"uverbs{dev.index}"
    st = os.stat(f"/dev/infiniband/{dev_name}")
    check(f"/dev/infiniband/{dev_name} is a character device", stat.S_ISCHR(st.st_mode), True)
    check(f"/sys/class/infiniband_verbs/{dev_name}/ibdev",
          read(f"/sys/class/infiniband_verbs/{dev_name}/ibdev"), name + "\n")
    check(f"/sys/class/infiniband_verbs/{dev_name}/dev",
          read(f"/sys/class/infiniband_verbs/{dev_name}/dev"),
          f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}\n")
    print(f"discovery: {name} ({dev_name}): {ngids} GIDs, port {port.state}")

check("listed in /sys/class/infiniband", sorted(os.listdir("/sys/class/infiniband")),
      sorted(dev.name.decode() for dev in devices))
if fails:
    for f in fails:
        print("discovery: differs:", f)
    sys.exit(1)
print("discovery: consistent")
