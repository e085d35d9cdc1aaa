#!/bin/bash
# partition_stream.sh -- a stream of partitions through the farm on one GPU,
# against the same worker's kernel time: does the device wait between proofs?
#
#   bench/partition_stream.sh [--curve bls12381] [--constraints 4194304]
#       [--jobs 4] [--partitions 8] [--device 0 | --cpu] [--prefetch "0 1"]
#       [--slots "1"] [--keep] [--worker-args "--shifted-tables=off"]
#       [--base-worker PATH [--rounds 2]]
#
# Needs a CUDA build of zkfarm, zkfarm-coordinator and zkfarm-worker
# (ZKFARM_BIN, default bazel-bin; a bundle from tests/gpu/farm_bundle.sh on
# a GPU host) and redis-server on PATH. Steps: `zkfarm gen-circuit` (the
# PoRep partition profile: 328 public inputs) and its witness, `zkfarm setup
# --device` (test-only key), `zkfarm circuit add`; Redis, one coordinator.
# Then for each --slots value S and --prefetch value P, a fresh
# zkfarm-worker --device D --slots S --prefetch P (--witgen-workers 0: no
# input partitions here; S proofs on the device at once), a warm-up job
# (circuit load), then J jobs of K partitions submitted at once (every
# partition the same witness file, read and parsed anew for each). Prints
# per S and P: partitions/s from the first submission to the last job
# done, the worker's mean prove time (zkfarm_prove_duration_seconds: upload
# and kernels, the prover service's own clock), the device busy fraction
# (zkfarm_device_busy_seconds_total over the stream's wall time), the
# slots' busy fraction (zkfarm_device_task_seconds_total over S times the
# wall time: each slot's share of time in a prove call; against the next
# column, slots busy but not proving would be the prove call's own
# overhead, slots idle a supply that does not keep up), what the
# proof time alone would allow (S / mean prove time), and with nvidia-smi
# the GPU's utilization (the mean of its 200 ms samples: the share of time
# a kernel ran, the device's real use rather than one proof's wall time).
# Where the rest goes, from the coordinator's metrics: when the last job's
# submission returned, the mean wait of a partition from pending to
# dispatch (zkfarm_partition_dispatch_wait_seconds: with every slot busy,
# its queue) and the mean verification call (zkfarm_verify_duration_seconds);
# from the worker's, the mean fetch + parse of a witness
# (zkfarm_prove_stage_duration_seconds): its one preparer thread does that
# for every partition, so 1000 / that is the most partitions per second
# it can prepare. Last, a device proof's mean host time outside the
# device prover's clock (stages device_queue: the engine's lookups and any
# wait for a lane; device_release: its buffers and events freed after).
# --worker-args: more flags for every zkfarm-worker (e.g.
# "--shifted-tables=off": the engine without its precomputed tables, the
# before of a side-by-side run). --base-worker PATH: a second
# zkfarm-worker binary (another revision's: tests/gpu/farm_bundle.sh
# --base-worker) run on the same circuit, key, Redis and coordinator for
# each --slots and --prefetch value, the two alternating (base first in odd
# rounds, this one first in even ones) for --rounds rounds (default 2); a
# first column names each row's worker and round. Every proof is
# verified by the coordinator (a job is done only when all verified).
# Not a test: numbers go to BENCHMARKS.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
ZKFARM=$BIN/cli/zkfarm
curve=bls12381 constraints=4194304 jobs=4 partitions=8 device=0 prefetch_values="0 1" slot_values=1 keep=0
worker_args=() base_worker="" rounds=""
while (($#)); do
  case $1 in
    --curve) curve=$2; shift ;;
    --constraints) constraints=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --partitions) partitions=$2; shift ;;
    --device) device=$2; shift ;;
    --cpu) device="" ;;
    --prefetch) prefetch_values=$2; shift ;;
    --slots) slot_values=$2; shift ;;
    --keep) keep=1 ;;
    --worker-args) read -r -a worker_args <<<"$2"; shift ;;
    --base-worker) base_worker=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "partition_stream.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

this_worker=$BIN/worker/zkfarm-worker
if [[ -n $base_worker ]]; then
  [[ -x $base_worker ]] || { echo "partition_stream.sh: --base-worker $base_worker is not an executable file" >&2; exit 2; }
  rounds=${rounds:-2}
elif [[ -n $rounds ]]; then
  echo "partition_stream.sh: --rounds compares two workers: give --base-worker too" >&2
  exit 2
else
  rounds=1
fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "partition_stream.sh: --rounds must be a positive integer, got '$rounds'" >&2; exit 2; }

# shellcheck source=bench/farm_bench_lib.sh
source "$HERE/farm_bench_lib.sh"
bench_work zkfarm-stream

