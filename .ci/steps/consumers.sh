#!/usr/bin/env bash
# CI step: unifuse as downstream projects see it (issue 7). Installs the
# OpenMP build into a temporary prefix; builds tests/consumers/ outside the
# tree through pkg-config only (C99, C11, C++17; shared and static) and runs
# it; builds and runs the C example of docs/api.md as written (blocks marked
# <!-- tested: ... -->) and compares its output with the one shown there;
# installs a second OpenMP build with another name (warp 64, variant w64)
# beside the first and checks that nothing was overwritten; checks that the
# CUDA and HIP builds would install no colliding file (configure only, where
# nvcc or hipcc exist); builds the consumers with unifuse as a Meson
# subproject. Needs meson, ninja, pkg-config, gcc, g++, binutils and python3.
# UF_KEEP_WORK=1 keeps the temporary folder for inspection.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export PATH="/usr/local/cuda/bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/unifuse-consumers.XXXXXX")
if [ -z "${UF_KEEP_WORK:-}" ]; then
  trap 'rm -rf "$work"' EXIT
else
  echo "consumers: working in $work"
fi
prefix=$work/prefix
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
consumers=$root/tests/consumers
warn_flags=(-O2 -Wall -Wextra -Wpedantic -Werror)
checks=0

section() { printf '\n==== consumers: %s ====\n' "$*"; }
pass() {
  checks=$((checks + 1))
  printf 'ok %d - %s\n' "$checks" "$*"
}
fail() {
  printf 'consumers: FAILED: %s\n' "$*" >&2
  exit 1
}
# quiet NAME CMD...: runs CMD with its output in $work/NAME.log, shown on failure.
quiet() {
  local log=$work/$1.log
  shift
  "$@" >"$log" 2>&1 || {
    tail -n 40 "$log" >&2
    fail "$*"
  }
}
# install_build DIR MESON_OPTIONS...: a library-only build, installed into $prefix.
install_build() {
  local name=$1
  shift
  quiet "$name-setup" meson setup "$work/$name" "$root" --prefix="$prefix" --libdir=lib \
    -Dtests=false -Dbench=false -Dcpu_copies=false "$@"
  quiet "$name-build" ninja -C "$work/$name"
  quiet "$name-install" meson install -C "$work/$name"
}
# Files and links under $prefix, relative to it.
installed_files() { (cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort); }
# expected_files LIB: what one build installs, unifuse.pc excepted.
expected_files() {
  local so=lib/lib$1.so version
  version=$(pkg-config --modversion "$1")
  printf '%s\n' include/unifuse.h "$so" "$so.${version%%.*}" "$so.$version" "lib/lib$1.a" \
    "lib/pkgconfig/$1.pc"
  (cd "$root/src" && printf 'include/%s\n' unifuse/*.h)
}
# The build the plain name unifuse.pc forwards to.
plain_target() { pkg-config --print-requires unifuse | cut -d' ' -f1; }
# link_flags PKG shared|static: pkg-config's flags, one a line, with an rpath
# for each -L. static names the archive itself, since -lunifuse-... would pick
# the shared library next to it.
link_flags() {
  local word mode=()
  [ "$2" = static ] && mode=(--static)
  for word in $(pkg-config "${mode[@]}" --libs "$1"); do
    case $word in
    -L*) printf '%s\n' "$word" "-Wl,-rpath,${word#-L}" ;;
    -lunifuse*) if [ "$2" = static ]; then echo "-l:lib${word#-l}.a"; else echo "$word"; fi ;;
    *) printf '%s\n' "$word" ;;
    esac
  done
}
# build_consumer OUT COMPILER STD SOURCE PKG [static]
build_consumer() {
  local out=$work/$1 compiler=$2 std=$3 source=$4 pkg=$5 link=${6:-shared}
  local -a cflags libs
  read -ra cflags <<<"$(pkg-config --cflags "$pkg")"
  mapfile -t libs < <(link_flags "$pkg" "$link")
  quiet "$1-build" "$compiler" -std="$std" "${warn_flags[@]}" "${cflags[@]}" \
    "$source" -o "$out" "${libs[@]}"
  pass "$1: $compiler -std=$std against $pkg ($link), no warnings"
}
# run_consumer BIN PLATFORM WARP: all checks OK, on the expected backend
# (BIN relative to $work).
run_consumer() {
  local out rc=0
  out=$("$work/$1") || rc=$?
  [ $rc -eq 0 ] || fail "$1 exited with status $rc: $out"
  grep -q '^FAIL' <<<"$out" && fail "$1: $out"
  grep -q ': all checks OK$' <<<"$out" || fail "$1: no final line: $out"
  grep -q "^OK device backend $2 warp $3 " <<<"$out" || fail "$1: not $2 warp $3: $out"
  pass "$1 runs: $(grep -c '^OK' <<<"$out") OK lines, $2 warp $3"
}
# needed_unifuse BIN: the libunifuse BIN loads at start (none: static link).
needed_unifuse() { readelf -d "$work/$1" | grep -o 'libunifuse[^]]*' || true; }

section "OpenMP build installed into $prefix"
# -O0: what is checked here is installing, linking and the example's
# printed values, not speed; it compiles several times faster.
install_build build-openmp -Dbuildtype=debug
lib=unifuse-openmp
diff <({ expected_files $lib; echo lib/pkgconfig/unifuse.pc; } | sort) <(installed_files) |
  sed 's/^/  /' || fail "installed files differ (< expected, > installed)"
pass "installs $(installed_files | wc -l) files: lib$lib.{so*,a}, $lib.pc, unifuse.pc, headers"
for h in $(cd "$root/src" && echo unifuse.h unifuse/*.h); do
  cmp -s "$root/src/$h" "$prefix/include/$h" || fail "installed $h differs from src/$h"
done
pass "installed headers are src/unifuse.h and src/unifuse/*.h, unchanged"
soname=$(readelf -d "$prefix/lib/lib$lib.so" | grep -o 'SONAME.*\[.*\]' | grep -o 'lib[^]]*')
[ "$soname" = "lib$lib.so.0" ] || fail "soname $soname"
pass "soname $soname"
if [ "$(pkg-config --variable=platform unifuse)" != openmp ] ||
  [ "$(pkg-config --variable=platform $lib)" != openmp ] || [ "$(plain_target)" != $lib ]; then
  fail "pkg-config: unifuse.pc should forward to $lib, platform openmp"
fi
pass "pkg-config: unifuse forwards to $lib; platform=openmp in both"

section "each public header alone: C99, C11, C++17, -Wall -Wextra -Wpedantic -Werror"
read -ra cflags <<<"$(pkg-config --cflags unifuse)"
for h in $(cd "$prefix/include" && echo unifuse.h unifuse/*.h); do
  for lang in c:c99 c:c11 c++:c++17; do
    compiler=gcc
    [ "${lang%%:*}" = c++ ] && compiler=g++
    printf '#include <%s>\nint main(void) { return 0; }\n' "$h" |
      quiet "header-check" "$compiler" -x "${lang%%:*}" -std="${lang#*:}" "${warn_flags[@]}" \
        "${cflags[@]}" -fsyntax-only -
  done
  pass "<$h> alone compiles as C99, C11 and C++17"
done

section "consumers built outside the tree through pkg-config"
build_consumer c99-shared gcc c99 "$consumers/consumer.c" unifuse
build_consumer c11-shared gcc c11 "$consumers/consumer.c" unifuse
build_consumer cpp17-shared g++ c++17 "$consumers/consumer.cpp" unifuse
build_consumer c99-static gcc c99 "$consumers/consumer.c" $lib static
build_consumer cpp17-static g++ c++17 "$consumers/consumer.cpp" unifuse static
for exe in c99-shared c11-shared cpp17-shared; do
  [ "$(needed_unifuse $exe)" = "lib$lib.so.0" ] || fail "$exe needs $(needed_unifuse $exe)"
done
pass "shared consumers load lib$lib.so.0"
for exe in c99-static cpp17-static; do
  [ -z "$(needed_unifuse $exe)" ] || fail "$exe needs $(needed_unifuse $exe)"
done
pass "static consumers need no libunifuse*.so"
for exe in c99-shared c11-shared cpp17-shared c99-static cpp17-static; do
  run_consumer $exe openmp 32
done

section "docs/api.md: the C example, built and run as written"
# Before the second install: unifuse.pc still names the warp-32 build the
# docs' output comes from.
doc=$work/api-md
mkdir "$doc"
quiet doc-extract python3 "$root/tests/doc_examples/extract.py" "$root/docs/api.md" --out "$doc" \
  example.c example-c.sh example-c.out
build_consumer doc-example gcc c11 "$doc/example.c" unifuse
"$work/doc-example" >"$doc/werror.out" || fail "doc-example exited with status $?"
diff -u "$doc/example-c.out" "$doc/werror.out" >&2 ||
  fail "doc-example: output differs from example-c.out in docs/api.md (- docs, + now)"
pass "doc-example prints what docs/api.md shows ($(wc -l <"$doc/example-c.out") lines)"
# The commands of example-c.sh themselves: cc, the pkg-config name, ./example.
(cd "$doc" && LD_LIBRARY_PATH=$prefix/lib bash -e example-c.sh) >"$doc/as-written.out" \
  2>"$doc/as-written.err" || { cat "$doc/as-written.err" >&2; fail "example-c.sh of docs/api.md"; }
[ ! -s "$doc/as-written.err" ] || { cat "$doc/as-written.err" >&2; fail "example-c.sh: diagnostics"; }
diff -u "$doc/example-c.out" "$doc/as-written.out" >&2 ||
  fail "example-c.sh: output differs from example-c.out in docs/api.md (- docs, + now)"
pass "example-c.sh of docs/api.md as written: builds without diagnostics, prints example-c.out"

section "a second build (warp 64, variant w64) installed beside the first"
(cd "$prefix" && installed_files | while read -r f; do
  printf '%s %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$f"
done) >"$work/first.sums"
# Only its names matter.
install_build build-openmp-w64 -Domp_warp=64 -Dvariant=w64 -Dplain_name=false -Dbuildtype=debug
lib64=unifuse-openmp-w64
diff <({ expected_files $lib; expected_files $lib64; echo lib/pkgconfig/unifuse.pc; } | sort -u) \
  <(installed_files) | sed 's/^/  /' ||
  fail "files after the second install differ (< expected, > installed)"
pass "second install adds lib$lib64.{so*,a} and $lib64.pc only"
(cd "$prefix" && while read -r sum f; do
  [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$sum" ] || fail "second install changed $f"
done) <"$work/first.sums"
pass "every file of the first install is unchanged, unifuse.pc included"
[ "$(plain_target)" = $lib ] || fail "unifuse.pc forwards to $(plain_target)"
pass "plain_name=false: unifuse.pc still forwards to $lib"
build_consumer w64-shared gcc c99 "$consumers/consumer.c" $lib64
[ "$(needed_unifuse w64-shared)" = "lib$lib64.so.0" ] || fail "w64-shared loads the wrong library"
run_consumer w64-shared openmp 64
run_consumer c99-shared openmp 32
# Two builds that both claim the plain name: the later install owns unifuse.pc.
quiet w64-plain meson configure "$work/build-openmp-w64" -Dplain_name=true
quiet w64-plain-install meson install -C "$work/build-openmp-w64"
[ "$(plain_target)" = $lib64 ] || fail "unifuse.pc forwards to $(plain_target)"
build_consumer plain-after-w64 gcc c99 "$consumers/consumer.c" unifuse
run_consumer plain-after-w64 openmp 64
pass "plain_name=true on both: the last install owns unifuse.pc"

section "CUDA and HIP builds: installed names (configure only)"
# meson introspect lists what a configured build would install, so GPU
# builds are checked without compiling them.
planned_files() {
  meson introspect --installed "$1" | python3 -c '
import json, os, sys
for path in json.load(sys.stdin).values():
    print(os.path.relpath(path, sys.argv[1]))' "$prefix"
}
planned_files "$work/build-openmp" >"$work/planned-openmp"
planned_files "$work/build-openmp-w64" >"$work/planned-w64"
lists=("$work/planned-openmp" "$work/planned-w64")
builds="openmp, openmp-w64"
for gpu in cuda:nvcc hip:hipcc; do
  platform=${gpu%%:*}
  if ! command -v "${gpu#*:}" >/dev/null; then
    echo "${gpu#*:} not found: the $platform install names are not checked here"
    continue
  fi
  quiet "$platform-setup" meson setup "$work/configure-$platform" "$root" -Dplatform="$platform" \
    --prefix="$prefix" --libdir=lib -Dtests=false -Dbench=false -Dplain_name=false
  planned_files "$work/configure-$platform" >"$work/planned-$platform"
  for f in "lib/libunifuse-$platform.so.0" "lib/pkgconfig/unifuse-$platform.pc"; do
    grep -qx "$f" "$work/planned-$platform" ||
      fail "$platform would not install $f: $(tr '\n' ' ' <"$work/planned-$platform")"
  done
  lists+=("$work/planned-$platform")
  builds+=", $platform"
done
shared=$(sort "${lists[@]}" | uniq -d | grep -v '^include/' |
  grep -vx 'lib/pkgconfig/unifuse.pc' || true)
[ -z "$shared" ] || fail "builds would overwrite each other's $shared"
pass "builds $builds share only the headers and unifuse.pc"

section "unifuse as a Meson subproject of tests/consumers/meson.build"
sub=$work/subproject
cp -r "$consumers" "$sub"
mkdir -p "$sub/subprojects"
ln -s "$root" "$sub/subprojects/unifuse"
# Without the installed prefix and with the fallback forced, the subproject
# is the only place the dependency can come from.
quiet sub-setup env -u PKG_CONFIG_PATH meson setup "$sub/build" "$sub" --force-fallback-for=unifuse
for name in unifuse $lib; do
  grep -q "Dependency $name found: YES .*(overridden)" "$work/sub-setup.log" ||
    fail "dependency('$name') was not the subproject's"
done
pass "dependency('unifuse') and dependency('$lib') resolve to the subproject"
quiet sub-build ninja -C "$sub/build"
pass "consumer-c (C99) and consumer-cpp (C++17) build with -Werror, unifuse included"
run_consumer subproject/build/consumer-c openmp 32
run_consumer subproject/build/consumer-cpp openmp 32

echo
echo "consumers: $checks checks passed"
