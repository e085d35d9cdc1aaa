#!/usr/bin/env bash
# build_bundle.sh [OUT] -- builds the GPU test and benchmark binaries without
# Bazel (nvcc + g++, every file in parallel: one job per core) and bundles
# them: OUT (default out/gpu) gets bin/, lib/, run, run_gpu_tests.sh and
# cli_device_check.sh. Meant to run on the GPU host itself (16 cores: the
# CUDA files take about two minutes), or anywhere with the CUDA toolkit.
#
# Flags: the same definitions Bazel uses, read from the repository, never
# copied: nvcc gets ZKFARM_NVCC_COPTS of tools/copts.bzl (what
# tools/cuda.bzl passes to every nvcc action); g++ gets the --copt/--cxxopt
# flags of .bazelrc's `build` lines and ZKFARM_COPTS (ZKFARM_TEST_COPTS for
# *_test.cc), as Bazel does. tools/copts.bzl holds only constant lists, which
# read the same as Starlark and as Python; python3 evaluates it here.
# On top of those: -DZKFARM_HAS_CUDA=1 (Bazel's @local_cuda//:cuda_runtime
# define), -fPIC, include paths, and -Xptxas -v (a register and spill report
# in each nvcc log; no effect on the code). EXTRA_CXXFLAGS is appended to
# g++'s flags (e.g. -Wno-error on a host whose g++ is not the CI compiler).
#
# Host sources: each binary's own .cc plus, transitively, the .cc beside
# every header it includes ("cluster/job.h" -> cluster/job.cc) and the
# header-less .cc files beside it that include it (prover/engine.h ->
# prover/cuda_engine.cc), so package moves need no edit here. The device code of every .cu in kernels/cuda
# (those of kernels/cuda/instantiations.bzl's list generated into OUT/cu) and
# tests/gpu is linked once into lib/libzkfarm_cuda.so, shared by all binaries.
# A GPU host without zkfarm's other -dev packages (Cap'n Proto, hiredis) gets
# them from ZKFARM_BUNDLE_DEPS, a folder made by tests/gpu/host_deps.sh.
#
# Objects are cached in OUT/obj and rebuilt when their source or any header
# they include (-MD dependency files) is newer. OUT/obj/build_times.txt gets
# the seconds of each compilation (and when it ended); the summary prints the
# CUDA files' wall time, their summed time and the five slowest.
#   tests/gpu/host_deps.sh out/gpu-deps   # on the Debian dev machine, once
#   ZKFARM_BUNDLE_DEPS=out/gpu-deps tests/gpu/build_bundle.sh out/gpu && out/gpu/run_gpu_tests.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-out/gpu}
cuda=${ZKFARM_CUDA_PATH:-/usr/local/cuda}
deps=${ZKFARM_BUNDLE_DEPS:-}
[ -z "$deps" ] || deps=$(cd "$deps" && pwd)
jobs=${JOBS:-$(nproc)}
mkdir -p "$out/obj"
obj_dir=$(cd "$out/obj" && pwd)

