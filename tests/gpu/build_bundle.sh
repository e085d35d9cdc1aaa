#!/usr/bin/env bash
# build_bundle.sh [OUT] -- builds the GPU test and benchmark binaries without
# Bazel (nvcc + g++, static cudart and libstdc++) and bundles them for a GPU
# host that has only the driver: OUT (default out/gpu) gets bin/, lib/, run
# and run_gpu_tests.sh. Objects are cached in OUT/obj and rebuilt when a
# source or header under kernels/ or tests/gpu/ is newer. nvcc runs one file
# at a time: the MSM translation units take 1-3 minutes each.
#   tests/gpu/build_bundle.sh out/gpu && (carry out/gpu) out/gpu/run_gpu_tests.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-out/gpu}
cuda=${ZKFARM_CUDA_PATH:-/usr/local/cuda}
mkdir -p "$out/obj"
nvcc_flags=(-std=c++20 -O3 -I. -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
  -Xcompiler -fPIC -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter --Werror all-warnings
  -DZKFARM_HAS_CUDA=1 -Xptxas -v)
cxx_flags=(-std=c++20 -O2 -march=x86-64-v2 -I. -isystem "$cuda/include" -Wall -Wextra -Werror
  -Wno-unused-parameter -Wno-sign-compare -DZKFARM_HAS_CUDA=1)
newest_header=$(find kernels tests/gpu -name '*.h' -o -name '*.cuh' | xargs ls -t | head -1)

build() {  # build SRC: compile SRC into OUT/obj/<name>.o unless up to date
  local src=$1 obj="$out/obj/$(basename "${1%.*}").o"
  if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$newest_header" ]; then return; fi
  local start=$SECONDS
  case $src in
    *.cu) "$cuda/bin/nvcc" "${nvcc_flags[@]}" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ;;
    *.cc) g++ "${cxx_flags[@]}" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ;;
  esac || { cat "${obj%.o}.log" >&2; echo "build_bundle: $src failed" >&2; exit 1; }
  echo "built $src in $((SECONDS - start)) s"
}

cuda_sources=(kernels/cuda/device_context.cu kernels/cuda/ntt_bn254.cu kernels/cuda/ntt_bls12_381.cu
  kernels/cuda/msm_bn254_g1.cu kernels/cuda/msm_bls12_381_g1.cu kernels/cuda/msm_bn254_g2.cu
  kernels/cuda/msm_bls12_381_g2.cu tests/gpu/field_kernels.cu)
for src in "${cuda_sources[@]}" tests/gpu/gpu_kernels_test.cc tests/gpu/gpu_benchmark.cc; do build "$src"; done

objs=()
for src in "${cuda_sources[@]}"; do objs+=("$out/obj/$(basename "${src%.*}").o"); done
link=(-static-libstdc++ -static-libgcc -L"$cuda/lib64" -lcudart_static -ldl -lpthread -lrt)
mkdir -p "$out/bin"
g++ -o "$out/obj/gpu_kernels_test" "$out/obj/gpu_kernels_test.o" "${objs[@]}" -lgtest_main -lgtest "${link[@]}"
g++ -o "$out/obj/gpu_benchmark" "$out/obj/gpu_benchmark.o" "${objs[@]}" "${link[@]}"
/work/shared/tools/bundle.sh "$out" "$out/obj/gpu_kernels_test" "$out/obj/gpu_benchmark" >/dev/null
cp tests/gpu/run_gpu_tests.sh "$out/"
echo "bundle ready in $out: $(du -sh "$out/bin" "$out/lib" | awk '{print $1}' | tr '\n' ' ')"
