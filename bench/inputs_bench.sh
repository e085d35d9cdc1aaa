#!/bin/bash
# inputs_bench.sh -- input jobs against client-side witnesses, in one run.
#
#   bench/inputs_bench.sh [--links N] [--jobs J] [--workers W] [--clients C]
#                         [--device D] [--circuit DIR] [--keep]
#
# Circuit: bench/circuits/poseidon_chain.circom (a chain of N circomlib
# Poseidon(2) hashes, 243 non-linear and 274 linear constraints each at
# circom's default -O1; default N = 512; N = 2048 gives 1,058,816
# constraints, over 2^20, in a 2^21 domain), compiled by circom2 to r1cs,
# wasm and C++ (or taken from --circuit DIR, which holds chain.r1cs,
# chain_cpp/ and chain_js/ as circom wrote them: a GPU host without node
# and circom2); test-only key by `zkfarm setup`; the C++ generator built by
# `zkfarm circuit add --witness-generator` (g++, nasm and libgmp on the
# host; times printed). Then, on a farm of W workers (redis-server,
# zkfarm-coordinator, zkfarm-worker --cpu, or --device D: one GPU worker
# whose generator pool is the host's cores minus 2):
#   A  farm witnesses: J jobs of one input partition each, submitted at once
#      (`zkfarm submit --input`); the workers compute the witnesses;
#   B  client witnesses: C clients (default 1) at once, each computing its
#      share of the J witnesses with snarkjs's wasm calculator (`node
#      <name>_js/generate_witness.js`) and submitting each as a file://
#      witness as soon as it is written (skipped without node).
# For each: wall time from the first submission (A) or the first witness
# computation (B) to the last job done, verified proofs per second (every
# proof checked with `zkfarm verify`), and the mean witness time (A: the
# workers' zkfarm_witgen_duration_seconds; B: the client's wasm runs) against
# the mean prove time (zkfarm_prove_duration_seconds), and the device busy
# fraction (zkfarm_device_busy_seconds_total over the mode's wall time).
# Prints a Markdown table row per mode. Not a test: numbers go to BENCHMARKS.md.
# ZKFARM_BENCH_LOCK=FILE: the measuring part (A and B) runs under flock FILE,
# so benchmarks sharing a machine do not measure at the same time.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
ZKFARM=$BIN/cli/zkfarm
NODE_MODULES=$ROOT/tests/interop/node_modules
links=512 jobs=8 workers=1 clients=1 device="" circuit_dir="" keep=0
while (($#)); do
  case $1 in
    --links) links=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --workers) workers=$2; shift ;;
    --clients) clients=$2; shift ;;
    --device) device=$2; shift ;;
    --circuit) circuit_dir=$(cd "$2" && pwd); shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "inputs_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=bench/farm_bench_lib.sh
source "$HERE/farm_bench_lib.sh"
bench_work zkfarm-inputs-bench

C=$WORK/circuit
mkdir -p "$C"
if [[ -n $circuit_dir ]]; then
  cp -r "$circuit_dir/chain.r1cs" "$circuit_dir/chain_cpp" "$C/"
  [[ -d $circuit_dir/chain_js ]] && cp -r "$circuit_dir/chain_js" "$C/"
else
  cp -r "$NODE_MODULES/circomlib/circuits/." "$C/"
  sed "s/LINKS/$links/" "$HERE/circuits/poseidon_chain.circom" >"$C/chain.circom"
  t=$(now)
  (cd "$C" && node "$NODE_MODULES/circom2/cli.js" chain.circom --r1cs --wasm --c -o . >compile.log 2>&1)
  echo "circom2 (r1cs, wasm, C++): $(since "$t") s; $(grep -a 'non-linear constraints' "$C/compile.log" | sed 's/\x1b\[[0-9;]*m//g')"
fi
# The r1cs header: field size, prime, wires, public outputs, public and
# private inputs, labels, constraints (section 1 as circom writes it).
python3 - "$C/chain.r1cs" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
pos = 12
while pos < len(data):
    kind, size = struct.unpack_from("<IQ", data, pos)
    pos += 12
    if kind == 1:
        n8 = struct.unpack_from("<I", data, pos)[0]
        wires, outs, pub, priv, labels, m = struct.unpack_from("<IIIIQI", data, pos + 4 + n8)
        domain = 1
        while domain < m + outs + pub + 1:
            domain *= 2
        print(f"r1cs header: {m} constraints, {wires} wires, {outs} public outputs, {pub} public inputs, "
              f"{priv} private inputs; Groth16 domain 2^{domain.bit_length() - 1}")
        break
    pos += size
