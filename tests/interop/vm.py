#!/usr/bin/env python3
"""Boot Debian's Linux 6.1 with Soft-RoCE (rdma_rxe) in qemu and drive it, for interop tests.

The VM is the reference RoCEv2 peer: the kernel's rxe and Debian's rdma-core programs. It
sits on a Linux bridge in a network namespace of its own (default `uroce-ix`), where the host
side (the bridge's address, 10.77.0.1 / fd77::1) runs the program under test:

    host netns uroce-ix:  br0 10.77.0.1/24 fd77::1/64
                           +-- tapvm0 -- qemu (TCG) vm0: eth0 10.77.0.2 fd77::2, rxe0
                           +-- tapvm1 -- qemu (TCG) vm1: eth0 10.77.0.3 fd77::3, rxe0

One boot serves many test cases: the guest's /init starts a command agent on the second
serial port (guest/agent.sh documents the protocol), which qemu exposes as a unix socket.

    from vm import VM
    with VM() as vm:                                   # boots vm0 (and makes uroce-ix)
        rc, out = vm.run("ibv_devinfo -v", timeout=30)  # foreground, with a time limit
        vm.start("srv", "rping -s -a 10.77.0.2 -C 3 -V")  # background job
        rc, out = vm.host("uroce-run rping -c -a 10.77.0.2 -C 3 -V", timeout=60)
        rc, out = vm.wait("srv", timeout=30)            # rc None (timed_out) if still running
        vm.kill("srv")                                  # TERM its process group, reap

    with Fabric() as net, VM(0, net) as a, VM(1, net) as b:   # two VMs on one bridge
        ...

Standard library only. Needs root, qemu-system-x86, and the kernel that
scripts/setup.sh fetches (tests/interop/fetch-kernel.sh); it fails loudly without them.

CLI:  vm.py smoke | run CMD... | measure | clean       (vm.py -h)
"""

import argparse
import base64
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_NS = "uroce-ix"

# Time a reply may take beyond the guest-side time limit: killing a job that ignores TERM
# takes up to 6 s in the guest, and TCG makes everything slower.
SLACK = 30.0


class Checks:
    """A test script's checks, each printed as it is made ("ok: WHAT", or "FAIL: WHAT" and the
    detail indented), the failed ones kept for the summary."""

    def __init__(self):
        self.failed = []

    def check(self, ok, what, detail=""):
        print(f"{'ok' if ok else 'FAIL'}: {what}", flush=True)
        if not ok:
            self.failed.append(what)
            if detail:
                print("    " + detail.rstrip().replace("\n", "\n    "), flush=True)
        return ok

    def summary(self, name, took):
        """Print the script @name's last line (@took seconds); its exit status: 0 when every
        check passed, 1 otherwise."""
        if self.failed:
            print(f"{name}: {len(self.failed)} check(s) failed ({took:.0f} s): "
                  f"{'; '.join(self.failed)}")
            return 1
        print(f"{name}: every check passed ({took:.0f} s)")
        return 0


class VMError(RuntimeError):
    """Anything that went wrong with the VM or its network (never a test's own failure)."""


class Result(tuple):
    """(rc, output) of a command, with .timed_out.

    rc is the exit status (128+N after signal N), or None when a wait() timed out and the
    job is still running. output is text (bytes decoded as UTF-8 with replacement)."""

    def __new__(cls, rc, output, timed_out=False):
        self = tuple.__new__(cls, (rc, output))
        self.timed_out = timed_out
        return self

    rc = property(lambda self: self[0])
    output = property(lambda self: self[1])

    def __repr__(self):
        return f"Result(rc={self.rc!r}, timed_out={self.timed_out}, output={self.output[-200:]!r})"


def _log(msg):
    print(f"vm: {msg}", file=sys.stderr, flush=True)


