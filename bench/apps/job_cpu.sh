#!/usr/bin/env bash
# CPU seconds of one `tessera run -w W -s 1` job (launcher, coordinator, servers and workers: GNU
# time counts every child), for several builds run alternately, REPEAT rounds: on a shared
# machine, user + system CPU compares builds where wall time measures the neighbours.
#
#   bench/apps/job_cpu.sh BUILD_DIR [BUILD_DIR...] -- APP ARGS...
#   env: WORKERS=2 REPEAT=3 (WORKERS=0: the app alone, serially, without `tessera run`)
# Example: bench/apps/job_cpu.sh /tmp/old build -- lda --docword ../shared/data/20news/docword.20news.txt --topics 100 --iterations 30
set -euo pipefail
WORKERS=${WORKERS:-2}
REPEAT=${REPEAT:-3}
builds=()
while [[ $# -gt 0 && $1 != -- ]]; do builds+=("$1"); shift; done
[[ $# -gt 1 && ${#builds[@]} -gt 0 ]] || { echo "usage: $0 BUILD_DIR... -- APP ARGS..." >&2; exit 2; }
shift
app=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), load before: $(uptime | sed 's/.*load average: //')"
for ((i = 0; i < REPEAT; i++)); do
  for b in "${builds[@]}"; do
    if [[ $WORKERS == 0 ]]; then
      /usr/bin/time -f "$b %e %U %S" -a -o "$out" "$b/bin/$app" "$@" >/dev/null 2>&1
    else
      /usr/bin/time -f "$b %e %U %S" -a -o "$out" "$b/bin/tessera" run -w "$WORKERS" -s 1 -- \
          "$b/bin/$app" "$@" >/dev/null 2>&1
    fi
  done
done
echo "| build | runs | wall s (median) | user s (median) | system s (median) | CPU s (median) |"
echo "|---|---|---|---|---|---|"
for b in "${builds[@]}"; do
  awk -v b="$b" '$1 == b { print $2, $3, $4, $3 + $4 }' "$out" | python3 -c "
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin]
med = [statistics.median(c) for c in zip(*rows)]
print('| $b | %d | %.2f | %.2f | %.2f | %.2f |' % (len(rows), *med))"
done
