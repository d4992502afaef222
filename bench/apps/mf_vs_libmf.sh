#!/usr/bin/env bash
# MF per-epoch time against LIBMF (cjlin1/libmf, built outside the repository) on the 20news
# document x word matrix (entries log(1 + count), k=40), in one run: LIBMF with 2 threads,
# Tessera with 2 executor threads in one process, and `tessera run -w 2 -s 1` (1 thread each).
# Prints a markdown table: medians over REPEAT interleaved runs of each, of wall-clock and CPU
# seconds per epoch (CPU is the steadier measure on a shared machine).
#
#   bench/apps/mf_vs_libmf.sh [BUILD_DIR]
#   env: LIBMF=/work/ref/libmf (holds mf-train)  DATA_DIR=../shared/data  OUT=/tmp/tessera-bench/libmf
#        EPOCHS=20 REPEAT=3
# LIBMF prints no timings: its per-epoch time is (T(EPOCHS) - T(EPOCHS/4)) / (3 EPOCHS / 4) of
# two runs (wall clock and CPU alike), so its load time cancels. Tessera's is the median of the metrics'
# epoch_s (see epoch_s below).
# Both evaluate the held-out 10% every epoch (LIBMF's -p).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
LIBMF=${LIBMF:-/work/ref/libmf}
DATA_DIR=${DATA_DIR:-../shared/data}
OUT=${OUT:-/tmp/tessera-bench/libmf}
EPOCHS=${EPOCHS:-20}
REPEAT=${REPEAT:-3}
[[ -x $LIBMF/mf-train ]] || { echo "no $LIBMF/mf-train: build cjlin1/libmf there (make)" >&2; exit 1; }
mkdir -p "$OUT/bin"
cp "$BUILD"/bin/{mf,tessera,tessera-server} "$OUT/bin/"
BIN=$OUT/bin
if [[ ! -f $OUT/train.txt ]]; then
  # 0-based ids (LIBMF's), every 10th entry held out.
  awk 'NR > 3 { line = ($1 - 1) " " ($2 - 1) " " log(1 + $3);
                if (NR % 10 == 0) print line > "'"$OUT"'/test.txt"; else print line > "'"$OUT"'/train.txt" }' \
      "$DATA_DIR/20news/docword.20news.txt"
fi
calc() { python3 -c "print($1)"; }
# "wall cpu" seconds of one run (cpu: user + system, every thread).
run_time() { /usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null | tail -n 1 | awk '{ print $1, $2 + $3 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# "wall cpu" seconds per epoch from mf's metrics: medians over the epochs after the first (which
# also pays first-touch page faults); cpu = training ratings / updates per CPU-second, the CPU of
# every worker process (not the coordinator's or the server's, which MF's 2D schedule leaves idle).
epoch_s() { python3 -c "
import json, statistics, sys
m = [json.loads(l) for l in open(sys.argv[1])][1:]
n = int(sys.argv[2])
print(statistics.median(r['epoch_s'] for r in m), statistics.median(n / r['updates_per_cpu_s'] for r in m))" "$1" "$2"; }
q=$((EPOCHS / 4))
mfargs=(--train "$OUT/train.txt" --test "$OUT/test.txt" --format plain -k 40 --epochs "$EPOCHS")
: >"$OUT/libmf.txt"; : >"$OUT/threads.txt"; : >"$OUT/w2.txt"
ntrain=$(wc -l <"$OUT/train.txt")
echo "uptime before: $(uptime | sed 's/^ *//')"
for ((i = 0; i < REPEAT; i++)); do
  read -r lw lc < <(run_time "$LIBMF/mf-train" -s 2 -k 40 -t "$EPOCHS" -p "$OUT/test.txt" "$OUT/train.txt" "$OUT/model")
  read -r sw sc < <(run_time "$LIBMF/mf-train" -s 2 -k 40 -t "$q" -p "$OUT/test.txt" "$OUT/train.txt" "$OUT/model")
  echo "$(calc "($lw - $sw) / ($EPOCHS - $q)") $(calc "($lc - $sc) / ($EPOCHS - $q)")" >>"$OUT/libmf.txt"
  "$BIN/mf" "${mfargs[@]}" --threads 2 --metrics "$OUT/threads.jsonl" >"$OUT/threads.log" 2>&1
  epoch_s "$OUT/threads.jsonl" "$ntrain" >>"$OUT/threads.txt"
  "$BIN/tessera" run -w 2 -s 1 --log-level warn -- "$BIN/mf" "${mfargs[@]}" \
      --metrics "$OUT/w2.jsonl" >"$OUT/w2.log" 2>&1
  epoch_s "$OUT/w2.jsonl" "$ntrain" >>"$OUT/w2.txt"
done
echo "uptime after: $(uptime | sed 's/^ *//')"
col() { awk -v c="$2" '{ print $c }' "$1" | median; }
libmf_w=$(col "$OUT/libmf.txt" 1) libmf_c=$(col "$OUT/libmf.txt" 2)
echo "| program | wall s per epoch | to LIBMF | CPU s per epoch | to LIBMF | final test RMSE |"
echo "|---|---|---|---|---|---|"
printf '| LIBMF, 2 threads | %.4f | 1 | %.4f | 1 | |\n' "$libmf_w" "$libmf_c"
for run in threads w2; do
  w=$(col "$OUT/$run.txt" 1) c=$(col "$OUT/$run.txt" 2)
  rmse=$(python3 -c "import json,sys; print('%.4f' % [json.loads(l) for l in open(sys.argv[1])][-1]['test_rmse'])" "$OUT/$run.jsonl")
  name=$([[ $run == threads ]] && echo "Tessera, --threads 2" || echo "Tessera, -w 2 -s 1")
  printf '| %s | %.4f | %.2fx | %.4f | %.2fx | %s |\n' "$name" "$w" "$(calc "$w / $libmf_w")" \
      "$c" "$(calc "$c / $libmf_c")" "$rmse"
done
