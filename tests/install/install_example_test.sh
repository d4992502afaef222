#!/usr/bin/env bash
# The installed package as a user meets it: installs this build into a temporary prefix, moves the
# prefix (so nothing may point back at where it was installed, or at the build or source tree),
# then builds examples/mf_example against it with find_package(Tessera) alone and runs it
# serially and under `<prefix>/bin/tessera run -w 2 -s 1`. Passes when both runs find tessc's
# schedules (2D for the SGD loop) and agree on the trained model's error.
#
#   install_example_test.sh BUILD_DIR SOURCE_DIR CMAKE GENERATOR CXX_COMPILER [COMPILER_LAUNCHER]
set -euo pipefail

build_dir=$1 source_dir=$2 cmake=$3 generator=$4 cxx=$5 launcher=${6:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera_install_test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "== install into a staging prefix, then move it"
"$cmake" --install "$build_dir" --prefix "$work/stage" > "$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/stage" "$work/prefix"
prefix=$work/prefix

echo "== the installed tree"
for f in bin/tessc bin/tessera bin/tessera-server include/tessera/tessera.h \
         include/tessera/version.h lib/cmake/Tessera/TesseraConfig.cmake \
         lib/cmake/Tessera/TesseraConfigVersion.cmake lib/cmake/Tessera/TesseraProgram.cmake; do
  [[ -e "$prefix/$f" ]] || fail "$f is not installed"
done
# Private headers (those beside the runtime's sources in src/, tessc's and the launcher's) stay out.
for private in schedule_table.h loop_schedule.h parallel_executor.h analyzer.h supervisor.h; do
  found=$(find "$prefix/include" -name "$private")
  [[ -z "$found" ]] || fail "private header installed: $found"
done
# Relocatable: no text file names the build tree, the source tree or the staging prefix.
leaks=$(grep -rIlF -e "$build_dir" -e "$source_dir" -e "$work/stage" "$prefix" || true)
[[ -z "$leaks" ]] || fail "installed files name build, source or staging paths: $leaks"

echo "== installed tessc uses the Clang headers of its own prefix"
echo 'int main() { return 0; }' > "$work/empty.cc"
"$prefix/bin/tessc" "$work/empty.cc" -- -std=c++20 -v > "$work/tessc.log" 2>&1 ||
  { cat "$work/tessc.log"; fail "tessc on an empty program"; }
grep -qx " $prefix/lib/tessera/clang/[0-9]*/include" "$work/tessc.log" ||
  { cat "$work/tessc.log"; fail "tessc does not search $prefix/lib/tessera/clang/*/include"; }

echo "== configure and build the example against the moved prefix"
cp -r "$source_dir/examples/mf_example" "$work/example"
args=(-S "$work/example" -B "$work/example-build" -G "$generator" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix")
[[ -n "$launcher" ]] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
"$cmake" "${args[@]}" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
"$cmake" --build "$work/example-build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
program=$work/example-build/mf_example

echo "== serial run"
TESSERA_LOG_LEVEL=debug "$program" > "$work/serial.log" 2>&1 || { cat "$work/serial.log"; fail "serial run"; }
echo "== distributed run: tessera run -w 2 -s 1"
(cd "$work" && "$prefix/bin/tessera" run -w 2 -s 1 --log-level debug -- "$program") \
  > "$work/distributed.log" 2>&1 || { cat "$work/distributed.log"; fail "tessera run"; }

# Each run found the SGD loop's 2D schedule (the Context's debug line, once per process).
two_d='embedded schedule {.*"strategy":"2d"'
[[ $(grep -c "$two_d" "$work/serial.log") -eq 1 ]] ||
  { cat "$work/serial.log"; fail "the serial run did not find the 2D schedule"; }
for w in 0 1; do
  grep -q "^\[worker $w\] .*$two_d" "$work/distributed.log" ||
    { cat "$work/distributed.log"; fail "worker $w did not find the 2D schedule"; }
done
if grep -q "no schedule from tessc" "$work/serial.log" "$work/distributed.log"; then
  fail "a loop ran without its schedule"
fi

# Both learned, and agree: a 2D schedule reorders the SGD updates legally, so the two models
# differ only by floating-point rounding, well under a percent of the error.
value() { grep -o "$1 [0-9.]*" "$2" | tail -n 1 | awk '{print $NF}'; }
serial_first=$(value "epoch  1  train_rmse" "$work/serial.log")
serial_final=$(value final_rmse "$work/serial.log")
dist_final=$(value final_rmse "$work/distributed.log")
echo "serial: epoch 1 train RMSE $serial_first, final RMSE $serial_final; distributed: final RMSE $dist_final"
[[ -n "$serial_first" && -n "$serial_final" && -n "$dist_final" ]] || fail "missing results"
[[ $(grep -c "final_rmse" "$work/distributed.log") -eq 1 ]] || fail "only worker 0 reports"
awk -v a="$serial_final" -v b="$dist_final" -v first="$serial_first" 'BEGIN {
  d = a - b; if (d < 0) d = -d;
  if (!(a < 0.5 * first)) { print "FAIL: the serial run did not learn"; exit 1 }
  if (!(d <= 0.01 * a)) { print "FAIL: serial and distributed final RMSE differ by " d; exit 1 }
}' || exit 1
echo "PASS"
