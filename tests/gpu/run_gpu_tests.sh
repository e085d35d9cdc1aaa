#!/usr/bin/env bash
# run_gpu_tests.sh [LOGDIR] [BENCHMARK ARGS...] -- runs the GPU test binaries
# (every bin/*_test, or GPU_TESTS="a_test b_test"), then the benchmark (unless
# GPU_BENCH=0), from a bundle made by build_bundle.sh (this script
# sits in the bundle's root). Logs go to LOGDIR (default: the bundle dir);
# the last lines printed are the test counts and the benchmark summary.
# Exit status: 0 only when every test ran on a GPU and passed and the
# benchmark's checks held. Non-zero if any test or benchmark check failed
# (or timed out: GPU_TEST_TIMEOUT / GPU_BENCH_TIMEOUT seconds, default 600 /
# 900), and also when nothing was tested: no GPU visible (nvidia-smi lists
# none), no test binary in the bundle (or a GPU_TESTS name missing), or a
# test that reports it skipped for want of a device. Exit 3 for those.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$here}
shift || true
mkdir -p "$logs"
nvidia-smi --query-gpu=name,uuid,memory.total,clocks.sm,clocks.max.sm,power.draw --format=csv >"$logs/nvidia_smi.txt" 2>&1 || true
# Every *_test binary in the bundle (or those named in GPU_TESTS), one log each.
test_status=0
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${gpus:-0}" -eq 0 ]; then
  echo "run_gpu_tests: no GPU visible (nvidia-smi lists none): nothing can be tested here" >&2
  exit 3
fi
tests=${GPU_TESTS:-$(cd "$here/bin" 2>/dev/null && compgen -G '*_test' | tr '\n' ' ')}
if [ -z "${tests// /}" ]; then
  echo "run_gpu_tests: no test binaries (bin/*_test) in $here" >&2
  exit 3
fi
for t in $tests; do
  if [ ! -x "$here/bin/$t" ]; then
    echo "run_gpu_tests: $t is not in $here/bin" >&2
    exit 3
  fi
done
skipped=""
for t in $tests; do
  echo "== $t"
  timeout "${GPU_TEST_TIMEOUT:-600}" "$here/run" "$t" --gtest_output=xml:"$logs/$t.xml" >"$logs/$t.log" 2>&1
  status=$?
  [ $status -eq 0 ] || test_status=$status
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|tests? (FAILED|SKIPPED)|SKIPPED: no CUDA' "$logs/$t.log"
  grep -E '^\[  FAILED  \]' "$logs/$t.log" | sort -u
  echo "$t exit $status"
  # A test that ran nothing on a device is not a pass.
  grep -q 'SKIPPED: no CUDA' "$logs/$t.log" && skipped="$skipped $t"
done
if [ -n "$skipped" ]; then
  echo "run_gpu_tests: skipped for want of a CUDA device:$skipped" >&2
  [ $test_status -eq 0 ] && test_status=3
fi
[ "${GPU_BENCH:-1}" = 0 ] && { echo "tests exit $test_status (benchmark skipped: GPU_BENCH=0)"; exit $test_status; }
timeout "${GPU_BENCH_TIMEOUT:-900}" "$here/run" gpu_benchmark "$@" >"$logs/gpu_benchmark.log" 2>&1
bench_status=$?
sed -n '/==== summary/,$p' "$logs/gpu_benchmark.log"
[ $bench_status -eq 0 ] || tail -5 "$logs/gpu_benchmark.log"
echo "tests exit $test_status, gpu_benchmark exit $bench_status"
[ $test_status -eq 0 ] && [ $bench_status -eq 0 ]
