#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Facts about paths outside the kernel's view of uroce's devices, one per line.

tests/discovery/tree.sh runs this with and without uroce-run: liburoce-preload.so must change
none of them (a real file read, a real folder listed, a link read, a missing file's errno).
"""
import errno
import os


def fact(name, fn):
    try:
        value = fn()
    except OSError as err:
        value = f"OSError {errno.errorcode[err.errno]}"
    print(f"{name}: {value}")


def st(path, follow=True):
    s = os.stat(path, follow_symlinks=follow)
    return (s.st_ino, s.st_mode, s.st_nlink, s.st_uid, s.st_size, s.st_dev)


fact("stat /sys/class/net/lo", lambda: st("/sys/class/net/lo"))
fact("lstat /sys/class/net/lo", lambda: st("/sys/class/net/lo", False))
fact("readlink /sys/class/net/lo", lambda: os.readlink("/sys/class/net/lo"))
fact("realpath /sys/class/net/lo", lambda: os.path.realpath("/sys/class/net/lo"))
fact("listdir /sys/class/net", lambda: sorted(os.listdir("/sys/class/net")))
fact("listdir /sys/class", lambda: sorted(os.listdir("/sys/class")))
fact("read /sys/class/net/lo/mtu", lambda: open("/sys/class/net/lo/mtu").read())
fact("read /etc/hostname", lambda: open("/etc/hostname").read())
fact("stat /dev/null", lambda: st("/dev/null"))
fact("listdir /dev sample", lambda: sorted(os.listdir("/dev"))[:8])
fact("open /nonexistent/x", lambda: open("/nonexistent/x"))
fact("open /sys/class/infinibandx", lambda: open("/sys/class/infinibandx"))
fact("stat /sys/class/infiniband_mad", lambda: st("/sys/class/infiniband_mad"))
fact("access /etc/passwd W_OK", lambda: os.access("/etc/passwd", os.W_OK))
fact("open relative", lambda: open("sys/class/infiniband"))
