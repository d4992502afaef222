#!/usr/bin/env bash
# Managed communication with the apps on an emulated cluster: MF (ml-100k) and LDA (20news subset),
# both with --data-parallel S (every dense array they write on the parameter servers under SSP),
# under each policy at the same staleness, on hosts whose links tc limits to RATE. Reports wall
# time to a target test RMSE / log-likelihood per token. Same cluster and launch as run.sh
# (3 namespaces, 2 workers, 2 servers, job budget 80% of two links). Needs root; removes the
# emulated hosts when done.
#
#   bench/managed_comm/apps.sh [BUILD_DIR]
#   env: RATES="100mbit 1gbit"  POLICIES="off fifo random relative-magnitude"  APPS="mf lda"
#        STALENESS=1  MF_EPOCHS=15 MF_TARGET=0.945  LDA_DOCS=2000 LDA_TOPICS=20 LDA_ITERS=10
#        LDA_TARGET=-9.4  REPEAT=1 (policies interleaved within each repeat)
#        DATA_DIR=../shared/data  OUT=/tmp/tessera-bench/managed_comm
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
RATES=${RATES:-"100mbit 1gbit"}
POLICIES=${POLICIES:-"off fifo random relative-magnitude"}
APPS=${APPS:-"mf lda"}
STALENESS=${STALENESS:-1}
REPEAT=${REPEAT:-1}
MF_EPOCHS=${MF_EPOCHS:-15}
MF_TARGET=${MF_TARGET:-0.945}
LDA_DOCS=${LDA_DOCS:-2000}
LDA_TOPICS=${LDA_TOPICS:-20}
LDA_ITERS=${LDA_ITERS:-10}
LDA_TARGET=${LDA_TARGET:--9.4}
DATA_DIR=$(cd "${DATA_DIR:-../shared/data}" && pwd)
OUT=${OUT:-/tmp/tessera-bench/managed_comm}
mkdir -p "$OUT/bin"
cp "$BUILD"/bin/{mf,lda,tessera,tessera-server} "$OUT/bin/"  # build/bin may be relinked meanwhile
BIN=$OUT/bin
trap 'bash scripts/emulated_cluster.sh down' EXIT

rate_bytes() {  # tc rate -> bytes/s
  case $1 in
    *gbit) echo $(( ${1%gbit} * 125000000 )) ;;
    *mbit) echo $(( ${1%mbit} * 125000 )) ;;
    *) echo "unknown rate $1" >&2; exit 2 ;;
  esac
}

# Bytes the emulated hosts sent (to each other and to the launcher's bridge address): what the
# bridge ports received, summed, before and after a run.
host_bytes() { cat /sys/class/net/veth-tb*/statistics/rx_bytes | awk '{s += $1} END {print s}'; }

echo "| app | link | policy | run | budget (job, B/s) | time to target (s) | epochs/iterations to target | final | total (s) | MB sent by hosts | load average before | update MB early / at boundaries (workers) | read staleness mean (max) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for rate in $RATES; do
  bash scripts/emulated_cluster.sh up 3 "$rate" >/dev/null
  hosts=$(mktemp)
  bash scripts/emulated_cluster.sh hostfile > "$hosts"
  budget=$(( $(rate_bytes "$rate") * 8 / 10 * 2 ))
  for app in $APPS; do
   for r in $(seq "$REPEAT"); do
    for policy in $POLICIES; do
      name="$app-$rate-$policy-$r"
      if [[ $app == mf ]]; then
        prog=("$BIN/mf" --train "$DATA_DIR/ml-100k/u1.base" --test "$DATA_DIR/ml-100k/u1.test" -k 40
              --epochs "$MF_EPOCHS" --data-parallel "$STALENESS" --metrics "$OUT/$name.jsonl")
      else
        prog=("$BIN/lda" --docword "$DATA_DIR/20news/docword.20news.txt" --max-docs "$LDA_DOCS"
              --topics "$LDA_TOPICS" --iterations "$LDA_ITERS" --data-parallel "$STALENESS"
              --metrics "$OUT/$name.jsonl")
      fi
      up=$(uptime | sed 's/.*load average: //')
      rm -f "$OUT/$name.jsonl"
      b0=$(host_bytes)
      "$BIN/tessera" run -w 2 -s 2 --hostfile "$hosts" --ssh "$PWD/scripts/netns_ssh" \
          --bind 10.77.0.254 --log-level info \
          -x TESSERA_COMM_POLICY="$policy" -x TESSERA_COMM_BYTES_PER_SECOND="$budget" -- \
          "${prog[@]}" > "$OUT/$name.log" 2>&1 || echo "($name failed: see $OUT/$name.log)" >&2
      mb=$(( ($(host_bytes) - b0) / 1000000 ))
      python3 - "$OUT/$name.jsonl" "$app" "$rate" "$policy $r" "$budget" "$MF_TARGET" "$LDA_TARGET" "$mb | $up" "$OUT/$name.log" <<'PY'
import json, re, sys
path, app, rate, policy_run, budget, mf_t, lda_t, up, log = sys.argv[1:]
# Every worker's last line (runtime/src/distributed): its early vs boundary update bytes and the
# staleness its reads observed.
early = boundary = reads = 0
stale_sum = 0.0
stale_max = 0
for line in open(log, errors="replace"):
    m = re.search(r"(\d+) B of updates early and (\d+) B at clock boundaries .* (\d+) reads "
                  r"\(staleness mean ([0-9.]+), max (\d+)\)", line)
    if m:
        early += int(m[1]); boundary += int(m[2]); n = int(m[3])
        reads += n; stale_sum += n * float(m[4]); stale_max = max(stale_max, int(m[5]))
comm = (f" | {early / 1e6:.1f} / {boundary / 1e6:.1f} | "
        f"{stale_sum / reads if reads else 0:.2f} ({stale_max})")
up = up + comm
policy = policy_run.replace(" ", " | ")
try:
    rows = [json.loads(l) for l in open(path) if l.strip()]
except OSError:
    rows = []
if not rows:
    print(f"| {app} | {rate} | {policy} | {budget} | failed | - | - | - | {up} |"); sys.exit()
if app == "mf":
    key, step, better = "test_rmse", "epoch", lambda v: v <= float(mf_t)
else:
    key, step, better = "loglik_per_token", "iteration", lambda v: v >= float(lda_t)
hit = next((r for r in rows if better(r[key])), None)
print(f"| {app} | {rate} | {policy} | {budget} | {hit['elapsed_s']:.2f}" if hit else
      f"| {app} | {rate} | {policy} | {budget} | not reached", end="")
print(f" | {hit[step] if hit else '-'} | {rows[-1][key]:.4f} | {rows[-1]['elapsed_s']:.2f} | {up} |")
PY
    done
   done
  done
  rm -f "$hosts"
  bash scripts/emulated_cluster.sh down
done
