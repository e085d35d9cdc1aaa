#!/bin/bash
# check_layers_test.sh -- tools/check_layers.sh gives the same answer in a
# source tree without git metadata (a release tarball) as in the checkout.
#
#   tools/check_layers_test.sh
#
# Copies the checkout's files (git's list: tracked and untracked-not-ignored,
# as check_layers.sh reads them) into a temporary directory without .git,
# adds files a tarball or a used tree carries that are not zkfarm's sources
# (an npm package with C++ sources under tests/interop/node_modules, a .cc
# under out/, headers in a bazel-* directory), then runs check_layers.sh in
# both trees, with and without --quiet: exit statuses and outputs must be
# identical. Without the copy's exclusions the decoys make the copy fail
# ("package tests is not in any layer"), so the test can fail. Exit status
# 0 when both modes agree, 1 when they differ, 2 on a setup error (not a
# git checkout, copy failed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "check_layers_test.sh: $ROOT is not a git checkout" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tree=$scratch/tree
mkdir -p "$tree"
# Only files that exist: a file deleted but not yet committed is still listed.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' path; do [[ -e $path ]] && printf '%s\0' "$path"; done |
  tar -c --null -T - | tar -x -C "$tree" ||
  { echo "check_layers_test.sh: copying the tree to $tree failed" >&2; exit 2; }
[[ ! -e $tree/.git && -x $tree/tools/check_layers.sh ]] ||
  { echo "check_layers_test.sh: the copy in $tree is not a tree without .git" >&2; exit 2; }

# What is in a tree but not zkfarm's: each of these would be a package
# outside LAYERS or an edge going up if check_layers.sh read it.
addon=$tree/tests/interop/node_modules/native-addon/src
mkdir -p "$addon" "$tree/out/demo" "$tree/bazel-decoy/cli"
printf '#pragma once\n' >"$addon/addon.h"
printf '#include "addon.h"\n#include "cli/commands.h"\n' >"$addon/addon.cc"
printf '#include "cli/commands.h"\n' >"$tree/out/demo/generated.cc"
printf '#include "worker/worker.h"\n' >"$tree/bazel-decoy/cli/decoy.h"

status=0
for mode in full quiet; do
  args=()
  [[ $mode == quiet ]] && args=(--quiet)
  checkout_status=0
  copy_status=0
  checkout_output=$(tools/check_layers.sh "${args[@]}" 2>&1) || checkout_status=$?
  # GIT_DIR pointing nowhere: git sees no repository even if $TMPDIR is in one.
  copy_output=$(cd "$tree" && GIT_DIR=$scratch/no-git tools/check_layers.sh "${args[@]}" 2>&1) || copy_status=$?
  label="check_layers.sh ${args[*]:-(full output)}"
  if ((checkout_status != copy_status)) || [[ $checkout_output != "$copy_output" ]]; then
    echo "FAIL $label: checkout exit $checkout_status, tree without .git exit $copy_status; diff:"
    diff <(printf '%s\n' "$checkout_output") <(printf '%s\n' "$copy_output") || true
    status=1
  else
    echo "ok   $label: same output and exit status ($checkout_status) with and without .git"
  fi
done
exit "$status"
