#!/usr/bin/env python3
"""Take a reference listing of what the kernel's Soft-RoCE (rdma_rxe) shows user space.

Boots the interop VM (tests/interop/vm.py: Debian 12's Linux 6.1, rxe0 made by the guest's
/init with `rdma link add rxe0 type rxe netdev eth0`) and records, with the command that
produced each part:

  - ls -la of /sys/class/infiniband{,_verbs,_cm,_mad} and /dev/infiniband, stat of the nodes
  - a walk (depth 6, symlinks not followed below the top) of /sys/class/infiniband/rxe0/,
    /sys/class/infiniband_verbs/uverbs0/ and the umad/cm class devices: type, mode, owner,
    symlink targets, and each regular file's content or its read error (errno)
  - rdma (iproute2) dev/link/res/system output, text and JSON, with a QP alive for `res`
  - ibv_devices, ibv_devinfo -v
  - strace of `rdma link show` (netlink bytes) and of ibv_devinfo (the files libibverbs
    opens). The guest has no strace: Debian's (this host's /usr/bin/strace) and its
    libraries go in through an extra initramfs archive made here (VM(extra_initrd=...)).

Needs root, and what tests/interop needs (scripts/setup.sh). Not a test; not in CMake.

    python3 tests/discovery/take-rxe-reference.py [-o FILE] [--ns NS] [--smp N]

The walk reads every file once in the guest with bash's `read` builtin (no fork per file:
the rxe GID table alone is 3 x 1024 files): content up to 4096 bytes, shown up to 200
(the length is always given); bash drops NUL bytes (sysfs text attributes have none). In the
listing, runs of numbered entries (gids/N, gid_attrs/types/N, gid_attrs/ndevs/N) that are
alike in everything are folded into one line naming the range.
"""

import argparse
import datetime
import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import vm as vmlib  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "rxe-reference.txt")
DEFAULT_NS = "uroce-ix-disc"  # a namespace of its own: never disturbs another run's VMs
SHOW = 200      # bytes of a file's content shown
DEPTH = 6

# strerror text -> errno name, to name a read error from its message
STRERROR = {os.strerror(n): n for n in sorted(errno.errorcode, reverse=True)}

# The walk, run by the guest's bash: writes OUT with, first, one stat line per entry (busybox
# stat, 256 entries per fork), then one frame per regular file:
#   "@@C PATH LEN ERRLEN\n" CONTENT ERRTEXT "\n"
WALK_SH = r'''#!/bin/bash
export LC_ALL=C
root=$1 depth=$2 out=$3
list=$out.list err=$out.err
find "$root/" -maxdepth "$depth" >"$list" 2>"$out.finderr"
{
	echo "@@FINDERR"
	cat "$out.finderr"
	echo "@@STAT"
	mapfile -t paths <"$list"
	for ((i = 0; i < ${#paths[@]}; i += 256)); do # (not busybox xargs: it garbles long input)
		stat -c '%n|%F|%a|%A|%U:%G|%s|%t|%T|%N' "${paths[@]:i:256}"
	done
	echo "@@CONTENT"
	while IFS= read -r f; do
		[[ -f $f && ! -L $f ]] || continue
		c= e=
		{ IFS= read -r -d '' -N 4096 c <"$f"; } 2>"$err"
		IFS= read -r -d '' e <"$err"
		printf '@@C %s %d %d\n%s%s\n' "$f" "${#c}" "${#e}" "$c" "$e"
	done <"$list"
} >"$out" 2>&1
'''

STRACE_ROOT = "/opt/strace"
STRACE_WRAPPER = f'''#!/bin/sh
# Debian's strace from the host that took the listing, with its own libraries
exec /lib64/ld-linux-x86-64.so.2 --library-path {STRACE_ROOT}/lib {STRACE_ROOT}/strace "$@"
'''


