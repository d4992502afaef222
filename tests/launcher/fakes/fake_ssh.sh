#!/bin/sh
# Stands in for ssh in the hostfile tests: `fake_ssh.sh [OPTIONS...] HOST COMMAND` appends
# "HOST<TAB>COMMAND" to $FAKE_SSH_LOG and runs COMMAND here with sh, stdin passed through, like
# `ssh HOST COMMAND` would on HOST. Options (words starting with -) are skipped; -o takes a value.
while [ $# -gt 0 ]; do
  case $1 in
    -o) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
printf '%s\t%s\n' "$host" "$*" >> "${FAKE_SSH_LOG:-/dev/null}"
# Like sshd: run the command with a clean environment (no TESSERA_*, nothing the launcher set),
# but for the sanitizers' options, as an sshd that accepts them (AcceptEnv *SAN_OPTIONS) would:
# a sanitized "remote" process then uses the stage's suppressions and report files
# (scripts/sanitize.sh) like a local one.
cmd="$*"
set -- PATH="$PATH" HOME="${HOME:-/}"
for name in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
  eval "isset=\${$name+x} value=\${$name-}"
  if [ -n "$isset" ]; then set -- "$@" "$name=$value"; fi
done
# FAKE_SSH_DETACH=1: in a new session, so that signals sent to this "ssh" do not reach the
# command (as on a real remote host); setsid -w still waits and passes its exit status on.
if [ -n "${FAKE_SSH_DETACH:-}" ]; then
  exec setsid -w env -i "$@" sh -c "$cmd"
fi
exec env -i "$@" sh -c "$cmd"
