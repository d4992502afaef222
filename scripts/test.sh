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

# Line tables only (-g1): backtraces and debuggers still name the lines, and the tree builds in
# about three quarters of the time of full debug info (-g), which is most of CI's budget
# (docs/developing.md, "CI"). ccache, when installed, makes a rebuild of an unchanged tree cheap.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  "${launcher[@]}"
cmake --build "$BUILD_DIR" -j "$JOBS"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --timeout 600