def strace_archive(workdir):
    """A newc cpio (gzip) holding the host's strace and its libraries. -> path, or None."""
    strace = shutil.which("strace")
    if not strace or not shutil.which("cpio"):
        return None
    stage = tempfile.mkdtemp(dir=workdir)
    root = os.path.join(stage, "root")
    os.makedirs(os.path.join(root, STRACE_ROOT.lstrip("/"), "lib"))
    os.makedirs(os.path.join(root, "usr", "bin"))
    shutil.copy(os.path.realpath(strace), os.path.join(root, STRACE_ROOT.lstrip("/"), "strace"))
    ldd = subprocess.run(["ldd", strace], stdout=subprocess.PIPE, text=True, env={"LC_ALL": "C"})
    for line in ldd.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not re.match(r"lib(c|m|pthread|dl|rt)\.so", m.group(1)):
            shutil.copy(os.path.realpath(m.group(2)),
                        os.path.join(root, STRACE_ROOT.lstrip("/"), "lib", m.group(1)))
    w = os.path.join(root, "usr", "bin", "strace")
    with open(w, "w") as f:
        f.write(STRACE_WRAPPER)
    os.chmod(w, 0o755)
    out = os.path.join(workdir, "strace.cpio.gz")
    subprocess.run(f"cd {root} && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 "
                   f"| gzip -6 > {out}", shell=True, check=True)
    shutil.rmtree(stage)
    return out


# ---- rendering ------------------------------------------------------------------------

def esc(b):
    """Bytes as a C-like string literal body."""
    out = []
    for c in b:
        if c == 0x0a:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x5c:
            out.append("\\\\")
        elif c == 0x22:
            out.append('\\"')
        elif 0x20 <= c < 0x7f:
            out.append(chr(c))
        else:
            out.append(f"\\x{c:02x}")
    return '"' + "".join(out) + '"'


def errno_of(text):
    """'bash: line 1: read: read error: 0: Invalid argument' -> 'EINVAL (22) "Invalid argument"'."""
    msg = text.strip().rsplit(": ", 1)[-1]
    n = STRERROR.get(msg)
    if n is None:
        return f"error {text.strip()!r}"
    return f"{errno.errorcode[n]} ({n}) \"{msg}\" [{text.strip()}]"


def parse_walk(raw):
    """The guest walk's output -> (find errors, {path: entry})."""
    find_err, rest = raw.split(b"@@STAT\n", 1)
    find_err = find_err.replace(b"@@FINDERR\n", b"", 1).decode(errors="replace").strip()
    stat_part, content_part = rest.split(b"@@CONTENT\n", 1)
    entries = {}
    for line in stat_part.decode(errors="replace").splitlines():
        parts = line.split("|", 8)
        if len(parts) != 9:
            entries.setdefault("?", {"bad": []})["bad"].append(line)
            continue
        name, ftype, mode, smode, owner, size, major, minor, quoted = parts
        e = {"type": ftype, "mode": mode, "smode": smode, "owner": owner, "size": size,
             "major": major, "minor": minor}
        m = re.match(r"'.*' -> '(.*)'$", quoted)
        if ftype == "symbolic link" and m:
            e["target"] = m.group(1)
        entries[name] = e
    i = 0
    hdr = re.compile(rb"@@C (.*) (\d+) (\d+)\n")
    while i < len(content_part):
        m = hdr.match(content_part, i)
        if not m:
            entries.setdefault("?", {"bad": []})["bad"].append(content_part[i:i + 200])
            break
        path = m.group(1).decode(errors="replace")
        n, ne = int(m.group(2)), int(m.group(3))
        c = content_part[m.end():m.end() + n]
        e = content_part[m.end() + n:m.end() + n + ne]
        i = m.end() + n + ne + 1
        ent = entries.setdefault(path, {"type": "?"})
        ent["content"] = c
        if ne:
            ent["error"] = e.decode(errors="replace")
    return find_err, entries