PY
t=$(now)
setup_device=()
[[ -n $device ]] && setup_device=(--device "$device")
"$ZKFARM" setup "$C/chain.r1cs" "$C/chain.zkey" --seed 1 "${setup_device[@]}" >/dev/null 2>&1
echo "zkfarm setup ${setup_device[*]}: $(since "$t") s"

mkdir -p "$WORK/farm/artifacts" "$WORK/witnesses"
bench_redis "$WORK/farm/redis.log"
export ZKFARM_REDIS=redis://127.0.0.1:$redis_port ZKFARM_ARTIFACTS=$WORK/farm/artifacts
port=$(free_port 35555)
"$BIN/coordinator/zkfarm-coordinator" --id bench --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
  --witness-root "$WORK" --listen "tcp://127.0.0.1:$port" --metrics-listen "" >"$WORK/farm/coordinator.log" 2>&1 &
pids+=($!)
metrics_ports=()
for ((n = 0; n < workers; n++)); do
  metrics_ports+=("$(free_port $((39470 + n)))")
  if [[ -n $device ]]; then backend=(--device "$device"); else backend=(--cpu); fi
  "$BIN/worker/zkfarm-worker" "${backend[@]}" --id "bench-w$n" --coordinator "tcp://127.0.0.1:$port" \
    --artifacts "$ZKFARM_ARTIFACTS" --witness-root "$WORK" --metrics-listen "127.0.0.1:${metrics_ports[n]}" \
    >"$WORK/farm/worker$n.log" 2>&1 &
  pids+=($!)
done
sleep 2
t=$(now)
circuit=$("$ZKFARM" circuit add "$C/chain.zkey" --witness-generator "$C/chain_cpp")
echo "circuit add --witness-generator (PCE, vk, g++ of the generator): $(since "$t") s"
"$ZKFARM" export-vk "$C/chain.zkey" "$WORK/vk.json"

