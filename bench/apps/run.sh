#!/usr/bin/env bash
# Issue 4 benchmarks: MF and LDA serial vs `tessera run -w 2 -s 1`, and MF's 2D schedule vs the
# same loop with --data-parallel (SSP). Prints markdown tables (with `uptime` before every pair of
# runs: the machine is shared) and keeps every run's --metrics JSON lines and log in $OUT.
#
#   bench/apps/run.sh [BUILD_DIR]
#   env: SECTIONS="mf lda dp"  DATA_DIR=../shared/data  OUT=/tmp/tessera-bench/apps
#        LOWRANK=/tmp/tessera-bench/lowrank_5m.txt (made by gen_lowrank.py when missing)
#        MF_EPOCHS=20 LOWRANK_EPOCHS=10 LDA_ITERS=30 LDA_TOPICS="100 1000" DP_STALENESS=1
#        MF_TARGET=0.945 LOWRANK_TARGET=0.40 DP_EPOCHS=20 REPEAT=1
# The binaries are copied to $OUT/bin first (other engineers relink build/bin while this runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
SECTIONS=${SECTIONS:-"mf lda dp"}
DATA_DIR=${DATA_DIR:-../shared/data}
OUT=${OUT:-/tmp/tessera-bench/apps}
LOWRANK=${LOWRANK:-/tmp/tessera-bench/lowrank_5m.txt}
MF_EPOCHS=${MF_EPOCHS:-20}
LOWRANK_EPOCHS=${LOWRANK_EPOCHS:-10}
LDA_ITERS=${LDA_ITERS:-30}
LDA_TOPICS=${LDA_TOPICS:-"100 1000"}
DP_STALENESS=${DP_STALENESS:-1}
DP_EPOCHS=${DP_EPOCHS:-20}
MF_TARGET=${MF_TARGET:-0.945}
LOWRANK_TARGET=${LOWRANK_TARGET:-0.40}
REPEAT=${REPEAT:-1}
mkdir -p "$OUT/bin"
cp "$BUILD"/bin/{mf,lda,tessera,tessera-server} "$OUT/bin/"
BIN=$OUT/bin
ML=$DATA_DIR/ml-100k
NEWS=$DATA_DIR/20news/docword.20news.txt
if [[ " $SECTIONS " == *" mf "* || " $SECTIONS " == *" dp "* ]] && [[ ! -f $LOWRANK ]]; then
  python3 bench/apps/gen_lowrank.py --out "$LOWRANK"
fi

note() { echo; echo "$*"; }
load() { echo "uptime: $(uptime | sed 's/^ *//')"; }
serial() { local name=$1; shift; "$BIN/$1" "${@:2}" >"$OUT/$name.log" 2>&1; }
dist() { local name=$1; shift; "$BIN/tessera" run -w 2 -s 1 --log-level warn -- "$BIN/$1" "${@:2}" >"$OUT/$name.log" 2>&1; }

MF_HEAD="| run | epochs | median epoch (s) | median updates/s | median updates/cpu-s | final test RMSE | total (s) | time to target (s) |
|---|---|---|---|---|---|---|---|"
LDA_HEAD="| run | iterations | median iteration (s) | median tokens/s | median tokens/cpu-s | final ll/token | total (s) | time to target (s) |
|---|---|---|---|---|---|---|---|"

if [[ " $SECTIONS " == *" mf "* ]]; then
  ml_args=(--train "$ML/u1.base" --test "$ML/u1.test" -k 40 --epochs "$MF_EPOCHS")
  lr_args=(--train "$LOWRANK" --test-fraction 0.1 -k 40 --lambda 0.02 --epochs "$LOWRANK_EPOCHS")
  note "### MF, serial vs tessera run -w 2 -s 1 (k=40)"
  for r in $(seq "$REPEAT"); do
    note "ml-100k u1.base/u1.test, $MF_EPOCHS epochs, target test RMSE $MF_TARGET; $(load)"
    echo "$MF_HEAD"
    serial "mf-ml-serial-$r" mf "${ml_args[@]}" --metrics "$OUT/mf-ml-serial-$r.jsonl"
    python3 bench/apps/summarize.py mf serial "$OUT/mf-ml-serial-$r.jsonl" "$MF_TARGET"
    dist "mf-ml-w2-$r" mf "${ml_args[@]}" --metrics "$OUT/mf-ml-w2-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2 -s 1" "$OUT/mf-ml-w2-$r.jsonl" "$MF_TARGET"
    note "$(basename "$LOWRANK") (--test-fraction 0.1, --lambda 0.02), $LOWRANK_EPOCHS epochs, target $LOWRANK_TARGET; $(load)"
    echo "$MF_HEAD"
    serial "mf-lr-serial-$r" mf "${lr_args[@]}" --metrics "$OUT/mf-lr-serial-$r.jsonl"
    python3 bench/apps/summarize.py mf serial "$OUT/mf-lr-serial-$r.jsonl" "$LOWRANK_TARGET"
    dist "mf-lr-w2-$r" mf "${lr_args[@]}" --metrics "$OUT/mf-lr-w2-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2 -s 1" "$OUT/mf-lr-w2-$r.jsonl" "$LOWRANK_TARGET"
  done
