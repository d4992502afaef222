#!/usr/bin/env bash
# The parameter-server demo: installs dependencies, builds, and runs data-parallel least squares
# with 2 workers and 2 servers on this machine, printing the loss per clock.
#   BUILD_DIR   build directory (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target tessera tessera-server ps_demo
exec "$BUILD_DIR/bin/tessera" run -w 2 -s 2 --log-level warn -- "$BUILD_DIR/bin/ps_demo" --clocks 40 "$@"
