#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rdma_cm's loopback binds on the kernel and on uroce: the rules addr.c takes from cma.c.

The kernel's rdma_cm counts 127.0.0.0/8 as "any" (cma_any_addr): a listener on 127.0.0.1
listens on every device, and binding its port again, on 127.0.0.1 or on a device's address,
fails with EADDRNOTAVAIL (cma_check_port). Checked in the guest with Debian's rping, and the
listener reached from the host by uroce's rping client at the guest's address; then the same
three on uroce, in the test's namespace (the host side of the bridge, 10.77.0.1).

usage: loopback_bind.py --bin BUILD/bin [--ns uroce-ix-lb]

Prints each check; exit 0 only when every check passed, 1 otherwise. Needs root, qemu and the
kernel scripts/setup.sh fetches: without them it fails, never skips.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vm as vmlib  # noqa: E402

REFUSED = "rdma_bind_addr: Cannot assign requested address"
PORT = 7001


def rules(c, who, start, run, finish, addr, client):
    """On @who's rdma_cm: a listener on 127.0.0.1 (started by @start, which returns what
    @finish waits for) makes binds of its port on 127.0.0.1 and on @addr fail with
    EADDRNOTAVAIL (@run runs a command there), and @client (run on the host) reaches it at
    @addr."""
    srv = start(f"rping -s -a 127.0.0.1 -p {PORT} -C 3 -V")
    time.sleep(2)  # rping says nothing when it listens; TCG makes 2 s ample
    for bind in ("127.0.0.1", addr):
        r = run(f"rping -s -a {bind} -p {PORT} -C 1 -V")
        c.check(r.rc != 0 and REFUSED in r.output,
                f"{who}: a bind of {bind}:{PORT} beside a listener on 127.0.0.1 is refused "
                "with EADDRNOTAVAIL", r.output[-600:])
    r = client(f"rping -c -a {addr} -p {PORT} -C 3 -V")
    c.check(r.rc == 0, f"{who}: a uroce client reaches the 127.0.0.1 listener at {addr}",
            r.output[-600:])
    r = finish(srv)
    c.check(r.rc == 0, f"{who}: the rping server ended well", r.output[-600:])


def both(vm, run, c):
    """The kernel's rdma_cm in the guest, then uroce's on the host side of the bridge."""
    def on_host(cmd):
        return vm.host(f"{run} {cmd}", timeout=60)

    def guest_start(cmd):
        vm.start("srv", cmd)
        return "srv"

    rules(c, "kernel", guest_start, lambda cmd: vm.run(cmd, timeout=30),
          lambda name: vm.wait(name, timeout=30), vm.ip, on_host)
    rules(c, "uroce", lambda cmd: vm.host_start(f"{run} {cmd}"), on_host,
          lambda p: vm.host_wait(p, timeout=30), vm.fabric.host_ip, on_host)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin/ (uroce-run)")
    ap.add_argument("--ns", default="uroce-ix-lb", help="network namespace (default %(default)s)")
    a = ap.parse_args()
    run = os.path.join(os.path.abspath(a.bin), "uroce-run")
    c = vmlib.Checks()
    started = time.monotonic()
    try:
        with vmlib.VM(ns=a.ns) as vm:
            both(vm, run, c)
    except vmlib.VMError as e:
        c.check(False, f"the VM: {e}")
    return c.summary("loopback_bind", time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(main())
