#!/usr/bin/env bash
# CI step: sanitizers on the OpenMP backend beyond the ASan + UBSan suite of
# .ci/run (issue 6); docs/reliability.md says why they are set up this way.
#  1. LeakSanitizer: a program that leaks, built like .ci/run's ASan build
#     (gcc -fsanitize=address,undefined), must be reported with
#     ASAN_OPTIONS unset (as .ci/run runs), with detect_leaks=1, and with
#     what newer Meson sets for `meson test`, so the leak checking of that
#     suite is known to be on here; ASAN_OPTIONS with detect_leaks=0 fails.
#  2. ThreadSanitizer with clang and LLVM's libomp, whose Archer tool tells
#     TSan about OpenMP's barriers (GCC's libgomp is not instrumented and
#     gives false reports), over the whole suite at quick sizes
#     (UF_TEST_QUICK=1): tests/test_concurrency (8 host threads at once),
#     and every other test for races between the OpenMP threads of one
#     kernel. UF_TSAN_SUITE=0 runs test_concurrency alone.
# Needs what .ci/run installs, plus clang, libclang-rt-dev (the TSan
# runtime) and libomp-dev (libomp and Archer); installed here when missing.
# UF_TSAN_BUILD sets the build folder (default build-tsan).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${UF_TSAN_BUILD:-build-tsan}
work=$(mktemp -d "${TMPDIR:-/tmp}/unifuse-sanitizers.XXXXXX")
trap 'rm -rf "$work"' EXIT

archer_path() { echo "$(dirname "$(readlink -f "$(command -v clang)")")/../lib/libarcher.so"; }
toolchain_ok() {
  command -v clang >/dev/null && [ -f "$(archer_path)" ] &&
    printf 'int main(void) { return 0; }\n' >"$work/probe.c" &&
    clang -fsanitize=thread -fopenmp "$work/probe.c" -o "$work/probe" >/dev/null 2>&1
}
if ! toolchain_ok; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends clang libclang-rt-dev libomp-dev >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends clang \
      libclang-rt-dev libomp-dev >/dev/null; }
  toolchain_ok || { echo "sanitizers: clang cannot build TSan + OpenMP programs here" >&2; exit 1; }
fi

printf '\n==== sanitizers: LeakSanitizer is active ====\n'
cat >"$work/leak.c" <<'EOF'
#include <stdlib.h>
static void *volatile kept;
int main(void)
{
    kept = malloc(48);
    kept = NULL; /* the only reference is gone: a leak */
    return 0;
}
EOF
gcc -g -O1 -fsanitize=address,undefined "$work/leak.c" -o "$work/leak"
# Unset (as in .ci/run's ASan job under Meson 1.0), explicit, and what Meson
# 1.3 and later put there for `meson test` when it is unset.
for opts in unset detect_leaks=1 halt_on_error=1:abort_on_error=1:print_summary=1; do
  # In a subshell that outlives the program, so that the shell's "Aborted"
  # notice goes to the log too.
  if (
    if [ "$opts" = unset ]; then env -u ASAN_OPTIONS "$work/leak"; else
      ASAN_OPTIONS=$opts "$work/leak"; fi
    exit $?
  ) >"$work/leak.log" 2>&1 ||
    ! grep -q 'LeakSanitizer: detected memory leaks' "$work/leak.log"; then
    cat "$work/leak.log" >&2
    echo "sanitizers: FAILED: a leak went unreported with ASAN_OPTIONS $opts" >&2
    exit 1
  fi
  echo "leak reported with ASAN_OPTIONS $opts"
done
case ",${ASAN_OPTIONS:-}," in
*detect_leaks=0*)
  echo "sanitizers: FAILED: ASAN_OPTIONS in this environment turns leak detection off" >&2
  exit 1
  ;;
esac

printf '\n==== sanitizers: ThreadSanitizer build (clang %s, libomp + Archer) ====\n' \
  "$(clang -dumpversion)"
CC=clang meson setup "$build" -Db_sanitize=thread -Db_lundef=false -Dbench=false --wipe \
  >/dev/null 2>&1 ||
  CC=clang meson setup "$build" -Db_sanitize=thread -Db_lundef=false -Dbench=false >/dev/null
ninja -C "$build"

export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"
export OMP_TOOL_LIBRARIES
OMP_TOOL_LIBRARIES=$(archer_path)
export ARCHER_OPTIONS=verbose=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export UF_TEST_QUICK=1
# tally WHAT: cmocka's count of WHAT (PASSED, FAILED, SKIPPED) in the TSan log.
tally() { grep -hE "^\[  $1 *\] [0-9]+ test" "$build/meson-logs/testlog.txt" |
  grep -oE '[0-9]+ test' | awk '{n += $1} END {print n + 0}'; }
# No test names: the whole suite.
tests=()
what="the whole suite (quick sizes)"
if [ "${UF_TSAN_SUITE:-1}" = 0 ]; then
  tests=(concurrency)
  what=concurrency
fi
printf '\n==== sanitizers: ThreadSanitizer over %s ====\n' "$what"
status=0
meson test -C "$build" --print-errorlogs --num-processes 2 "${tests[@]}" || status=$?
races=$(grep -c 'WARNING: ThreadSanitizer' "$build/meson-logs/testlog.txt" || true)
if ! grep -q 'Archer detected OpenMP application with TSan' "$build/meson-logs/testlog.txt"; then
  echo "sanitizers: FAILED: Archer did not load ($OMP_TOOL_LIBRARIES)" >&2
  exit 1
fi
if [ "$status" -ne 0 ] || [ "$races" -ne 0 ]; then
  echo "sanitizers: FAILED: ThreadSanitizer run exited $status, $races report(s)" >&2
  exit 1
fi
echo "sanitizers: LeakSanitizer active; ThreadSanitizer + Archer over $what:" \
  "$(tally PASSED) passed, $(tally FAILED) failed, $(tally SKIPPED) skipped, 0 races"
