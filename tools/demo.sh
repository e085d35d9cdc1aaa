#!/bin/bash
# demo.sh -- a whole zkfarm proving farm on this machine, one job through it.
#
#   sudo tools/demo.sh [--partitions N] [--constraints N] [--curve bn254|bls12381]
#                      [--jobs N] [--gpus N] [--cpu-workers N] [--cuda] [--keep] [--local]
#
# Steps (each timed; the table at the end also gives the time to first proof):
#   1. tools/install_deps.sh (ZKFARM_SKIP_DEPS=1 skips it), bazel build of
#      zkfarm, zkfarm-coordinator and zkfarm-worker: with an NVIDIA GPU
#      visible (nvidia-smi -L lists one, or a /dev/nvidiaN device exists) or
#      with --cuda, as a plain `bazel build` builds them (CUDA kernels
#      included when the toolkit is installed, binaries in bazel-bin);
#      without a visible GPU CPU-only (ZKFARM_CUDA_PATH=off, in an output base
#      of its own), so a machine with the CUDA toolkit and no GPU (a laptop, a
#      CI box) does not spend nvcc CPU-minutes on kernels nothing would run;
#   2. the example circuit: `zkfarm gen-circuit` writes a synthetic circuit
#      with the Filecoin PoRep partition profile (default bn254, 16384
#      constraints) and a witness, `zkfarm setup` makes its test-only key;
#   3. the farm: a private redis-server (AOF on, noeviction, loopback only),
#      one zkfarm-coordinator, and one zkfarm-worker per NVIDIA GPU
#      (--device N; --gpus N uses only the first N) or, without GPUs or
#      without a CUDA build, --cpu-workers CPU workers (default 2);
#   4. `zkfarm circuit add`, `zkfarm submit` of a job with --partitions
#      partitions (default 4; the same witness each time), `zkfarm wait`
#      showing progress, `zkfarm result --out`, `zkfarm verify` of every
#      partition proof (and snarkjs's verifier when the interop suite's
#      node_modules are installed);
#      beside it an input job: tools/demo_circuit.circom compiled by circom2
#      to C++, registered with `zkfarm circuit add --witness-generator`, and
#      `zkfarm submit --input` of two input.json files: the workers compute
#      the witnesses, the proofs are verified (zkfarm and snarkjs);
#      with --jobs N, N - 1 more such jobs submitted at once (a stream), each
#      waited for, fetched into out/demo/farm/result-<k> and verified;
#   5. `zkfarm workers`, the status page's URL, where the Prometheus metrics
#      are served and a few of their values; with --keep the farm then stays
#      up (status page included) until Ctrl-C.
# ZKFARM_BIN=DIR uses prebuilt binaries DIR/cli/zkfarm,
# DIR/coordinator/zkfarm-coordinator and DIR/worker/zkfarm-worker instead of
# building them; ZKFARM_BAZEL_FLAGS adds flags to the bazel build (word-split,
# e.g. --disk_cache= for a build that ignores a disk cache in ~/.bazelrc).
# Everything it starts it stops on exit, error or Ctrl-C; state (Redis AOF,
# artifact store, logs, result files) lives in out/demo/farm and is removed
# on exit unless --keep (which also keeps the farm running until Ctrl-C).
# Exit status 0 only when every partition proof verified. --local runs the
# single-machine pipeline instead (gen-circuit, setup, prove, verify without
# a farm; tools/demo_local.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

curve=bn254
constraints=16384
partitions=4
jobs=1
gpu_limit=0
cpu_workers=2
keep=0
want_cuda=0
usage_error() {
  echo "demo.sh: $*" >&2
  exit 2
}
while (($#)); do
  case $1 in
    --curve)
      [[ ${2:-} == bn254 || ${2:-} == bls12381 ]] || usage_error "--curve takes bn254 or bls12381"
      curve=$2
      shift
      ;;
    --constraints)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage_error "--constraints takes a positive number"
      constraints=$2
      shift
      ;;
    --partitions)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage_error "--partitions takes a positive number"
      partitions=$2
      shift
      ;;
    --jobs)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs takes a positive number"
      jobs=$2
      shift
      ;;
    --gpus)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage_error "--gpus takes a positive number"
      gpu_limit=$2
      shift
      ;;
    --cpu-workers)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage_error "--cpu-workers takes a positive number"
      cpu_workers=$2
      shift
      ;;
    --keep) keep=1 ;;
    --cuda) want_cuda=1 ;;
    --local)
      shift
      exec "$ROOT/tools/demo_local.sh" "$@"
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument $1 (try --help)" ;;
  esac
  shift
