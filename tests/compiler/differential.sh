#!/usr/bin/env bash
# Differential run of one program built with tessera_add_program: serially (TESSERA_THREADS=1),
# with 2 and 3 executor threads, and under `tessera run -w 2 -s 1` when LAUNCHER is given; every
# run must print exactly what the serial run printed (the programs print exact digests).
#   differential.sh PROGRAM [LAUNCHER]
set -uo pipefail
program=$1
launcher=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {  # name, command...: keeps the digest lines ("name value") of stdout in $dir/name.out
  local name=$1
  shift
  if ! "$@" >"$dir/$name.raw" 2>"$dir/$name.err"; then
    echo "FAIL: $name exited with an error"; cat "$dir/$name.err" "$dir/$name.raw"; exit 1
  fi
  # The runtime's log lines share stdout; a launcher prefixes worker output with "[worker N] ".
  sed -E 's/^\[worker [0-9]+\] //' "$dir/$name.raw" | grep -E '^[A-Za-z_]+ -?[0-9]+$' >"$dir/$name.out"
}
run serial env -u TESSERA_RANK -u TESSERA_NUM_WORKERS TESSERA_THREADS=1 "$program"
if [[ ! -s $dir/serial.out ]]; then echo "FAIL: the serial run printed nothing"; exit 1; fi
for t in 2 3; do
  run "threads$t" env -u TESSERA_RANK -u TESSERA_NUM_WORKERS TESSERA_THREADS=$t "$program"
done
names=(threads2 threads3)
if [[ -n $launcher ]]; then
  run workers2 env -u TESSERA_THREADS "$launcher" run -w 2 -s 1 -- "$program"
  names+=(workers2)
fi
status=0
for n in "${names[@]}"; do
  if ! diff -u "$dir/serial.out" "$dir/$n.out" >"$dir/$n.diff"; then
    echo "FAIL: $n differs from the serial run:"; cat "$dir/$n.diff"; status=1
  else
    echo "OK: $n matches the serial run ($(wc -l <"$dir/serial.out") digests)"
  fi
done
exit $status
