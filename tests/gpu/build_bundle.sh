#!/usr/bin/env bash
# build_bundle.sh [OUT] -- builds the GPU test and benchmark binaries without
# Bazel (nvcc + g++) and bundles them for a GPU
# host that has only the driver: OUT (default out/gpu) gets bin/, lib/, run
# and run_gpu_tests.sh. The device code of every .cu is linked once into
# lib/libzkfarm_cuda.so, which all binaries share (each statically linked
# binary was ~19 MB, and a call to the GPU host carries at most 64 MiB).
# Objects are cached in OUT/obj and rebuilt when their source or any header
# they include (nvcc/g++ -MD dependency files) is newer. nvcc runs one file
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
cxx_flags=(-std=c++20 -O2 -march=x86-64-v2 -fPIC -I. -isystem "$cuda/include" -Wall -Wextra -Werror
  -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers -DZKFARM_HAS_CUDA=1)

# up_to_date OBJ SRC: OBJ exists and is newer than SRC and than every file in
# its dependency list OBJ.d (written by -MD; made with -M if missing).
up_to_date() {
  local obj=$1 src=$2 deps=${1%.o}.d
  [ -f "$obj" ] && [ "$obj" -nt "$src" ] || return 1
  if [ ! -f "$deps" ]; then
    case $src in
      *.cu) "$cuda/bin/nvcc" "${nvcc_flags[@]}" -M "$src" -MT "$obj" -o "$deps" 2>/dev/null || return 1 ;;
      *.cc) g++ "${cxx_flags[@]}" -M "$src" -MT "$obj" -MF "$deps" 2>/dev/null || return 1 ;;
    esac
  fi
  local dep
  for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$deps"); do
    [ -e "$dep" ] && [ "$dep" -nt "$obj" ] && return 1
  done
  return 0
}

build() {  # build SRC: compile SRC into OUT/obj/<name>.o unless up to date
  local src=$1 obj="$out/obj/$(basename "${1%.*}").o"
  if up_to_date "$obj" "$src"; then return; fi
  local start=$SECONDS
  case $src in
    *.cu) "$cuda/bin/nvcc" "${nvcc_flags[@]}" -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ;;
    *.cc) g++ "${cxx_flags[@]}" -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ;;
  esac || { cat "${obj%.o}.log" >&2; echo "build_bundle: $src failed" >&2; exit 1; }
  echo "built $src in $((SECONDS - start)) s"
}

cuda_sources=(kernels/cuda/device_context.cu kernels/cuda/ntt_bn254.cu kernels/cuda/ntt_bls12_381.cu
  kernels/cuda/msm_bn254_g1.cu kernels/cuda/msm_bls12_381_g1.cu kernels/cuda/msm_bn254_g2.cu
  kernels/cuda/msm_bls12_381_g2.cu kernels/cuda/fixed_base_bn254.cu kernels/cuda/fixed_base_bls12_381.cu
  kernels/cuda/groth16_kernels_bn254.cu kernels/cuda/groth16_kernels_bls12_381.cu tests/gpu/field_kernels.cu)
# Host code the binaries need besides headers (file formats).
host_sources=(formats/binfile.cc formats/r1cs.cc formats/wtns.cc formats/zkey.cc formats/pce.cc)
# Binary name = source name; each links the shared CUDA library and the host objects.
binary_sources=(tests/gpu/gpu_kernels_test.cc tests/gpu/gpu_benchmark.cc tests/gpu/setup_device_test.cc
  tests/gpu/partition_benchmark.cc tests/gpu/groth16_device_test.cc)
# The CLI's local commands (tests/gpu/cli_device_check.sh): zkfarm_local.
cli_sources=(tests/gpu/zkfarm_local.cc cli/local_commands.cc formats/snarkjs_json.cc)
for src in "${cuda_sources[@]}" "${host_sources[@]}" "${binary_sources[@]}" "${cli_sources[@]}"; do build "$src"; done

obj_of() { echo "$out/obj/$(basename "${1%.*}").o"; }
cuda_objs=() host_objs=()
for src in "${cuda_sources[@]}"; do cuda_objs+=("$(obj_of "$src")"); done
for src in "${host_sources[@]}"; do host_objs+=("$(obj_of "$src")"); done
lib="$out/obj/libzkfarm_cuda.so"
# libstdc++ and the CUDA runtime stay shared libraries (bundle.sh copies them
# into lib/), so that the library and the binaries share one C++ runtime
# (exceptions thrown in one are caught in the other) and one CUDA runtime
# (the binaries' inline DeviceBuffer copies call it too).
cudart=(-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcudart)
g++ -shared -o "$lib" "${cuda_objs[@]}" "${cudart[@]}" -ldl -lpthread -lrt
link=(-L"$out/obj" -Wl,-rpath,"$(cd "$out/obj" && pwd)" -lzkfarm_cuda "${cudart[@]}" -lcrypto -lpthread)
binaries=()
for src in "${binary_sources[@]}"; do
  name=$(basename "${src%.*}")
  extra=()
  [[ $name == *_test ]] && extra=(-lgtest_main -lgtest)
  g++ -o "$out/obj/$name" "$(obj_of "$src")" "${host_objs[@]}" "${extra[@]}" "${link[@]}"
  binaries+=("$out/obj/$name")
done
cli_objs=()
for src in "${cli_sources[@]}"; do cli_objs+=("$(obj_of "$src")"); done
g++ -o "$out/obj/zkfarm_local" "${cli_objs[@]}" "${host_objs[@]}" "${link[@]}"
binaries+=("$out/obj/zkfarm_local")
/work/shared/tools/bundle.sh "$out" "${binaries[@]}" >/dev/null
cp tests/gpu/run_gpu_tests.sh tests/gpu/cli_device_check.sh "$out/"
echo "bundle ready in $out: $(du -sh "$out/bin" "$out/lib" | awk '{print $1}' | tr '\n' ' ')"
