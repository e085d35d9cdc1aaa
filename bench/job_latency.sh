#!/bin/bash
# job_latency.sh -- how long one small job takes from `zkfarm submit` to
# `zkfarm wait` returning, on an idle farm: the latency a client sees for a
# proof of a few milliseconds, where the farm's own waits (the intake's poll
# of the queues, dispatch, verification, the done marker) are most of it.
#
#   bench/job_latency.sh [--jobs 12] [--rounds 2] [--constraints 1024]
#       [--curve bn254] [--device 0 | --cpu] [--redis-args "--hz 100"]
#       [--coordinator-args "--intake-poll-ms 200"]
#       [--base-coordinator PATH]
#
# Needs zkfarm, zkfarm-coordinator and zkfarm-worker (ZKFARM_BIN, default
# bazel-bin, the layout of tests/gpu/farm_bundle.sh) and redis-server on
# PATH. Steps: `zkfarm gen-circuit` (328 public inputs, as the PoRep
# partition profile) and its witness, `zkfarm setup` (test-only key); then,
# for each round and each coordinator (this tree's, and with
# --base-coordinator another build's, the two alternating: base first in
# odd rounds), a fresh Redis (redis-server --save "" plus --redis-args), a
# coordinator with its defaults (plus --coordinator-args), one worker
# (--slots 1 --prefetch 1), `zkfarm circuit add`, a warm-up job, and then
# --jobs one-partition jobs one after another, each submitted after a
# random pause of 0-250 ms (so the submissions fall anywhere in the
# intake's poll cycle, as a client's would), each waited for with
# `zkfarm wait`. Per job: the wall time of submit + wait (two CLI
# processes, what a script calling the CLI sees), and from the job record
# its queued time (submitted_at to started_at: the intake's take) and its
# running time (started_at to finished_at: dispatch, proof, verification,
# the result stored). Prints per coordinator the median, 10th and 90th
# percentile and mean of the wall time and the queued and running medians.
# Every job must end done (verified by the coordinator). Not a test:
# numbers go to BENCHMARKS.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
ZKFARM=$BIN/cli/zkfarm
jobs=12 rounds=2 constraints=1024 curve=bn254 device="" keep=0
redis_args=() coordinator_args=() base_coordinator=""
while (($#)); do
  case $1 in
    --jobs) jobs=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --constraints) constraints=$2; shift ;;
    --curve) curve=$2; shift ;;
    --device) device=$2; shift ;;
    --cpu) device="" ;;
    --redis-args) read -r -a redis_args <<<"$2"; shift ;;
    --coordinator-args) read -r -a coordinator_args <<<"$2"; shift ;;
    --base-coordinator) base_coordinator=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "job_latency.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for n in "$jobs" "$rounds"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "job_latency.sh: --jobs and --rounds take positive integers, got '$n'" >&2; exit 2; }
done
[[ -z $base_coordinator || -x $base_coordinator ]] ||
  { echo "job_latency.sh: --base-coordinator $base_coordinator is not an executable file" >&2; exit 2; }

# shellcheck source=bench/farm_bench_lib.sh
source "$HERE/farm_bench_lib.sh"
bench_work zkfarm-latency

"$ZKFARM" gen-circuit --curve "$curve" --constraints "$constraints" --r1cs "$WORK/c.r1cs" --wtns "$WORK/w.wtns" \
  --seed 1 >/dev/null
"$ZKFARM" setup "$WORK/c.r1cs" "$WORK/c.zkey" --seed 1 ${device:+--device "$device"} >/dev/null
if [[ -n $device ]]; then backend=(--device "$device"); else backend=(--cpu); fi