def natkey(path):
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", path)]


def describe(e):
    """The per-entry text after the path (everything that must match for a fold)."""
    kind = {"directory": "dir", "regular file": "file", "symbolic link": "symlink"}.get(
        e.get("type"), e.get("type"))
    s = f"{kind:7} {e.get('mode', '?'):>4} {e.get('smode', '?')} {e.get('owner', '?')}"
    lines = [s]
    if "target" in e:
        lines.append(f"    -> {e['target']}")
    if kind == "file":
        c = e.get("content", b"")
        if "error" in e:
            lines.append(f"    read error: {errno_of(e['error'])}"
                         + (f" after {len(c)} bytes" if c else ""))
        else:
            shown = esc(c[:SHOW])
            more = f" (first {SHOW} shown)" if len(c) > SHOW else ""
            lines.append(f"    {len(c)} bytes{more}: {shown}")
    return lines


def render_walk(root, raw):
    find_err, entries = parse_walk(raw)
    out = []
    if find_err:
        out.append(f"find errors: {find_err}")
    bad = entries.pop("?", None)
    base = root.rstrip("/") + "/"
    rows = []
    for path in sorted(entries, key=natkey):
        rel = path[len(base):] if path.startswith(base) else path
        rel = rel.lstrip("/") or "."
        rows.append((rel, describe(entries[path])))
    # fold runs of numbered siblings that are alike in everything
    i = 0
    while i < len(rows):
        rel, desc = rows[i]
        m = re.match(r"(.*/)(\d+)$", rel)
        j = i + 1
        if m:
            parent, first = m.group(1), int(m.group(2))
            last = first
            while j < len(rows):
                m2 = re.match(r"(.*/)(\d+)$", rows[j][0])
                if not (m2 and m2.group(1) == parent and int(m2.group(2)) == last + 1
                        and rows[j][1] == desc):
                    break
                last += 1
                j += 1
            if last > first:
                rel = f"{parent}{{{first}..{last}}}  ({last - first + 1} entries, each:)"
        out.append(rel)
        out.extend("    " + d for d in desc)
        i = j
    if bad:
        out.append(f"unparsed walk output: {bad['bad']!r}")
    n_dir = sum(1 for e in entries.values() if e.get("type") == "directory")
    n_file = sum(1 for e in entries.values() if e.get("type") == "regular file")
    n_link = sum(1 for e in entries.values() if e.get("type") == "symbolic link")
    out.insert(0, f"({len(entries)} entries: {n_dir} dirs, {n_file} files, {n_link} symlinks)")
    return "\n".join(out)


# ---- taking it ------------------------------------------------------------------------

class Listing:
    def __init__(self, vm):
        self.vm = vm
        self.parts = []

    def section(self, title):
        self.parts.append(f"\n{'=' * 100}\n== {title}\n{'=' * 100}\n")

    def note(self, text):
        self.parts.append(text.rstrip("\n") + "\n")

    def cmd(self, c, timeout=60, shown=None):
        """Run c in the guest and record it (stdout and stderr merged)."""
        r = self.vm.run(f"{{ {c}\n}} 2>&1", timeout=timeout)
        st = f"rc {r.rc}" + (", timed out" if r.timed_out else "")
        self.parts.append(f"\n--- guest# {shown or c}    [{st}]\n{r.output.rstrip()}\n")
        return r

    def walk(self, root, depth=DEPTH):
        out = f"/tmp/walk{len(self.parts)}.out"
        r = self.vm.run(f"bash /tmp/walk.sh {root} {depth} {out}", timeout=900)
        if r.rc != 0 or r.timed_out:
            self.parts.append(f"\n--- walk of {root} failed: rc {r.rc} {r.output}\n")
            return
        raw = self.vm.get(out)
        self.parts.append(
            f"\n--- walk of {root}/ (guest: find {root}/ -maxdepth {depth}; busybox stat -c "
            f"'%n|%F|%a|%A|%U:%G|%s|%t|%T|%N' on each entry; each regular file read once with "
            f"bash `read -N 4096`; symlinks below the top not followed, their target from "
            f"stat %N = readlink)\n"
            f"format: PATH (relative)\\n    TYPE MODE(octal) MODE(ls) OWNER\\n    -> TARGET | "
            f"LEN bytes: \"CONTENT\" | read error: ERRNO\n\n"
            + render_walk(root, raw) + "\n")


