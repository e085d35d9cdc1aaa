#!/usr/bin/env bash
# bundle_libs.sh OUTDIR BINARY... -- copies binaries plus the shared libraries
# they need, other than the C runtime and the GPU driver, into OUTDIR (bin/,
# lib/), so they run on a machine that lacks the build machine's packages,
# and writes OUTDIR/run:
#   OUTDIR/run BINARY ARGS...   (runs bin/BINARY with LD_LIBRARY_PATH=OUTDIR/lib)
# BUNDLE_REDIS=1 also copies redis-server, for end-to-end runs on such a host.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR BINARY..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out/bin" "$out/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda\.so|libnvidia)'
bins=("$@")
[ "${BUNDLE_REDIS:-0}" = 1 ] && bins+=("$(command -v redis-server)")
for b in "${bins[@]}"; do
  cp -L "$b" "$out/bin/"
  ldd "$b" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true
  done
done
cat >"$out/run" <<'RUN'
#!/usr/bin/env bash
here=$(cd "$(dirname "$0")" && pwd)
prog=$1; shift
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/$prog" "$@"
RUN
chmod +x "$out/run"
du -sh "$out" | awk '{print "bundle: " $1 " in " $2}'
