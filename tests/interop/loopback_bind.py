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


def check(failed, ok, what, detail=""):
    print(f"{'ok' if ok else 'FAIL'}: {what}", flush=True)
    if not ok:
        failed.append(what)
        if detail:
            print("    " + detail.strip()[-600:].replace("\n", "\n    "), flush=True)


def kernel(vm, run, failed):
    """The rules on the guest's kernel, and uroce's client reaching its loopback listener."""
    vm.start("srv", f"rping -s -a 127.0.0.1 -p {PORT} -C 3 -V")
    time.sleep(2)  # rping says nothing when it listens; TCG makes 2 s ample
    for addr in ("127.0.0.1", vm.ip):
        r = vm.run(f"rping -s -a {addr} -p {PORT} -C 1 -V", timeout=30)
        check(failed, r.rc != 0 and REFUSED in r.output,
              f"kernel: a bind of {addr}:{PORT} beside a listener on 127.0.0.1 is refused "
              "with EADDRNOTAVAIL", r.output)
    r = vm.host(f"{run} rping -c -a {vm.ip} -p {PORT} -C 3 -V", timeout=60)
    check(failed, r.rc == 0, f"uroce's client reaches the kernel's 127.0.0.1 listener at "
          f"{vm.ip}", r.output)
    r = vm.wait("srv", timeout=30)
    check(failed, r.rc == 0, "the kernel's rping server ended well", r.output)


def uroce(vm, run, failed):
    """The same three on uroce, on the host side of the bridge."""
    host = vm.fabric.host_ip
    srv = vm.host_start(f"{run} rping -s -a 127.0.0.1 -p {PORT} -C 3 -V")
    time.sleep(1)
    for addr in ("127.0.0.1", host):
        r = vm.host(f"{run} rping -s -a {addr} -p {PORT} -C 1 -V", timeout=30)
        check(failed, r.rc != 0 and REFUSED in r.output,
              f"uroce: a bind of {addr}:{PORT} beside a listener on 127.0.0.1 is refused "
              "with EADDRNOTAVAIL", r.output)
    r = vm.host(f"{run} rping -c -a {host} -p {PORT} -C 3 -V", timeout=60)
    check(failed, r.rc == 0, f"uroce: a client reaches the 127.0.0.1 listener at {host}",
          r.output)
    r = vm.host_wait(srv, timeout=30)
    check(failed, r.rc == 0, "uroce's rping server ended well", r.output)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin/ (uroce-run)")
    ap.add_argument("--ns", default="uroce-ix-lb", help="network namespace (default %(default)s)")
    a = ap.parse_args()
    run = os.path.join(os.path.abspath(a.bin), "uroce-run")
    failed = []
    started = time.monotonic()
    try:
        with vmlib.VM(ns=a.ns) as vm:
            kernel(vm, run, failed)
            uroce(vm, run, failed)
    except vmlib.VMError as e:
        check(failed, False, f"the VM: {e}")
    took = time.monotonic() - started
    if failed:
        print(f"loopback_bind: {len(failed)} check(s) failed ({took:.0f} s): {'; '.join(failed)}")
        return 1
    print(f"loopback_bind: every check passed ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
