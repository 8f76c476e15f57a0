#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
"$top/scripts/build.sh" release
exec "$top/build/release/bin/uroce-demo" --pcap "$top/build/uroce-demo.pcap"
