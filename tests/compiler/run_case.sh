#!/usr/bin/env bash
# One golden corpus case: runs tessc on SOURCE with clang's -verify (checking every
# `expected-remark/error/note` comment against the diagnostics, locations included), then checks the
# emitted schedule JSON against the file's `JSON:` FileCheck lines. A `// TESSC-ARGS: ...` line adds
# compiler flags for that case.
#   run_case.sh TESSC FILECHECK SOURCE INCLUDE_DIR...
set -euo pipefail
tessc=$1
filecheck=$2
src=$3
shift 3
args=(-std=c++20)
for d in "$@"; do args+=("-I$d"); done
extra=$(sed -n 's|^// TESSC-ARGS: ||p' "$src")
# shellcheck disable=SC2206  # word splitting of the flag list is intended
[[ -n $extra ]] && args+=($extra)
# TESSC_PCH: <tessera/tessera.h> precompiled (tests/compiler/CMakeLists.txt). Only for a case that
# includes it first and adds no flags of its own, for which reading it from there is the same as
# parsing it.
if [[ -n ${TESSC_PCH:-} && -z $extra &&
      $(grep -m1 '^#include' "$src") == '#include <tessera/tessera.h>' ]]; then
  args+=(-include-pch "$TESSC_PCH")
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$tessc" "$src" --emit=json -- "${args[@]}" -Xclang -verify >"$out"
if grep -q '// JSON' "$src"; then
  "$filecheck" --check-prefix=JSON --input-file="$out" "$src"
fi