def _run(args, check=True, **kw):
    """subprocess.run with text output; a failure raises VMError naming the command."""
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if check and p.returncode != 0:
        raise VMError(f"{shlex.join(args)} failed ({p.returncode}): {p.stdout.strip()}")
    return p


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def _kill_pid(pid, grace=5.0):
    """TERM then KILL one process (by id), waiting for it to go."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + wait
        while time.monotonic() < end:
            if _proc_cmdline(pid) is None:
                return
            try:  # our own child: reap it, or it stays a zombie
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                pass
            time.sleep(0.05)


class Fabric:
    """The network namespace, its bridge and the host side's addresses.

    open() first removes what a killed earlier run left: qemu processes recorded in the
    work folder or living in the namespace, then the namespace itself."""

    def __init__(self, ns=DEFAULT_NS, workdir=None, prefix4="10.77.0", prefix6="fd77::",
                 bridge="br0"):
        self.ns = ns
        self.workdir = workdir or f"/tmp/uroce-interop/{ns}"
        self.prefix4, self.prefix6, self.bridge = prefix4, prefix6, bridge
        self.host_ip, self.host_ip6 = f"{prefix4}.1", f"{prefix6}1"
        self.is_open = False

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()

    def _ns_exists(self):
        return os.path.exists(f"/run/netns/{self.ns}")

    def cleanup(self):
        """Kill leftover qemu processes of this namespace and delete it."""
        if os.path.isdir(self.workdir):
            for f in os.listdir(self.workdir):
                if not f.endswith(".pid"):
                    continue
                path = os.path.join(self.workdir, f)
                try:
                    pid = int(open(path).read().strip())
                except (OSError, ValueError):
                    pid = None
                cmd = _proc_cmdline(pid) if pid else None
                # only a qemu whose command line names this work folder is ours
                if cmd and "qemu-system" in cmd and self.workdir in cmd:
                    _log(f"killing leftover qemu {pid}")
                    _kill_pid(pid)
                _unlink(path)  # (qemu removes its pidfile itself when it exits)
        if self._ns_exists():
            pids = _run(["ip", "netns", "pids", self.ns], check=False).stdout.split()
            for pid in pids:
                _log(f"killing leftover process {pid} ({(_proc_cmdline(pid) or '?')[:60]}) in {self.ns}")
                _kill_pid(int(pid))
            _run(["ip", "netns", "del", self.ns])

    def open(self):
        if os.geteuid() != 0:
            raise VMError("needs root (network namespaces, tap devices)")
        if not shutil.which("ip"):
            raise VMError("iproute2's ip missing: run scripts/setup.sh")
        os.makedirs(self.workdir, exist_ok=True)
        self.cleanup()
        ns, br = self.ns, self.bridge
        _run(["ip", "netns", "add", ns])
        self.is_open = True
        nsip = ["ip", "-n", ns]
        _run(nsip + ["link", "set", "lo", "up"])
        # addresses usable at once (no duplicate address detection) on every interface
        for k in ("all", "default"):
            _run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{k}.accept_dad=0"])
        # no STP and no forwarding delay: a port forwards as soon as qemu opens its tap;
        # no multicast snooping: without a querier it would drop mckey's groups
        _run(nsip + ["link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0",
                     "mcast_snooping", "0"])
        _run(nsip + ["addr", "add", f"{self.host_ip}/24", "dev", br])
        _run(nsip + ["-6", "addr", "add", f"{self.host_ip6}/64", "dev", br, "nodad"])
        _run(nsip + ["link", "set", br, "mtu", "1500", "up"])

    def add_tap(self, tap):
        nsip = ["ip", "-n", self.ns]
        _run(nsip + ["tuntap", "add", "dev", tap, "mode", "tap"])
        _run(nsip + ["link", "set", tap, "mtu", "1500", "master", self.bridge, "up"])

    def del_tap(self, tap):
        if self._ns_exists():
            _run(["ip", "-n", self.ns, "link", "del", tap], check=False)

    def _argv(self, cmd):
        if isinstance(cmd, str):
            cmd = ["sh", "-c", cmd]
        return ["ip", "netns", "exec", self.ns] + list(cmd)

    def host(self, cmd, timeout=60, check=False, env=None):
        """Run a host command inside the namespace (str: through sh -c). -> Result.

        On a timeout the command's process group is killed and timed_out is set."""
        p = self.host_start(cmd, env=env)
        r = self.host_wait(p, timeout)
        if check and r.rc != 0:
            raise VMError(f"host command {cmd!r} failed ({r.rc}): {r.output[-2000:]}")
        return r

    def host_start(self, cmd, env=None):
        """Start a host command in the namespace in the background. -> Popen (host_wait it)."""
        return subprocess.Popen(self._argv(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def host_wait(self, p, timeout=60):
        """Wait for host_start()'s process: Result; on a timeout its group is killed."""
        try:
            out, _ = p.communicate(timeout=timeout)
            return Result(p.returncode, out.decode(errors="replace"))
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    out, _ = p.communicate(timeout=3)
                    break
                except subprocess.TimeoutExpired:
                    out = b""
            return Result(p.returncode, out.decode(errors="replace"), timed_out=True)

    def close(self):
        if self.is_open and self._ns_exists():
            pids = _run(["ip", "netns", "pids", self.ns], check=False).stdout.split()
            for pid in pids:  # a host job left running by a test
                _kill_pid(int(pid))
            _run(["ip", "netns", "del", self.ns], check=False)
        self.is_open = False


class VM:
    """One qemu guest on a Fabric: vm<index>, at 10.77.0.<2+index> and fd77::<2+index>.

    Without a fabric it makes (and on close deletes) its own, named ns. extra_initrd: paths of
    archives appended to the initramfs (e.g. mkinitramfs-uroce.sh's, a uroce build for the
    guest): Linux unpacks concatenated archives into one root file system, a later file
    replacing an earlier one of the same path."""

    def __init__(self, index=0, fabric=None, ns=DEFAULT_NS, smp=1, mem_mb=1024,
                 boot_timeout=300, append="", kernel_tree=None, initrd=None, rxe=True,
                 extra_qemu=(), extra_initrd=()):
        self.index = index
        self.own_fabric = fabric is None
        self.fabric = fabric or Fabric(ns)
        self.name = f"vm{index}"
        self.ip = f"{self.fabric.prefix4}.{2 + index}"
        self.ip6 = f"{self.fabric.prefix6}{2 + index:x}"
        self.mac = f"52:54:00:77:00:{2 + index:02x}"
        self.tap = f"tapvm{index}"
        self.smp, self.mem_mb, self.boot_timeout = smp, mem_mb, boot_timeout
        self.extra_append, self.rxe, self.extra_qemu = append, rxe, list(extra_qemu)
        self.kernel_tree, self.initrd = kernel_tree, initrd
        self.extra_initrd = list(extra_initrd)
        wd = self.fabric.workdir
        self.console_path = os.path.join(wd, f"{self.name}.console.log")
        self.initrd_path = os.path.join(wd, f"{self.name}.initrd")  # base + extra_initrd
        self.qemu_log_path = os.path.join(wd, f"{self.name}.qemu.log")
        self.sock_path = os.path.join(wd, f"{self.name}.chan.sock")
        self.pid_path = os.path.join(wd, f"{self.name}.pid")
        self.proc = self.sock = None
        self._buf = bytearray()
        self._next_id = 1
        self.boot_seconds = None

    # ---- life cycle ----------------------------------------------------------------
    def __enter__(self):
        try:
            self.boot()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _images(self):
        """(vmlinuz, initramfs): the cached kernel (never downloaded here) and initramfs."""
        tree = self.kernel_tree
        if not tree:
            p = _run([os.path.join(HERE, "fetch-kernel.sh"), "--no-download"], check=False)
            if p.returncode != 0:
                raise VMError(p.stdout.strip() or "fetch-kernel.sh --no-download failed")
            tree = p.stdout.strip().splitlines()[-1]
        kver = os.listdir(os.path.join(tree, "lib", "modules"))[0]
        # the uncompressed ELF boots through PVH, ~4 s sooner under TCG than the bzImage
        vmlinuz = os.path.join(tree, "boot", f"vmlinux-{kver}")
        if not os.path.isfile(vmlinuz):
            vmlinuz = os.path.join(tree, "boot", f"vmlinuz-{kver}")
        if not os.path.isfile(vmlinuz):
            raise VMError(f"{vmlinuz} missing: run tests/interop/fetch-kernel.sh")
        initrd = self.initrd
        if not initrd:
            p = subprocess.run([os.path.join(HERE, "mkinitramfs.sh"), tree], stdout=subprocess.PIPE,
                               text=True)
            if p.returncode != 0:
                raise VMError("mkinitramfs.sh failed (its messages are above)")
            initrd = p.stdout.strip().splitlines()[-1]
        if self.extra_initrd:
            # qemu takes one initrd file: the archives one after the other (a copy per boot,
            # tens of milliseconds, so that the cached archives stay as they are)
            os.makedirs(os.path.dirname(self.initrd_path), exist_ok=True)
            with open(self.initrd_path, "wb") as out:
                for path in [initrd] + self.extra_initrd:
                    try:
                        with open(path, "rb") as f:
                            shutil.copyfileobj(f, out)
                    except OSError as e:
                        raise VMError(f"initramfs archive {path}: {e.strerror}") from None
            initrd = self.initrd_path
        return vmlinuz, initrd

    def qemu_argv(self, vmlinuz, initrd):
        # clocksource=tsc: perftest fits its cycle counter against gettimeofday, and with a
        # TCG guest's default clock (HPET; the TSCs are found unsynchronized at smp 2) the
        # fit fails now and then ("Correlation coefficient r^2 < 0.9": no report, or inf);
        # with the TSC as clock source both are one clock
        append = " ".join([
            "console=ttyS0,115200", "panic=-1", "mitigations=off", "clocksource=tsc",
            "tsc=reliable",
            f"uroce.ip={self.ip}/24", f"uroce.ip6={self.ip6}/64", f"uroce.name={self.name}",
            f"uroce.rxe={1 if self.rxe else 0}", self.extra_append]).strip()
        return [
            "qemu-system-x86_64", "-name", self.name,
            "-accel", "tcg", "-cpu", "max", "-smp", str(self.smp), "-m", str(self.mem_mb),
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-kernel", vmlinuz, "-initrd", initrd, "-append", append,
            # ttyS0: the kernel console, to a file
            "-chardev", f"file,id=con,path={self.console_path}", "-serial", "chardev:con",
            # ttyS1: the command channel; qemu waits for us to connect before the guest runs,
            # so no byte of it is lost
            "-chardev", f"socket,id=chan,path={self.sock_path},server=on,wait=on",
            "-serial", "chardev:chan",
            # the NIC, without checksum offloads or GSO: the guest computes every checksum,
            # so the frames on the bridge are what a real wire would carry
            "-netdev", f"tap,id=net0,ifname={self.tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=net0,mac={self.mac},csum=off,guest_csum=off",
            "-pidfile", self.pid_path,
        ] + self.extra_qemu

    def boot(self):
        if not shutil.which("qemu-system-x86_64"):
            raise VMError("qemu-system-x86_64 missing: run scripts/setup.sh (qemu-system-x86)")
        vmlinuz, initrd = self._images()
        if not self.fabric.is_open:
            self.fabric.open()
        self.fabric.del_tap(self.tap)
        self.fabric.add_tap(self.tap)
        for p in (self.console_path, self.sock_path, self.pid_path):
            _unlink(p)
        argv = ["ip", "netns", "exec", self.fabric.ns] + self.qemu_argv(vmlinuz, initrd)
        t0 = time.monotonic()
        with open(self.qemu_log_path, "wb") as qlog:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = t0 + self.boot_timeout
        # connect to the channel (qemu creates the socket, then waits for us)
        while True:
            self._check_alive("before its channel opened")
            if os.path.exists(self.sock_path):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(self.sock_path)
                    self.sock = s
                    break
                except OSError:
                    s.close()
            if time.monotonic() > min(deadline, t0 + 30):
                raise VMError(f"{self.name}: qemu's channel {self.sock_path} never opened\n"
                              + self._tail(self.qemu_log_path))
            time.sleep(0.05)
        try:
            rid, status, rc, _ = self._read_frame(deadline)
        except TimeoutError:
            raise VMError(f"{self.name}: no ready marker within {self.boot_timeout} s; console:\n"
                          + self.console_tail()) from None
        if status != "READY":
            raise VMError(f"{self.name}: unexpected first frame {status}")
        self.boot_seconds = time.monotonic() - t0
        _log(f"{self.name} up in {self.boot_seconds:.1f} s ({self.ip}, smp {self.smp})")

    def close(self):
        """Power the guest off (qemu then exits), or kill qemu; drop our tap or namespace."""
        if self.proc and self.proc.poll() is None:
            if self.sock:
                try:
                    self._request("POWEROFF", timeout=10)
                except (VMError, OSError, TimeoutError):
                    pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _kill_pid(self.proc.pid)
                self.proc.wait()
        if self.sock:
            self.sock.close()
            self.sock = None
        _unlink(self.pid_path)
        if self.extra_initrd:
            _unlink(self.initrd_path)
        if self.own_fabric:
            self.fabric.close()
        else:
            self.fabric.del_tap(self.tap)

    # ---- channel -------------------------------------------------------------------
    def _check_alive(self, when):
        if self.proc.poll() is not None:
            raise VMError(f"{self.name}: qemu exited ({self.proc.returncode}) {when}\n"
                          + self._tail(self.qemu_log_path) + "\nconsole:\n" + self.console_tail())

    _HDR = re.compile(rb"@@UROCE (\d+) ([A-Z]+) (-?\d+) (\d+)\n")

    def _read_frame(self, deadline):
        """The next reply frame: (id, status, rc, bytes). TimeoutError past deadline."""
        while True:
            m = self._HDR.search(self._buf)
            if m:
                n = int(m.group(4))
                end = m.end() + n
                if len(self._buf) >= end:
                    # take the groups before the buffer changes under the match
                    frame = int(m.group(1)), m.group(2).decode(), int(m.group(3))
                    data = bytes(self._buf[m.end():end])
                    del self._buf[:end]
                    return frame + (data,)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(min(left, 1.0))
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                self._check_alive("while a reply was awaited")
                continue
            if not chunk:
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
                self._check_alive("(channel closed)")
                raise VMError(f"{self.name}: channel closed")
            self._buf += chunk

    @staticmethod
    def _escape(payload):
        """One word for the agent's `printf %b`: \\xHH for spaces, backslashes, non-ASCII."""
        if isinstance(payload, str):
            payload = payload.encode()
        return b"".join(bytes([c]) if 0x20 < c < 0x7f and c != 0x5c else b"\\x%02x" % c
                        for c in payload)

    def _request(self, verb, name="-", arg="-", payload=b"", timeout=60.0):
        rid = self._next_id
        self._next_id += 1
        self.sock.sendall(f"{verb} {rid} {name} {arg} ".encode() + self._escape(payload) + b"\n")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fid, status, rc, data = self._read_frame(deadline)
            except TimeoutError:
                raise VMError(f"{self.name}: no reply to {verb} {name} within {timeout:.0f} s") from None
            if fid != rid:  # a late reply to a request we gave up on
                continue
            if status == "ERR":
                raise VMError(f"{self.name}: agent refused {verb}: {data.decode(errors='replace')}")
            return status, rc, data

    # ---- commands ------------------------------------------------------------------
    def run(self, cmd, timeout=60, check=False):
        """Run cmd (sh -c) in the guest, killed after timeout s. -> Result(rc, output)."""
        status, rc, data = self._request("RUN", arg=str(int(timeout * 1000)), payload=cmd,
                                         timeout=timeout + SLACK)
        r = Result(rc, data.decode(errors="replace"), timed_out=status == "TIMEOUT")
        if check and (r.rc != 0 or r.timed_out):
            raise VMError(f"{self.name}: {cmd!r} failed (rc {r.rc}, timed out {r.timed_out}):\n"
                          + r.output[-2000:])
        return r

    def start(self, name, cmd):
        """Start cmd as background job `name` (output kept in the guest). -> guest pid."""
        _, _, data = self._request("START", name=name, payload=cmd, timeout=SLACK)
        return int(data)

    def wait(self, name, timeout=60):
        """Wait for job `name`. -> Result(rc, output); rc None and timed_out if still running."""
        status, rc, data = self._request("WAIT", name=name, arg=str(int(timeout * 1000)),
                                         timeout=timeout + SLACK)
        if status == "TIMEOUT":
            return Result(None, data.decode(errors="replace"), timed_out=True)
        return Result(rc, data.decode(errors="replace"))

    def kill(self, name, sig="TERM"):
        """Signal job `name`'s process group (KILL after 3 s) and reap it. -> Result."""
        _, rc, data = self._request("KILL", name=name, arg=sig, timeout=SLACK)
        return Result(rc, data.decode(errors="replace"))

    def wait_until(self, cmd, timeout=30, interval=0.2):
        """Run cmd in the guest until it succeeds (e.g. a server is listening). -> bool."""
        end = time.monotonic() + timeout
        while True:
            if self.run(cmd, timeout=max(1.0, end - time.monotonic())).rc == 0:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(interval)

    def wait_listen(self, port=None, timeout=30):
        """Wait until an RDMA CM id listens in the guest (on `port`, if given). -> bool."""
        want = f"src-addr [^ ]*:{port} " if port else ""
        return self.wait_until(f"rdma resource show cm_id | grep 'state LISTEN' | grep -q '{want}'",
                               timeout)

    def ping(self):
        return self._request("PING", timeout=SLACK)[2].decode()

    def put(self, path, data, mode=0o644):
        """Write bytes to a guest file (base64 over the channel, in chunks)."""
        if isinstance(data, str):
            data = data.encode()
        q = shlex.quote(path)
        self.run(f": > {q} && chmod {mode:o} {q}", check=True)
        for i in range(0, len(data), 48 * 1024):
            b64 = base64.b64encode(data[i:i + 48 * 1024]).decode()
            self.run(f"base64 -d >> {q} <<'EOF'\n{b64}\nEOF", timeout=120, check=True)

    def get(self, path):
        """Read a guest file's bytes."""
        r = self.run(f"base64 {shlex.quote(path)}", timeout=120, check=True)
        return base64.b64decode(r.output)

    def host(self, cmd, timeout=60, check=False, env=None):
        """Run a host command in this VM's namespace (see Fabric.host). -> Result."""
        return self.fabric.host(cmd, timeout=timeout, check=check, env=env)

    def host_start(self, cmd, env=None):
        return self.fabric.host_start(cmd, env=env)

    def host_wait(self, p, timeout=60):
        return self.fabric.host_wait(p, timeout)

    # ---- logs ----------------------------------------------------------------------
    @staticmethod
    def _tail(path, n=40):
        try:
            with open(path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return f"({path}: none)"

    def console_tail(self, n=40):
        return self._tail(self.console_path, n)


# ---- CLI -----------------------------------------------------------------------------
def _smoke(args):
    with VM(ns=args.ns, smp=args.smp, extra_initrd=args.extra_initrd) as vm:
        r = vm.run("ibv_devinfo -v", timeout=60)
        print(f"--- ibv_devinfo -v (rc {r.rc})\n{r.output}")
        r2 = vm.run("rdma link show", timeout=30)
        print(f"--- rdma link show (rc {r2.rc})\n{r2.output}")
        r3 = vm.run("cat /sys/class/infiniband/rxe0/ports/1/gids/* | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000'",
                    timeout=30)
        print(f"--- rxe0 GIDs\n{r3.output}")
        r4 = vm.host(f"ping -c 3 -i 0.2 -W 5 {vm.ip}", timeout=30)
        print(f"--- host: ping {vm.ip} (rc {r4.rc})\n{r4.output}")
        ok = r.rc == 0 and "PORT_ACTIVE" in r.output and r4.rc == 0
        print(f"smoke: {'PASS' if ok else 'FAIL'}: rxe0 {'' if 'PORT_ACTIVE' in r.output else 'not '}"
              f"PORT_ACTIVE, host ping rc {r4.rc}, boot {vm.boot_seconds:.1f} s")
        return 0 if ok else 1


def _run_cmds(args):
    rc = 0
    with VM(ns=args.ns, smp=args.smp, extra_initrd=args.extra_initrd) as vm:
        for c in args.cmd:
            r = vm.run(c, timeout=args.timeout)
            print(f"--- {c} (rc {r.rc}{', timed out' if r.timed_out else ''})\n{r.output}", flush=True)
            rc = rc or (r.rc if r.rc else 0) or (124 if r.timed_out else 0)
    return rc


def _measure(args):
    """Boot time, initramfs size and an ib_send_bw -n 1000 over rxe loopback in the guest."""
    with VM(ns=args.ns, smp=args.smp, extra_initrd=args.extra_initrd) as vm:
        print(f"boot (qemu start to agent ready): {vm.boot_seconds:.1f} s, smp {args.smp}")
        p = subprocess.run([os.path.join(HERE, "mkinitramfs.sh")], stdout=subprocess.PIPE, text=True)
        path = p.stdout.strip().splitlines()[-1]
        print(f"initramfs: {path} {os.path.getsize(path) / 1e6:.1f} MB")
        t = time.monotonic()
        vm.run("true", timeout=10)
        print(f"round trip of `true`: {(time.monotonic() - t) * 1000:.0f} ms")
        for test in ("ib_send_bw", "ib_send_lat", "ib_write_bw"):
            t = time.monotonic()
            vm.start("srv", f"{test} -d rxe0 -x 1 -n 1000 -F")
            time.sleep(1)
            c = vm.run(f"{test} -d rxe0 -x 1 -n 1000 -F {vm.ip}", timeout=300)
            s = vm.wait("srv", timeout=60)
            print(f"{test} -n 1000 loopback: {time.monotonic() - t:.1f} s (client rc {c.rc}, "
                  f"server rc {s.rc})")
            if args.verbose or c.rc:
                print(c.output)
        t = time.monotonic()
    print(f"poweroff: {time.monotonic() - t:.1f} s")
    return 0


def _clean(args):
    Fabric(args.ns).cleanup()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", default=DEFAULT_NS, help="network namespace (default %(default)s)")
    ap.add_argument("--smp", type=int, default=1, help="vCPUs (default %(default)s)")
    ap.add_argument("--extra-initrd", action="append", default=[], metavar="ARCHIVE",
                    help="append ARCHIVE to the initramfs (repeatable), e.g. the uroce build "
                    "that mkinitramfs-uroce.sh BIN_DIR prints")
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("smoke", help="boot, show ibv_devinfo -v, rdma link, GIDs, ping the guest from "
                   "the namespace; 0 if rxe0 is PORT_ACTIVE and the ping answered")
    r = sub.add_parser("run", help="boot, run each CMD in the guest, print their output")
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("cmd", nargs="+")
    m = sub.add_parser("measure", help="boot time, initramfs size, ib_send_bw over rxe loopback")
    m.add_argument("-v", "--verbose", action="store_true")
    sub.add_parser("clean", help="kill a leftover qemu and delete the namespace")
    args = ap.parse_args(argv)
    try:
        return {"smoke": _smoke, "run": _run_cmds, "measure": _measure, "clean": _clean}[args.what](args)
    except VMError as e:
        print(f"vm: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
