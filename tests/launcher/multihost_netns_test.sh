#!/usr/bin/env bash
# Two hosts on network namespaces (this machine, no root needed: unshare -rnm), joined by a veth
# pair: host A (10.78.0.1) runs the launcher and the coordinator, host B (10.78.0.2) is reached
# through an ssh stand-in that enters B's namespace. Every job binds to the wildcard address
# (--bind 0.0.0.0) and must still advertise routable addresses: a process on B that were told
# tcp://0.0.0.0:PORT would connect to B itself and the job would hang.
#   1. tessera run --hostfile (A and B) --bind 0.0.0.0
#   2. --from-env tasks as mpirun would start them, rank 0 on A and ranks 1-3 on B, --bind 0.0.0.0
#   3. --advertise ADDR is what the processes publish
#   4-6. an address no host has, advertised by the coordinator, a server or a worker's peer-mesh
#      inbox: named within seconds (the launcher, the workers), and the job fails everywhere
# Usage: multihost_netns_test.sh TESSERA TESSERA_SERVER PROGRAM
# Exit 77 (a skip, registered as such) when network namespaces cannot be made here. KEEP_WORK=1
# keeps the outputs (in a temporary directory) for a look afterwards.
set -euo pipefail
tessera=$(realpath "$1") server=$(realpath "$2") program=$(realpath "$3")

if [[ -z ${TESSERA_NETNS_INSIDE:-} ]]; then
  if ! unshare -rnm true 2>/dev/null; then
    echo "SKIP: cannot create user and network namespaces here (unshare -rnm)"
    exit 77
  fi
  exec env TESSERA_NETNS_INSIDE=1 unshare -rnm "$0" "$@"
fi

work=$(mktemp -d)
holder=
cleanup() {
  [[ -n $holder ]] && kill "$holder" 2>/dev/null
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Whether a wildcard endpoint appears in the output other than as what the coordinator listens on.
advertised_wildcard() { cat "$@" | grep -v -- '--listen tcp://0\.0\.0\.0' | grep -q 'tcp://0\.0\.0\.0'; }

# Host B: a process that holds a second network namespace open.
unshare -n sleep 600 &
holder=$!
for _ in $(seq 200); do  # until the holder has entered its namespace
  [[ $(readlink /proc/$holder/ns/net) != "$(readlink /proc/self/ns/net)" ]] && break
  sleep 0.01
done
ip link set lo up
ip link add va type veth peer name vb netns "$holder"
ip addr add 10.78.0.1/24 dev va
ip link set va up
nsenter -t "$holder" -n ip link set lo up
nsenter -t "$holder" -n ip addr add 10.78.0.2/24 dev vb
nsenter -t "$holder" -n ip link set vb up

# ssh HOST COMMAND: runs COMMAND on host A (here) or B (its namespace), stdin passed through.
cat > "$work/ssh" <<SSH
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -o) shift 2 ;; -*) shift ;; *) break ;; esac; done
host=\$1; shift
case \$host in
  10.78.0.1) exec sh -c "\$*" ;;
  10.78.0.2) exec nsenter -t $holder -n sh -c "\$*" ;;
  *) echo "ssh stand-in: unknown host \$host" >&2; exit 255 ;;
esac
SSH
chmod +x "$work/ssh"
printf '10.78.0.1 slots=1\n10.78.0.2 slots=1\n' > "$work/hosts"
cd "$work"

echo "== 1. hostfile job, --bind 0.0.0.0"
if ! timeout 120 "$tessera" run -w 2 -s 2 --hostfile "$work/hosts" --ssh "$work/ssh" \
     --bind 0.0.0.0 --log-level debug --server-bin "$server" --grace-period 2 -- "$program" \
     > out1.txt 2>&1; then
  cat out1.txt; fail "the hostfile job failed"
fi
grep -q '^\[worker 1\] probe: first line' out1.txt || { cat out1.txt; fail "worker 1 (on B) did not run"; }
grep -q 'listening on tcp://10.78.0.1:' out1.txt || { cat out1.txt; fail "the coordinator does not advertise 10.78.0.1"; }
advertised_wildcard out1.txt && { cat out1.txt; fail "an endpoint tcp://0.0.0.0 was advertised"; }
echo ok

echo "== 2. --from-env tasks: coordinator and worker 0 on A, server 0 and worker 1 on B, --bind 0.0.0.0"
export TESSERA_JOB_SECRET=netns-secret-7c41e9b2
from_env=(run -w 2 -s 1 --from-env --coordinator 10.78.0.1 --bind 0.0.0.0 --log-level debug
          --server-bin "$server" -- "$program")
pids=()
for rank in 0 1 2 3; do
  on_b=()
  (( rank % 2 == 1 )) && on_b=(nsenter -t "$holder" -n)
  SLURM_PROCID=$rank SLURM_NTASKS=4 SLURM_JOB_ID=77 SLURM_STEP_ID=0 \
    timeout 120 "${on_b[@]}" "$tessera" "${from_env[@]}" > "task$rank.txt" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