t=$(now)
"$ZKFARM" gen-circuit --curve "$curve" --constraints "$constraints" --r1cs "$WORK/c.r1cs" --wtns "$WORK/w.wtns" --seed 1 >/dev/null
echo "gen-circuit ($curve, $constraints constraints): $(since "$t") s"
t=$(now)
if [[ -n $device ]]; then backend=(--device "$device"); else backend=(--cpu); fi
"$ZKFARM" setup "$WORK/c.r1cs" "$WORK/c.zkey" --seed 1 ${device:+--device "$device"} >/dev/null
echo "zkfarm setup ${device:+--device $device}: $(since "$t") s"

mkdir -p "$WORK/artifacts"
bench_redis "$WORK/redis.log"
export ZKFARM_REDIS=redis://127.0.0.1:$redis_port ZKFARM_ARTIFACTS=$WORK/artifacts
t=$(now)
circuit=$("$ZKFARM" circuit add "$WORK/c.zkey" --r1cs "$WORK/c.r1cs")
echo "circuit add: $(since "$t") s"
port=$(free_port 35655)
coordinator_metrics=$(free_port 39560)
"$BIN/coordinator/zkfarm-coordinator" --id stream --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
  --witness-root "$WORK" --listen "tcp://127.0.0.1:$port" --metrics-listen "127.0.0.1:$coordinator_metrics" \
  >"$WORK/coordinator.log" 2>&1 &
pids+=($!)

# One snapshot of the counters a row reads, one page from the worker on
# PORT and one from the coordinator: device busy seconds; the slots' task
# seconds; prove sum, count; witness fetch + parse sum, count; dispatch
# wait sum, count; verification sum, count; the device proofs' queue sum,
# release sum, count.
snapshot() {
  local worker_page coordinator_page
  worker_page=$(scrape "$1")
  coordinator_page=$(scrape "$coordinator_metrics")
  awk -v busy="$(pick zkfarm_device_busy_seconds_total <<<"$worker_page")" \
    -v task="$(pick zkfarm_device_task_seconds_total <<<"$worker_page")" \
    -v prove="$(pick zkfarm_prove_duration_seconds_sum <<<"$worker_page")" \
    -v proofs="$(pick zkfarm_prove_duration_seconds_count <<<"$worker_page")" \
    -v fetch="$(pick zkfarm_prove_stage_duration_seconds_sum 'stage="fetch_witness"' <<<"$worker_page")" \
    -v parse="$(pick zkfarm_prove_stage_duration_seconds_sum 'stage="parse_witness"' <<<"$worker_page")" \
    -v fetches="$(pick zkfarm_prove_stage_duration_seconds_count 'stage="fetch_witness"' <<<"$worker_page")" \
    -v wait="$(pick zkfarm_partition_dispatch_wait_seconds_sum <<<"$coordinator_page")" \
    -v waits="$(pick zkfarm_partition_dispatch_wait_seconds_count <<<"$coordinator_page")" \
    -v verify="$(pick zkfarm_verify_duration_seconds_sum <<<"$coordinator_page")" \
    -v verifies="$(pick zkfarm_verify_duration_seconds_count <<<"$coordinator_page")" \
    -v queue="$(pick zkfarm_prove_stage_duration_seconds_sum 'stage="device_queue"' <<<"$worker_page")" \
    -v release="$(pick zkfarm_prove_stage_duration_seconds_sum 'stage="device_release"' <<<"$worker_page")" \
    -v queues="$(pick zkfarm_prove_stage_duration_seconds_count 'stage="device_queue"' <<<"$worker_page")" \
    'BEGIN { printf "%s %s %s %s %.6f %s %s %s %s %s %s %s %s\n", busy, task, prove, proofs, fetch + parse, fetches, wait, waits, verify, verifies, queue, release, queues }'
}

witnesses=()
for ((i = 0; i < partitions; i++)); do witnesses+=("$WORK/w.wtns"); done
# The rows to run, in order, each "slots prefetch round label worker": per
# --slots and --prefetch value, each round's workers (base first in odd
# rounds).
runs=()
for slots in $slot_values; do
  for p in $prefetch_values; do
    for ((round = 1; round <= rounds; round++)); do
      if [[ -z $base_worker ]]; then
        runs+=("$slots $p $round - $this_worker")
      elif ((round % 2)); then
        runs+=("$slots $p $round base $base_worker" "$slots $p $round this $this_worker")
      else
        runs+=("$slots $p $round this $this_worker" "$slots $p $round base $base_worker")
      fi
    done
  done
