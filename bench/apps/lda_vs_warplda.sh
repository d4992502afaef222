#!/usr/bin/env bash
# LDA on 20news: Tessera serial and `tessera run -w 2 -s 1`, and WarpLDA (thu-ml/warplda) with 1 and
# 2 threads when its binaries are on the machine, one after the other in one run, each printing
# log-likelihood per token against training time (evaluation included on both sides), and the CPU
# seconds each used (the machine is shared: wall time also measures the neighbours). The same
# priors for all: alpha 0.5 per topic (WarpLDA's --alpha is the sum, 0.5 K), beta 0.01.
#
#   bench/apps/lda_vs_warplda.sh [BUILD_DIR]
#   env: WARPLDA_BIN=/work/ref/warplda/bin (holds `warplda` and `format`, built outside the repo)
#        DATA_DIR=../shared/data  OUT=/tmp/tessera-bench/lda_vs_warplda
#        TOPICS="100 1000"  ITERS_100=100  ITERS_1000=50  (ITERS_<K> for any K)  EVAL_EVERY=5
#        TESSERA_MORE=1.3 (Tessera runs that many times ITERS, so that it can reach WarpLDA's final
#        LL when it needs more iterations; the table gives the time at which each run reached it)
#        RUNS="tessera-1 tessera-w2 warplda-1 warplda-2"
#        REPEAT=1 (rounds of all RUNS, one after the other; with more than one, a last table gives
#        each round's times to target, their ratios and the medians: the machine is noisy)
# WarpLDA reads Yahoo-LDA-style text ("id id word word ..."), so the docword file is converted once
# (each token written as w<wordID>) and formatted with WarpLDA's `format`. Tessera's binaries are
# copied to $OUT/bin first (others relink build/bin while this runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
WARPLDA_BIN=${WARPLDA_BIN:-/work/ref/warplda/bin}
DATA_DIR=${DATA_DIR:-../shared/data}
OUT=${OUT:-/tmp/tessera-bench/lda_vs_warplda}
TOPICS=${TOPICS:-"100 1000"}
EVAL_EVERY=${EVAL_EVERY:-5}
RUNS=${RUNS:-"tessera-1 tessera-w2 warplda-1 warplda-2"}
REPEAT=${REPEAT:-1}
ITERS_100=${ITERS_100:-100}
ITERS_1000=${ITERS_1000:-50}
TESSERA_MORE=${TESSERA_MORE:-1.3}
NEWS=$DATA_DIR/20news/docword.20news.txt
mkdir -p "$OUT/bin"
cp "$BUILD"/bin/{lda,tessera,tessera-server} "$OUT/bin/"
BIN=$OUT/bin
have_warplda=0
if [[ -x $WARPLDA_BIN/warplda && -x $WARPLDA_BIN/format ]]; then
  have_warplda=1
  if [[ ! -f $OUT/20news.bin.u.idx ]]; then
    awk 'NR > 3 { if ($1 != doc) { if (doc != "") print line; doc = $1; line = $1 " " $1 }
                  for (i = 0; i < $3; ++i) line = line " w" $2 }
         END { print line }' "$NEWS" >"$OUT/20news.txt"
    (cd "$OUT" && "$WARPLDA_BIN/format" -input 20news.txt -prefix 20news >/dev/null)
  fi
else
  echo "WarpLDA not found in $WARPLDA_BIN: its rows are left out"
fi

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- apps runtime || echo ' (+ uncommitted changes)')"
for K in $TOPICS; do
  iters_var=ITERS_$K
  ITERS=${!iters_var:-50}
  alpha_sum=$(python3 -c "print(0.5 * $K)")
  args=(--docword "$NEWS" --topics "$K" --alpha 0.5 --beta 0.01
        --iterations "$(python3 -c "print(round($ITERS * $TESSERA_MORE))")" --eval-every "$EVAL_EVERY")
  for round in $(seq "$REPEAT"); do
    for run in $RUNS; do
      at=$OUT/$run-k$K-r$round
      [[ $run != warplda-* || $have_warplda == 1 ]] || continue
      echo "K=$K $run round $round: load average $(uptime | sed 's/.*load average: //')" |
        tee "$at.load"
      # CPU seconds of the whole run (loading included; for -w 2 the launcher's children).
      timed() { /usr/bin/time -f "cpu %U %S" -o "$at.cpu" "$@"; }
      case $run in
        tessera-1)
          timed "$BIN/lda" "${args[@]}" --metrics "$at.jsonl" >"$at.log" 2>&1 ;;
        tessera-w2)
          timed "$BIN/tessera" run -w 2 -s 1 --log-level warn -- "$BIN/lda" "${args[@]}" \
            --metrics "$at.jsonl" >"$at.log" 2>&1 ;;
        warplda-1|warplda-2)
          (cd "$OUT" && OMP_NUM_THREADS=${run#warplda-} timed "$WARPLDA_BIN/warplda" \
            --prefix 20news --k "$K" --alpha "$alpha_sum" --beta 0.01 --niter "$ITERS" \
            --dumpmodel=false --dumpz=false --writeinfo=false) >"$at.log" 2>&1 ;;
        *) echo "unknown run $run"; exit 2 ;;
      esac
    done
  done
