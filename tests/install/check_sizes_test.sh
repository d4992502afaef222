#!/usr/bin/env bash
# scripts/check_sizes.sh on small git repositories made here: a tracked file over its limit fails
# and is named with its line count, files at the limit, untracked ones and build folders pass,
# and the allow-list admits a file only with a reason and only while the file needs it.
#
#   check_sizes_test.sh SOURCE_DIR
set -euo pipefail

check=$1/scripts/check_sizes.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera_check_sizes_test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A file of N lines.
lines() { seq 1 "$2" > "$work/repo/$1"; }

# Runs the check on the repository; $1 is the expected exit code, $2 a pattern its stderr must
# hold (empty: none).
expect() {
  local want=$1 pattern=$2 rc=0
  bash "$check" --root "$work/repo" > "$work/out" 2> "$work/err" || rc=$?
  [[ $rc == "$want" ]] || { cat "$work/err"; fail "exit $rc, expected $want ($3)"; }
  if [[ -n "$pattern" ]]; then
    grep -q -- "$pattern" "$work/err" || { cat "$work/err"; fail "stderr lacks '$pattern' ($3)"; }
  fi
}

mkdir -p "$work/repo/src" "$work/repo/docs" "$work/repo/scripts" "$work/repo/build"
git -C "$work/repo" init -q
lines src/a.cc 800
lines src/CMakeLists.txt 800
lines docs/a.md 500
lines build/long.md 900
git -C "$work/repo" add -A
expect 0 "" "every file at its limit"

lines src/untracked.cc 900
expect 0 "" "an untracked file does not count"
rm "$work/repo/src/untracked.cc"

lines src/a.cc 801
expect 1 "src/a.cc: 801 lines, over the limit of 800" "a source file one line over"
lines src/a.cc 800

lines docs/a.md 501
lines src/b.py 1000
git -C "$work/repo" add -A
expect 1 "docs/a.md: 501 lines, over the limit of 500" "a doc one line over"
expect 1 "src/b.py: 1000 lines" "both offenders named"

printf '%s\n' "# comment" "" "docs/a.md   a reference page, split later" \
  "src/b.py generated" > "$work/repo/scripts/size_allowlist.txt"
expect 0 "" "offenders allowed with reasons"

printf '%s\n' "docs/a.md" "src/b.py generated" > "$work/repo/scripts/size_allowlist.txt"
expect 1 "size_allowlist.txt:1: 'docs/a.md' has no reason" "an entry without a reason"

printf '%s\n' "docs/a.md why" "src/b.py why" "src/gone.cc why" > "$work/repo/scripts/size_allowlist.txt"
expect 1 "size_allowlist.txt:3: 'src/gone.cc' is not a tracked file" "an entry for a missing file"

printf '%s\n' "docs/a.md why" "src/b.py why" "src/a.cc why" > "$work/repo/scripts/size_allowlist.txt"
expect 1 "size_allowlist.txt:3: 'src/a.cc' has 800 lines, within its limit" "an entry no longer needed"

echo "PASS"
