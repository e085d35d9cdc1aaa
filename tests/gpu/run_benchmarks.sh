#!/usr/bin/env bash
# run_benchmarks.sh BUNDLE LOGDIR [SECONDS] -- the H200 benchmark session of
# BENCHMARKS.md in one command, from a bundle made by build_bundle.sh:
#   1. the GPU tests named in TESTS (default setup_device_test: the GPU setup
#      equals the CPU setup byte for byte);
#   2. partition_benchmark at PoRep-32G shape (130.3M constraints, BLS12-381):
#      key made on the device, proof on the device, verified on the CPU;
#   3. partition_benchmark --cpu-constraints=2^20: CPU prover vs GPU prover;
#   4. gpu_benchmark: MSM G1 2^20..2^26, G2 2^20..2^24 (random and 0/1-heavy
#      scalars), NTT 2^20..2^27, both curves.
# Each step gets what is left of SECONDS (default 420) so the whole run ends
# inside one call to the GPU host; a step cut short says so. Full logs go to
# LOGDIR; the last lines printed are each step's results, then the steps that
# failed. The exit status is 0 only when every step ran and exited 0 (a step
# that failed, timed out or had no time left makes it 1).
# Environment: TESTS, PARTITION_CONSTRAINTS (default 130300000),
# PARTITION_ARGS (extra partition_benchmark arguments, e.g.
# --budgets-gib=131.3,80,40,24,16 for the device memory budgets),
# CPU_CONSTRAINTS (default 1048576; 0 skips step 3), BENCH_ARGS (extra
# gpu_benchmark arguments, e.g. --msm-max-log=0 for the NTT rows only).
set -uo pipefail
bundle=$1
logs=$2
deadline=$((SECONDS + ${3:-420}))
mkdir -p "$logs"
left() { echo $((deadline - SECONDS)); }
failed=()
step() {  # step NAME SECONDS CMD...: runs CMD with at most SECONDS (and what is left)
  local name=$1 limit=$2
  shift 2
  local budget
  budget=$(left)
  [ "$limit" -lt "$budget" ] && budget=$limit
  if [ "$budget" -le 5 ]; then
    echo "== $name: skipped (no time left)"
    failed+=("$name (not run: no time left)")
    return
  fi
  echo "== $name (at most ${budget} s)"
  local start=$SECONDS
  timeout "$budget" "$@" >"$logs/$name.log" 2>&1
  local status=$?
  echo "== $name: exit $status after $((SECONDS - start)) s"
  if [ "$status" -ne 0 ]; then
    if [ "$status" -eq 124 ]; then failed+=("$name (cut short after ${budget} s)"); else failed+=("$name (exit $status)"); fi
  fi
}
if ! nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$logs/nvidia_smi.txt"; then
  failed+=("nvidia-smi (no GPU visible)")
fi
nproc; free -g | head -2

for test in ${TESTS:-setup_device_test}; do
  step "$test" 150 "$bundle/run" "$test"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|^\[  FAILED' "$logs/$test.log"
done

# shellcheck disable=SC2086
step partition 240 "$bundle/run" partition_benchmark --constraints="${PARTITION_CONSTRAINTS:-130300000}" --repeats=3 \
  --msm-breakdown ${PARTITION_ARGS:-}
grep -E '^  [a-z]|^    msm|RESULT|CHECK|run [0-9]|partition_benchmark:' "$logs/partition.log"

if [ "${CPU_CONSTRAINTS:-1048576}" != 0 ]; then
  step cpu_ratio 90 "$bundle/run" partition_benchmark --constraints=0 --cpu-constraints="${CPU_CONSTRAINTS:-1048576}" \
    --repeats=2
  grep -E 'RESULT|CHECK|groth16_prove|median|partition_benchmark:' "$logs/cpu_ratio.log"
fi

# shellcheck disable=SC2086
step gpu_benchmark 600 "$bundle/run" gpu_benchmark ${BENCH_ARGS:-}
if grep -q '==== summary' "$logs/gpu_benchmark.log"; then
  sed -n '/==== summary/,$p' "$logs/gpu_benchmark.log"
else
  echo "(gpu_benchmark cut short: the rows it finished)"
  grep -E ' ms ' "$logs/gpu_benchmark.log" | cut -c1-200
fi

if [ ${#failed[@]} -gt 0 ]; then
  printf '== FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "== all steps passed"