def take(vm, args, have_strace):
    L = Listing(vm)
    uname = vm.run("uname -a", timeout=30).output.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    L.parts.append(f"""rxe reference listing: what Linux's Soft-RoCE (rdma_rxe) shows user space
{'=' * 100}
guest kernel: {uname}
taken:        {now}, by tests/discovery/take-rxe-reference.py (ns {args.ns}, smp {args.smp})
how:          tests/interop/vm.py boots Debian 12's linux-image {uname.split()[2]} (qemu TCG,
              virtio-net eth0 10.77.0.2/24 + fd77::2/64, MTU 1500) from the interop initramfs
              (busybox, bash, dash, Debian's rdma-core 44 / iproute2 6.1 programs; devtmpfs on /dev,
              no udev, so /dev nodes carry the kernel's own modes). Modules loaded by /init with
              insmod: virtio_net, crc32_generic, configfs, rdma_rxe, ib_uverbs, rdma_ucm,
              ib_umad (and their dependencies). /init made the device with
                  rdma link add rxe0 type rxe netdev eth0
              and waited for ports/1/state to be ACTIVE. Commands ran as root through the
              harness's agent (/bin/sh -c, i.e. dash; stderr merged into stdout: `2>&1`).
              strace: {'not in the base guest; Debian 12 strace (the host`s /usr/bin/strace) added '
                       'via an extra initramfs archive, run through a wrapper /usr/bin/strace'
                       if have_strace else 'not available (none on the host either): skipped'}
content:      each section says the exact command. Sysfs walks: see the note at the walk.
""")

    L.section("0. guest facts")
    L.cmd("uname -a")
    L.cmd("cat /proc/version")
    L.cmd("cat /proc/cmdline")
    L.cmd("cat /proc/modules")
    L.cmd("ls -la /sys/module/rdma_rxe/ /sys/module/rdma_rxe/parameters")
    L.cmd("ip -d link show eth0")
    L.cmd("ip addr show eth0")
    L.cmd("rdma -V")
    L.cmd("mount")

    L.section("1. class folders and /dev/infiniband")
    for d in ("/sys/class/infiniband", "/sys/class/infiniband_verbs", "/sys/class/infiniband_cm",
              "/sys/class/infiniband_mad", "/dev/infiniband"):
        L.cmd(f"ls -la {d}/")
    L.cmd("ls -la /sys/class/ | grep -i -e infiniband -e rdma -e uverbs -e umad",
          shown="ls -la /sys/class/ | grep -i -e infiniband -e rdma -e uverbs -e umad")
    L.note("\n(stat format: name, file type, octal mode, symbolic mode, owner:group, "
           "major/minor in hex (%t/%T), then major:minor in decimal added below)")
    r = L.cmd("stat -c '%n|%F|%a|%A|%U:%G|%t|%T' /dev/infiniband/*")
    dec = []
    for line in r.output.splitlines():
        p = line.split("|")
        if len(p) == 7:
            try:
                dec.append(f"  {p[0]}: {p[1]}, mode {p[2]} ({p[3]}), {p[4]}, "
                           f"major:minor {int(p[5], 16)}:{int(p[6], 16)}")
            except ValueError:
                pass
    L.note("decimal:\n" + "\n".join(dec))
    L.cmd("ls -la /dev/ | grep -e infiniband -e rdma -e uverbs -e umad")
    L.cmd("cat /proc/misc")
    L.cmd("grep -e infiniband -e uverbs -e umad -e rdma /proc/devices")
    L.cmd("ls -la /sys/dev/char/ | grep -e infiniband -e misc/rdma_cm")

    L.section("2. /sys/class/infiniband/rxe0/ (walk)")
    vm.put("/tmp/walk.sh", WALK_SH, mode=0o755)
    L.cmd("readlink /sys/class/infiniband/rxe0")
    L.cmd("readlink -f /sys/class/infiniband/rxe0")
    L.cmd("ls -la /sys/class/infiniband/rxe0/")
    L.cmd("ls -la /sys/class/infiniband/rxe0/ports/1/")
    L.walk("/sys/class/infiniband/rxe0")
    L.note("\nthe GID entries again, one command per kind, used indices only for gids "
           "(the walk above has all of them):")
    L.cmd("cd /sys/class/infiniband/rxe0/ports/1 && for i in 0 1 2 3 4 5 6 7; do "
          "printf '%s gid=%s type=%s ndev=%s\\n' $i \"$(cat gids/$i)\" "
          "\"$(cat gid_attrs/types/$i 2>&1)\" \"$(cat gid_attrs/ndevs/$i 2>&1)\"; done")
    L.cmd("ls /sys/class/infiniband/rxe0/ports/1/gids | wc -l; "
          "ls /sys/class/infiniband/rxe0/ports/1/gid_attrs/types | wc -l; "
          "ls /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs | wc -l")
    L.cmd("cat /sys/class/infiniband/rxe0/ports/1/gids/1023; "
          "cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1023; echo \"rc $?\"; "
          "cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1023; echo \"rc $?\"")

    L.section("3. /sys/class/infiniband_verbs/ (walk of uverbs0, abi_version)")
    L.cmd("readlink /sys/class/infiniband_verbs/uverbs0")
    L.cmd("readlink -f /sys/class/infiniband_verbs/uverbs0")
    L.cmd("ls -la /sys/class/infiniband_verbs/uverbs0/")
    L.cmd("cat /sys/class/infiniband_verbs/abi_version")
    L.cmd("stat -c '%n|%F|%a|%A|%U:%G|%s' /sys/class/infiniband_verbs/abi_version")
    L.walk("/sys/class/infiniband_verbs/uverbs0")

    L.section("3b. other RDMA classes (umad, cm) for completeness")
    r = vm.run("ls /sys/class/infiniband_mad/ /sys/class/infiniband_cm/ 2>/dev/null", timeout=30)
    for cls in ("infiniband_mad", "infiniband_cm"):
        r = vm.run(f"ls /sys/class/{cls}/ 2>/dev/null", timeout=30)
        for name in r.output.split():
            p = f"/sys/class/{cls}/{name}"
            if vm.run(f"test -L {p}", timeout=30).rc == 0:
                L.cmd(f"readlink {p}")
                L.walk(p)
            else:
                L.cmd(f"stat -c '%n|%F|%a|%A|%U:%G|%s' {p}; cat {p}")

    L.section("4. symlink targets, device/net")
    for p in ("/sys/class/infiniband/rxe0", "/sys/class/infiniband_verbs/uverbs0",
              "/sys/class/infiniband/rxe0/device", "/sys/class/infiniband_verbs/uverbs0/device",
              "/sys/class/infiniband/rxe0/subsystem", "/sys/class/infiniband_verbs/uverbs0/subsystem"):
        L.cmd(f"readlink {p}; echo \"rc $?\"")
    L.cmd("ls /sys/class/infiniband/rxe0/device/net/; echo \"rc $?\"")
    L.cmd("ls -la /sys/devices/virtual/infiniband/ /sys/devices/virtual/infiniband_verbs/; echo \"rc $?\"")
    L.cmd("cat /sys/class/infiniband/rxe0/parent")
    L.cmd("readlink -f /sys/class/net/eth0; readlink /sys/class/net/eth0/device; "
          "ls /sys/class/net/eth0/device/; ls /sys/class/net/eth0/device/infiniband 2>&1; echo \"rc $?\"")
    L.cmd("ls -la /sys/class/net/eth0/")

    L.section("5. iproute2 rdma (netlink), libibverbs")
    for c in ("rdma dev show", "rdma link show", "rdma -j dev show", "rdma -j link show",
              "rdma -d dev show", "rdma -d link show", "rdma -j -d dev show", "rdma system show",
              "rdma -j system show", "rdma res show", "rdma res show qp", "rdma -j res show qp",
              "rdma res show cq", "rdma res show pd", "rdma res show mr", "rdma res show cm_id",
              "rdma statistic show", "rdma statistic qp show", "rdma dev show rxe0",
              "rdma link show rxe0/1"):
        L.cmd(c)
    L.note("\nwith a user QP alive (ibv_rc_pingpong server, waiting for its peer, started in the "
           "background: `ibv_rc_pingpong -d rxe0 -g 1`) and an RDMA CM listener "
           "(`rping -s -a 10.77.0.2 -C 1`):")
    vm.start("qp", "ibv_rc_pingpong -d rxe0 -g 1")
    vm.start("cm", "rping -s -a 10.77.0.2 -C 1")
    vm.wait_until("rdma res show qp | grep -q ibv_rc_pingpong", timeout=30)
    vm.wait_listen(timeout=30)
    for c in ("rdma res show", "rdma res show qp", "rdma -j res show qp", "rdma -d res show qp",
              "rdma res show cq", "rdma res show pd", "rdma res show mr", "rdma res show cm_id",
              "rdma -j res show cm_id", "rdma res show ctx", "rdma res show srq"):
        L.cmd(c)
    for job in ("qp", "cm"):
        r = vm.kill(job)
        L.note(f"(background job {job} killed; its output: {r.output.strip()!r})")

    L.cmd("ibv_devices")
    L.cmd("ibv_devinfo")
    L.cmd("ibv_devinfo -v")

    if have_strace:
        L.section("5b. strace (Debian 12 strace 6.1 from the host, see header)")
        L.cmd("strace -V | head -1")
        L.cmd("strace -f -e trace=network -xx -s 4096 rdma link show", timeout=120)
        L.cmd("strace -f -e trace=network -xx -s 4096 rdma dev show", timeout=120)
        L.cmd("strace -f -e trace=network -xx -s 4096 rdma -j link show", timeout=120)
        L.note("\nthe files and netlink libibverbs uses to find the device (ibv_devices):")
        L.cmd("strace -f -e trace=%file,%network -e signal=none -x -s 4096 ibv_devices",
              timeout=120)
        L.note("\nibv_devinfo (device open, queries: ioctl on /dev/infiniband/uverbs0):")
        L.cmd("strace -f -e trace=%file,%network,ioctl -e signal=none -x -s 4096 ibv_devinfo",
              timeout=120)
    else:
        L.section("5b. strace: skipped (no strace in the guest nor on the host)")
    return "".join(L.parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default=DEFAULT_OUT)
    ap.add_argument("--ns", default=DEFAULT_NS)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--no-strace", action="store_true")
    args = ap.parse_args()
    workdir = f"/tmp/uroce-interop/{args.ns}"
    os.makedirs(workdir, exist_ok=True)
    extra = [] if args.no_strace else [p for p in [strace_archive(workdir)] if p]
    try:
        with vmlib.VM(ns=args.ns, smp=args.smp, extra_initrd=extra) as vm:
            have_strace = bool(extra) and vm.run("strace -V", timeout=60).rc == 0
            text = take(vm, args, have_strace)
    except vmlib.VMError as e:
        print(f"take-rxe-reference: VM error: {e}", file=sys.stderr)
        return 2
    finally:
        for p in extra:
            os.unlink(p)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