if [[ $status != 0 ]]; then cat task*.txt; fail "a --from-env task failed"; fi
grep -q '^\[worker 0\] probe: first line' task2.txt || { cat task*.txt; fail "worker 0 did not run"; }
grep -q '^\[worker 1\] probe: first line' task3.txt || { cat task*.txt; fail "worker 1 did not run"; }
grep -q 'server 0 registered at tcp://10.78.0.2:' task0.txt || { cat task*.txt; fail "the server on B does not advertise 10.78.0.2"; }
advertised_wildcard task*.txt && { cat task*.txt; fail "an endpoint tcp://0.0.0.0 was advertised"; }
# The port came from the job id, not the fixed default.
grep -q 'listening on tcp://10.78.0.1:47017 ' task0.txt && { cat task0.txt; fail "the default port was used despite SLURM_JOB_ID"; }
echo ok

echo "== 3. --advertise"
if ! timeout 120 "$tessera" run -w 1 -s 1 --bind 0.0.0.0 --advertise 10.78.0.1 --log-level debug \
     --server-bin "$server" -- "$program" > out3.txt 2>&1; then
  cat out3.txt; fail "the --advertise job failed"
fi
grep -q 'server 0 registered at tcp://10.78.0.1:' out3.txt || { cat out3.txt; fail "--advertise was not used"; }
echo ok

# A job that cannot be reached says so within seconds, naming the process and the address, and
# fails: an address no host has (10.78.0.99, on the hosts' network) advertised by the coordinator,
# by a server, or by a worker's peer-mesh inbox. Every process would otherwise wait for answers
# until a registration or exchange time-out of a minute or more.
bogus=10.78.0.99
secs_since() { echo $(( $(date +%s) - $1 )); }

echo "== 4. --advertise with an address no host has: the launcher names the coordinator's"
t0=$(date +%s)
status=0
timeout 120 "$tessera" run -w 1 -s 1 --bind 0.0.0.0 --advertise "$bogus" \
  --server-bin "$server" -- "$program" > out4.txt 2>&1 || status=$?
took=$(secs_since "$t0")
[[ $status == 124 ]] || { cat out4.txt; fail "exit $status, expected 124 (the coordinator does not answer)"; }
grep -q "^tessera: cannot reach the coordinator at tcp://$bogus:[0-9]* from .*: no connection within 5 s" out4.txt ||
  { cat out4.txt; fail "the launcher did not name the unreachable coordinator"; }
(( took < 30 )) || { cat out4.txt; fail "took ${took}s to say so"; }
echo "ok (${took}s)"

# --from-env tasks: coordinator on A, server 0 and worker 1 on B, worker 0 on A; `extra RANK`
# gives a task's own arguments.
run_tasks() {
  local name=$1; shift
  local pids=() rank on_b
  for rank in 0 1 2 3; do
    on_b=()
    (( rank % 2 == 1 )) && on_b=(nsenter -t "$holder" -n)
    # shellcheck disable=SC2046
    SLURM_PROCID=$rank SLURM_NTASKS=4 SLURM_JOB_ID=78 SLURM_STEP_ID=$name \
      timeout 120 "${on_b[@]}" "$tessera" run -w 2 -s 1 --from-env --coordinator 10.78.0.1 \
      --bind 0.0.0.0 $(extra "$rank") --heartbeat-timeout 3 --server-bin "$server" -- "$program" \
      > "$name-task$rank.txt" 2>&1 &
    pids+=($!)
  done
  statuses=()
  for pid in "${pids[@]}"; do
    local s=0
    wait "$pid" || s=$?
    statuses+=("$s")
  done
}

echo "== 5. a server that advertises an address no host has: the workers name it"
extra() { [[ $1 == 1 ]] && echo "--advertise $bogus"; true; }
t0=$(date +%s)
run_tasks bogus-server
took=$(secs_since "$t0")
for rank in 2 3; do
  [[ ${statuses[$rank]} != 0 ]] || { cat bogus-server-task*.txt; fail "worker task $rank exited 0"; }
  grep -q "cannot reach server 0 at tcp://$bogus:[0-9]* from .*: no connection within 5 s" \
    "bogus-server-task$rank.txt" || { cat bogus-server-task*.txt; fail "task $rank did not name server 0"; }
done
# The job fails everywhere (the workers' silence is reported by the coordinator), none hangs.
for rank in 0 1; do
  [[ ${statuses[$rank]} != 0 ]] || { cat bogus-server-task*.txt; fail "task $rank exited 0"; }
done
(( took < 60 )) || { cat bogus-server-task*.txt; fail "took ${took}s"; }
echo "ok (${took}s)"

echo "== 6. a worker whose peer-mesh inbox has an address no host has: its peer names it"
extra() { [[ $1 == 3 ]] && echo "--advertise $bogus"; true; }
t0=$(date +%s)
run_tasks bogus-worker
took=$(secs_since "$t0")
[[ ${statuses[2]} != 0 ]] || { cat bogus-worker-task*.txt; fail "worker 0's task exited 0"; }
grep -q "cannot reach worker 1's peer-mesh inbox at tcp://$bogus:[0-9]* from .*: no connection within 5 s" \
  bogus-worker-task2.txt || { cat bogus-worker-task*.txt; fail "worker 0 did not name worker 1's inbox"; }
for rank in 0 1 3; do
  [[ ${statuses[$rank]} != 0 ]] || { cat bogus-worker-task*.txt; fail "task $rank exited 0"; }
done
(( took < 60 )) || { cat bogus-worker-task*.txt; fail "took ${took}s"; }
echo "ok (${took}s)"