fi

if [[ " $SECTIONS " == *" lda "* ]]; then
  note "### LDA on 20news (all 18,805 documents, 2.2M tokens), serial vs tessera run -w 2 -s 1, $LDA_ITERS iterations"
  for K in $LDA_TOPICS; do
    for r in $(seq "$REPEAT"); do
      args=(--docword "$NEWS" --topics "$K" --iterations "$LDA_ITERS")
      note "K=$K; $(load)"
      echo "$LDA_HEAD"
      serial "lda-k$K-serial-$r" lda "${args[@]}" --metrics "$OUT/lda-k$K-serial-$r.jsonl"
      python3 bench/apps/summarize.py lda serial "$OUT/lda-k$K-serial-$r.jsonl"
      dist "lda-k$K-w2-$r" lda "${args[@]}" --metrics "$OUT/lda-k$K-w2-$r.jsonl"
      python3 bench/apps/summarize.py lda "-w 2 -s 1" "$OUT/lda-k$K-w2-$r.jsonl"
      echo
      echo "log-likelihood per token against wall time (elapsed s since the first iteration):"
      echo "- serial: $(python3 bench/apps/summarize.py curve "$OUT/lda-k$K-serial-$r.jsonl" 5)"
      echo "- -w 2: $(python3 bench/apps/summarize.py curve "$OUT/lda-k$K-w2-$r.jsonl" 5)"
    done
  done
fi

if [[ " $SECTIONS " == *" dp "* ]]; then
  note "### MF under tessera run -w 2 -s 1: 2D schedule vs --data-parallel $DP_STALENESS (SSP)"
  for r in $(seq "$REPEAT"); do
    ml_args=(--train "$ML/u1.base" --test "$ML/u1.test" -k 40 --epochs "$DP_EPOCHS")
    note "ml-100k, $DP_EPOCHS epochs, target test RMSE $MF_TARGET; $(load)"
    echo "$MF_HEAD"
    serial "dp-ml-serial-$r" mf "${ml_args[@]}" --metrics "$OUT/dp-ml-serial-$r.jsonl"
    python3 bench/apps/summarize.py mf "serial" "$OUT/dp-ml-serial-$r.jsonl" "$MF_TARGET"
    dist "dp-ml-2d-$r" mf "${ml_args[@]}" --metrics "$OUT/dp-ml-2d-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2, 2D" "$OUT/dp-ml-2d-$r.jsonl" "$MF_TARGET"
    dist "dp-ml-dp-$r" mf "${ml_args[@]}" --data-parallel "$DP_STALENESS" --metrics "$OUT/dp-ml-dp-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2, data-parallel s=$DP_STALENESS" "$OUT/dp-ml-dp-$r.jsonl" "$MF_TARGET"
    lr_args=(--train "$LOWRANK" --test-fraction 0.1 -k 40 --lambda 0.02 --epochs "$LOWRANK_EPOCHS")
    note "$(basename "$LOWRANK"), $LOWRANK_EPOCHS epochs, target test RMSE $LOWRANK_TARGET; $(load)"
    echo "$MF_HEAD"
    dist "dp-lr-2d-$r" mf "${lr_args[@]}" --metrics "$OUT/dp-lr-2d-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2, 2D" "$OUT/dp-lr-2d-$r.jsonl" "$LOWRANK_TARGET"
    dist "dp-lr-dp-$r" mf "${lr_args[@]}" --data-parallel "$DP_STALENESS" --metrics "$OUT/dp-lr-dp-$r.jsonl"
    python3 bench/apps/summarize.py mf "-w 2, data-parallel s=$DP_STALENESS" "$OUT/dp-lr-dp-$r.jsonl" "$LOWRANK_TARGET"
  done
fi
