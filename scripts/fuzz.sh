#!/usr/bin/env bash
# Fuzzes the message handlers (fuzz/: the coordinator's, a server shard's, a client's handling of
# server replies, a worker's peer-mesh inbox), the file parsers, a checkpoint's data files and
# lda's --vocab reader with libFuzzer under ASan + UBSan, every library instrumented for coverage:
# builds them with clang-16 in build-fuzz/, then runs each for FUZZ_SECONDS over its seed corpus
# (fuzz/corpus/<target>/; new inputs go to build-fuzz/corpus/<target>/). Exit 0 means no crash,
# no sanitizer report, no allocation over 2 GiB or resident set over 2 GiB (libFuzzer's
# out-of-memory limits), and no node that stopped answering; a finding is left in
# build-fuzz/findings/ (turn it into a regression test).
#   FUZZ_SECONDS  seconds per target (default 60; CI runs 20; e.g. 3600 for a long run)
#   FUZZ_SEED     libFuzzer's random seed (default: a fresh one per run; CI fixes it)
#   FUZZ_TARGETS  targets to run (default: all)
#   JOBS          parallel build jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
dir=build-fuzz
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_CXX_FLAGS="-include $PWD/fuzz/capnp_clang_compat.h -fsanitize=fuzzer-no-link" \
  -DTESSERA_SANITIZE=address,undefined -DTESSERA_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF \
  -DTESSERA_BUILD_BENCH=OFF -DTESSERA_BUILD_COMPILER=OFF -DTESSERA_INSTALL=OFF \
  -DTESSERA_SKIP_MODULES="apps;launcher;scripts"
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
