#!/usr/bin/env bash
# run_farm_gpus.sh BUNDLE [LOGDIR] [demo.sh args...] -- the whole farm on a
# GPU host, one zkfarm-worker per GPU (each pinned with --device N at launch),
# from a bundle made by tests/gpu/farm_bundle.sh: runs tools/demo.sh with the
# bundled binaries and samples, every 0.5 s while it runs, which process
# holds which GPU (nvidia-smi), so the log shows that worker N only ever used
# device N. Prints the demo's output, the per-GPU process table and a
# summary; exit status is demo.sh's (0 only when every partition verified)
# or 1 when a worker process was seen on a GPU other than its own.
set -uo pipefail
bundle=$(cd "${1:?usage: run_farm_gpus.sh BUNDLE [LOGDIR] [demo args...]}" && pwd)
logs=${2:-$bundle}
shift 2 2>/dev/null || shift $#
mkdir -p "$logs"
cd "$(dirname "$0")/../.."
export PATH=$bundle/bin:$PATH LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZKFARM_SKIP_DEPS=1 ZKFARM_BIN=$bundle
nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader | tee "$logs/gpus.csv"

(while :; do
  nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>/dev/null |
    while IFS=', ' read -r pid uuid mem _; do
      [[ -n $pid ]] && echo "$pid $uuid $mem $(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | head -c 200)"
    done
  sleep 0.5
done) >"$logs/gpu_processes.log" 2>&1 &
sampler=$!
timeout -s INT "${FARM_TIMEOUT:-300}" tools/demo.sh "$@" 2>&1 | tee "$logs/demo.log"
status=${PIPESTATUS[0]}
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null

echo "==== GPU processes seen (pid, GPU uuid, memory, command)"
sort -u -k1,2 "$logs/gpu_processes.log" | awk '{$3=""; print}' | sort -u | tee "$logs/gpu_processes_unique.log"
# A worker started with --device N must only ever appear on GPU N's uuid.
mismatch=0
while read -r pid uuid rest; do
  [[ $rest =~ --device[=\ ]([0-9]+) ]] || continue
  want=$(awk -F', ' -v n="${BASH_REMATCH[1]}" '$1 == n {print $2}' "$logs/gpus.csv")
  if [[ $uuid != "$want" ]]; then
    echo "MISMATCH: pid $pid ($rest) on $uuid, expected $want"
    mismatch=1
  fi
done <"$logs/gpu_processes_unique.log"
grep -q -- '--device' "$logs/gpu_processes_unique.log" ||
  echo "note: nvidia-smi's pids are not visible here (PID namespace); see 'zkfarm workers' in the demo log for each worker's device"
echo "demo exit $status, device mismatches $mismatch"
((status == 0 && mismatch == 0))
