#!/bin/bash
# install_deps.sh -- installs everything zkfarm builds and tests with, on Debian 12.
#
#   sudo tools/install_deps.sh
#
# 1. Debian packages (apt-get update + install) -- only when one is missing, so
#    a second run does not touch apt at all. Root is needed only then.
# 2. Node packages for the interop suite (npm ci in tests/interop, versions pinned
#    by its package-lock.json) -- only when the lock file changed since the last
#    install (stamp: tests/interop/node_modules/.zkfarm-npm-stamp).
# nodejs/npm come from Debian unless `node` and `npm` are already on PATH (an
# existing NodeSource or nvm install is kept; Debian's npm conflicts with it).
# The CUDA toolkit is not installed here: it is optional (see README.md).
#
# Idempotent and safe to run concurrently (a lock serializes runs). Prints the
# time of each phase. Exits non-zero with the reason when something fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INTEROP_DIR=$ROOT/tests/interop
NPM_STAMP=$INTEROP_DIR/node_modules/.zkfarm-npm-stamp

APT_PACKAGES=(
  bazel-bootstrap g++ clang libclang-rt-14-dev
  libgtest-dev libbenchmark-dev nlohmann-json3-dev libssl-dev
  libzmq3-dev cppzmq-dev capnproto libcapnp-dev libhiredis-dev prometheus-cpp-dev
  libcurl4-openssl-dev  # http(s):// witnesses and artifacts (cluster/http_fetch.h)
  libseccomp-dev  # the witness generator sandbox's seccomp filter (witgen/witness_generator.cc)
  python3  # tests: the HTTP server the HTTP tests start (python3 -m http.server)
  iproute2  # tests/multihost: network namespaces
  libcivetweb-dev  # the civetweb headers: the status page rides on prometheus-cpp's server
  nasm libgmp-dev  # building circom's C++ witness generators (zkfarm circuit add --witness-generator)
  chromium chromium-driver  # tests/status: the status page in headless Chromium
  redis-server prometheus yamllint python3-kubernetes docker-compose systemd  # last four: tests/deploy
  ca-certificates  # npm's https to the registry; only a Recommends of nodejs
  shellcheck  # tools/test.sh: the shell suite (tools/check_shell.sh)
)
NODE_APT_PACKAGES=(nodejs npm)
MIN_NODE_MAJOR=18  # snarkjs 0.7 and circom2 need a modern node

log() { echo "[install_deps] $*"; }
die() {
  echo "[install_deps] error: $*" >&2
  exit 1
}

# One run at a time (test.sh and demo.sh may start together).
# Opened read-only so a lock file created by root does not lock out other users.
LOCK_FILE=/tmp/zkfarm-install-deps.lock
[[ -e $LOCK_FILE ]] || (umask 000 && : >"$LOCK_FILE") 2>/dev/null || true
exec 9<"$LOCK_FILE" || die "cannot open $LOCK_FILE"
flock 9

# Prints the packages among "$@" that dpkg does not list as installed.
missing_packages() {
  local package status
  for package in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [[ $status == installed ]] || echo "$package"
  done
}

# ---- 1. Debian packages -----------------------------------------------------
started=$SECONDS
wanted=("${APT_PACKAGES[@]}")
if command -v node >/dev/null && command -v npm >/dev/null; then
  node_note="node $(node --version) and npm $(npm --version) already on PATH: not installing Debian's"
else
  wanted+=("${NODE_APT_PACKAGES[@]}")
  node_note="nodejs/npm from Debian"
fi
mapfile -t missing < <(missing_packages "${wanted[@]}")
if ((${#missing[@]} == 0)); then
  log "apt: all ${#wanted[@]} packages present ($node_note), $((SECONDS - started)) s"
else
  ((EUID == 0)) || die "missing Debian packages: ${missing[*]}; run as root: sudo $0"
  command -v apt-get >/dev/null || die "apt-get not found: this script targets Debian 12"
  log "apt: installing ${missing[*]} ($node_note)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  mapfile -t still_missing < <(missing_packages "${missing[@]}")
  ((${#still_missing[@]} == 0)) || die "apt-get did not install: ${still_missing[*]}"
  log "apt: done, $((SECONDS - started)) s"
fi

# ---- 2. Node packages for tests/interop -------------------------------------
started=$SECONDS
command -v node >/dev/null || die "node not found after the apt phase"
command -v npm >/dev/null || die "npm not found after the apt phase"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= MIN_NODE_MAJOR)) || die "node $(node --version) is too old: need >= $MIN_NODE_MAJOR"
[[ -f $INTEROP_DIR/package-lock.json ]] || die "$INTEROP_DIR/package-lock.json missing"

# The stamp records what node_modules was installed from: lock file and node.
wanted_stamp="$(sha256sum "$INTEROP_DIR/package-lock.json" | cut -d' ' -f1) node-$node_major"
if [[ -f $NPM_STAMP && $(cat "$NPM_STAMP") == "$wanted_stamp" ]]; then
  log "npm: tests/interop/node_modules up to date, $((SECONDS - started)) s"
else
  log "npm: npm ci in tests/interop"
  (cd "$INTEROP_DIR" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$wanted_stamp" >"$NPM_STAMP"
  log "npm: done, $((SECONDS - started)) s"
fi
