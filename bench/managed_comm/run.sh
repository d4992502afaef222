#!/usr/bin/env bash
# Managed communication on an emulated cluster: the same data-parallel job (ps_demo: least
# squares, weights in a parameter-server table of many rows) under each policy at the same
# staleness, on hosts whose links tc limits to RATE. Reports time to a target loss.
# Needs root (network namespaces); removes the emulated hosts when done.
#
#   bench/managed_comm/run.sh [BUILD_DIR]     # env: RATES, POLICIES, DIM, CLOCKS, STALENESS, TARGET
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
RATES=${RATES:-"100mbit 1gbit"}
POLICIES=${POLICIES:-"off fifo random relative-magnitude"}
DIM=${DIM:-1024}             # features (weights: DIM/64 rows of 64 floats)
CLOCKS=${CLOCKS:-40}
STALENESS=${STALENESS:-2}
TARGET=${TARGET:-0.01}
trap 'bash scripts/emulated_cluster.sh down' EXIT

rate_bytes() {  # tc rate -> bytes/s
  case $1 in
    *gbit) echo $(( ${1%gbit} * 125000000 )) ;;
    *mbit) echo $(( ${1%mbit} * 125000 )) ;;
    *) echo "unknown rate $1" >&2; exit 2 ;;
  esac
}

echo "| link | policy | budget (job, B/s) | time to loss < $TARGET (s) | clocks | final loss | total time (s) |"
echo "|---|---|---|---|---|---|---|"
for rate in $RATES; do
  bash scripts/emulated_cluster.sh up 3 "$rate" >/dev/null
  hosts=$(mktemp)
  bash scripts/emulated_cluster.sh hostfile > "$hosts"
  # Workers and servers share each host's link; give managed communication 80% of two links.
  budget=$(( $(rate_bytes "$rate") * 8 / 10 * 2 ))
  for policy in $POLICIES; do
    out=$("$BUILD/bin/tessera" run -w 2 -s 2 --hostfile "$hosts" --ssh "$PWD/scripts/netns_ssh" \
            --bind 10.77.0.254 --log-level warn \
            -x TESSERA_COMM_POLICY="$policy" -x TESSERA_COMM_BYTES_PER_SECOND="$budget" -- \
            "$PWD/$BUILD/bin/ps_demo" --dim "$DIM" --clocks "$CLOCKS" --staleness "$STALENESS" \
            --print-every 1 --samples 10000 --batch 2000 --lr 0.3 2>&1)
    echo "$out" | awk -v target="$TARGET" -v rate="$rate" -v policy="$policy" -v budget="$budget" '
      /^\[worker 0\] +[0-9]/ { clock=$3; loss=$4; secs=$6; if (!hit && loss < target) { hit=1; hit_secs=secs; hit_clock=clock } last_loss=loss; last_secs=secs }
      END { printf "| %s | %s | %d | %s | %s | %s | %s |\n", rate, policy, budget, hit ? hit_secs : "not reached", hit ? hit_clock : "-", last_loss, last_secs }'
  done
  rm -f "$hosts"
  bash scripts/emulated_cluster.sh down
done