# The chain's length from the r1cs (its private inputs), so --circuit needs no --links.
links=$(python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(); pos = 12
while True:
    kind, size = struct.unpack_from("<IQ", d, pos); pos += 12
    if kind == 1:
        n8 = struct.unpack_from("<I", d, pos)[0]
        print(struct.unpack_from("<IIII", d, pos + 4 + n8)[3]); break
    pos += size' "$C/chain.r1cs")
for ((j = 0; j < jobs; j++)); do
  python3 -c 'import json, sys; n, j = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"seed": str(1000 + j), "steps": [str(i * 7 + j) for i in range(n)]}))' "$links" "$j" >"$WORK/in$j.json"
done

# The device busy seconds, summed over the workers.
busy_seconds() {
  local n total=0 v
  for n in "${metrics_ports[@]}"; do
    v=$( (exec 3<>"/dev/tcp/127.0.0.1/$n"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) |
      awk '$1 ~ /^zkfarm_device_busy_seconds_total/ {s += $2} END {print s + 0}')
    total=$(awk -v a="$total" -v b="$v" 'BEGIN { print a + b }')
  done
  echo "$total"
}

# Sum and count of a histogram over the workers' /metrics.
histogram() { # NAME -> "sum count"
  local n total_sum=0 total_count=0 sum count
  for n in "${metrics_ports[@]}"; do
    sum=$( (exec 3<>"/dev/tcp/127.0.0.1/$n"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) |
      awk -v m="${1}_sum" '$1 ~ "^"m {s += $2} END {print s + 0}')
    count=$( (exec 3<>"/dev/tcp/127.0.0.1/$n"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) |
      awk -v m="${1}_count" '$1 ~ "^"m {s += $2} END {print s + 0}')
    total_sum=$(awk -v a="$total_sum" -v b="$sum" 'BEGIN { print a + b }')
    total_count=$(awk -v a="$total_count" -v b="$count" 'BEGIN { print a + b }')
  done
  echo "$total_sum $total_count"
}

verify_all() { # JOB... -> number verified
  local job ok=0
  for job in "$@"; do
    "$ZKFARM" result "$job" --out "$WORK/result-$job" >/dev/null &&
      "$ZKFARM" verify "$WORK/vk.json" "$WORK/result-$job/public.json" "$WORK/result-$job/proof.json" >/dev/null &&
      ok=$((ok + 1))
  done
  echo "$ok"
}

if [[ -n ${ZKFARM_BENCH_LOCK:-} ]]; then
  exec 9>"$ZKFARM_BENCH_LOCK"
  flock 9
  echo "measuring from $(date -u +%H:%M:%S) (holding $ZKFARM_BENCH_LOCK); load average $(cut -d' ' -f1-3 /proc/loadavg)"
fi

# A: the farm computes the witnesses.
read -r prove_sum0 prove_count0 < <(histogram zkfarm_prove_duration_seconds)
busy0=$(busy_seconds)
t=$(now)
farm_jobs=()
for ((j = 0; j < jobs; j++)); do farm_jobs+=("$("$ZKFARM" submit "$circuit" --input "$WORK/in$j.json")"); done
for job in "${farm_jobs[@]}"; do "$ZKFARM" wait "$job" --quiet --timeout 3600 >/dev/null; done
farm_seconds=$(since "$t")
busy1=$(busy_seconds)
farm_ok=$(verify_all "${farm_jobs[@]}")
read -r witgen_sum witgen_count < <(histogram zkfarm_witgen_duration_seconds)
read -r prove_sum1 prove_count1 < <(histogram zkfarm_prove_duration_seconds)

# B: C clients compute the witnesses with snarkjs's wasm, each submitting
# its witnesses as they are written.
client() { # FIRST STEP -> one job id a line
  local j
  for ((j = $1; j < jobs; j += $2)); do
    local w
    w=$(now)
    node "$C/chain_js/generate_witness.js" "$C/chain_js/chain.wasm" "$WORK/in$j.json" "$WORK/witnesses/w$j.wtns"
    echo "wasm $(since "$w")" >>"$WORK/wasm$1.times"
    "$ZKFARM" submit "$circuit" "$WORK/witnesses/w$j.wtns"
  done
}
client_seconds=0 client_ok=0 wasm_total=0 busy2=$busy1
prove_sum2=$prove_sum1 prove_count2=$prove_count1
if command -v node >/dev/null && [[ -d $C/chain_js ]]; then
  t=$(now)
  client_pids=()
  for ((k = 0; k < clients; k++)); do
    client "$k" "$clients" >"$WORK/client$k.jobs" &
    client_pids+=($!)
  done
  wait "${client_pids[@]}"
  mapfile -t client_jobs < <(cat "$WORK"/client*.jobs)
  for job in "${client_jobs[@]}"; do "$ZKFARM" wait "$job" --quiet --timeout 3600 >/dev/null; done
  client_seconds=$(since "$t")
  busy2=$(busy_seconds)
  client_ok=$(verify_all "${client_jobs[@]}")
  wasm_total=$(cat "$WORK"/wasm*.times | awk '{ s += $2 } END { print s + 0 }')
  read -r prove_sum2 prove_count2 < <(histogram zkfarm_prove_duration_seconds)
else
  echo "no node (or no chain_js): the client mode is skipped"
fi

[[ -n ${ZKFARM_BENCH_LOCK:-} ]] && echo "measured until $(date -u +%H:%M:%S); load average $(cut -d' ' -f1-3 /proc/loadavg)"
kind=CPU
[[ -n $device ]] && kind="GPU (device $device)"
awk -v links="$links" -v jobs="$jobs" -v workers="$workers" -v clients="$clients" -v kind="$kind" \
  -v b0="$busy0" -v b1="$busy1" -v b2="$busy2" \
  -v fs="$farm_seconds" -v fok="$farm_ok" -v ws="$witgen_sum" -v wc="$witgen_count" \
  -v p0="$prove_sum0" -v c0="$prove_count0" -v p1="$prove_sum1" -v c1="$prove_count1" -v p2="$prove_sum2" -v c2="$prove_count2" \
  -v cs="$client_seconds" -v cok="$client_ok" -v wasm="$wasm_total" 'BEGIN {
  print "| witnesses computed by | jobs | workers | wall s | verified proofs/s | witness s (mean) | prove s (mean) | device busy |"
  print "|---|---|---|---|---|---|---|---|"
  printf "| the farm (C++ generator, pool) | %d | %d %s | %.1f | %.3f (%d verified) | %.2f | %.3f | %.0f%% |\n", jobs, workers, kind, fs, fok / fs, fok, (wc ? ws / wc : 0), ((c1 - c0) ? (p1 - p0) / (c1 - c0) : 0), 100 * (b1 - b0) / fs
  if (cs > 0)
    printf "| %d client(s) (snarkjs wasm), then submit | %d | %d %s | %.1f | %.3f (%d verified) | %.2f | %.3f | %.0f%% |\n", clients, jobs, workers, kind, cs, cok / cs, cok, wasm / jobs, ((c2 - c1) ? (p2 - p1) / (c2 - c1) : 0), 100 * (b2 - b1) / cs
}'
