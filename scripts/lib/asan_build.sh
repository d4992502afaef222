# Sourced by scripts/sanitize.sh (its address,undefined stage) and scripts/fuzz.sh: the one
# ASan + UBSan build both use, so that CI compiles the sanitized libraries once for the
# multi-process tests and the fuzz targets.
#
# clang-16, because libFuzzer is clang's; every translation unit also gets libFuzzer's coverage
# instrumentation (-fsanitize=fuzzer-no-link), which costs the tests little and lets the fuzz
# targets link against the same libraries. -O1 -g1 is the sanitizers' recommended level: reports
# still name the lines, and the build takes about half the time of -O2 -g.
ASAN_BUILD_DIR=build-asan

# asan_configure <dir> [cmake args...]: configures <dir> (idempotent; cache entries not given
# keep their values, so the two scripts may configure the same directory in either order).
asan_configure() {
  local dir=$1
  shift
  local flags="-O1 -g1 -DNDEBUG"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
    -DCMAKE_CXX_FLAGS="-include $PWD/fuzz/capnp_clang_compat.h -fsanitize=fuzzer-no-link" \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" \
    -DTESSERA_SANITIZE=address,undefined -DTESSERA_FUZZ=ON \
    -DTESSERA_BUILD_BENCH=OFF -DTESSERA_INSTALL=OFF "$@"
}
