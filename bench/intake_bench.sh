#!/bin/bash
# intake_bench.sh -- how long the coordinator's intake takes over a job of
# big witnesses, from submit to the job's "started" event.
#
#   bench/intake_bench.sh [--partitions N] [--file-gib G] [--redis-mib M]
#                         [--coordinator LABEL=BINARY]... [--keep]
#
# Builds real .wtns files on disk (sparse: the header and witness[0] = 1 are
# written, the values after them are a hole that reads as zeros, so a 4 GiB
# witness takes a few KiB of disk and reading it costs page-cache copies and
# hashing, not disk I/O): one file of G GiB (default 4) per partition, and one
# of M MiB (default 511, under Redis's 512 MiB value limit) stored as a
# Redis key that all N partitions name. Registers the test fixture circuit
# (formats/testdata/bn128_mul.zkey, 3 public signals) with `zkfarm circuit
# add` and sets its record's num_vars to the big witnesses' length (intake
# compares the two; no worker runs, nothing is proved). Then, with one
# coordinator and no workers, submits (`zkfarm submit job.json`) one job of N
# partitions (default 10) per case:
#   file://   with the witnesses' sha256 and size in the job, and without
#   redis://  with sha256 and size, and without
# and prints a Markdown row per case: the seconds from submitted_at to the
# scheduler's "started" event (the job parsed, claimed and every witness
# checked), and the coordinator's peak RSS. Each --coordinator (default:
# this tree's bazel-bin/coordinator/zkfarm-coordinator) runs every case in
# turn, over the same files, so two builds compare on one set of witnesses.
# Not a test: numbers go to BENCHMARKS.md. ZKFARM_BIN=DIR: the CLI from
# DIR/cli/zkfarm instead of bazel-bin.
# The big files are removed at exit (unless --keep).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
ZKFARM=$BIN/cli/zkfarm
partitions=10 file_gib=4 redis_mib=511 keep=0 coordinators=()
while (($#)); do
  case $1 in
    --partitions) partitions=$2; shift ;;
    --file-gib) file_gib=$2; shift ;;
    --redis-mib) redis_mib=$2; shift ;;
    --coordinator) coordinators+=("$2"); shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "intake_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
