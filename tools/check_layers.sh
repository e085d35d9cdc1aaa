#!/bin/bash
# check_layers.sh -- the package graph of zkfarm's C++/CUDA sources, from their
# `#include "..."` lines, checked against the layer order below.
#
#   tools/check_layers.sh          print the layers and the graph; exit 1 on a
#                                  violation, 0 when every edge goes down
#   tools/check_layers.sh --quiet  print only violations
#
# A package is a directory with a BUILD file (kernels/cuda is its own package
# above kernels). Every source file (.h .cc .cu .cuh, tests included) belongs
# to the package of its directory, and so does every header it includes. An
# edge A -> B means some file of A includes a header of B. The rules:
#   * B's layer must be below A's layer (LAYERS, lowest first; packages on one
#     line share a layer and may not include each other);
#   * the graph has no cycle (implied by the first rule; reported separately
#     because a cycle is the worse news);
#   * every package with sources is placed in LAYERS.
# Includes of headers outside the repository (<...> or "gtest/gtest.h") are
# not edges. Only python3 from Debian is needed. Exit status: 0 clean, 1 a
# violation, 2 usage or setup error.
set -euo pipefail

case ${1:-} in
  "" | --quiet) ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "check_layers.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# Lowest first. Edit with care: this is the architecture (docs/DESIGN.md).
LAYERS='
base
tests/harness
kernels
kernels/cuda
formats
circuits witgen
schema monitoring/metrics
cluster prover
worker coordinator
cli
bench tests/cluster tests/gpu
tests/monitoring tests/status
'

# The sources: git's list when this is a git checkout (tracked files and
# untracked ones .gitignore does not exclude), every file of the tree
# otherwise (a release tarball). Either list then goes through the same
# filter below, so both give one answer.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  FILES=$(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' '*.cu' '*.cuh')
else
  FILES=$(find . -name .git -prune -o \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) \
    -print | sed 's|^\./||')
fi

# The list goes in as a file, not an argument: a tree may hold more paths
# than one argument may (128 KiB).
LAYERS="$LAYERS" QUIET="${1:-}" python3 - <(printf '%s\n' "$FILES") <<'PYTHON'
import os, re, sys

def not_ours(path):
    """Files that are not zkfarm's sources: vendored code (third_party/),
    npm packages (any node_modules/, e.g. tests/interop's), Bazel's output
    trees (bazel-*) and build or demo outputs (out/)."""
    parts = path.split("/")
    return (parts[0] in ("third_party", "out") or parts[0].startswith("bazel-")
            or "node_modules" in parts[:-1] or ".git" in parts[:-1])

with open(sys.argv[1], encoding="utf-8") as listing:
    listed = listing.read().split("\n")
files = [f for f in listed if f and not not_ours(f) and os.path.exists(f)]
quiet = os.environ["QUIET"] == "--quiet"
layers = [line.split() for line in os.environ["LAYERS"].strip().split("\n")]
layer_of = {pkg: i for i, line in enumerate(layers) for pkg in line}

def package_of(path):
    """The nearest directory at or above path's directory that has a BUILD file."""
    d = os.path.dirname(path)
    while d and not os.path.exists(os.path.join(d, "BUILD")):
        d = os.path.dirname(d)
    return d or "//"

include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
edges = {}  # (from, to) -> [(file, line, header)]
packages = set()
for f in files:
    src = package_of(f)
    packages.add(src)
    with open(f, encoding="utf-8", errors="replace") as text:
        for number, line in enumerate(text, 1):
            m = include_re.match(line)
            if not m:
                continue
            header = m.group(1)
            first = header.split("/")[0]
            if "/" not in header:
                header = os.path.join(os.path.dirname(f), header)  # same directory
            elif not os.path.isdir(first):
                continue  # outside the repository
            dst = package_of(header)
            if dst != src:
                edges.setdefault((src, dst), []).append((f, number, m.group(1)))

problems = []
for pkg in sorted(packages):
    if pkg not in layer_of:
        problems.append(f"package {pkg} is not in any layer (add it to LAYERS in tools/check_layers.sh)")
for (src, dst), sites in sorted(edges.items()):
    if src in layer_of and dst in layer_of and layer_of[dst] >= layer_of[src]:
        where = "; ".join(f"{f}:{n} includes {h}" for f, n, h in sites[:3])
        more = f" (+{len(sites) - 3} more)" if len(sites) > 3 else ""
        kind = "sideways" if layer_of[dst] == layer_of[src] else "up"
        problems.append(f"edge {kind}: {src} -> {dst}: {where}{more}")

# Cycles: strongly connected components of more than one package.
graph = {p: sorted({d for (s, d) in edges if s == p}) for p in packages}
index, low, stack, on_stack, sccs = {}, {}, [], set(), []
def strongconnect(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, []):
        if w not in index:
            strongconnect(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        component = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            component.append(w)
            if w == v:
                break
        if len(component) > 1:
            sccs.append(sorted(component))
sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        strongconnect(v)
for component in sccs:
    problems.insert(0, "cycle: " + " <-> ".join(component))

if not quiet:
    print("layers (lowest first; a package may include only packages on lines above it):")
    for i, line in enumerate(layers):
        present = [p for p in line if p in packages]
        if present:
            print(f"  {i}  " + "  ".join(present))
    print("package graph (package -> packages it includes, with include-line counts):")
    for src in sorted(packages, key=lambda p: (layer_of.get(p, -1), p)):
        outs = [(d, len(sites)) for (s, d), sites in edges.items() if s == src]
        outs.sort(key=lambda x: (layer_of.get(x[0], -1), x[0]))
        print(f"  {src} -> " + (", ".join(f"{d} ({n})" for d, n in outs) if outs else "(nothing)"))
for p in problems:
    print("VIOLATION " + p)
if problems:
    print(f"{len(problems)} violation(s)")
    sys.exit(1)
if not quiet:
    print(f"ok: {len(packages)} packages, {sum(len(s) for s in edges.values())} cross-package includes, "
          "no edge going up, no cycle")
PYTHON
