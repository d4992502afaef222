#!/usr/bin/env bash
# Fails on a file grown too long to read top to bottom: a tracked source file (.cc .h .cpp .hpp
# .capnp .cmake .sh .py, CMakeLists.txt) over 800 lines or a Markdown file over 500 lines, unless
# the allow-list names it with a reason. Only files git tracks count (`git ls-files`); a folder
# named build or build-* is skipped.
#
#   scripts/check_sizes.sh [--root DIR]
#
# --root DIR   check the git work tree at DIR (default: this script's repository)
#
# The allow-list is DIR/scripts/size_allowlist.txt: one `path  reason` per line (path relative to
# DIR, then whitespace, then why the file may stay long), `#` comments and blank lines ignored. An
# entry without a reason, for a file that is not tracked, or for a file now within its limit is
# itself an error, so the list only ever holds what still needs it.
#
# Exit 0: every file within its limit or allowed; 1: an offender or a bad entry, each named on
# stderr with its line count; 2: bad usage.
set -euo pipefail

readonly SOURCE_LIMIT=800
readonly DOC_LIMIT=500

root="$(cd "$(dirname "$0")/.." && pwd)"
while (($#)); do
  case $1 in
    --root) [[ $# -ge 2 ]] || { echo "check_sizes: --root needs a directory" >&2; exit 2; }
            root=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_sizes: unknown argument '$1' (usage: check_sizes.sh [--root DIR])" >&2; exit 2 ;;
  esac
done
root=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null) ||
  { echo "check_sizes: $root is not in a git work tree" >&2; exit 2; }
cd "$root"
allowlist=scripts/size_allowlist.txt

# Sets l to the limit for path $1, or to nothing when the path is not checked (no subshell: this
# runs once per tracked file).
limit_for() {
  l=
  case "/$1" in
    */build/*|*/build-*/*) return ;;
  esac
  case "$1" in
    *.md) l=$DOC_LIMIT ;;
    *.cc|*.h|*.cpp|*.hpp|*.capnp|*.cmake|*.sh|*.py|CMakeLists.txt|*/CMakeLists.txt)
      l=$SOURCE_LIMIT ;;
  esac
}

# Line counts of every checked file that exists (a deleted file may still be in the index).
declare -A lines=() limit=()
files=()
while IFS= read -r -d '' f; do
  limit_for "$f"
  [[ -n "$l" && -f "$f" ]] || continue
  files+=("$f")
  limit[$f]=$l
done < <(git ls-files -z)
if ((${#files[@]})); then
  i=0
  while read -r count _; do
    ((i < ${#files[@]})) || break          # wc's "total" line
    lines[${files[i]}]=$count
    i=$((i + 1))
  done < <(printf '%s\0' "${files[@]}" | wc -l --files0-from=-)
fi

failed=0
declare -A allowed=()
if [[ -f "$allowlist" ]]; then
  n=0
  while IFS= read -r entry || [[ -n "$entry" ]]; do
    n=$((n + 1))
    entry="${entry%%#*}"
    read -r path reason <<< "$entry" || true
    [[ -n "$path" ]] || continue
    where="$allowlist:$n"
    if [[ -z "$reason" ]]; then
      echo "$where: '$path' has no reason (one 'path  reason' per line)" >&2; failed=1
    elif [[ -z "${lines[$path]+set}" ]]; then
      echo "$where: '$path' is not a tracked file this check covers: remove the entry" >&2
      failed=1
    elif ((lines[$path] <= limit[$path])); then
      echo "$where: '$path' has ${lines[$path]} lines, within its limit of ${limit[$path]}: remove the entry" >&2
      failed=1
    else
      allowed[$path]=1
    fi
  done < "$allowlist"
fi

for f in "${files[@]}"; do
  if ((lines[$f] > limit[$f])) && [[ -z "${allowed[$f]+set}" ]]; then
    echo "$f: ${lines[$f]} lines, over the limit of ${limit[$f]} (split it, or add it to $allowlist with a reason)" >&2
    failed=1
  fi
done
if ((failed)); then
  exit 1
fi
echo "check_sizes: ${#files[@]} files within ${SOURCE_LIMIT} lines (sources) and ${DOC_LIMIT} (Markdown), ${#allowed[@]} allowed longer"