done
rows=()
for run in "${runs[@]}"; do
  read -r slots p round label worker_binary <<<"$run"
  tag=s$slots-p$p${base_worker:+-$label$round}
  metrics_port=$(free_port 39570)
  "$worker_binary" "${backend[@]}" --id "stream-$tag" --coordinator "tcp://127.0.0.1:$port" \
    --artifacts "$ZKFARM_ARTIFACTS" --witness-root "$WORK" --witgen-workers 0 --prefetch "$p" --slots "$slots" \
    --metrics-listen "127.0.0.1:$metrics_port" "${worker_args[@]}" >"$WORK/worker-$tag.log" 2>&1 &
  worker=$!
  pids+=("$worker")
  warm=$("$ZKFARM" submit "$circuit" "$WORK/w.wtns" "$WORK/w.wtns")
  "$ZKFARM" wait "$warm" --quiet --timeout 600 >/dev/null
  read -r busy0 task0 prove_sum0 prove_count0 prep_sum0 prep_count0 wait_sum0 wait_count0 verify_sum0 verify_count0 \
    queue_sum0 release_sum0 queue_count0 < <(snapshot "$metrics_port")
  sampler=""
  if [[ -n $device ]] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 -i "$device" >"$WORK/util-$tag.txt" 2>/dev/null &
    sampler=$!
  fi
  t=$(now)
  stream=()
  for ((j = 0; j < jobs; j++)); do stream+=("$("$ZKFARM" submit "$circuit" "${witnesses[@]}")"); done
  submitted=$(since "$t")
  for job in "${stream[@]}"; do
    state=$("$ZKFARM" wait "$job" --timeout 1200 | sed -n 's/.*"state":"\([a-z]*\)".*/\1/p')
    [[ $state == "done" ]] || { echo "job $job ended $state" >&2; tail -20 "$WORK/worker-$tag.log" >&2; exit 1; }
  done
  wall=$(since "$t")
  util="-"
  if [[ -n $sampler ]]; then
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    util=$(awk '$1 ~ /^[0-9]+$/ {s += $1; n++} END {if (n) printf "%.0f%%", s / n; else print "-"}' "$WORK/util-$tag.txt")
  fi
  read -r busy1 task1 prove_sum1 prove_count1 prep_sum1 prep_count1 wait_sum1 wait_count1 verify_sum1 verify_count1 \
    queue_sum1 release_sum1 queue_count1 < <(snapshot "$metrics_port")
  kill "$worker" 2>/dev/null || true
  wait "$worker" 2>/dev/null || true
  rows+=("${base_worker:+| $label $round }$(awk -v s="$slots" -v p="$p" -v n=$((jobs * partitions)) -v wall="$wall" -v b0="$busy0" -v b1="$busy1" -v t0="$task0" -v t1="$task1" \
    -v s0="$prove_sum0" -v s1="$prove_sum1" -v c0="$prove_count0" -v c1="$prove_count1" -v util="$util" \
    -v submitted="$submitted" -v w0="$wait_sum0" -v w1="$wait_sum1" -v wc0="$wait_count0" -v wc1="$wait_count1" \
    -v v0="$verify_sum0" -v v1="$verify_sum1" -v vc0="$verify_count0" -v vc1="$verify_count1" \
    -v q0="$prep_sum0" -v q1="$prep_sum1" -v qc0="$prep_count0" -v qc1="$prep_count1" \
    -v d0="$queue_sum0" -v d1="$queue_sum1" -v r0="$release_sum0" -v r1="$release_sum1" -v dc0="$queue_count0" \
    -v dc1="$queue_count1" 'BEGIN {
    prove = (c1 > c0) ? (s1 - s0) / (c1 - c0) : 0
    printf "| %d | %d | %d | %.2f | %.2f | %.1f | %.2f | %.0f%% | %.0f%% | %.0f%% | %s | %.2f | %.1f | %.2f | %.2f | %.3f / %.3f |", s, p, n, wall,
      n / wall, prove * 1000, (prove > 0 ? s / prove : 0), 100 * (b1 - b0) / wall, 100 * (t1 - t0) / wall / s,
      (prove > 0 ? 100 * n / wall * prove / s : 0), util, submitted, (wc1 > wc0 ? 1000 * (w1 - w0) / (wc1 - wc0) : 0),
      (vc1 > vc0 ? 1000 * (v1 - v0) / (vc1 - vc0) : 0), (qc1 > qc0 ? 1000 * (q1 - q0) / (qc1 - qc0) : 0),
      (dc1 > dc0 ? 1000 * (d1 - d0) / (dc1 - dc0) : 0), (dc1 > dc0 ? 1000 * (r1 - r0) / (dc1 - dc0) : 0) }')")
done
[[ -n $base_worker ]] && printf '| worker, round '
echo "| --slots | --prefetch | partitions | wall s | partitions/s | prove ms (mean, worker) | slots / prove (per s) | device busy | slots busy | rate / (slots / prove) | GPU utilization | submitted by s | dispatch wait ms (mean) | verify ms (mean call) | fetch + parse ms (mean, the preparer) | queue / release ms (mean, outside the prover's clock) |"
[[ -n $base_worker ]] && printf '|---'
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
