#!/usr/bin/env bash
# farm_bundle.sh [OUT] -- bundles the Bazel-built farm (zkfarm, zkfarm-coordinator,
# zkfarm-worker with the CUDA backend) plus redis-server/redis-cli and every
# non-system shared library they need, for a GPU host that has only the
# driver. OUT (default out/farm) gets cli/, coordinator/, worker/ (the layout
# tools/demo.sh's ZKFARM_BIN expects), bin/ (redis) and lib/; binaries are
# stripped so the bundle stays small enough to carry (< 64 MiB).
#   tests/gpu/farm_bundle.sh && (carry out/farm) tests/gpu/run_farm_gpus.sh out/farm
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-out/farm}
bazel build //cli:zkfarm //coordinator:zkfarm-coordinator //worker:zkfarm-worker
rm -rf "$out"
mkdir -p "$out/cli" "$out/coordinator" "$out/worker" "$out/bin" "$out/lib"
install -m 755 bazel-bin/cli/zkfarm "$out/cli/"
install -m 755 bazel-bin/coordinator/zkfarm-coordinator "$out/coordinator/"
install -m 755 bazel-bin/worker/zkfarm-worker "$out/worker/"
install -m 755 "$(command -v redis-server)" "$(command -v redis-cli)" "$out/bin/"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda\.so|libnvidia)'
for binary in "$out"/cli/* "$out"/coordinator/* "$out"/worker/* "$out"/bin/*; do
  strip --strip-debug "$binary"
  ldd "$binary" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] || cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true
  done
done
du -sh "$out" | awk '{print "farm bundle: " $1 " in " $2}'
