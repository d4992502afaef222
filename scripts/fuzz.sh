#!/usr/bin/env bash
# Fuzzes the message handlers (fuzz/: the coordinator's, a server shard's, a client's handling of
# server replies, a worker's peer-mesh inbox), the file parsers, a checkpoint's data files and
# lda's --vocab reader with libFuzzer under ASan + UBSan, every library instrumented for coverage:
# builds them with clang-16 in build-asan/ (the build scripts/sanitize.sh's address stage shares:
# scripts/lib/sanitized_build.sh), then runs each for FUZZ_SECONDS over its seed corpus
# (fuzz/corpus/<target>/; new inputs go to build-asan/corpus/<target>/). Exit 0 means no crash,
# no sanitizer report, no allocation over 2 GiB or resident set over 2 GiB (libFuzzer's
# out-of-memory limits), and no node that stopped answering; a finding is left in
# build-asan/findings/ (turn it into a regression test).
#   FUZZ_SECONDS  seconds per target (default 60; CI runs 20; e.g. 3600 for a long run)
#   FUZZ_SEED     libFuzzer's random seed (default: a fresh one per run; CI fixes it)
#   FUZZ_TARGETS  targets to run (default: all)
#   JOBS          parallel build jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/lib/sanitized_build.sh
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
dir=$ASAN_BUILD_DIR
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# A first configure leaves tessc out (a sanitized tessc is the heaviest third of the tree); a
# directory scripts/sanitize.sh configured keeps its choice.
compiler=()
[[ -f "$dir/CMakeCache.txt" ]] || compiler=(-DTESSERA_BUILD_COMPILER=OFF)
sanitized_configure "$dir" address,undefined "${compiler[@]}" "${launcher[@]}"
read -r -a TARGETS <<<"${FUZZ_TARGETS:-coordinator_fuzz server_fuzz client_fuzz peer_mesh_fuzz files_fuzz checkpoint_fuzz lda_vocab_fuzz}"
cmake --build "$dir" -j "${JOBS:-2}" --target "${TARGETS[@]}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
# LeakSanitizer off: each target keeps its node alive for the whole run on purpose.
export ASAN_OPTIONS="detect_leaks=0"
mkdir -p "$dir/findings"
for t in "${TARGETS[@]}"; do
  mkdir -p "$dir/corpus/$t"
  echo "== $t: ${SECONDS_PER_TARGET} s"
  "$dir/fuzz/$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -timeout=20 \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    -artifact_prefix="$dir/findings/$t-" -print_final_stats=1 "$dir/corpus/$t" "fuzz/corpus/$t"
done
