#!/usr/bin/env bash
# farm_bundle.sh [OUT] [--witgen-tools] [--node] -- bundles the Bazel-built
# farm (zkfarm, zkfarm-coordinator, zkfarm-worker with the CUDA backend, and
# the device programs partition_benchmark and cuda_backend_test) plus
# redis-server/redis-cli and every non-system shared library they need, for
# a GPU host that has only the driver. OUT (default out/farm) gets cli/,
# coordinator/, worker/ (the layout tools/demo.sh's ZKFARM_BIN expects),
# bin/ (redis, the device programs) and lib/; binaries are stripped so the
# bundle stays small enough to carry (< 64 MiB).
#   --witgen-tools: what `zkfarm circuit add --witness-generator` needs
#     beyond g++ (which GPU hosts have): nasm in bin/, and in witgen/ gmp.h,
#     nlohmann/json.hpp and libgmp.so (the link name; the generator then
#     runs against the host's own libgmp.so.10, which g++ itself needs).
#     tests/gpu/farm_bench.sh puts them on PATH, CPLUS_INCLUDE_PATH and
#     LIBRARY_PATH.
#   --node: node (xz-compressed, node.xz) for snarkjs's wasm witness
#     calculator, the client side of bench/inputs_bench.sh.
#   --bench: the coordinator's capacity benchmarks, bench/load_driver and
#     bench/verifier_pool_bench, in bin/, with the files they read in
#     runfiles/zkfarm/ (RUNFILES_DIR=runfiles): for bench/verifier_scaling.sh
#     on a host with idle cores.
#   tests/gpu/farm_bundle.sh && (carry out/farm) tests/gpu/run_farm_gpus.sh out/farm
set -euo pipefail
cd "$(dirname "$0")/../.."
out=out/farm witgen_tools=0 node=0 bench=0
for arg in "$@"; do
  case $arg in
    --witgen-tools) witgen_tools=1 ;;
    --node) node=1 ;;
    --bench) bench=1 ;;
    -*) echo "farm_bundle.sh: unknown option $arg" >&2; exit 2 ;;
    *) out=$arg ;;
  esac
done
bazel build //cli:zkfarm //coordinator:zkfarm-coordinator //worker:zkfarm-worker //worker:cuda_backend_test \
  //tests/gpu:partition_benchmark
((bench)) && bazel build //bench:load_driver //bench:verifier_pool_bench
rm -rf "$out"
mkdir -p "$out/cli" "$out/coordinator" "$out/worker" "$out/bin" "$out/lib"
install -m 755 bazel-bin/cli/zkfarm bazel-bin/cli/zkfarm-farm "$out/cli/"  # zkfarm execs zkfarm-farm beside it
install -m 755 bazel-bin/coordinator/zkfarm-coordinator "$out/coordinator/"
install -m 755 bazel-bin/worker/zkfarm-worker "$out/worker/"
install -m 755 bazel-bin/worker/cuda_backend_test bazel-bin/tests/gpu/partition_benchmark "$out/bin/"
install -m 755 "$(command -v redis-server)" "$(command -v redis-cli)" "$out/bin/"
if ((witgen_tools)); then
  install -m 755 "$(command -v nasm)" "$out/bin/"
  mkdir -p "$out/witgen/include" "$out/witgen/lib"
  cp "$(echo '#include <gmp.h>' | g++ -x c++ -E -M - | tr ' ' '\n' | grep '/gmp\.h$' | head -1)" "$out/witgen/include/"
  cp -r /usr/include/nlohmann "$out/witgen/include/"
  cp -L "$(g++ -print-file-name=libgmp.so)" "$out/witgen/lib/libgmp.so"
fi
if ((bench)); then
  install -m 755 bazel-bin/bench/load_driver bazel-bin/bench/verifier_pool_bench "$out/bin/"
  mkdir -p "$out/runfiles/zkfarm/formats/testdata" "$out/runfiles/zkfarm/coordinator"
  cp bazel-bin/coordinator/zkfarm-coordinator "$out/runfiles/zkfarm/coordinator/"
  strip --strip-debug "$out/runfiles/zkfarm/coordinator/zkfarm-coordinator"
  for f in bn128_mul.zkey bn128_mul.wtns bn128_proof.json bn128_public.json bn128_verification_key.json \
    bls12381_mul.zkey bls12381_mul.wtns bls12381_proof.json bls12381_public.json bls12381_verification_key.json; do
    cp formats/testdata/$f "$out/runfiles/zkfarm/formats/testdata/"
  done
fi
((node)) && xz -T0 -6 -c "$(command -v node)" >"$out/node.xz"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda\.so|libnvidia)'
for binary in "$out"/cli/* "$out"/coordinator/* "$out"/worker/* "$out"/bin/*; do
  strip --strip-debug "$binary"
  ldd "$binary" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] || cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true
  done
done
du -sh "$out" | awk '{print "farm bundle: " $1 " in " $2}'
