#!/usr/bin/env bash
# The PyTorch binding (python/unifuse_torch) on Debian's PyTorch, CPU only:
# build the OpenMP library in its own folder, run the unit tests with the
# Debian python, run the PyTorch example of docs/api.md as written and
# compare its output with the one shown there, train the tiny transformer
# briefly with unifuse and with PyTorch's ops only (dropout off) and compare
# the loss curves, train on 2 processes (gloo) and compare with 1 at the
# same global batch, and train once with dropout on. Ends with
# 'python: N passed, N failed, N skipped'.
# Needs meson, ninja and gcc (.ci/run installs them); about 2-4 minutes on
# 2 cores once python3-torch is installed.
set -uo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3  # Debian's, where python3-torch installs; not a pyenv python3 on PATH
# UF_PY_BUILD=DIR: an OpenMP build directory already configured (CI passes
# its first build's, which saves compiling the library again); otherwise
# one is set up in build-py.
BUILD=${UF_PY_BUILD:-build-py}
STEPS=30

section() { printf '\n==== %s ====\n' "$*"; }

if ! "$PY" -c 'import torch' 2>/dev/null; then
  section "installing python3-torch"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-torch python3-numpy \
    >/dev/null || { echo "python: could not install python3-torch" >&2; exit 1; }
fi
"$PY" -c 'import sys, torch; print("torch", torch.__version__, "on python", sys.version.split()[0])'

section "OpenMP library for the binding ($BUILD)"
if [ -z "${UF_PY_BUILD:-}" ]; then
  meson setup "$BUILD" -Dtests=false -Dbench=false -Dcpu_copies=false --wipe >/dev/null 2>&1 ||
    meson setup "$BUILD" -Dtests=false -Dbench=false -Dcpu_copies=false || exit 1
fi
ninja -C "$BUILD" || exit 1
export UNIFUSE_BUILD_DIR="$PWD/$BUILD"
unset UNIFUSE_LIBRARY

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 skipped=0
# check NAME COMMAND...: runs it, counts it.
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "FAILED: $name" >&2
    failed=$((failed + 1))
  fi
}

section "unit tests (python/run_tests.py)"
"$PY" python/run_tests.py 2>&1 | tee "$work/tests.log"
tests_rc=${PIPESTATUS[0]}
summary='^unittest: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'
counts=$(grep -E "$summary" "$work/tests.log" | tail -1)
if [ -n "$counts" ]; then
  read -r p f s < <(echo "$counts" | grep -oE '[0-9]+' | tr '\n' ' ')
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
fi
if [ "$tests_rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
  failed=$((failed + 1))  # the runner itself failed (import error, no tests)
fi

section "docs/api.md: the PyTorch example, run as written"
# The blocks marked <!-- tested: ... --> there: the script, and what it
# prints on the OpenMP build.
torch_example() {
  local dir=$work/doc-example package=$PWD/python
  mkdir -p "$dir" &&
    "$PY" tests/doc_examples/extract.py docs/api.md --out "$dir" example_torch.py \
      example_torch.out &&
    (cd "$dir" && PYTHONPATH=$package "$PY" example_torch.py) | tee "$dir/actual.out" &&
    diff -u "$dir/example_torch.out" "$dir/actual.out" >&2 &&
    echo "same output as example_torch.out in docs/api.md"
}
check "PyTorch example of docs/api.md (- docs, + now)" torch_example

train() { "$PY" python/train_tiny_transformer.py --steps "$STEPS" --log-every 10 "$@"; }

section "training: unifuse vs PyTorch-only reference, $STEPS steps, dropout off"
check "reference run" train --reference --dropout 0 --json "$work/reference.json"
check "unifuse run" train --dropout 0 --json "$work/unifuse.json"
check "unifuse matches the reference" \
  "$PY" python/compare_runs.py "$work/unifuse.json" "$work/reference.json" --rtol 1e-3

section "training: 2 processes (DistributedDataParallel, gloo) vs 1, same global batch"
check "2-process run" train --dropout 0 --nproc 2 --json "$work/unifuse-2.json"
check "2 processes match 1" \
  "$PY" python/compare_runs.py "$work/unifuse-2.json" "$work/unifuse.json" --rtol 1e-4

section "training: dropout on"
check "run with dropout 0.1" train --dropout 0.1 --json "$work/dropout.json"

echo
echo "python: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
