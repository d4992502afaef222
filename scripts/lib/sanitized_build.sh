# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: how a sanitized build is configured.
#
# ASan + UBSan with clang-16: libFuzzer is clang's, and clang compiles a source of this tree with
# the sanitizers in about half of g++'s CPU time (11.8 s against 22 s on average). TSan with g++: tests/sanitizers/tsan.supp and the
# TBB hand-over marks were made against g++'s inlining of TBB's headers, and clang's TSan build
# reports races inside them (atomic_base's operator-- under the executors' task groups) that
# those do not cover. -O1 -g1 is the sanitizers' recommended level: reports still name the lines,
# and the build takes about half the time of -O2 -g. Cap'n Proto 0.9's headers need
# fuzz/capnp_clang_compat.h under clang in C++20 (the file says why).

# The ASan + UBSan build that sanitize.sh's address stage and fuzz.sh share, so that CI compiles
# the sanitized libraries once for the multi-process tests and the fuzz targets. Every
# translation unit gets libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link), which
# costs the tests little and lets the fuzz targets link against the same libraries.
ASAN_BUILD_DIR=build-asan

# sanitized_configure <dir> <sanitizers> [cmake args...]: configures <dir> (idempotent; cache
# entries not given keep their values, so the two scripts may configure the same directory in
# either order).
sanitized_configure() {
  local dir=$1 san=$2
  shift 2
  local flags="-O1 -g1 -DNDEBUG"
  local compiler=(-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DCMAKE_CXX_FLAGS= -DCMAKE_C_FLAGS=
                  -DTESSERA_FUZZ=OFF)
  if [[ $san == address,undefined ]]; then
    compiler=(-DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16
              "-DCMAKE_CXX_FLAGS=-include $PWD/fuzz/capnp_clang_compat.h -fsanitize=fuzzer-no-link"
              -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DTESSERA_FUZZ=ON)
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compiler[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" \
    -DTESSERA_SANITIZE="$san" -DTESSERA_BUILD_BENCH=OFF -DTESSERA_INSTALL=OFF "$@"
}
