#!/usr/bin/env bash
# verifier_scaling.sh BUNDLE [LOGDIR] -- the coordinator's verification
# against the cores it has, on a host with idle cores (BENCHMARKS.md,
# "Verifier pool"). BUNDLE is made by `tests/gpu/farm_bundle.sh OUT --bench`
# on a build machine and carried to the host (no GPU is used):
#   1. bench/verifier_pool_bench: a backlog of real BN254 proofs through a
#      VerifierPool of 1, 2, 4, ... threads up to the host's cores, the
#      counts taking turns in each round;
#      (and, with taskset, 1 and 2 threads held to two of its cores: an idle
#      two-core machine);
#   2. bench/load_driver: one real coordinator and redis-server under 100
#      worker sessions answering every task 5 ms after it came with a real
#      proof, --verify-threads 1, 2 and the host's cores taking turns.
# Environment: THREADS (1,2,4,8,...,cores), PROOFS (8000), ROUNDS (5),
# JOBS (2000), SESSIONS (100), SKIP_DRIVER=1 (the pool alone).
# Prints both benchmarks' Markdown rows last; full output in LOGDIR
# (default: a new temp dir).
set -uo pipefail
bundle=$(cd "${1:?usage: verifier_scaling.sh BUNDLE [LOGDIR]}" && pwd)
logs=${2:-$(mktemp -d)}
mkdir -p "$logs"
export PATH=$bundle/bin:$PATH LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RUNFILES_DIR=$bundle/runfiles
cores=$(nproc)
if [[ -z ${THREADS:-} ]]; then
  THREADS=1
  for ((t = 2; t < cores; t *= 2)); do THREADS+=",$t"; done
  THREADS+=",$cores"
fi
echo "host: $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
verifier_pool_bench --curve bn254 --threads "$THREADS" --proofs "${PROOFS:-8000}" --rounds "${ROUNDS:-5}" \
  >"$logs/verifier_pool_bench.log" 2>&1 || status=1
# A two-core machine, as the development VM is, but idle: the process held
# to two of this host's cores.
if command -v taskset >/dev/null && ((cores > 2)); then
  taskset -c 0,1 verifier_pool_bench --curve bn254 --threads 1,2 --proofs "${PROOFS:-8000}" --rounds "${ROUNDS:-5}" \
    >"$logs/verifier_pool_bench_2cores.log" 2>&1 || status=1
fi
if [[ ${SKIP_DRIVER:-0} != 1 ]]; then
  load_driver --sessions "${SESSIONS:-100}" --jobs "${JOBS:-2000}" --partitions 4 --delay-ms 5 \
    --verify-threads "1,2,$cores,1,2,$cores" --check >"$logs/load_driver.log" 2>&1 || status=1
fi
echo "== verifier_pool_bench (exit $status so far)"
grep '^|' "$logs/verifier_pool_bench.log" || tail -5 "$logs/verifier_pool_bench.log"
if [[ -f $logs/verifier_pool_bench_2cores.log ]]; then
  echo "== verifier_pool_bench on two cores (taskset -c 0,1)"
  grep '^|' "$logs/verifier_pool_bench_2cores.log" || tail -5 "$logs/verifier_pool_bench_2cores.log"
fi
if [[ ${SKIP_DRIVER:-0} != 1 ]]; then
  echo "== load_driver"
  grep '^|' "$logs/load_driver.log" || tail -5 "$logs/load_driver.log"
  grep 'cores busy' "$logs/load_driver.log" | cut -c1-400
fi
exit $status
