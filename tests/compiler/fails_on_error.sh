#!/usr/bin/env bash
# A site that cannot be parallelized must fail the build: tessc exits 1, prints the clang-style
# error, and leaves no generated file (a stale one from an earlier run is removed, so it cannot be
# linked by mistake).
#   fails_on_error.sh TESSC SOURCE INCLUDE_DIR...
set -uo pipefail
tessc=$1
src=$2
shift 2
args=(-std=c++20)
for d in "$@"; do args+=("-I$d"); done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "// stale output of an earlier run" >"$dir/out.cc"
"$tessc" --emit=cpp -o "$dir/out.cc" --depfile "$dir/out.d" "$src" -- "${args[@]}" 2>"$dir/err"
rc=$?
if [[ $rc -ne 1 ]]; then echo "expected exit status 1, got $rc"; cat "$dir/err"; exit 1; fi
if [[ -e $dir/out.cc ]]; then echo "a generated file exists despite the error"; exit 1; fi
if ! grep -q "error: parallel_for over '.*' cannot be parallelized" "$dir/err"; then
  echo "missing the clang-style error:"; cat "$dir/err"; exit 1
fi
echo "OK: tessc failed as it should"