done
python3 - "$OUT" "$TOPICS" "$RUNS" "$REPEAT" <<'EOF'
# One table per K (of the first round): LL per token against seconds at every 10th iteration (and
# the last), then the time each run needs to reach the final LL of WarpLDA with 2 threads; with
# several rounds, each round's times to its own target and the ratios.
import json, os, re, statistics, sys
out, topics, runs, repeat = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])

def curve(run, k, rnd=1):
    """[(iteration, seconds since training began, ll/token)] at the evaluated iterations."""
    pts = []
    if run.startswith("tessera"):
        path = f"{out}/{run}-k{k}-r{rnd}.jsonl"
        if not os.path.exists(path):
            return pts
        for line in open(path):
            r = json.loads(line)
            if r.get("loglik_per_token") is not None:
                pts.append((r["iteration"], r["elapsed_s"], r["loglik_per_token"]))
    else:
        path = f"{out}/{run}-k{k}-r{rnd}.log"
        if not os.path.exists(path):
            return pts
        t = 0.0
        for m in re.finditer(r"Iteration (\d+), ([\d.]+) s, [\d.]+ Mtokens/s, log_likelihood "
                             r"\(per token\) (-?[\d.]+)", open(path).read()):
            t += float(m.group(2))
            pts.append((int(m.group(1)) + 1, t, float(m.group(3))))
    return pts

def reaching(c, target):
    """The first (iteration, seconds, ll/token) of curve c at or above target, or None."""
    return next((p for p in c if target is not None and p[2] >= target), None)

names = {"tessera-1": "Tessera serial", "tessera-w2": "Tessera -w 2 -s 1",
         "warplda-1": "WarpLDA 1 thread", "warplda-2": "WarpLDA 2 threads"}
for k in topics:
    curves = {r: curve(r, k) for r in runs}
    curves = {r: c for r, c in curves.items() if c}
    if not curves:
        continue
    target = curves["warplda-2"][-1][2] if "warplda-2" in curves else None
    print(f"\nK={k}: ll/token at seconds (iteration)" +
          (f"; target = WarpLDA 2 threads' final {target:.3f}" if target else ""))
    print("| run | load avg before | ll/token at it: s | final | to target (s) | CPU s (whole run) |")
    print("|---|---|---|---|---|---|")
    for r, c in curves.items():
        marks = [p for p in c if p[0] % 10 == 0 and p != c[-1]]
        text = ", ".join(f"{i}: {s:.1f} s {ll:.3f}" for i, s, ll in marks)
        i, s, ll = c[-1]
        reach = reaching(c, target)
        to = f"{reach[1]:.1f} (it {reach[0]})" if reach else "not reached"
        load = open(f"{out}/{r}-k{k}-r1.load").read().split("average ")[-1].split(",")[0]
        cpu = open(f"{out}/{r}-k{k}-r1.cpu").read().split()
        cpu = f"{float(cpu[-2]) + float(cpu[-1]):.1f}" if len(cpu) >= 3 else "?"
        print(f"| {names.get(r, r)} | {load} | {text} | it {i}: {s:.1f} s {ll:.3f} | {to} | {cpu} |")

pairs = [("tessera-1", "warplda-1"), ("tessera-w2", "warplda-2")]
for k in topics if repeat > 1 else []:
    rows, ratios = [], {p: [] for p in pairs}
    for rnd in range(1, repeat + 1):
        curves = {r: curve(r, k, rnd) for r in runs}
        if not curves.get("warplda-2"):
            continue
        target = curves["warplda-2"][-1][2]
        times = {r: p[1] for r, c in curves.items() if (p := reaching(c, target))}
        cells = [f"{target:.3f}"]
        for a, b in pairs:
            ta, tb = times.get(a), times.get(b)
            ratio = ta / tb if ta and tb else None
            if ratio:
                ratios[(a, b)].append(ratio)
            cells += [f"{ta:.1f}" if ta else "-", f"{tb:.1f}" if tb else "-",
                      f"{ratio:.2f}x" if ratio else "-"]
        rows.append(f"| {rnd} | " + " | ".join(cells) + " |")
    if not rows:
        continue
    print(f"\nK={k}: seconds to each round's target (WarpLDA 2 threads' final LL), {repeat} rounds")
    print("| round | target | Tessera serial | WarpLDA 1 thread | serial / WarpLDA 1 | "
          "Tessera -w 2 | WarpLDA 2 threads | -w 2 / WarpLDA 2 |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    med = [f"{statistics.median(v):.2f}x" if v else "-" for v in ratios.values()]
    print(f"| median | | | | {med[0]} | | | {med[1]} |")
EOF
