#!/usr/bin/env bash
# Vendoring as docs/cmake.md shows it: a project whose CMakeLists.txt is add_subdirectory(<tessera>)
# plus tessera_add_program() and nothing else configures, leaves Tessera's tests, benchmarks and
# install rules out, and plans the tessc step for its program. (Configure and a dry run only: a
# full build of Tessera again would cost minutes; the installed-package test builds and runs.)
#
#   vendored_configure_test.sh SOURCE_DIR CMAKE GENERATOR CXX_COMPILER [COMPILER_LAUNCHER]
set -euo pipefail

source_dir=$1 cmake=$2 generator=$3 cxx=$4 launcher=${5:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera_vendored_test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

mkdir "$work/project"
cp "$source_dir/examples/mf_example/mf_example.cc" "$work/project/"
cat > "$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(vendored_example LANGUAGES CXX)
add_subdirectory("$source_dir" tessera)
tessera_add_program(mf_example SOURCES mf_example.cc)
CMAKE

args=(-S "$work/project" -B "$work/build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx")
[[ -n "$launcher" ]] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
"$cmake" "${args[@]}" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }

for option in TESSERA_BUILD_TESTS TESSERA_BUILD_BENCH TESSERA_INSTALL; do
  grep -qx "$option:BOOL=OFF" "$work/build/CMakeCache.txt" ||
    fail "$option is not OFF by default when vendored"
done

# The program's build runs tessc (built from the vendored tree) on its source.
"$cmake" --build "$work/build" --target mf_example -- -n > "$work/plan.log" 2>&1 ||
  { cat "$work/plan.log"; fail "dry run of the mf_example build"; }
grep -q "tessc: schedules for mf_example.cc" "$work/plan.log" ||
  { cat "$work/plan.log"; fail "no tessc step for mf_example.cc"; }
grep -q "Linking CXX executable .*tessc" "$work/plan.log" ||
  { cat "$work/plan.log"; fail "tessc is not built from the vendored tree"; }
echo "PASS"
