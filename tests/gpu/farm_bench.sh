#!/usr/bin/env bash
# farm_bench.sh BUNDLE CIRCUIT [LOGDIR] -- the farm's GPU benchmarks on one
# GPU host, from a bundle made by `tests/gpu/farm_bundle.sh OUT
# --witgen-tools [--node]` (nothing built here but the witness generator,
# which `zkfarm circuit add` compiles with the host's g++ and the bundle's
# nasm, gmp.h, nlohmann/json.hpp and libgmp.so):
#   1. bench/inputs_bench.sh --device 0 --circuit CIRCUIT: input jobs with
#      the witnesses computed by the worker's generator pool (the host's
#      cores minus 2) against clients computing them with snarkjs's wasm
#      (node from the bundle's node.xz, or the host's), then submitting;
#   2. bench/partition_stream.sh: a stream of BLS12-381 partitions through
#      the farm with and without --prefetch, against the worker's own
#      proof time;
#   3. partition_benchmark at the same size: the kernel-only rate.
# CIRCUIT is a directory with chain.r1cs, chain_cpp/ and chain_js/ as circom
# wrote them for bench/circuits/poseidon_chain.circom (any file may be
# xz-compressed, name.xz: a 2^20-constraint r1cs is 141 MB, 2.6 MB as xz).
# Environment: INPUT_JOBS (42), INPUT_CLIENTS (the host's cores minus 2),
# STREAM_CURVE (bls12381), STREAM_CONSTRAINTS (4194304), STREAM_JOBS (4),
# STREAM_PARTITIONS (16), STREAM_PREFETCH ("0 1"), STREAM_SLOTS ("1": the
# worker's --slots values, proofs on the device at once),
# SKIP_INPUTS / SKIP_STREAM / SKIP_KERNEL (1 skips a part; CIRCUIT may then
# be "-").
set -uo pipefail
bundle=$(cd "${1:?usage: farm_bench.sh BUNDLE CIRCUIT [LOGDIR]}" && pwd)
circuit=${2:?usage: farm_bench.sh BUNDLE CIRCUIT [LOGDIR]}  # "-" with SKIP_INPUTS=1
[ "${SKIP_INPUTS:-0}" = 1 ] || circuit=$(cd "$circuit" && pwd)
logs=${3:-$bundle/logs}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
cd "$(dirname "$0")/../.." || exit 2
cores=$(nproc)
# Temporary directories made below, removed on exit.
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT
# unxz FILE.xz OUT (python3's lzma: the host may have no xz).
unxz_to() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
# The bundle's libraries, less its libstdc++ and libgcc_s when the host's are
# newer (g++ there links the witness generator against its own, and the
# generator inherits LD_LIBRARY_PATH).
libs=$bundle/lib
host_cxx=$(readlink -f "$(g++ -print-file-name=libstdc++.so.6)")
if [ -f "$host_cxx" ] && grep -qa GLIBCXX_3.4.30 "$host_cxx"; then
  libs=$(mktemp -d "${TMPDIR:-/tmp}/farm-bench-lib.XXXXXX")
  scratch+=("$libs")
  for f in "$bundle"/lib/*; do
    case $(basename "$f") in libstdc++.so* | libgcc_s.so*) ;; *) ln -s "$f" "$libs/" ;; esac
  done
fi
export PATH=$bundle/bin:$PATH LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CPLUS_INCLUDE_PATH=$bundle/witgen/include LIBRARY_PATH=$bundle/witgen/lib ZKFARM_BIN=$bundle
if ! command -v node >/dev/null && [ -f "$bundle/node.xz" ]; then
  node_dir=$(mktemp -d "${TMPDIR:-/tmp}/farm-bench-node.XXXXXX")
  scratch+=("$node_dir")
  unxz_to "$bundle/node.xz" "$node_dir/node" && chmod 755 "$node_dir/node" && export PATH=$node_dir:$PATH
fi
echo "host: $cores cores, $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1);" \
  "g++ $(g++ -dumpfullversion); node $(node --version 2>/dev/null || echo none)"
status=0
if [ "${SKIP_INPUTS:-0}" != 1 ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/farm-bench-circuit.XXXXXX")
  scratch+=("$work")
  cp -r "$circuit"/. "$work/"
  while IFS= read -r -d '' f; do unxz_to "$f" "${f%.xz}" && rm "$f"; done < <(find "$work" -name '*.xz' -print0)  # carried compressed
  clients=${INPUT_CLIENTS:-$((cores > 2 ? cores - 2 : 1))}
  echo "== input jobs (bench/inputs_bench.sh --device 0 --jobs ${INPUT_JOBS:-42} --clients $clients)"
  bench/inputs_bench.sh --device 0 --circuit "$work" --jobs "${INPUT_JOBS:-42}" --clients "$clients" \
    2>&1 | tee "$logs/inputs.log" || status=1
fi
if [ "${SKIP_STREAM:-0}" != 1 ]; then
  constraints=${STREAM_CONSTRAINTS:-4194304}
  echo "== partition stream (bench/partition_stream.sh, ${STREAM_CURVE:-bls12381}, $constraints constraints)"
  bench/partition_stream.sh --curve "${STREAM_CURVE:-bls12381}" --constraints "$constraints" \
    --jobs "${STREAM_JOBS:-4}" --partitions "${STREAM_PARTITIONS:-16}" --prefetch "${STREAM_PREFETCH:-0 1}" \
    --slots "${STREAM_SLOTS:-1}" 2>&1 | tee "$logs/stream-$constraints.log" || status=1
fi
if [ "${SKIP_KERNEL:-0}" != 1 ]; then
  constraints=${STREAM_CONSTRAINTS:-4194304}
  echo "== kernel only (partition_benchmark --curve=bls12381 --constraints=$constraints --repeats=5)"
  partition_benchmark --curve=bls12381 --constraints="$constraints" --repeats=5 --cpu-constraints=0 \
    >"$logs/partition_benchmark.log" 2>&1 || status=1
  grep -E "median|RESULT|checks failed" "$logs/partition_benchmark.log" | tail -8
fi
exit $status
