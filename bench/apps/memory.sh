#!/usr/bin/env bash
# Peak resident memory and peer traffic of MF or LDA, serial vs `tessera run -w W -s 1`, for one or
# more builds side by side (docs/runtime.md, "Partitioned arrays"). Needs GNU time (/usr/bin/time).
#
#   bench/apps/memory.sh INPUT BUILD_DIR[:VAR=VALUE] [BUILD_DIR[:VAR=VALUE]...]
#   env: APP=mf (or lda) WORKERS=2
#        mf:  K=64 EPOCHS=2 TEST_FRACTION=0.1; INPUT a `user item rating` file (bench/apps/gen_lowrank.py)
#             SAVE_MODEL=DIR: also --save-model DIR (emptied before each run)
#        lda: TOPICS=100 ITERS=2; INPUT a docword corpus (bench/apps/lda_repeat_corpus.py)
#        EXTRA_ARGS: more arguments for the app (e.g. "--sampler gibbs")
#        RUN_FLAGS="--checkpoint-dir DIR --checkpoint-interval 0": more `tessera run` flags for the
#        distributed runs (DIR is emptied before each)
#        LIBMF=DIR (mf only): also run LIBMF's DIR/mf-train -s 2 -k K -t EPOCHS on INPUT first (the
#             whole file: set TEST_FRACTION=0 to compare like with like), and give each run's peak
#             as a multiple of LIBMF's. Build cjlin1/libmf outside the repository (make).
# A BUILD_DIR may name one environment variable for its runs, e.g. build:TESSERA_PARTITIONED_DATA=0
# (every record on every worker) to compare with the same build's default.
# "load MB/s": the input's bytes over the seconds load_triples took (mf's "loaded in" line).
# The 40M-rating problem of bench/README.md, "Memory per rating":
#   g++ -O2 -std=c++20 -o /tmp/gen_ratings bench/apps/gen_ratings.cc
#   /tmp/gen_ratings /tmp/r40m.txt 2000000 200000 40000000
#   LIBMF=/tmp/libmf K=40 EPOCHS=3 TEST_FRACTION=0 WORKERS=4 bench/apps/memory.sh /tmp/r40m.txt build
set -euo pipefail
input=$1
shift
APP=${APP:-mf}
WORKERS=${WORKERS:-2}
read -r -a run_flags <<<"${RUN_FLAGS:-}"
if [[ $APP == mf ]]; then
  K=${K:-64}
  EPOCHS=${EPOCHS:-2}
  TEST_FRACTION=${TEST_FRACTION:-0.1}
  args=(--train "$input" --test-fraction "$TEST_FRACTION" -k "$K" --epochs "$EPOCHS")
  [[ -n ${SAVE_MODEL:-} ]] && args+=(--save-model "$SAVE_MODEL")
  quality='test_rmse [0-9.]*'
  quality_name="final test RMSE"
elif [[ $APP == lda ]]; then
  TOPICS=${TOPICS:-100}
  ITERS=${ITERS:-2}
  args=(--docword "$input" --topics "$TOPICS" --iterations "$ITERS" --eval-every "$ITERS")
  quality='ll/token -[0-9.]*'
  quality_name="final ll/token"
else
  echo "APP must be mf or lda" >&2
  exit 2
fi
# shellcheck disable=SC2206  # EXTRA_ARGS is split into words on purpose
args+=(${EXTRA_ARGS:-})
libmf_peak=
if [[ -n ${LIBMF:-} && $APP == mf ]]; then
  [[ -x $LIBMF/mf-train ]] || { echo "no $LIBMF/mf-train: build cjlin1/libmf there (make)" >&2; exit 1; }
  model=$(mktemp)
  libmf=$(/usr/bin/time -f "peak %M" "$LIBMF/mf-train" -s 2 -k "$K" -t "$EPOCHS" "$input" "$model" 2>&1)
  rm -f "$model"
  libmf_peak=$(grep -o 'peak [0-9]*' <<<"$libmf" | cut -d' ' -f2)
fi
# "a/b/c" peaks in KB -> "x/y/z" multiples of LIBMF's peak (empty without LIBMF).
ratio() {
  [[ -n $libmf_peak ]] || return 0
  tr '/' '\n' <<<"$1" | awk -v l="$libmf_peak" '{ printf "%s%.2f", (NR > 1 ? "/" : ""), $1 / l }'
}
echo "| build | run | peak RSS per process (KB) | x LIBMF | load MB/s | $quality_name | patch bytes sent per worker |"
echo "|---|---|---|---|---|---|---|"
[[ -n $libmf_peak ]] && echo "| LIBMF | mf-train -s 2 | $libmf_peak | 1.00 | | | |"
for spec in "$@"; do
  build=${spec%%:*}
  setting=()
  [[ $spec == *:* ]] && setting=("${spec#*:}")
  [[ -n ${SAVE_MODEL:-} ]] && rm -rf "$SAVE_MODEL"
  serial=$(env "${setting[@]}" /usr/bin/time -f "peak %M" "$build/bin/$APP" "${args[@]}" 2>&1)
  peak=$(grep -o 'peak [0-9]*' <<<"$serial" | cut -d' ' -f2)
  echo "| $spec | serial | $peak | $(ratio "$peak") |" \
       "$(grep -o 'loaded in [0-9.]* s ([0-9]* MB/s)' <<<"$serial" | grep -o '[0-9]* MB/s' | cut -d' ' -f1) |" \
       "$(grep -o "$quality" <<<"$serial" | tail -n 1 | cut -d' ' -f2) | |"
  for ((i = 0; i + 1 < ${#run_flags[@]}; ++i)); do
    if [[ ${run_flags[i]} == --checkpoint-dir ]]; then rm -rf "${run_flags[i + 1]}"; fi
  done
  [[ -n ${SAVE_MODEL:-} ]] && rm -rf "$SAVE_MODEL"
  dist=$(env "${setting[@]}" "$build/bin/tessera" run -w "$WORKERS" -s 1 --log-level info \
         "${run_flags[@]}" -- \
         /usr/bin/time -f "peak %M" "$build/bin/$APP" "${args[@]}" 2>&1)
  peaks=$(grep -o 'peak [0-9]*' <<<"$dist" | cut -d' ' -f2 | paste -sd/)
  echo "| $spec | -w $WORKERS | $peaks | $(ratio "$peaks") |" \
       "$(grep -o 'loaded in [0-9.]* s ([0-9]* MB/s)' <<<"$dist" | grep -o '[0-9]* MB/s' | cut -d' ' -f1) |" \
       "$(grep -o "$quality" <<<"$dist" | tail -n 1 | cut -d' ' -f2) |" \
       "$(grep -o '[0-9]* B of patches' <<<"$dist" | cut -d' ' -f1 | paste -sd/) |"
done
