#!/usr/bin/python3
"""The README's doc test (issue 8): every command in README.md is run, so the README cannot rot.

Usage: readme_commands.py SOURCE_DIR BUILD_TREE SANITIZER BUILD_TYPE

The rules:
 1. Commands are the lines of ```sh blocks (a line ending in a backslash goes on), each run: step
    of ```yaml blocks (one step is one bash script, as GitHub Actions runs it), and the first
    column of tables headed "command".
 2. Every command is run as written, in a temporary working folder, except for these paths:
    build/release (and uroce/build/release, the CI example's checkout) is the tree under test;
    scripts/ (also ./scripts/ and uroce/scripts/) is the source's; /opt/uroce is a temporary
    prefix; build/uroce-demo.pcap, which scripts/demo.sh writes, is made the way its last step
    makes it (bin/uroce-demo --pcap).
 3. A line ending in '&' is a server: it starts in the background and the next line runs once
    it is ready (a new listening TCP port, uroce's "rdma_cm: listening" line, or for
    "tshark -i FIFO" the FIFO opened by its reader); then it must exit 0 within 30 s.
 4. Table placeholders: "[--fix]" is left out (it would rewrite the sources); LABEL becomes
    "repo", and ctest runs on a copy of the tree's test lists (a ctest nested in the suite's
    would write over its logs).
 5. NOT_RUN names each command the test does not run (without its trailing comment), with the
    reason and the check run in its place. A README command is run unless listed there, so a new one either works or fails the
    test; an entry that matches no README command fails the test too, so the list stays true.
 6. A command that exits non-zero, or runs longer than 60 s, fails the test, naming its line.
 7. The commands run in a network namespace of their own (unshare), so the README's default
    ports (TCP 18515, UDP 4791, rdma_cm 7174) meet no other test's; where no namespace can be
    made, on the host with UROCE_UDP_PORT=28840.
 8. The README's commands are for a release tree: in a sanitized or non-release tree the test is
    skipped (77), as system programs such as tshark and the CI steps expect build/release.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Rule 5: commands not run (exactly as the README writes them, after joining continued lines),
# each with the reason and the check run instead (a shell command, paths as in rule 2; None:
# nothing can stand in).
NOT_RUN = {
    "./scripts/test.sh": (
        "the whole suite, which runs this test: it would run itself",
        "test -x scripts/test.sh && bash -n scripts/test.sh"),
    "scripts/test.sh [KIND...]": (
        "the whole suite, which runs this test: it would run itself",
        "test -x scripts/test.sh && bash -n scripts/test.sh"),
    "./scripts/demo.sh": (
        "it installs, builds the source's build/release (not the tree under test, minutes when "
        "that is elsewhere) and runs the pingpong and rping the tests shim_rc_capture and "
        "rdmacm_rping run; its last step makes build/uroce-demo.pcap here (rule 2)",
        "test -x scripts/demo.sh && bash -n scripts/demo.sh"),
    "scripts/build.sh KIND": (
        "it builds a tree: the tree under test is such a build",
        "scripts/build.sh no-such-kind 2>&1 | grep -q 'unknown build kind'"),
    "uroce/scripts/build.sh release": (
        "it builds a tree: the tree under test is such a build",
        "test -x scripts/build.sh && bash -n scripts/build.sh"),
    "apt-get update && apt-get install -y --no-install-recommends git ca-certificates": (
        "it needs the network and changes the system's packages (the CI container's first step)",
        None),
}

RUN_TIMEOUT = 60  # s, for one command
BACKGROUND_EXIT = 30  # s, for a background command to end after the line that follows it
READY_TIMEOUT = 10  # s, for a background command to be ready
FALLBACK_UDP_PORT = "28840"


def bare(text):
    """TEXT without a trailing comment ("cmd   # what it does"; a '#' inside quotes stays)."""
    return re.sub(r"\s+#[^'\"]*$", "", text)


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def extract(readme):
    """[(line number, command, kind)] of README.md; kind: sh, yaml or table (rule 1)."""
    lines = open(readme, encoding="utf-8").read().split("\n")
    cmds = []
    block = None  # the language of the fenced block we are in
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence:
            block = None if block is not None else fence.group(1)
            i += 1
            continue
        if block == "sh" and line.strip() and not line.lstrip().startswith("#"):
            start, text = i + 1, line
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + lines[i]
            cmds.append((start, text.strip(), "sh"))
        elif block == "yaml":
            step = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", line)
            if step:
                start, indent, value = i + 1, len(step.group(1)), step.group(2)
                if value in ("|", ">"):
                    body = []
                    while i + 1 < len(lines) and (
                            not lines[i + 1].strip() or
                            len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                        i += 1
                        body.append(lines[i].strip())
                    value = "\n".join(body).strip()
                else:
                    value = bare(value)  # a YAML comment ends a plain value
                cmds.append((start, value, "yaml"))
        elif block is None and line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells and cells[0] == "command":
                i += 1  # the |---| line
                while i + 1 < len(lines) and lines[i + 1].startswith("|"):
                    i += 1
                    first = lines[i].strip("|").split("|")[0].strip()
                    m = re.fullmatch(r"`([^`]+)`", first)
                    if m:
                        cmds.append((i + 1, m.group(1), "table"))
        i += 1
    return cmds


class Runner:
    def __init__(self, src, tree, work):
        self.src, self.tree, self.work = src, tree, work
        self.prefix = os.path.join(work, "prefix")
        self.env = dict(os.environ)
        self.failures = 0
        self.started = time.monotonic()  # of the last command run, for its time in the report

    def paths(self, text):
        """Rule 2: the README's paths made the tree under test's, the source's, temporary."""
        text = re.sub(r"(?<![\w/.-])(uroce/)?build/release\b", self.tree, text)
        text = re.sub(r"(?<![\w/.-])(\./|uroce/)?scripts/", self.src + "/scripts/", text)
        text = re.sub(r"(?<![\w/.-])/opt/uroce\b", self.prefix, text)
        text = re.sub(r"(?<![\w/.-])build/uroce-demo\.pcap\b",
                      os.path.join(self.work, "uroce-demo.pcap"), text)
        return text

    def placeholders(self, text):
        """Rule 4: a table's placeholders."""
        text = text.replace(" [--fix]", "")
        if "ctest --test-dir" in text:
            text = text.replace(self.tree, self.ctest_copy())
            text = re.sub(r"\bLABEL\b", "repo", text)
        return text

    def ctest_copy(self):
        """A copy of the tree's test lists (CTestTestfile.cmake; the tests' paths are absolute)."""
        copy = os.path.join(self.work, "ctest-tree")
        if not os.path.isdir(copy):
            for root, _, files in os.walk(self.tree):
                if "CTestTestfile.cmake" in files:
                    dest = os.path.join(copy, os.path.relpath(root, self.tree))
                    os.makedirs(dest, exist_ok=True)
                    shutil.copy(os.path.join(root, "CTestTestfile.cmake"), dest)
        return copy

    def shell(self, script, log, background=False, ci=False):
        """Run SCRIPT in bash: a CI step as GitHub Actions runs it (-e, pipefail), a README line
        as a terminal would."""
        argv = ["bash", "--noprofile", "--norc"] + (["-eo", "pipefail"] if ci else []) + [
            "-c", script]
        out = open(log, "w")
        self.started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=self.work, env=self.env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        if background:
            return proc
        try:
            return proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return f"still running after {RUN_TIMEOUT} s"

    def report(self, where, text, result, log, ran=None, started=None):
        output = open(log, errors="replace").read()
        shown = text.replace("\n", "\n     ")
        if ran and ran != text:
            shown += "\n     ran as: " + ran.replace("\n", "\n     ")
        if result == 0:
            took = time.monotonic() - (started or self.started)
            print(f"ok   {where} ({took:.1f} s): {shown}")
            return
        self.failures += 1
        print(f"FAIL {where}: {shown}\n     exit {result}; its output:", file=sys.stderr)
        for line in output.splitlines()[-30:]:
            print(f"     | {line}", file=sys.stderr)


