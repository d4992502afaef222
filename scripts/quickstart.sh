#!/usr/bin/env bash
# The main job: installs dependencies, builds, then trains matrix factorization on MovieLens 100K
# with 2 worker processes and 1 parameter server on this machine (`tessera run -w 2 -s 1`),
# printing the RMSE curve and writing per-epoch metrics (and a PNG plot when matplotlib is there).
#
#   bash scripts/quickstart.sh [extra mf options, e.g. -k 20 --lr 0.02]
#
#   DATA_DIR     where ml-100k/ (u1.base, u1.test) and 20news/ are (default: ../shared/data)
#   EPOCHS       SGD epochs (default: 20)
#   BUILD_DIR    build directory (default: build)
#   OUT_DIR      where mf.jsonl and mf.png go (default: $BUILD_DIR/quickstart)
#   BUILD_TYPE   CMake build type (default: RelWithDebInfo)
#   JOBS         parallel build jobs (default: nproc)
#   SKIP_SETUP   set to 1 to skip scripts/setup.sh (packages already installed, no root)
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${DATA_DIR:-../shared/data}
BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-$BUILD_DIR/quickstart}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
JOBS=${JOBS:-$(nproc)}
EPOCHS=${EPOCHS:-20}

# Check the data first: no point installing and building for a run that cannot start.
train="$DATA_DIR/ml-100k/u1.base"
test="$DATA_DIR/ml-100k/u1.test"
for f in "$train" "$test"; do
  if [[ ! -f $f ]]; then
    echo "quickstart.sh: MovieLens 100K not found: $f is missing." >&2
    echo "  Put ml-100k/ (from https://grouplens.org/datasets/movielens/100k/) under a data" >&2
    echo "  directory and point at it: DATA_DIR=/path/to/data bash scripts/quickstart.sh" >&2
    exit 1
  fi
done

if [[ ${SKIP_SETUP:-0} != 1 ]]; then
  bash scripts/setup.sh  # Debian packages; uses sudo when not root
fi
echo "quickstart.sh: building ($BUILD_TYPE) in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target tessera tessera-server mf lda

mkdir -p "$OUT_DIR"
metrics="$OUT_DIR/mf.jsonl"
echo
echo "quickstart.sh: tessera run -w 2 -s 1 -- mf on MovieLens 100K (u1.base / u1.test)"
# --log-level warn: only the program's own lines (worker 0's progress) and any problem.
"$BUILD_DIR/bin/tessera" run -w 2 -s 1 --log-level warn -- \
  "$BUILD_DIR/bin/mf" --train "$train" --test "$test" --epochs "$EPOCHS" --metrics "$metrics" "$@"

echo
echo "quickstart.sh: per-epoch metrics (JSON lines) in $metrics"
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  scripts/plot_metrics "$metrics" -o "$OUT_DIR/mf.png" --y train_rmse,test_rmse,updates_per_s \
    --title "mf, tessera run -w 2 -s 1, MovieLens 100K"
else
  echo "quickstart.sh: no python3-matplotlib, so no plot (apt-get install python3-matplotlib)"
fi

cat <<EOF

LDA on 20 Newsgroups, the same way (topic totals on the parameter server):
  $BUILD_DIR/bin/tessera run -w 2 -s 1 --log-level warn -- $BUILD_DIR/bin/lda \\
      --docword $DATA_DIR/20news/docword.20news.txt --vocab $DATA_DIR/20news/vocab.20news.txt \\
      --topics 100 --iterations 50 --metrics $OUT_DIR/lda.jsonl
EOF
