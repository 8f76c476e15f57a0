#!/usr/bin/env bash
# Configure and build one uroce build tree under build/<kind>.
#   scripts/build.sh [release|debug|asan|tsan|fuzz]   (default: release)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-release}
case "$kind" in
release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
debug) args=(-DCMAKE_BUILD_TYPE=Debug) ;;
asan) args=(-DCMAKE_BUILD_TYPE=Debug -DUROCE_SANITIZE=address) ;;
tsan) args=(-DCMAKE_BUILD_TYPE=Debug -DUROCE_SANITIZE=thread) ;;
fuzz) args=(-DCMAKE_BUILD_TYPE=Debug -DUROCE_FUZZ=ON -DCMAKE_C_COMPILER=clang) ;;
*) echo "build.sh: unknown build kind '$kind' (release, debug, asan, tsan, fuzz)" >&2; exit 2 ;;
esac
cmake -S "$top" -B "$top/build/$kind" "${args[@]}" >/dev/null
cmake --build "$top/build/$kind" -j"$(nproc)"