def listening_ports():
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
    return {line.split()[3] for line in out.splitlines() if len(line.split()) > 3}


def fifo_readers(path):
    """How many processes have the FIFO PATH open."""
    path, n = os.path.realpath(path), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                n += os.readlink(f"/proc/{pid}/fd/{fd}") == path
            except OSError:
                pass
    return n


def wait_ready(runner, text, proc, log, ports_before):
    """Rule 3: a background command's readiness."""
    tshark = re.search(r"\btshark\b.*\s-i\s+(\S+)", text)
    fifo = None
    if tshark and tshark.group(1) != "-":
        fifo = os.path.join(runner.work, tshark.group(1))
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"it exited ({proc.returncode}) before the next line"
        if fifo:
            if os.path.exists(fifo) and fifo_readers(fifo) > 0:
                return None
        elif (listening_ports() - ports_before or
              "rdma_cm: listening" in open(log, errors="replace").read()):
            return None
        time.sleep(0.05)
    return f"not ready after {READY_TIMEOUT} s"


def run_all(runner, cmds):
    listed = set()
    background = []  # (where, text, proc, log)
    n = 0
    for line, text, kind in cmds:
        where = f"README.md:{line}"
        n += 1
        log = os.path.join(runner.work, f"cmd{n}.log")
        if bare(text) in NOT_RUN:
            listed.add(bare(text))
            reason, check = NOT_RUN[bare(text)]
            print(f"not run {where}: {text}\n     because {reason}")
            if check:
                print(f"     checked instead: {check}")
                runner.report(where, check, runner.shell(runner.paths(check), log), log)
            continue
        text = bare(text) if kind != "yaml" else text  # a step's own lines are the shell's
        script = runner.placeholders(runner.paths(text))
        if kind != "yaml" and text.endswith("&"):
            script = script[:-1]
            ports = listening_ports()
            # uroce says when its rdma_cm listens (rule 3).
            proc = runner.shell("export UROCE_LOG=info\n" + script, log, background=True)
            background.append((where, text, proc, log, script, runner.started))
            err = wait_ready(runner, text, proc, log, ports)
            if err:
                runner.report(where, text, f"a background command {err}", log, script)
            continue
        runner.report(where, text, runner.shell(script, log, ci=kind == "yaml"), log, script)
        for bwhere, btext, proc, blog, bscript, bstarted in background:
            try:
                result = proc.wait(BACKGROUND_EXIT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                result = f"still running {BACKGROUND_EXIT} s after the next line"
            runner.report(bwhere, btext + "   (in the background)", result, blog, bscript + "&",
                          bstarted)
        background = []
    for text in NOT_RUN:
        if text not in listed:
            runner.failures += 1
            print(f"FAIL: NOT_RUN lists '{text}', which the README no longer has",
                  file=sys.stderr)
    return n


def in_own_netns():
    """Rule 7: re-run this script in a network namespace of its own, if one can be made."""
    if os.environ.get("DOC_TEST_NETNS") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        print("doc: in a network namespace of its own")
        return
    for unshare in (["unshare", "--net"], ["unshare", "--map-root-user", "--net"]):
        if subprocess.run(unshare + ["true"], capture_output=True).returncode == 0:
            env = dict(os.environ, DOC_TEST_NETNS="1")
            os.execvpe(unshare[0], unshare + ["--", sys.executable] + sys.argv, env)
    os.environ["UROCE_UDP_PORT"] = FALLBACK_UDP_PORT
    print("doc: no network namespace can be made here: on the host's ports, with "
          f"UROCE_UDP_PORT={FALLBACK_UDP_PORT}")


def main():
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    if len(sys.argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    src, tree, sanitizer, build_type = sys.argv[1:]
    if sanitizer or build_type != "Release":
        print(f"doc: skipped: the README's commands are for a release tree "
              f"(this one: {build_type or 'no build type'}{', ' + sanitizer if sanitizer else ''})")
        sys.exit(77)
    in_own_netns()
    src, tree = os.path.realpath(src), os.path.realpath(tree)
    cmds = extract(os.path.join(src, "README.md"))
    if not cmds:
        fail("no command found in README.md")
    with tempfile.TemporaryDirectory(prefix="uroce-doc.") as work:
        runner = Runner(src, tree, work)
        # Rule 2: build/uroce-demo.pcap, as scripts/demo.sh's last step writes it.
        demo = os.path.join(work, "uroce-demo.pcap")
        subprocess.run([os.path.join(tree, "bin", "uroce-demo"), "--pcap", demo], check=True,
                       stdout=subprocess.DEVNULL)
        n = run_all(runner, cmds)
    if runner.failures:
        fail(f"{runner.failures} of the README's {n} commands (and checks) failed")
    print(f"doc: all {n} commands of the README ran as documented")


if __name__ == "__main__":
    main()
