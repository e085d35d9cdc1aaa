#!/usr/bin/env bash
# coordinator_memory.sh -- resident memory of a coordinator holding a load of
# active jobs (BENCHMARKS.md, "Coordinator memory").
#
#   bench/coordinator_memory.sh [JOBS] [PARTITIONS] [PUBLIC] [COORDINATOR] [FLAGS...]
#
# Makes a bn254 circuit with PUBLIC public inputs (zkfarm gen-circuit +
# setup, 1024 constraints: only the public inputs matter here), registers
# it with a private redis-server, submits JOBS jobs of PARTITIONS partitions
# (every partition the same witness file) and starts COORDINATOR (default
# bazel-bin/coordinator/zkfarm-coordinator) with --max-active-jobs JOBS and
# FLAGS, without workers, so every job stays active. Once the processing
# list holds every admitted job and the coordinator has logged them
# started, it prints the coordinator's VmRSS and VmHWM and the bytes per
# held partition. Needs bazel-bin/cli/zkfarm and redis-server.
set -euo pipefail
JOBS=${1:-64}
PARTITIONS=${2:-4096}
PUBLIC=${3:-328}
COORDINATOR=${4:-bazel-bin/coordinator/zkfarm-coordinator}
shift $(( $# < 4 ? $# : 4 ))
ZKFARM=${ZKFARM:-bazel-bin/cli/zkfarm}
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
export ZKFARM_REDIS=redis://127.0.0.1:$PORT ZKFARM_ARTIFACTS=$WORK/artifacts
mkdir -p "$ZKFARM_ARTIFACTS"
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

"$ZKFARM" gen-circuit --curve bn254 --constraints 1024 --public "$PUBLIC" --r1cs "$WORK/c.r1cs" \
  --wtns "$WORK/w.wtns" --seed 1 >/dev/null
"$ZKFARM" setup "$WORK/c.r1cs" "$WORK/c.zkey" --seed 1 >/dev/null 2>&1
CIRCUIT=$("$ZKFARM" circuit add "$WORK/c.zkey")
python3 - "$WORK" "$CIRCUIT" "$JOBS" "$PARTITIONS" <<'PY'
import json, sys
work, circuit, jobs, parts = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for j in range(jobs):
    with open(f"{work}/job{j}.json", "w") as f:
        json.dump({"id": f"mem{j}", "circuit": circuit,
                   "partitions": [f"file://{work}/w.wtns"] * parts}, f)
PY
for j in $(seq 0 $((JOBS - 1))); do "$ZKFARM" submit "$WORK/job$j.json" >/dev/null; done

touch "$WORK/coordinator.log"
"$COORDINATOR" --id mem --listen "tcp://127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')" \
  --artifacts "$ZKFARM_ARTIFACTS" --redis "$ZKFARM_REDIS" --metrics-listen '' --max-active-jobs "$JOBS" "$@" \
  >>"$WORK/coordinator.log" 2>&1 &
COORD=$!
PIDS+=("$COORD")
start=$(date +%s)
# Admitted jobs: all of them, or as many as the coordinator takes before its
# intake stops (a budget): until the started count stays put for 20 s.
last=-1 stable=0
while :; do
  started=$(grep -c ' started: ' "$WORK/coordinator.log" || true)
  queued=$(redis-cli -p "$PORT" llen zkfarm:queue:normal)
  if [ "$started" -ge "$JOBS" ] || { [ "$started" = "$last" ] && [ "$stable" -ge 10 ]; }; then break; fi
  if [ "$started" = "$last" ]; then stable=$((stable + 1)); else stable=0; fi
  last=$started
  kill -0 "$COORD" || { echo "coordinator died:"; tail "$WORK/coordinator.log"; exit 1; }
  sleep 2
done
sleep 2
rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$COORD/status)
hwm_kb=$(awk '/VmHWM/ {print $2}' /proc/$COORD/status)
echo "jobs admitted: $started of $JOBS (queued: $queued), partitions each: $PARTITIONS, public inputs: $PUBLIC"
echo "intake time: $(( $(date +%s) - start )) s"
echo "VmRSS: $((rss_kb / 1024)) MiB, VmHWM: $((hwm_kb / 1024)) MiB"
echo "bytes per held partition: $(( rss_kb * 1024 / (started * PARTITIONS) ))"
