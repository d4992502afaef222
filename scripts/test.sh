#!/usr/bin/env bash
# The test command: installs dependencies, configures, builds and runs the whole CTest suite.
# Exit code 0 means every test passed.
#   BUILD_DIR   build directory (default: build)
#   JOBS        parallel build jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600
