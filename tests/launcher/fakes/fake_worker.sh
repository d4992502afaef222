#!/bin/sh
# Stands in for a user program in the launcher tests. Worker r does what its (r+1)-th argument
# says (the last one when there are fewer arguments):
#   print:N     N lines on stdout and one on stderr, then exit 0
#   exit:C      exit with status C
#   crash       die of SIGSEGV
#   hang        write its pid to $FAKE_LOG_DIR/hang-<rank>.pid, then sleep until killed
#   stubborn    like hang, but ignore SIGTERM (only SIGKILL stops it)
#   nonl        print a last line without a trailing newline, exit 0
#   await:B     wait until the file $FAKE_LOG_DIR/go exists, then do B
#   after:R:B   wait until worker R is about to exit (exit:C), then do B
# It also records its TESSERA_* environment and argv in $FAKE_LOG_DIR/worker-<rank>.env/.args.
rank=${TESSERA_RANK:-0}
dir=${FAKE_LOG_DIR:-/tmp}
# Like a real worker, wait (bounded, 10 s) until the coordinator and the servers are up, so that
# a job that ends quickly still saw them all start. FAKE_NO_WAIT=1 skips this (--from-env tests).
if [ -z "${FAKE_NO_WAIT:-}" ]; then
  k=0
  while [ $k -lt 1000 ]; do
    up=1
    [ -e "$dir/coordinator-0.env" ] || up=0
    s=0
    while [ $s -lt "${TESSERA_NUM_SERVERS:-0}" ]; do
      [ -e "$dir/server-$s.env" ] || up=0
      s=$((s + 1))
    done
    [ $up -eq 1 ] && break
    sleep 0.01
    k=$((k + 1))
  done
fi
echo "$*" > "$dir/worker-$rank.args"
env | grep '^TESSERA_' | sort > "$dir/worker-$rank.env"
i=0
what=
for arg in "$@"; do
  what=$arg
  [ $i -eq "$rank" ] && break
  i=$((i + 1))
done
case $what in
  await:*)
    # Wait (bounded, 20 s) until the test creates $FAKE_LOG_DIR/go, then do the rest.
    k=0
    while [ ! -e "$dir/go" ] && [ $k -lt 2000 ]; do sleep 0.01; k=$((k + 1)); done
    what=${what#await:} ;;
  after:*)
    # Wait (bounded, 20 s) until worker R has written $FAKE_LOG_DIR/exiting-R, then do the rest.
    rest=${what#after:}
    k=0
    while [ ! -e "$dir/exiting-${rest%%:*}" ] && [ $k -lt 2000 ]; do sleep 0.01; k=$((k + 1)); done
    what=${rest#*:} ;;
esac
case $what in
  print:*)
    n=${what#print:}
    j=1
    while [ $j -le "$n" ]; do echo "line $j of worker $rank"; j=$((j + 1)); done
    echo "a warning from worker $rank" >&2
    exit 0 ;;
  exit:*)
    echo "worker $rank exiting with ${what#exit:}"
    : > "$dir/exiting-$rank"
    exit "${what#exit:}" ;;
  crash) echo "worker $rank crashing"; kill -SEGV $$ ;;
  hang|stubborn)
    [ "$what" = stubborn ] && trap '' TERM
    echo $$ > "$dir/hang-$rank.pid.tmp" && mv "$dir/hang-$rank.pid.tmp" "$dir/hang-$rank.pid"
    echo "worker $rank hanging"
    while :; do sleep 1000; done ;;
  nonl) printf 'no newline at the end'; exit 0 ;;
  *) echo "fake_worker: unknown behaviour '$what'" >&2; exit 99 ;;
esac
