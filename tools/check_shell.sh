#!/bin/bash
# check_shell.sh -- shellcheck over every shell script of zkfarm.
#
#   tools/check_shell.sh          list the scripts checked, then shellcheck's
#                                 findings (all severities, style included)
#   tools/check_shell.sh --quiet  only the findings
#
# A shell script is a file named *.sh or one whose first line is a sh or bash
# shebang (.ci/run). The files are git's list in a checkout (tracked, and
# untracked ones .gitignore does not exclude), every file of the tree
# otherwise; either way third_party/, out/, bazel-* and node_modules/ are
# not ours and are left out (as in tools/check_layers.sh). A finding that is
# not a bug is disabled where it occurs, with a comment saying why. Needs
# Debian's shellcheck (tools/install_deps.sh). Exit status: 0 clean, 1 a
# finding, 2 usage or setup error (shellcheck missing, no script found).
set -euo pipefail

quiet=0
case ${1:-} in
  "") ;;
  --quiet) quiet=1 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "check_shell.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
command -v shellcheck >/dev/null ||
  { echo "check_shell.sh: shellcheck not found (Debian package shellcheck; run tools/install_deps.sh)" >&2; exit 2; }

# not_ours PATH: vendored code, npm packages, Bazel's and the demo's outputs.
not_ours() {
  case /$1 in
    /third_party/* | /out/* | /bazel-* | */node_modules/* | */.git/*) return 0 ;;
  esac
  return 1
}
# is_shell_script PATH: named *.sh, or a sh/bash shebang on its first line.
is_shell_script() {
  [[ $1 == *.sh ]] && return 0
  local first=""
  IFS= read -r first <"$1" 2>/dev/null || true
  [[ $first =~ ^#![[:space:]]*(/usr)?/bin/(env[[:space:]]+)?(ba)?sh([[:space:]]|$) ]]
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -d "" listed < <(git ls-files -z --cached --others --exclude-standard | sort -z)
else
  mapfile -d "" listed < <(find . -name .git -prune -o -type f -printf "%P\\0" | sort -z)
fi
scripts=()
for path in "${listed[@]}"; do
  [[ -f $path ]] || continue  # listed by git but deleted in the work tree
  not_ours "$path" && continue
  is_shell_script "$path" && scripts+=("$path")
done
((${#scripts[@]})) || { echo "check_shell.sh: no shell script found under $ROOT" >&2; exit 2; }

((quiet)) || printf 'checking %d scripts with %s:\n%s\n' "${#scripts[@]}" \
  "$(shellcheck --version | sed -n 's/^version: /shellcheck /p')" "$(printf '  %s\n' "${scripts[@]}")"
# -x follows `source` of the repository's own files (bench/farm_bench_lib.sh).
if shellcheck -x -f gcc "${scripts[@]}"; then
  ((quiet)) || echo "ok: ${#scripts[@]} scripts, no finding"
else
  count=$(shellcheck -x -f gcc "${scripts[@]}" | grep -c . || true)
  echo "$count shellcheck finding(s)"
  exit 1
fi
