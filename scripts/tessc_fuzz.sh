#!/usr/bin/env bash
# Many seeds of random loop bodies (scripts/tessc_fuzz.py) through tessc and the differential run:
# for each seed, LOOPS loops in one translation unit, built as the CI target tessc_fuzz_1 (its
# generated source is replaced for the run and restored after), run serially and with 2 and 3
# threads (tests/compiler/differential.sh). Prints the generator's summary per seed and a total.
#   scripts/tessc_fuzz.sh BUILD_DIR FIRST_SEED LAST_SEED [LOOPS]
set -uo pipefail
build=$(cd "$1" && pwd)
first=$2
last=$3
loops=${4:-100}
src=$(cd "$(dirname "$0")/.." && pwd)
gen=$build/tests/compiler/fuzz/fuzz_1.cc
mkdir -p "$(dirname "$gen")"
trap 'rm -f "$gen"; ninja -C "$build" -j2 tessc_fuzz_1 >/dev/null' EXIT
failures=0
start=$(date +%s)
for seed in $(seq "$first" "$last"); do
  python3 "$src/scripts/tessc_fuzz.py" --tessc "$build/bin/tessc" --seed "$seed" --loops "$loops" \
    --out "$gen" -- "-I$src/runtime/include" "-I$src/common/include" || { failures=$((failures + 1)); continue; }
  if ! ninja -C "$build" -j2 tessc_fuzz_1 >"$build/fuzz_build.log" 2>&1; then
    echo "seed $seed: build failed (see $build/fuzz_build.log)"; failures=$((failures + 1)); continue
  fi
  if ! bash "$src/tests/compiler/differential.sh" "$build/tests/tessc_fuzz_1" >"$build/fuzz_run.log"; then
    echo "seed $seed: DIFFERS from the serial run:"; cat "$build/fuzz_run.log"
    cp "$gen" "$build/fuzz_failing_seed_$seed.cc"
    failures=$((failures + 1))
  fi
done
echo "seeds $first..$last ($loops loops each): $failures failing, $(( $(date +%s) - start ))s"
exit $((failures > 0))