((${#coordinators[@]})) || coordinators=("this build=$BIN/coordinator/zkfarm-coordinator")

# shellcheck source=bench/farm_bench_lib.sh
source "$HERE/farm_bench_lib.sh"
bench_work zkfarm-intake-bench

# A sparse BN254 .wtns of about `bytes` bytes; prints its nWitness.
make_wtns() {
  python3 - "$1" "$2" <<'PYTHON'
import struct, sys
path, want = sys.argv[1], int(sys.argv[2])
r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
header = struct.pack("<I", 32) + r.to_bytes(32, "little")
n = (want - 12 - 12 - 40 - 12) // 32
with open(path, "wb") as f:
    f.write(b"wtns" + struct.pack("<II", 2, 2))
    f.write(struct.pack("<IQ", 1, 40) + header + struct.pack("<I", n))
    f.write(struct.pack("<IQ", 2, 32 * n))
    f.write((1).to_bytes(32, "little"))  # witness[0] = 1
    f.truncate(12 + 12 + 40 + 12 + 32 * n)
print(n)
PYTHON
}

bench_redis "$WORK/redis.log"
export ZKFARM_REDIS=redis://127.0.0.1:$redis_port ZKFARM_ARTIFACTS=$WORK/artifacts
rcli() { redis-cli -p "$redis_port" "$@"; }
circuit=$("$ZKFARM" circuit add "$ROOT/formats/testdata/bn128_mul.zkey" 2>/dev/null | tail -1)

mkdir -p "$WORK/w"
file_values=$(make_wtns "$WORK/w/0.wtns" $((file_gib << 30)))
for ((i = 1; i < partitions; i++)); do make_wtns "$WORK/w/$i.wtns" $((file_gib << 30)) >/dev/null; done
file_bytes=$(stat -c %s "$WORK/w/0.wtns")
t=$(now)
file_sha=$(sha256sum "$WORK/w/0.wtns" | cut -d' ' -f1)  # every file holds the same bytes
echo "sha256sum of one $file_bytes-byte witness here: $(since "$t") s" >&2
redis_values=$(make_wtns "$WORK/r.wtns" $((redis_mib << 20)))
redis_bytes=$(stat -c %s "$WORK/r.wtns")
redis_sha=$(sha256sum "$WORK/r.wtns" | cut -d' ' -f1)
rcli -x SET zkfarm:bench:witness <"$WORK/r.wtns" >/dev/null
rm -f "$WORK/r.wtns"

# One job of $partitions partitions naming $1 (a URL with %d for the
# partition) with checks $2 (1: sha256 and size); prints its row.
run_case() {
  local name=$1 url=$2 checked=$3 values=$4 bytes=$5 sha=$6 id
  id="intake-$name-$checked-$RANDOM"
  rcli HSET "zkfarm:circuit:$circuit" num_vars "$values" >/dev/null
  python3 - "$id" "$circuit" "$url" "$partitions" "$checked" "$bytes" "$sha" >"$WORK/$id.json" <<'PYTHON'
import json, sys
job_id, circuit, url, n, checked, size, sha = sys.argv[1:]
parts = []
for i in range(int(n)):
    p = {"witness": url.replace("%d", str(i))}
    if checked == "1":
        p["sha256"], p["size"] = sha, int(size)
    parts.append(p)
print(json.dumps({"id": job_id, "circuit": circuit, "partitions": parts}))
PYTHON
  "$ZKFARM" submit "$WORK/$id.json" >/dev/null
  local peak=0 rss events
  while :; do
    events=$(rcli LRANGE "zkfarm:job:$id:events" 0 -1)
    [[ $events == *'"started"'* || $events == *'"finished"'* ]] && break
    rss=$(awk '/VmRSS/ { print $2 }' "/proc/$coordinator/status")
    ((rss > peak)) && peak=$rss
    sleep 0.05
  done
  [[ $events == *'"started"'* ]] || { echo "job $id: $events" >&2; exit 1; }
  local started submitted
  started=$(sed -n 's/.*"type":"started".*"time":\([0-9.e+]*\).*/\1/p; s/.*"time":\([0-9.e+]*\).*"type":"started".*/\1/p' <<<"$events" | head -1)
  submitted=$(rcli HGET "zkfarm:job:$id" submitted_at)
  "$ZKFARM" cancel "$id" >/dev/null 2>&1 || true
  awk -v name="$name" -v c="$checked" -v n="$partitions" -v b="$bytes" -v s="$submitted" -v e="$started" -v rss="$peak" \
    -v label="$label" 'BEGIN { printf "| %s | %s:// | %s | %d x %.0f MiB | %.3f | %.0f |\n", label, name, (c ? "sha256 + size" : "none"), n, b / 1048576, e - s, rss / 1024 }'
}

echo "| coordinator | witnesses | checks in the job | partitions x witness | intake s (submitted_at to started) | coordinator peak RSS MiB |"
echo "|---|---|---|---|---|---|"
for entry in "${coordinators[@]}"; do
  label=${entry%%=*}
  port=$(free_port 35755)
  "${entry#*=}" --id intake-bench --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
    --witness-root "$WORK" --listen "tcp://127.0.0.1:$port" --metrics-listen "" >"$WORK/coordinator.log" 2>&1 &
  coordinator=$!
  pids+=("$coordinator")
  run_case file "file://$WORK/w/%d.wtns" 1 "$file_values" "$file_bytes" "$file_sha"
  run_case file "file://$WORK/w/%d.wtns" 0 "$file_values" "$file_bytes" "$file_sha"
  run_case redis "redis://zkfarm:bench:witness" 1 "$redis_values" "$redis_bytes" "$redis_sha"
  run_case redis "redis://zkfarm:bench:witness" 0 "$redis_values" "$redis_bytes" "$redis_sha"
  kill "$coordinator"
  wait "$coordinator" 2>/dev/null || true
done