# One coordinator's run: its jobs' "wall queued running" (ms) lines to $WORK/LABEL.txt.
run_one() {
  local label=$1 coordinator=$2 run_pids=() port job i t0 wall
  bench_redis "$WORK/redis-$label.log" "${redis_args[@]}"
  run_pids+=("$redis_pid")
  export ZKFARM_REDIS=redis://127.0.0.1:$redis_port ZKFARM_ARTIFACTS=$WORK/artifacts-$label
  mkdir -p "$ZKFARM_ARTIFACTS"
  port=$(free_port 35755)
  "$coordinator" --id "latency-$label" --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" --witness-root "$WORK" \
    --listen "tcp://127.0.0.1:$port" --metrics-listen "127.0.0.1:$(free_port 39660)" "${coordinator_args[@]}" \
    >"$WORK/coordinator-$label.log" 2>&1 &
  run_pids+=($!)
  "$BIN/worker/zkfarm-worker" "${backend[@]}" --id "latency-$label" --coordinator "tcp://127.0.0.1:$port" \
    --artifacts "$ZKFARM_ARTIFACTS" --witness-root "$WORK" --witgen-workers 0 --prefetch 1 --slots 1 \
    --metrics-listen "127.0.0.1:$(free_port 39670)" >"$WORK/worker-$label.log" 2>&1 &
  run_pids+=($!)
  pids+=("${run_pids[@]:1}")
  local circuit
  circuit=$("$ZKFARM" circuit add "$WORK/c.zkey" --r1cs "$WORK/c.r1cs")
  job=$("$ZKFARM" submit "$circuit" "$WORK/w.wtns")
  "$ZKFARM" wait "$job" --quiet --timeout 120 >/dev/null
  for ((i = 0; i < jobs; i++)); do
    sleep "0.$(printf %03d $((RANDOM % 250)))"
    t0=$(now)
    job=$("$ZKFARM" submit "$circuit" "$WORK/w.wtns")
    "$ZKFARM" wait "$job" --quiet --timeout 120 >"$WORK/result.json" ||
      { echo "job $job did not end done: $(cat "$WORK/result.json")" >&2; tail -5 "$WORK/coordinator-$label.log" >&2; exit 1; }
    wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
    # The job record's times (unix seconds, milliseconds precision).
    local submitted started finished
    submitted=$(sed -n 's/.*"submitted_at":\([0-9.]*\).*/\1/p' "$WORK/result.json")
    started=$(sed -n 's/.*"started_at":\([0-9.]*\).*/\1/p' "$WORK/result.json")
    finished=$(sed -n 's/.*"finished_at":\([0-9.]*\).*/\1/p' "$WORK/result.json")
    [[ -n $submitted && -n $started && -n $finished ]] ||
      { echo "job $job: no submitted_at / started_at / finished_at in $(cat "$WORK/result.json")" >&2; exit 1; }
    awk -v wall="$wall" -v a="$submitted" -v b="$started" -v c="$finished" \
      'BEGIN { printf "%s %.0f %.0f\n", wall, (b - a) * 1000, (c - b) * 1000 }' >>"$WORK/$label.txt"
  done
  kill "${run_pids[@]}" 2>/dev/null || true
  wait "${run_pids[@]}" 2>/dev/null || true
}

for ((round = 1; round <= rounds; round++)); do
  if [[ -z $base_coordinator ]]; then
    run_one this "$BIN/coordinator/zkfarm-coordinator"
  elif ((round % 2)); then
    run_one base "$base_coordinator"
    run_one this "$BIN/coordinator/zkfarm-coordinator"
  else
    run_one this "$BIN/coordinator/zkfarm-coordinator"
    run_one base "$base_coordinator"
  fi
done

# stats FILE COLUMN: count, median, 10th and 90th percentile, mean of a column.
stats() {
  cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1; s += $1 }
    END { printf "%d %.1f %.1f %.1f %.1f\n", NR, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2,
          v[int((NR - 1) * 0.1) + 1], v[int((NR - 1) * 0.9) + 1], s / NR }'
}
echo "| coordinator | jobs | submit -> done ms: median | p10 | p90 | mean | queued ms (median) | running ms (median) |"
echo "|---|---|---|---|---|---|---|---|"
for label in base this; do
  [[ -s $WORK/$label.txt ]] || continue
  read -r n median p10 p90 mean < <(stats "$WORK/$label.txt" 1)
  read -r _ queued _ < <(stats "$WORK/$label.txt" 2)
  read -r _ running _ < <(stats "$WORK/$label.txt" 3)
  printf "| %s | %d | %s | %s | %s | %s | %.0f | %.0f |\n" "$label" "$n" "$median" "$p10" "$p90" "$mean" "$queued" "$running"
done
