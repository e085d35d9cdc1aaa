#!/usr/bin/env bash
# run_farm_gpus.sh BUNDLE [LOGDIR] [demo.sh args...] -- the whole farm on a
# GPU host, one zkfarm-worker per GPU (each pinned with --device N at launch),
# from a bundle made by tests/gpu/farm_bundle.sh: runs tools/demo.sh with the
# bundled binaries and samples, every 0.5 s while it runs, which process
# holds which GPU (nvidia-smi), so the log shows that worker N only ever used
# device N. Prints the demo's output, the per-GPU process table and a
# summary. Then, from every result.json the demo kept, it checks that each
# partition's device_uuid (what the worker reported with its result) is the
# UUID of the GPU that worker was pinned to (worker demo-gpuN -> GPU N), and
# that every GPU proved something. Exit status: 0 only when the demo passed
# (every partition verified) and both checks found nothing wrong.
#   run_farm_gpus.sh out/farm LOGS --curve bls12381 --partitions 10 --jobs 5
set -uo pipefail
bundle=$(cd "${1:?usage: run_farm_gpus.sh BUNDLE [LOGDIR] [demo args...]}" && pwd)
logs=${2:-$bundle}
shift 2 2>/dev/null || shift $#
mkdir -p "$logs"
cd "$(dirname "$0")/../.." || exit 2
export PATH=$bundle/bin:$PATH LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZKFARM_SKIP_DEPS=1 ZKFARM_BIN=$bundle
nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader | tee "$logs/gpus.csv"

(while :; do
  nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>/dev/null |
    while IFS=', ' read -r pid uuid mem _; do
      [[ -n $pid ]] && echo "$pid $uuid $mem $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | head -c 200)"
    done
  sleep 0.5
done) >"$logs/gpu_processes.log" 2>&1 &
sampler=$!
timeout -s INT "${FARM_TIMEOUT:-300}" tools/demo.sh "$@" --keep 2>&1 | tee "$logs/demo.log"
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
echo "==== partitions per device (from the workers' results)"
python3 - "$logs/gpus.csv" out/demo/farm "$logs/demo.log" >"$logs/result_devices.log" 2>&1 <<'PY'
import glob, json, re, sys
gpus = {int(line.split(",")[0]): line.split(",")[1].strip() for line in open(sys.argv[1]) if line.strip()}
# Only the GPUs the demo started a worker on (demo.sh --gpus N uses the first N).
started = {int(n) for n in re.findall(r"zkfarm-worker +demo-gpu(\d+) ", open(sys.argv[3]).read())}
gpus = {i: u for i, u in gpus.items() if i in started}
counts, bad, total = {}, 0, 0
for path in sorted(glob.glob(sys.argv[2] + "/result*/result.json")):
    for entry in json.load(open(path))["partitions"]:
        total += 1
        m = re.fullmatch(r"demo-gpu(\d+)", entry["worker"])
        want = gpus.get(int(m.group(1))) if m else None
        counts[entry["device_uuid"]] = counts.get(entry["device_uuid"], 0) + 1
        if entry["device_uuid"] != want:
            bad += 1
            print(f"MISMATCH: {path} partition {entry['partition']} by {entry['worker']} on {entry['device_uuid']}, pinned to {want}")
for index, uuid in sorted(gpus.items()):
    print(f"GPU {index} {uuid}: {counts.get(uuid, 0)} partitions")
idle = [i for i, u in gpus.items() if counts.get(u, 0) == 0]
print(f"{total} partitions, {bad} on the wrong device, idle GPUs: {idle or 'none'}")
sys.exit(1 if bad or idle or total == 0 else 0)
PY
results=$?
cat "$logs/result_devices.log"
rm -rf out/demo/farm
echo "demo exit $status, process/device mismatches $mismatch, result/device check exit $results"
((status == 0 && mismatch == 0 && results == 0))
