#!/usr/bin/env bash
# farm_bundle.sh [OUT] [--witgen-tools] [--node] [--bench] [--device-tests]
#   [--base-worker REV] [--archive] -- bundles the Bazel-built
# farm (zkfarm, zkfarm-coordinator, zkfarm-worker with the CUDA backend, and
# the device programs partition_benchmark and cuda_backend_test) plus
# redis-server/redis-cli and every non-system shared library they need, for
# a GPU host that has only the driver. OUT (default out/farm) gets cli/,
# coordinator/, worker/ (the layout tools/demo.sh's ZKFARM_BIN expects),
# bin/ (redis, the device programs) and lib/; binaries are stripped so the
# bundle stays small enough to carry (< 64 MiB; with --device-tests or
# --base-worker, carry --archive's file instead).
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
#   --device-tests: the GPU test programs too (gpu_kernels_test,
#     groth16_device_test, setup_device_test; cuda_backend_test is always
#     there) in bin/, with the libraries Bazel links them against, and
#     run_gpu_tests.sh beside a `run` wrapper in OUT: `GPU_BENCH=0
#     OUT/run_gpu_tests.sh LOGDIR` runs them as on a build_bundle.sh bundle,
#     with no compiler on the GPU host.
#   --base-worker REV: zkfarm-worker as built from revision REV too, as
#     worker/zkfarm-worker.base, for a side-by-side run in one call
#     (bench/partition_stream.sh --base-worker). Built in a temporary git
#     worktree with its own Bazel output base: a full build unless
#     ~/.bazelrc sets `build --disk_cache=DIR`, with which every action REV
#     shares with the tree is a cache hit. Needs the git metadata.
#   --archive: OUT.tar.xz as well (xz -9e: its 64 MiB window finds the
#     CUDA code the binaries share, so a bundle with the test programs and
#     a base worker, 228 MB, packs to 28 MB; ~2 minutes on two cores). On
#     the GPU host: `tar -xJf OUT.tar.xz -C $(dirname OUT)`.
#   tests/gpu/farm_bundle.sh && (carry out/farm) tests/gpu/run_farm_gpus.sh out/farm
#   tests/gpu/farm_bundle.sh out/farm --device-tests --base-worker main --archive
#     && (carry out/farm.tar.xz) tar -xJf out/farm.tar.xz -C out &&
#     GPU_BENCH=0 out/farm/run_gpu_tests.sh && PATH=$PWD/out/farm/bin:$PATH
#     LD_LIBRARY_PATH=$PWD/out/farm/lib ZKFARM_BIN=out/farm bench/partition_stream.sh
#     --curve bn254 --constraints 65536 --base-worker out/farm/worker/zkfarm-worker.base
set -euo pipefail
cd "$(dirname "$0")/../.."
out=out/farm witgen_tools=0 node=0 bench=0 want_device_tests=0 base_rev="" archive=0
while (($#)); do
  case $1 in
    --witgen-tools) witgen_tools=1 ;;
    --node) node=1 ;;
    --bench) bench=1 ;;
    --device-tests) want_device_tests=1 ;;
    --base-worker)
      [[ $# -ge 2 && -n $2 ]] || { echo "farm_bundle.sh: --base-worker needs a revision" >&2; exit 2; }
      base_rev=$2
      shift
      ;;
    --archive) archive=1 ;;
    -*) echo "farm_bundle.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
base_commit=""
if [[ -n $base_rev ]]; then
  git rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "farm_bundle.sh: --base-worker needs a git checkout (this tree has no git metadata)" >&2; exit 2; }
  base_commit=$(git rev-parse --verify --quiet "$base_rev^{commit}") ||
    { echo "farm_bundle.sh: --base-worker: no commit named '$base_rev' in this repository" >&2; exit 2; }
fi
device_tests=()  # the GPU test programs in tests/gpu (--device-tests)
((want_device_tests)) && device_tests=(gpu_kernels_test groth16_device_test setup_device_test)
bazel build //cli:zkfarm //coordinator:zkfarm-coordinator //worker:zkfarm-worker //worker:cuda_backend_test \
  //tests/gpu:partition_benchmark "${device_tests[@]/#///tests/gpu:}"
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
if ((${#device_tests[@]})); then
  # As a build_bundle.sh bundle: bin/, lib/ (ldd of the Bazel outputs also
  # finds their own libraries in bazel-bin/_solib_*) and the `run` wrapper
  # run_gpu_tests.sh starts each program through.
  tests/gpu/bundle_libs.sh "$out" "${device_tests[@]/#/bazel-bin/tests/gpu/}" >/dev/null
  install -m 755 tests/gpu/run_gpu_tests.sh "$out/"
fi
if [[ -n $base_commit ]]; then
  base_tree=$(mktemp -d --suffix=.zkfarm-base)
  trap 'git worktree remove --force "$base_tree" 2>/dev/null || rm -rf "$base_tree"' EXIT
  git worktree add --detach "$base_tree" "$base_commit" >/dev/null
  out_dir=$(cd "$out" && pwd)
  # clean --expunge: the worktree's output base goes with it (the disk
  # cache, if any, keeps its actions).
  (cd "$base_tree" && bazel build //worker:zkfarm-worker &&
    install -m 755 bazel-bin/worker/zkfarm-worker "$out_dir/worker/zkfarm-worker.base" &&
    bazel clean --expunge 2>/dev/null)
  echo "base worker: $base_rev ($base_commit) as $out/worker/zkfarm-worker.base"
fi
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda\.so|libnvidia)'
missing=()
for binary in "$out"/cli/* "$out"/coordinator/* "$out"/worker/* "$out"/bin/*; do
  strip --strip-debug "$binary"
  # lib/ searched too (the test programs' own libraries are there): what
  # ldd cannot find there or on this machine is missing from the bundle.
  libraries=$(LD_LIBRARY_PATH=$out/lib ldd "$binary")
  while read -r name path; do
    [[ $name =~ $skip ]] || cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true
  done < <(awk '/=>/ && $3 ~ /^\// {print $1, $3}' <<<"$libraries")
  mapfile -t -O "${#missing[@]}" missing < <(awk -v b="$binary" '/not found/ {print b ": " $1}' <<<"$libraries")
done
((${#missing[@]} == 0)) ||
  { echo "farm_bundle.sh: libraries missing from $out/lib:" >&2; printf '%s\n' "${missing[@]}" >&2; exit 1; }
du -sh "$out" | awk '{print "farm bundle: " $1 " in " $2}'
if ((archive)); then
  # Binaries that share CUDA code next to each other in the stream, so that
  # xz's window holds one while it packs the other.
  parent=$(dirname "$out") name=$(basename "$out")
  (cd "$parent" && { find "$name/worker" "$name/cli" "$name/bin" -type f | sort
    find "$name" -type f -not -path "$name/worker/*" -not -path "$name/cli/*" -not -path "$name/bin/*" | sort
  } | tar -cf - --no-recursion -T -) |
    xz -9e -T2 >"$out.tar.xz.tmp"
  mv "$out.tar.xz.tmp" "$out.tar.xz"
  du -h "$out.tar.xz" | awk '{print "farm archive: " $1 " in " $2}'
fi