# bzl_list NAME: the strings of the list NAME in tools/copts.bzl, one a line.
bzl_list() {
  python3 -c 'import sys; g = {}; exec(open(sys.argv[1]).read(), g); print("\n".join(g[sys.argv[2]]))' \
    tools/copts.bzl "$1"
}
# .bazelrc's `build --copt=X` / `--cxxopt=X` values (host code), one a line.
bazelrc_copts() {
  awk '$1 == "build" { for (i = 2; i <= NF; ++i) if ($i ~ /^--(copt|cxxopt)=/) { sub(/^--[a-z]+=/, "", $i); print $i } }' \
    .bazelrc
}
mapfile -t nvcc_copts < <(bzl_list ZKFARM_NVCC_COPTS)
mapfile -t copts < <(bzl_list ZKFARM_COPTS)
mapfile -t test_copts < <(bzl_list ZKFARM_TEST_COPTS)
mapfile -t bazel_copts < <(bazelrc_copts)
{ [ ${#nvcc_copts[@]} -gt 0 ] && [ ${#copts[@]} -gt 0 ] && [ ${#bazel_copts[@]} -gt 0 ]; } ||
  { echo "build_bundle: could not read the flags from tools/copts.bzl and .bazelrc" >&2; exit 1; }
includes=(-I.)
[ -n "$deps" ] && includes+=(-isystem "$deps/include" -I"$deps/gen")
host_includes=()
[ -n "$deps" ] && [ -f "$deps/include/zkfarm_kj_compat.h" ] && host_includes+=(-include zkfarm_kj_compat.h)
nvcc_flags=("${nvcc_copts[@]}" -Xptxas -v -DZKFARM_HAS_CUDA=1 "${includes[@]}")
# shellcheck disable=SC2206
cxx_common=("${bazel_copts[@]}" -fPIC -DZKFARM_HAS_CUDA=1 "${includes[@]}" "${host_includes[@]}" -isystem "$cuda/include"
  ${EXTRA_CXXFLAGS:-})

# The instantiation .cu files of kernels/cuda, generated from the list in
# kernels/cuda/instantiations.bzl as Bazel's genrules write them, into
# OUT/cu (a file is rewritten only when its text changes, so its object
# stays cached).
mkdir -p "$out/cu"
python3 - "$out/cu" <<'EOF'
import os, sys
g = {}
exec(open("kernels/cuda/instantiations.bzl").read(), g)
for kind in g["CUDA_INSTANTIATION_KINDS"]:
    for name, text in g["cuda_instantiation_files"](kind).items():
        path = os.path.join(sys.argv[1], name)
        if not os.path.exists(path) or open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)
EOF

# Sources. The CUDA files: every .cu of kernels/cuda, OUT/cu and tests/gpu,
# the slowest first (point kernels over Fq2 of BLS12-381, then other G2,
# then other BLS12-381) so the longest jobs start at once.
mapfile -t cuda_sources < <(printf '%s\n' kernels/cuda/*.cu "$out"/cu/*.cu tests/gpu/*.cu | awk '
  { rank = 4 } /bls12_381_g2_/ { rank = 0 } rank == 4 && /_g2_/ { rank = 1 }
  rank == 4 && /bls12_381_g1_/ { rank = 2 } rank == 4 && /_g1_|_g2/ { rank = 3 } { print rank, $0 }' |
  sort -k1,1n -k2 | cut -d' ' -f2)
# Binary name = source name; *_test binaries link GoogleTest.
binary_sources=(tests/gpu/gpu_kernels_test.cc tests/gpu/gpu_benchmark.cc tests/gpu/setup_device_test.cc
  tests/gpu/partition_benchmark.cc tests/gpu/groth16_device_test.cc worker/cuda_backend_test.cc
  tests/gpu/zkfarm_local.cc)

# The .cc files a program needs: its own, and the .cc beside each header it
# includes, transitively (a generated "schema/x.capnp.h" maps to the
# x.capnp.c++ in $deps/gen).
host_sources_of() {
  local -a unvisited=("$@")
  local -A seen=()
  local file inc source
  while [ ${#unvisited[@]} -gt 0 ]; do
    file=${unvisited[0]}
    unvisited=("${unvisited[@]:1}")
    [ -n "${seen[$file]:-}" ] && continue
    seen[$file]=1
    case $file in *.cc | *.c++) echo "$file" ;; esac
    while IFS= read -r inc; do
      if [ -f "$inc" ]; then
        unvisited+=("$inc")
        source=${inc%.h}.cc
        [ "$source" != "$inc" ] && [ -f "$source" ] && unvisited+=("$source")
        # Implementation files with no header of their own beside it that
        # include it (prover/cuda_engine.cc for prover/engine.h); not tests
        # programs, fuzzers or benchmarks.
        for source in "$(dirname "$inc")"/*.cc; do
          { [ -f "$source" ] && [ ! -f "${source%.cc}.h" ]; } || continue
          case $source in *_test.cc | *_fuzz.cc | *_benchmark.cc | *_main.cc) continue ;; esac
          grep -q "^#include \"$inc\"" "$source" && ! grep -q 'main(' "$source" && unvisited+=("$source")
        done
      elif [ -n "$deps" ] && [ -f "$deps/gen/$inc" ]; then
        unvisited+=("$deps/gen/$inc")
        [ -f "$deps/gen/${inc%.h}.c++" ] && unvisited+=("$deps/gen/${inc%.h}.c++")
      fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
  done
}
declare -A program_sources=()
all_host=() present=() missing=()
for main in "${binary_sources[@]}"; do
  if [ -f "$main" ]; then present+=("$main"); else missing+=("$(basename "${main%.*}")"); fi
done
binary_sources=("${present[@]}")
for main in "${binary_sources[@]}"; do
  list=$(host_sources_of "$main" | grep -vx "$main" | sort || true)
  program_sources[$main]=$list
  all_host+=("$main")
  [ -z "$list" ] || mapfile -t -O "${#all_host[@]}" all_host <<<"$list"  # appended, one per line
done
mapfile -t host_sources < <(printf '%s\n' "${all_host[@]}" | sort -u)

obj_of() {  # obj_of SRC: OUT/obj/<path with / as __>.o (names stay unique)
  local name=${1#"$deps/gen/"}
  name=${name%.*}
  echo "$obj_dir/${name//\//__}.o"
}

# up_to_date OBJ SRC: OBJ exists and is newer than SRC and than every file in
# its dependency list OBJ.d (written by -MD).
up_to_date() {
  local obj=$1 src=$2 dep deps_listed=()
  { [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ -f "${obj%.o}.d" ]; } || return 1
  # A .d file lists its dependencies as words (make syntax), several a line.
  read -r -d '' -a deps_listed < <(sed -e 's/^[^:]*://' -e 's/\\$//' "${obj%.o}.d") || true
  for dep in "${deps_listed[@]}"; do
    [ -e "$dep" ] && [ "$dep" -nt "$obj" ] && return 1
  done
  return 0
}

# compile SRC: one job (run in parallel by the pool below); appends
# "seconds SRC" to build_times.txt, or leaves OBJ.failed with the log.
compile() {
  local src=$1 obj
  obj=$(obj_of "$src")
  up_to_date "$obj" "$src" && return 0
  rm -f "$obj.failed"
  local start end status=0
  start=$(date +%s.%N)
  case $src in
    *.cu) "$cuda/bin/nvcc" "${nvcc_flags[@]}" -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ||
            status=$? ;;
    */gen/*) g++ "${cxx_common[@]}" -w -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ||
               status=$? ;;
    *_test.cc) g++ "${cxx_common[@]}" "${test_copts[@]}" -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" \
                 >"${obj%.o}.log" 2>&1 || status=$? ;;
    *) g++ "${cxx_common[@]}" "${copts[@]}" -MD -MF "${obj%.o}.d" -c "$src" -o "$obj" >"${obj%.o}.log" 2>&1 ||
         status=$? ;;
  esac
  end=$(date +%s.%N)
  if [ $status -ne 0 ]; then
    cp "${obj%.o}.log" "$obj.failed"
    return 0
  fi
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') $src $end" >>"$obj_dir/build_times.txt"
}

# pool SRC...: compile every SRC, $jobs at a time, in the order given.
pool() {
  local src
  for src in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    compile "$src" &
  done
  wait
}

# One pool: the CUDA files first (all started before any host file), then
# the host files, which take the cores the CUDA files leave free.
: >"$obj_dir/build_times.txt"
rm -f "$obj_dir"/*.failed
cuda_start=$(date +%s.%N)
pool "${cuda_sources[@]}" "${host_sources[@]}"
build_end=$(date +%s.%N)
failed=$(ls "$obj_dir"/*.failed 2>/dev/null || true)
for f in $failed; do echo "== $f" >&2; head -40 "$f" >&2; done
for src in "${cuda_sources[@]}"; do
  if [ -f "$(obj_of "$src").failed" ]; then
    echo "build_bundle: $src failed to compile; no bundle" >&2
    exit 1
  fi
done
# build_times.txt: seconds, source, end time. The CUDA files' wall time runs
# from the start to the end of the last .cu compiled.
if grep -q '\.cu ' "$obj_dir/build_times.txt"; then
  echo "nvcc: $(grep -c '\.cu ' "$obj_dir/build_times.txt") .cu files in" \
    "$(awk -v a="$cuda_start" '$2 ~ /\.cu$/ && $3 > e { e = $3 } END { printf "%.0f", e - a }' "$obj_dir/build_times.txt")" \
    "s wall ($jobs jobs), $(awk '$2 ~ /\.cu$/ { s += $1 } END { printf "%.0f", s }' "$obj_dir/build_times.txt") s summed;" \
    "slowest: $(grep '\.cu ' "$obj_dir/build_times.txt" | sort -rn | head -5 | awk '{ printf "%s %s s; ", $2, $1 }')"
fi
echo "all files compiled in $(awk -v a="$cuda_start" -v b="$build_end" 'BEGIN { printf "%.0f", b - a }') s wall"

# Link. libstdc++ and the CUDA runtime stay shared libraries (copied into
# lib/), so that the library and the binaries share one C++ runtime
# (exceptions thrown in one are caught in the other) and one CUDA runtime.
lib="$obj_dir/libzkfarm_cuda.so"
cuda_objs=()
for src in "${cuda_sources[@]}"; do cuda_objs+=("$(obj_of "$src")"); done
cudart=(-L"$cuda/lib64" "-Wl,-rpath,$cuda/lib64" -lcudart)
g++ -shared -o "$lib" "${cuda_objs[@]}" "${cudart[@]}" -ldl -lpthread -lrt
link=(-L"$obj_dir" "-Wl,-rpath,$obj_dir" -lzkfarm_cuda "${cudart[@]}" -lcrypto -lpthread)
[ -n "$deps" ] && link+=(-L"$deps/lib" "-Wl,-rpath,$deps/lib" "-Wl,-rpath-link,$deps/lib")
# A binary whose objects failed to compile or link is left out (and the
# script exits non-zero at the end); the others are still bundled.
binaries=()
for main in "${binary_sources[@]}"; do
  name=$(basename "${main%.*}")
  objs=("$(obj_of "$main")")
  for src in ${program_sources[$main]}; do objs+=("$(obj_of "$src")"); done
  broken=""
  for o in "${objs[@]}"; do [ -f "$o.failed" ] && broken=1; done
  if [ -n "$broken" ]; then
    missing+=("$name")
    continue
  fi
  extra=()
  [[ $name == *_test ]] && extra=(-lgtest_main -lgtest)
  # Libraries a host object may need (linked only where used: --as-needed).
  if ! g++ -o "$obj_dir/$name" "${objs[@]}" "${extra[@]}" "${link[@]}" -Wl,--as-needed -lcapnp -lkj -lhiredis \
    2>"$obj_dir/$name.link.log"; then
    cat "$obj_dir/$name.link.log" >&2
    missing+=("$name")
    continue
  fi
  binaries+=("$obj_dir/$name")
done
rm -rf "${out:?}/bin"
[ ${#binaries[@]} -eq 0 ] || tests/gpu/bundle_libs.sh "$out" "${binaries[@]}" >/dev/null
cp tests/gpu/run_gpu_tests.sh tests/gpu/cli_device_check.sh "$out/"
if [ ${#missing[@]} -gt 0 ]; then
  echo "build_bundle: not built: ${missing[*]}" >&2
  exit 1
fi
echo "bundle ready in $out: $(du -sh "$out/bin" "$out/lib" | awk '{print $1}' | tr '\n' ' ')"
