#!/bin/sh
# Stands in for tessera-server in the launcher tests. Prints "<role> <rank> up", records its
# pid, arguments and TESSERA_* environment in $FAKE_LOG_DIR/<role>-<rank>.pid/.args/.env, and:
#   coordinator: writes $FAKE_ENDPOINT (default tcp://127.0.0.1:5555) to its endpoint file
#                atomically (tmp + rename), unless FAKE_COORDINATOR=never (never writes) or
#                FAKE_COORDINATOR=die (exits 7 first);
#   both: print a line, then wait until SIGTERM and exit 0 -- or exit 0 at once when
#   FAKE_EXIT_AFTER_START is set, or (servers) exit $FAKE_SERVER_EXIT when that is set.
# Flags override the TESSERA_* environment, as in the real server.
role=${TESSERA_ROLE:-}
rank=${TESSERA_RANK:-0}
endpoint_file=${TESSERA_ENDPOINT_FILE:-}
all_args="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --role) role=$2; shift 2 ;;
    --rank) rank=$2; shift 2 ;;
    --endpoint-file) endpoint_file=$2; shift 2 ;;
    *) shift ;;
  esac
done
if [ "$role" = coordinator ]; then rank=0; fi
log=${FAKE_LOG_DIR:-/tmp}/$role-$rank
trap 'echo "$role $rank stopping"; exit 0' TERM
if [ "$role" = coordinator ]; then
  case ${FAKE_COORDINATOR:-} in
    die) echo "coordinator failing on purpose" >&2; exit 7 ;;
    never) ;;
    *) if [ -n "$endpoint_file" ]; then
         printf '%s\n' "${FAKE_ENDPOINT:-tcp://127.0.0.1:5555}" > "$endpoint_file.tmp"
         mv "$endpoint_file.tmp" "$endpoint_file"
       fi ;;
  esac
fi
echo "$role $rank up"
# Recorded after the line above, and atomically: fake workers wait for these files, so once they
# exist the launcher has the "up" line in its pipe.
echo $$ > "$log.pid"
echo "$all_args" > "$log.args.tmp" && mv "$log.args.tmp" "$log.args"
env | grep '^TESSERA_' | sort > "$log.env.tmp" && mv "$log.env.tmp" "$log.env"
[ -n "${FAKE_EXIT_AFTER_START:-}" ] && exit 0
if [ "$role" = server ] && [ -n "${FAKE_SERVER_EXIT:-}" ]; then
  echo "server $rank failing on purpose" >&2
  exit "$FAKE_SERVER_EXIT"
fi
while :; do
  sleep 1000 &
  wait $!
done
