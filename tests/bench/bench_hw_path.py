# SPDX-License-Identifier: MIT
"""uroce-bench finds a RoCE v2 device and runs the hardware path on it (uroce-run --backend
verbs, the device, its GID index and address), and reports the runs that gave no figure.

usage: bench_hw_path.py BIN_DIR SANITIZER UDP_PORT TCP_PORT

A made-up device in a folder shaped like /sys/class/infiniband (UROCE_BENCH_SYSFS): mlx5_0
with a link-local GID 0 and the RoCE v2 IPv4 GID 1 (10.1.2.3). This machine has no such
device, so every hardware run must fail -- loudly: exit 1, each listed with its command --
while uroce's and the baselines' figures are still reported. Exits 77 (skipped) for a
ThreadSanitizer build, which perftest cannot load.
"""
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def fake_sysfs(top):
    port = os.path.join(top, "mlx5_0", "ports", "1")
    for sub in ("gids", "gid_attrs/types"):
        os.makedirs(os.path.join(port, sub))
    gids = {0: ("fe80:0000:0000:0000:0a00:27ff:fe00:0001", "RoCE v2"),
            1: ("0000:0000:0000:0000:0000:ffff:0a01:0203", "RoCE v2")}
    for i, (gid, kind) in gids.items():
        open(os.path.join(port, "gids", str(i)), "w").write(gid + "\n")
        open(os.path.join(port, "gid_attrs", "types", str(i)), "w").write(kind + "\n")


def main():
    bin_dir, sanitizer, udp_port, tcp_port = sys.argv[1:5]
    if sanitizer == "thread":
        print("skipped: perftest cannot load a ThreadSanitizer build of uroce")
        sys.exit(77)
    top = tempfile.mkdtemp(prefix="uroce-bench-sysfs-")
    out = os.path.join(top, "report")
    fake_sysfs(os.path.join(top, "sysfs"))
    env = dict(os.environ, UROCE_BENCH_SYSFS=os.path.join(top, "sysfs"))
    r = subprocess.run([os.path.join(bin_dir, "uroce-bench"), "--quick", "--sections",
                        "latency", "--out", out, "--udp-port", udp_port, "--tcp-port",
                        tcp_port], env=env, capture_output=True, text=True, timeout=300)
    print(r.stdout + r.stderr)
    if r.returncode != 1:
        fail(f"exit {r.returncode}, not 1, with hardware runs that cannot work")
    report = open(os.path.join(out, "report.md")).read()
    if "- **hardware**: mlx5_0 (GID 1, 10.1.2.3)" not in report:
        fail("the device, GID index 1 and address 10.1.2.3 were not found")
    want = ("uroce-run --backend verbs ib_send_lat -s 2 -n 2000 -d mlx5_0 -x 1 -p "
            f"{tcp_port} 10.1.2.3")
    if want not in report:
        fail(f"no failed run '{want}' listed")
    rows = [line for line in report.split("## Latency", 1)[1].split("\n## ")[0].splitlines()
            if line.startswith("| 2 B")]
    cols = [c.strip() for c in rows[0].strip("|").split("|")] if rows else []
    # size, uroce, hardware, UDP, UDP io_uring, TCP, ratios: hardware failed, the others
    # measured
    if len(cols) < 6 or cols[2] != "failed" or "failed" in (cols[1], cols[3], cols[4], cols[5]):
        fail(f"latency row {cols}")
    subprocess.run(["rm", "-rf", top])
    print("ok: hardware path found and its failures reported")


if __name__ == "__main__":
    main()