done

started_at=$(date +%s.%N)
timings=()
elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# timed LABEL CMD...: runs CMD, records its wall time under LABEL.
timed() {
  local label=$1
  shift
  local step_started
  step_started=$(date +%s.%N)
  echo "---- $label"
  "$@"
  timings+=("$(printf '%-40s %8s s' "$label" "$(elapsed_since "$step_started")")")
}
say() { printf '\n==== %s\n' "$*"; }

# ---- 1. dependencies and build -------------------------------------------

if [[ ${ZKFARM_SKIP_DEPS:-0} != 1 ]]; then
  timed "install_deps" tools/install_deps.sh
fi
# gpu_visible: whether this machine shows an NVIDIA GPU: nvidia-smi lists
# one, or the driver made a /dev/nvidiaN device (a container given a GPU
# without nvidia-smi). Either is enough: when in doubt the build is the one
# a GPU needs, as a plain `bazel build` makes it.
gpu_visible() {
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    return 0
  fi
  compgen -G '/dev/nvidia[0-9]*' >/dev/null
}

read -r -a BAZEL_FLAGS <<<"${ZKFARM_BAZEL_FLAGS:-}"
TARGETS=(//cli:zkfarm //coordinator:zkfarm-coordinator //worker:zkfarm-worker)
if [[ -n ${ZKFARM_BIN:-} ]]; then
  BIN=$ZKFARM_BIN  # prebuilt binaries (cli/zkfarm, coordinator/..., worker/...): no build
elif ((want_cuda)) || gpu_visible; then
  timed "bazel build (CLI, coordinator, worker)" bazel build "${BAZEL_FLAGS[@]}" "${TARGETS[@]}"
  BIN=$ROOT/bazel-bin
else
  # CPU-only: @local_cuda is configured with ZKFARM_CUDA_PATH=off (the
  # repository rule lists the variable in `environ`, and --repo_env feeds
  # it). The build gets an output base of its own, beside the one a plain
  # `bazel build` uses, because one output base switched between a CUDA
  # and a CPU-only configuration refetches @local_cuda and recompiles
  # everything that sees ZKFARM_HAS_CUDA at each switch (its action cache
  # keeps one entry per output), and leaves bazel-bin holding whichever
  # came last. Here each configuration stays built: this output base is
  # always CPU-only, the usual one keeps what `bazel build` and
  # tools/test.sh made, and no bazel-* symlink is changed
  # (--symlink_prefix=/; the binaries are found through `bazel info`).
  # The price is a second Bazel server while both are in use.
  cpu_output_base=${XDG_CACHE_HOME:-$HOME/.cache}/zkfarm/bazel-demo-cpu-$(printf '%s' "$ROOT" | md5sum | cut -c1-12)
  cpu_bazel() { bazel --output_base="$cpu_output_base" "$@"; }
  echo "no NVIDIA GPU visible: building CPU-only binaries (--cuda builds the CUDA kernels too)"
  timed "bazel build, CPU-only (CLI, coordinator, worker)" cpu_bazel build --repo_env=ZKFARM_CUDA_PATH=off \
    --symlink_prefix=/ "${BAZEL_FLAGS[@]}" "${TARGETS[@]}"
  BIN=$(cpu_bazel info --repo_env=ZKFARM_CUDA_PATH=off "${BAZEL_FLAGS[@]}" bazel-bin)
fi
ZKFARM=$BIN/cli/zkfarm
for binary in "$ZKFARM" "$BIN/coordinator/zkfarm-coordinator" "$BIN/worker/zkfarm-worker"; do
  [[ -x $binary ]] || { echo "demo.sh: $binary missing after the build" >&2; exit 1; }
done
for tool in redis-server redis-cli; do
  command -v "$tool" >/dev/null || { echo "demo.sh: $tool missing (run tools/install_deps.sh)" >&2; exit 1; }
done

# ---- the farm's processes and their clean shutdown --------------------------

STATE=$ROOT/out/demo/farm
LOGS=$STATE/logs
pids=()        # the coordinator, then the workers: stopped in reverse order
redis_port=""
watcher=""

stop_farm() {
  local status=$?
  set +e  # clean up as much as possible, whatever fails
  trap - EXIT INT TERM
  [[ -n $watcher ]] && kill "$watcher" 2>/dev/null
  if ((${#pids[@]})); then
    say "stopping the farm"
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
      # SIGTERM drains a worker and stops the coordinator; 15 s is plenty
      # for an idle farm, after that it is killed.
      for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    done
  fi
  if [[ -n $redis_port ]]; then
    redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
    wait 2>/dev/null || true
  fi
  if ((status != 0 && status != 130)) && [[ -d $LOGS ]]; then
    echo "demo.sh: failed (exit $status); the last lines of each log:" >&2
    for log in "$LOGS"/*.log; do
      [[ -f $log ]] || continue
      echo "---- $log" >&2
      tail -n 15 "$log" >&2
    done
  fi
  if ((keep)); then
    echo "state kept in $STATE"
  elif ((status == 0 || status == 130)); then
    rm -rf "$STATE"
  else
    echo "state kept for inspection in $STATE" >&2
  fi
  exit "$status"
}
trap stop_farm EXIT
trap 'echo; echo "demo.sh: interrupted" >&2; exit 130' INT TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# free_port FROM: the first port >= FROM that nothing listens on.
free_port() {
  local port=$1
  while port_in_use "$port"; do port=$((port + 1)); done
  echo "$port"
}
# http_get PORT PATH: the body of http://127.0.0.1:PORT/PATH (bash only, no curl).
http_get() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}
# wait_for_log FILE TEXT SECONDS PID: waits until FILE contains TEXT.
wait_for_log() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || { echo "demo.sh: process $4 exited; see $1" >&2; return 1; }
    sleep 0.1
  done
  echo "demo.sh: timed out waiting for '$2' in $1" >&2
  return 1
}

rm -rf "$STATE"
mkdir -p "$LOGS" "$STATE/artifacts" "$STATE/circuit" "$STATE/result" "$STATE/redis"

# ---- 2. the example circuit --------------------------------------------------

CIRCUIT=$STATE/circuit
timed "gen-circuit ($curve, $constraints constraints)" "$ZKFARM" gen-circuit --curve "$curve" \
  --constraints "$constraints" --r1cs "$CIRCUIT/circuit.r1cs" --wtns "$CIRCUIT/witness.wtns" --seed 1
timed "setup (test-only key)" "$ZKFARM" setup "$CIRCUIT/circuit.r1cs" "$CIRCUIT/circuit.zkey" --seed 1

# ---- 3. the farm ------------------------------------------------------------

farm_started=$(date +%s.%N)
say "starting the farm"
redis_port=$(free_port 16379)
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$STATE/redis" --appendonly yes \
  --appendfsync everysec --maxmemory-policy noeviction --save "" --daemonize no \
  >"$LOGS/redis.log" 2>&1 &
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$redis_port" ping >/dev/null || { echo "demo.sh: redis-server did not start" >&2; exit 1; }
export ZKFARM_REDIS=redis://127.0.0.1:$redis_port
export ZKFARM_ARTIFACTS=$STATE/artifacts
echo "redis-server         127.0.0.1:$redis_port (AOF in $STATE/redis)"

coordinator_port=$(free_port 5555)
coordinator_metrics=$(free_port 9460)
status_page=$(free_port $((coordinator_metrics + 1)))
"$BIN/coordinator/zkfarm-coordinator" --id demo --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
  --listen "tcp://127.0.0.1:$coordinator_port" --metrics-listen "127.0.0.1:$coordinator_metrics" \
  --status-listen "127.0.0.1:$status_page" >"$LOGS/coordinator.log" 2>&1 &
pids+=($!)
wait_for_log "$LOGS/coordinator.log" "listening on" 20 "${pids[-1]}"
echo "zkfarm-coordinator   tcp://127.0.0.1:$coordinator_port, metrics http://127.0.0.1:$coordinator_metrics/metrics"
echo "status page          http://127.0.0.1:$status_page/"

# One worker per GPU when there are GPUs and this build has CUDA.
gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L | grep -c '^GPU ' || true)
  ((gpu_limit > 0 && gpu_limit < gpus)) && gpus=$gpu_limit
fi
if ((gpus > 0)); then
  # Without --artifacts the worker stops right after opening the device: it
  # complains about --artifacts only when the device (and CUDA) work.
  # (The farm's ZKFARM_* variables are unset for the probe: the worker reads
  # them as flags, and with ZKFARM_ARTIFACTS it would start serving.)
  probe=$(env -u ZKFARM_ARTIFACTS -u ZKFARM_CONFIG -u ZKFARM_REDIS timeout 30 \
    "$BIN/worker/zkfarm-worker" --device 0 --metrics-listen "" 2>&1 || true)
  if ! grep -q -- "--artifacts is required" <<<"$probe"; then
    echo "GPU 0 is not usable by this zkfarm-worker (${probe##*: }): using $cpu_workers CPU workers"
    gpus=0
  fi
fi
worker_args=()
if ((gpus > 0)); then
  for ((n = 0; n < gpus; n++)); do worker_args+=("--device $n"); done
else
  for ((n = 0; n < cpu_workers; n++)); do worker_args+=("--cpu"); done
fi
worker_ports=()
for ((n = 0; n < ${#worker_args[@]}; n++)); do
  port=$(free_port $((9470 + n)))
  worker_ports+=("$port")
  read -r -a backend <<<"${worker_args[n]}"
  id=demo-$([[ ${backend[0]} == --cpu ]] && echo "cpu$n" || echo "gpu${backend[1]}")
  "$BIN/worker/zkfarm-worker" "${backend[@]}" --id "$id" --coordinator "tcp://127.0.0.1:$coordinator_port" \
    --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" --cache-dir "$STATE/cache-$id" \
    --metrics-listen "127.0.0.1:$port" >"$LOGS/worker-$id.log" 2>&1 &
  pids+=($!)
  echo "zkfarm-worker        $id (${worker_args[n]}), metrics http://127.0.0.1:$port/metrics"
done
for ((n = 0; n < ${#worker_args[@]}; n++)); do
  wait_for_log "$LOGS/coordinator.log" "joined" 20 "${pids[0]}"
done
timings+=("$(printf '%-40s %8s s' "farm start (redis, coordinator, ${#worker_args[@]} workers)" \
  "$(elapsed_since "$farm_started")")")

# ---- 4. one job through the farm ---------------------------------------------

say "registering the circuit"
circuit_id=$("$ZKFARM" circuit add "$CIRCUIT/circuit.zkey" --r1cs "$CIRCUIT/circuit.r1cs")
echo "circuit id $circuit_id (zkey, PCE and verifying key in $ZKFARM_ARTIFACTS/$circuit_id)"

say "submitting a job of $partitions partitions"
witnesses=()
for ((i = 0; i < partitions; i++)); do witnesses+=("$CIRCUIT/witness.wtns"); done
submitted=$(date +%s.%N)
job=$("$ZKFARM" submit "$circuit_id" "${witnesses[@]}" --id "demo-$(date +%s)" --priority high)
echo "job $job"
# The first verified partition, watched from the job's event list.
(
  for _ in $(seq 6000); do
    if redis-cli -p "$redis_port" lrange "zkfarm:job:$job:events" 0 -1 2>/dev/null | grep -q partition_proved; then
      date +%s.%N >"$STATE/first_proof"
      exit 0
    fi
    sleep 0.05
  done
) &
watcher=$!
timed "zkfarm wait (all $partitions partitions)" "$ZKFARM" wait "$job"
wait "$watcher" 2>/dev/null || true
job_seconds=$(elapsed_since "$submitted")

say "fetching and verifying the proofs"
"$ZKFARM" result "$job" --out "$STATE/result" >/dev/null
"$ZKFARM" export-vk "$CIRCUIT/circuit.zkey" "$STATE/result/vk.json"
SNARKJS_CLI=$ROOT/tests/interop/node_modules/snarkjs/build/cli.cjs
verified=0
for ((i = 0; i < partitions; i++)); do
  "$ZKFARM" verify "$STATE/result/vk.json" "$STATE/result/public_$i.json" "$STATE/result/proof_$i.json" >/dev/null
  line="partition $i: zkfarm verify OK"
  if [[ -f $SNARKJS_CLI ]] && command -v node >/dev/null; then
    node "$SNARKJS_CLI" groth16 verify "$STATE/result/vk.json" "$STATE/result/public_$i.json" \
      "$STATE/result/proof_$i.json" >/dev/null
    line+=", snarkjs groth16 verify OK"
  fi
  echo "$line"
  verified=$((verified + 1))
done

# An input job: the client sends circom input.json files, the workers
# compute the witnesses (circom's C++ witness generator, built once by
# `zkfarm circuit add --witness-generator`). Needs circom2 (tests/interop,
# installed by install_deps.sh), g++, nasm and libgmp.
CIRCOM_CLI=$ROOT/tests/interop/node_modules/circom2/cli.js
if [[ -f $CIRCOM_CLI ]] && command -v node >/dev/null && command -v nasm >/dev/null; then
  say "an input job beside it: the farm computes the witnesses from input.json"
  INPUTS=$STATE/inputs
  mkdir -p "$INPUTS"
  cp "$ROOT/tools/demo_circuit.circom" "$INPUTS/"
  prime=bn128
  [[ $curve == bls12381 ]] && prime=bls12381
  (cd "$INPUTS" && node "$CIRCOM_CLI" demo_circuit.circom --r1cs --c --prime "$prime" -o . >circom.log 2>&1) ||
    { echo "demo.sh: circom2 failed; see $INPUTS/circom.log" >&2; exit 1; }
  "$ZKFARM" setup "$INPUTS/demo_circuit.r1cs" "$INPUTS/demo_circuit.zkey" --seed 1 >/dev/null 2>&1
  add_started=$(date +%s.%N)
  input_circuit=$("$ZKFARM" circuit add "$INPUTS/demo_circuit.zkey" --witness-generator "$INPUTS/demo_circuit_cpp")
  timings+=("$(printf '%-40s %8s s' "circuit add --witness-generator (g++)" "$(elapsed_since "$add_started")")")
  echo "circuit $input_circuit: witness generator built into $ZKFARM_ARTIFACTS/$input_circuit/witgen"
  inputs=()
  for ((i = 0; i < 2; i++)); do
    factors=$(seq -s '", "' $((2 + i)) $((17 + i)))
    echo "{\"x\": \"$((3 + i))\", \"factors\": [\"$factors\"]}" >"$INPUTS/input_$i.json"
    inputs+=("$INPUTS/input_$i.json")
  done
  input_job=$("$ZKFARM" submit "$input_circuit" --input "${inputs[@]}" --id "demo-inputs-$(date +%s)")
  echo "job $input_job: ${#inputs[@]} partitions from input.json files"
  timed "zkfarm wait (input job)" "$ZKFARM" wait "$input_job" --quiet
  "$ZKFARM" result "$input_job" --out "$STATE/result-inputs" >/dev/null
  "$ZKFARM" export-vk "$INPUTS/demo_circuit.zkey" "$STATE/result-inputs/vk.json"
  for ((i = 0; i < ${#inputs[@]}; i++)); do
    "$ZKFARM" verify "$STATE/result-inputs/vk.json" "$STATE/result-inputs/public_$i.json" \
      "$STATE/result-inputs/proof_$i.json" >/dev/null
    line="input partition $i: public signals $(tr -d ' \n' <"$STATE/result-inputs/public_$i.json"), zkfarm verify OK"
    if [[ -f $SNARKJS_CLI ]]; then
      node "$SNARKJS_CLI" groth16 verify "$STATE/result-inputs/vk.json" "$STATE/result-inputs/public_$i.json" \
        "$STATE/result-inputs/proof_$i.json" >/dev/null
      line+=", snarkjs groth16 verify OK"
    fi
    echo "$line"
  done
else
  say "input job skipped: needs circom2 (tools/install_deps.sh), node and nasm"
fi

if ((jobs > 1)); then
  say "a stream of $((jobs - 1)) more jobs of $partitions partitions"
  stream_started=$(date +%s.%N)
  stream=()
  for ((k = 1; k < jobs; k++)); do
    stream+=("$("$ZKFARM" submit "$circuit_id" "${witnesses[@]}" --id "demo-$(date +%s)-$k")")
  done
  last_finished=0
  for ((k = 1; k < jobs; k++)); do
    finished=$("$ZKFARM" wait "${stream[k - 1]}" --quiet --timeout 600 | grep -o '"finished_at":[0-9.]*' | cut -d: -f2)
    last_finished=$(awk -v a="$last_finished" -v b="${finished:-0}" 'BEGIN { print (b > a) ? b : a }')
    "$ZKFARM" result "${stream[k - 1]}" --out "$STATE/result-$k" >/dev/null
    for ((i = 0; i < partitions; i++)); do
      "$ZKFARM" verify "$STATE/result/vk.json" "$STATE/result-$k/public_$i.json" \
        "$STATE/result-$k/proof_$i.json" >/dev/null
      verified=$((verified + 1))
    done
  done
  stream_seconds=$(elapsed_since "$stream_started")
  echo "$((jobs - 1)) jobs, $(((jobs - 1) * partitions)) partitions: all verified (zkfarm verify) in $stream_seconds s"
  # Farm throughput: first submission to the last job done, as Redis recorded it.
  awk -v n=$(((jobs - 1) * partitions)) -v a="$stream_started" -v b="$last_finished" \
    'BEGIN { if (b > a) printf "farm throughput: %d partitions in %.2f s = %.1f partitions/s (%d workers)\n", n, b - a, n / (b - a), '"${#worker_args[@]}"' }'
  timings+=("$(printf '%-40s %8s s' "stream of $((jobs - 1)) jobs (submit -> all verified)" "$stream_seconds")")
fi

# ---- 5. the farm's view ----------------------------------------------------

say "workers"
"$ZKFARM" workers
say "status page"
echo "http://127.0.0.1:$status_page/  (jobs, workers, circuits, throughput and latency; JSON under /api/v1/)"
say "metrics (Prometheus text format)"
echo "coordinator: http://127.0.0.1:$coordinator_metrics/metrics"
http_get "$coordinator_metrics" /metrics | grep -E '^zkfarm_(jobs_completed_total|partitions_verified_total|job_latency_seconds_(sum|count))' || true
for ((n = 0; n < ${#worker_ports[@]}; n++)); do
  echo "worker $n:    http://127.0.0.1:${worker_ports[n]}/metrics"
  http_get "${worker_ports[n]}" /metrics | grep -E '^zkfarm_(device_proofs_total|device_busy_seconds_total)' || true
done
echo "(point Prometheus at these with monitoring/prometheus.yml; Grafana dashboards in monitoring/grafana/)"

say "timings"
printf '%s\n' "${timings[@]}"
first_proof=$(cat "$STATE/first_proof" 2>/dev/null || echo 0)
since() { awk -v a="$1" -v b="$first_proof" 'BEGIN { if (b == 0) print "?"; else printf "%.1f", b - a }'; }
printf '%-40s %8s s\n' "submit -> first partition verified" "$(since "$submitted")"
printf '%-40s %8s s\n' "submit -> job done ($partitions partitions)" "$job_seconds"
printf '%-40s %8s s\n' "TIME TO FIRST PROOF (demo.sh start ->)" "$(since "$started_at")"
echo
echo "$verified of $((jobs * partitions)) partition proofs verified; job $job done"
if ((keep)); then
  echo
  echo "the farm keeps running (--keep): status page http://127.0.0.1:$coordinator_metrics/, Redis 127.0.0.1:$redis_port"
  echo "  (ZKFARM_REDIS=redis://127.0.0.1:$redis_port $ZKFARM submit ... adds jobs); Ctrl-C stops it"
  while kill -0 "${pids[0]}" 2>/dev/null; do sleep 1; done
  echo "demo.sh: the coordinator stopped" >&2
  exit 1
fi
