#!/usr/bin/env bash
# The fault-injection soak: runs the fault-injection suite (tests/launcher_faults: SIGKILL and
# SIGSTOP of the coordinator, servers and workers of real mf and lda jobs, under `tessera run`
# and --from-env) over and over with fresh random points, and stops at the first failure,
# printing the seed that replays it (TESSERA_FAULT_SEED=N). Each round also SIGKILLs a random
# process (worker, server or coordinator) of checkpointed mf and lda jobs under --max-restarts at a
# random point and checks the restarted job's result: bit-exact for mf and one-worker lda, the
# same quality for two-worker lda (launcher_checkpoint_test), when that test is built.
#
#   scripts/fault_soak.sh [ROUNDS]        default 20 rounds (about a minute each on 2 cores)
#   BUILD_DIR=build FILTER='Mf*' scripts/fault_soak.sh 100
#
# Needs a build with the test (ninja -C build launcher_fault_injection_test).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${1:-20}
FILTER=${FILTER:-*}
TEST="$BUILD_DIR/tests/launcher_fault_injection_test"
CHECKPOINT_TEST="$BUILD_DIR/tests/launcher_checkpoint_test"
if [[ ! -x "$TEST" ]]; then
  echo "fault_soak: $TEST not found; build it: ninja -C $BUILD_DIR launcher_fault_injection_test" >&2
  exit 2
fi
for ((round = 1; round <= ROUNDS; ++round)); do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  start=$(date +%s)
  if ! TESSERA_FAULT_SEED=$seed "$TEST" --gtest_filter="FaultInjectionTest.$FILTER" \
      --gtest_brief=1 > "/tmp/fault_soak.$$.log" 2>&1; then
    cat "/tmp/fault_soak.$$.log"
    echo "fault_soak: round $round failed; replay with TESSERA_FAULT_SEED=$seed $TEST" >&2
    exit 1
  fi
  if [[ -x "$CHECKPOINT_TEST" ]] && ! TESSERA_FAULT_SEED=$seed "$CHECKPOINT_TEST" \
      --gtest_filter='CheckpointRestartTest.Killed*:CheckpointRestartTest.Lda*' --gtest_brief=1 > "/tmp/fault_soak.$$.log" 2>&1; then
    cat "/tmp/fault_soak.$$.log"
    echo "fault_soak: round $round failed; replay with TESSERA_FAULT_SEED=$seed $CHECKPOINT_TEST" >&2
    exit 1
  fi
  echo "fault_soak: round $round/$ROUNDS passed (seed $seed, $(( $(date +%s) - start )) s)"
done
rm -f "/tmp/fault_soak.$$.log"
echo "fault_soak: all $ROUNDS rounds passed"
