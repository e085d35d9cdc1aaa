#!/bin/bash
# soak.sh -- the cluster soak: 500 small jobs (BN254 and BLS12-381, 1-3
# partitions each) through 4 CPU workers, with one worker and then the
# coordinator SIGKILLed midway; every job must end done exactly once with
# every partition proof verifying (tests/cluster/soak_test.cc).
#
#   tools/soak.sh [JOBS]
#
# Not part of `bazel test //...` (the target is tagged manual and soak).
# Prints the test's SOAK line (jobs, partitions, seconds, jobs/s) at the end;
# the exit status is the test's.
set -uo pipefail

case ${1:-} in
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
JOBS=${1:-500}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: JOBS must be a positive integer, got '$JOBS'" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
read -r -a BAZEL_FLAGS <<<"${ZKFARM_BAZEL_FLAGS:-}"  # extra bazel flags, word-split
bazel test //tests/cluster:soak_test --test_env=ZKFARM_SOAK_JOBS="$JOBS" --test_output=errors \
  --test_tag_filters=soak "${BAZEL_FLAGS[@]}"
status=$?
grep -h '^SOAK ' bazel-testlogs/tests/cluster/soak_test/test.log || echo "soak.sh: no SOAK line in the test log" >&2
exit $status
