# SPDX-License-Identifier: MIT
"""uroce-demo's command line: options, default file, and files it cannot write.

usage: demo_cli.py UROCE_DEMO
"""
import os
import subprocess
import sys
import tempfile

from roce_icrc import fail


def run(demo, args, cwd=None):
    return subprocess.run([demo] + args, capture_output=True, text=True, timeout=60, cwd=cwd)


def expect(r, code, what, stderr_has=()):
    if r.returncode != code:
        fail(f"{what}: exit {r.returncode}, want {code}; stderr: {r.stderr.strip()}")
    for text in stderr_has:
        if text not in r.stderr:
            fail(f"{what}: stderr does not mention {text!r}: {r.stderr.strip()}")


def main():
    if len(sys.argv) != 2:
        fail("usage: demo_cli.py UROCE_DEMO")
    demo = os.path.abspath(sys.argv[1])
    r = run(demo, ["--help"])
    expect(r, 0, "--help")
    if not r.stdout.startswith("Usage: uroce-demo [--pcap FILE] [--help]"):
        fail(f"--help prints no usage: {r.stdout!r}")
    expect(run(demo, ["--bogus"]), 2, "--bogus", ["'--bogus'"])
    expect(run(demo, ["-q"]), 2, "-q", ["'-q'"])
    expect(run(demo, ["--pcap"]), 2, "--pcap without a file", ["'--pcap'"])
    expect(run(demo, ["--pcap", ""]), 2, "--pcap ''", ["--pcap"])
    expect(run(demo, ["stray"]), 2, "a stray argument", ["'stray'"])
    expect(run(demo, ["--pcap", "/nonexistent-uroce/x.pcap"]), 1, "a missing directory",
           ["/nonexistent-uroce/x.pcap", os.strerror(2)])
    # Opening succeeds; the data cannot be stored. One report from the tap, one from the demo.
    r = run(demo, ["--pcap", "/dev/full"])
    expect(r, 1, "/dev/full", ["/dev/full", os.strerror(28)])
    if r.stderr.count(os.strerror(28)) != 1:
        fail(f"/dev/full: the I/O error is reported more than once: {r.stderr.strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        expect(run(demo, [], cwd=tmp), 0, "no options")
        if not os.path.getsize(os.path.join(tmp, "uroce-demo.pcap")):
            fail("without --pcap, uroce-demo.pcap is not written in the current directory")
    print("ok: uroce-demo's command line")


if __name__ == "__main__":
    main()
