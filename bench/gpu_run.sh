#!/usr/bin/env bash
# One whole GPU run on the H200 machine (see docs/results.md): install the
# carried cmocka packages, build the CUDA backend, run the tests, the
# compute-sanitizer tools over the test binaries, the benchmark and the
# comparison with PyTorch. Logs and JSON go to $OUT (or ./gpu-out).
#   bench/gpu_run.sh [test] [sanitize] [bench] [torch] [python] [train] [ddp] [attn] [ab]
# (default: the first four). UF_PREBUILT=DIR uses binaries built elsewhere
# (DIR holds libunifuse-cuda.so*, tests/ and bench/ as a build directory
# does) instead of building here; UF_TESTS names the tests the test stage
# runs (default: all). ab: the benchmarks named in UF_AB_BENCH
# (default: norm epilogue activation) once per library directory in
# UF_AB_LIBS (each holding a libunifuse-cuda.so.0), with the options in
# UF_AB_ARGS, the same binaries in one session, so that two commits' (or two
# tunings') kernels are compared on equal terms; UF_AB_TREE=TARBALL (e.g.
# `git archive BASE`) builds that tree's library in build-ab/base alongside
# this one's (kept for later runs of the same tarball) and puts it first in
# the list; UF_AB_ROUNDS=n alternates the libraries n times (default 1). python: the binding's unit tests on the GPU's
# PyTorch; train: the tiny transformer with unifuse and with PyTorch's ops,
# eager and compiled; ddp: the same under DistributedDataParallel on two
# GPUs (NCCL) against one process with the same global batch; attn: the
# attention benchmark and its comparison with PyTorch's SDPA backends and
# torch.matmul (UF_ATTN_BENCH_ARGS / UF_ATTN_TORCH_ARGS add options to each,
# e.g. --dtypes bf16 to fit a shorter time limit).
# The GPU machine has no cmocka and no network: first, on a Debian machine,
#   mkdir -p .deps && (cd .deps && apt-get download libcmocka0 libcmocka-dev)
# (.deps is ignored by git) and send .deps along with the working tree.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
stages=${*:-test sanitize bench torch}
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
status=0
# Names the activation, epilogue and norm results with the commit measured
# (UF_COMMIT where the copy of the tree sent to the GPU machine carries a
# stale .git, or the binaries come from elsewhere).
commit=${UF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

log() { printf '\n==== %s ====\n' "$*" | tee -a "$out/summary.txt"; }

if ! pkg-config --exists cmocka 2>/dev/null; then
  dpkg -i .deps/libcmocka0_*.deb .deps/libcmocka-dev_*.deb >/dev/null
fi

log "$(date -u +%FT%TZ) commit $commit"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$out/summary.txt"

# The A/B tree builds while this one does (16 cores, one long file each).
ab_tree=$PWD/build-ab
if [ -n "${UF_AB_TREE:-}" ] && ! cmp -s "$UF_AB_TREE" "$ab_tree/tree.tar"; then
  rm -rf "$ab_tree" && mkdir -p "$ab_tree/src" && cp "$UF_AB_TREE" "$ab_tree/tree.tar" &&
    tar xf "$ab_tree/tree.tar" -C "$ab_tree/src" &&
    (cd "$ab_tree/src" && meson setup ../base -Dplatform=cuda -Dbuildtype=release -Dtests=false \
      -Dbench=false ${UF_MESON_ARGS:-} && ninja -C ../base) >"$out/ab_tree_build.log" 2>&1 &
  ab_tree_job=$!
fi

B=${UF_PREBUILT:-build-gpu}
if [ -z "${UF_PREBUILT:-}" ]; then
  meson setup build-gpu -Dplatform=cuda -Dbuildtype=release ${UF_MESON_ARGS:-} >"$out/setup.log" 2>&1 ||
    { cat "$out/setup.log"; exit 1; }
  ninja -C build-gpu >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
  grep -i warning "$out/build.log" | tee -a "$out/summary.txt"
fi
B=$(cd "$B" && pwd)

for stage in $stages; do
  case $stage in
  test)
    log "meson test (CUDA)"
    if [ -z "${UF_PREBUILT:-}" ]; then
      UF_TEST_LARGE=1 meson test -C $B --print-errorlogs ${UF_TESTS:-} 2>&1 | tail -15 | tee -a "$out/summary.txt" || status=1
      cp $B/meson-logs/testlog.txt "$out/testlog.txt"
    else # no meson directory: each test binary there, in turn
      for t in "$B"/tests/test_*; do
        UF_TEST_LARGE=1 "$t" >>"$out/testlog.txt" 2>&1 || status=1
      done
    fi
    grep -hE '^\[  (PASSED|FAILED|SKIPPED) *\]' "$out/testlog.txt" | tee -a "$out/summary.txt"
    ;;
  sanitize)
    # test_softmax_args makes no device call (its checks come first), so the
    # sanitizer has nothing to instrument there.
    # UF_SAN_TOOLS / UF_SAN_TESTS narrow a run that must fit a time limit.
    for tool in ${UF_SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
      for t in ${UF_SAN_TESTS:-runtime softmax_forward softmax_backward activation dropout epilogue norm concurrency multi_device}; do
        t=$B/tests/test_$t
        [ -x "$t" ] || { echo "no $t" | tee -a "$out/summary.txt"; continue; }
        log "compute-sanitizer $tool $(basename "$t") (UF_TEST_QUICK=1)"
        UF_TEST_QUICK=1 compute-sanitizer --tool "$tool" --error-exitcode 3 "$t" \
          >"$out/san.tmp" 2>&1
        rc=$?
        cat "$out/san.tmp" >>"$out/sanitize.log"
        grep -E 'PASSED|FAILED|SUMMARY' "$out/san.tmp" | tee -a "$out/summary.txt"
        echo "exit $rc" | tee -a "$out/summary.txt"
        [ $rc -eq 0 ] || status=1
      done
    done
    rm -f "$out/san.tmp"
    ;;
  bench)
    log "unifuse-bench-softmax"
    $B/bench/unifuse-bench-softmax --json "$out/bench_softmax_h200.json" \
      2>&1 | tee "$out/bench.log" | tail -80 || status=1
    log "unifuse-bench-activation"
    $B/bench/unifuse-bench-activation --json "$out/bench_activation_h200_$commit.json" \
      2>&1 | tee "$out/bench_activation.log" | tail -60 || status=1
    log "unifuse-bench-epilogue"
    $B/bench/unifuse-bench-epilogue --json "$out/bench_epilogue_h200_$commit.json" \
      2>&1 | tee "$out/bench_epilogue.log" | tail -30 || status=1
    log "unifuse-bench-norm"
    $B/bench/unifuse-bench-norm --json "$out/bench_norm_h200_$commit.json" \
      2>&1 | tee "$out/bench_norm.log" | tail -100 || status=1
    ;;
  torch)
    # UF_TORCH_OPS narrows the comparisons (softmax activation epilogue norm).
    ops=" ${UF_TORCH_OPS:-softmax activation epilogue norm} "
    if [[ $ops == *" softmax "* ]]; then
    log "compare_torch.py"
    python3 bench/compare_torch.py --lib $B/libunifuse-cuda.so \
      --out-json "$out/torch_softmax_h200.json" --out-png "$out/torch_softmax_h200.png" \
      2>&1 | tee "$out/torch.log" | tail -80 || status=1
    fi
    if [[ $ops == *" activation "* ]]; then
    log "compare_torch_activation.py"
    python3 bench/compare_torch_activation.py --lib $B/libunifuse-cuda.so \
      --out-json "$out/torch_activation_h200_$commit.json" \
      --out-png "$out/torch_activation_h200_$commit.png" \
      2>&1 | tee "$out/torch_activation.log" | tail -80 || status=1
    fi
    if [[ $ops == *" epilogue "* ]]; then
    log "compare_torch_epilogue.py"
    python3 bench/compare_torch_epilogue.py --lib $B/libunifuse-cuda.so \
      --out-json "$out/torch_epilogue_h200_$commit.json" \
      --out-png "$out/torch_epilogue_h200_$commit.png" \
      2>&1 | tee "$out/torch_epilogue.log" | tail -60 || status=1
    fi
    if [[ $ops == *" norm "* ]]; then
    log "compare_torch_norm.py"
    python3 bench/compare_torch_norm.py --lib $B/libunifuse-cuda.so \
      --out-json "$out/torch_norm_h200_$commit.json" \
      --out-png "$out/torch_norm_h200_$commit.png" \
      2>&1 | tee "$out/torch_norm.log" | tail -140 || status=1
    fi
    ;;
  attn)
    # Each program cuts a measurement to at least 5 timed calls when its
    # calls would take more than a few seconds, so a slow kernel keeps the
    # stage within minutes.
    log "unifuse-bench-attention"
    $B/bench/unifuse-bench-attention --json "$out/bench_attention_h200_$commit.json" \
      ${UF_ATTN_BENCH_ARGS:-} 2>&1 | tee "$out/bench_attention.log" | tail -60 || status=1
    log "compare_torch_attention.py"
    python3 bench/compare_torch_attention.py --lib $B/libunifuse-cuda.so \
      --out-json "$out/torch_attention_h200_$commit.json" \
      --out-png "$out/torch_attention_h200_$commit.png" ${UF_ATTN_TORCH_ARGS:-} \
      2>&1 | tee "$out/torch_attention.log" | tail -80 || status=1
    ;;
  ab)
    libs=${UF_AB_LIBS:-}
    if [ -n "${UF_AB_TREE:-}" ]; then
      if [ -n "${ab_tree_job:-}" ]; then
        wait "$ab_tree_job" || { tail -30 "$out/ab_tree_build.log"; exit 1; }
      fi
      libs="$ab_tree/base ${libs:-$B}"
    fi
    for round in $(seq "${UF_AB_ROUNDS:-1}"); do
      for lib in $libs; do
        for b in ${UF_AB_BENCH:-norm epilogue activation}; do
          name=ab_${b}_$(basename "$lib")_$round
          log "unifuse-bench-$b with $lib, round $round"
          LD_LIBRARY_PATH=$lib $B/bench/unifuse-bench-$b ${UF_AB_ARGS:-} \
            --json "$out/$name.json" >"$out/$name.log" 2>&1 || status=1
          tail -3 "$out/$name.log" | tee -a "$out/summary.txt"
        done
      done
    done
    ;;
  python)
    log "python/run_tests.py on $(python3 -c 'import torch; print("torch", torch.__version__)')"
    UNIFUSE_LIBRARY=$B/libunifuse-cuda.so python3 python/run_tests.py \
      >"$out/python_tests.log" 2>&1 || status=1
    grep -E '^(skipped|unittest|FAIL|ERROR)' "$out/python_tests.log" | tee -a "$out/summary.txt"
    log "the PyTorch example of docs/api.md, on the GPU"
    ex=$(mktemp -d) root=$PWD
    python3 tests/doc_examples/extract.py docs/api.md --out "$ex" example_torch.py example_torch.out &&
      (cd "$ex" && PYTHONPATH=$root/python UNIFUSE_LIBRARY=$B/libunifuse-cuda.so \
        python3 example_torch.py) >"$ex/actual.out" 2>&1
    cat "$ex/actual.out" >>"$out/summary.txt"
    diff "$ex/example_torch.out" "$ex/actual.out" | tee -a "$out/summary.txt"
    ;;
  train | ddp)
    # A model that learns the copy task within the run (a wider one stayed
    # at the chance loss ln 16, where rounding noise drives Adam and no two
    # runs agree); dropout off where loss curves are compared step by step.
    train() {
      UNIFUSE_LIBRARY=$B/libunifuse-cuda.so python3 python/train_tiny_transformer.py \
        --steps "${UF_TRAIN_STEPS:-300}" --d-model 128 --heads 4 --layers 4 --half 16 --batch 64 \
        --lr 1e-3 --log-every 50 "$@" >>"$out/train.log" 2>&1 || status=1
    }
    compare() {
      python3 python/compare_runs.py "$@" 2>&1 | tee -a "$out/summary.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    }
    rate() { python3 -c 'import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    print("%-28s %6.1f steps/s  final loss %.5f  (%s, %d process(es))" % (f.split("/")[-1],
          d["steps_per_s"], d["final_loss"], d["device"], d["world_size"]))' "$@" |
      tee -a "$out/summary.txt"; }
    if [ "$stage" = train ]; then
      for mode in eager compile; do
        flag=$([ $mode = compile ] && echo --compile)
        log "training, $mode: unifuse vs PyTorch ops, dropout 0, then 0.1"
        train $flag --dropout 0 --json "$out/train_unifuse_$mode.json"
        train $flag --dropout 0 --reference --json "$out/train_reference_$mode.json"
        compare "$out/train_unifuse_$mode.json" "$out/train_reference_$mode.json" --rtol 1e-3
        train $flag --dropout 0.1 --json "$out/train_unifuse_dropout_$mode.json"
        train $flag --dropout 0.1 --reference --json "$out/train_reference_dropout_$mode.json"
        rate "$out"/train_*_$mode.json
      done
    else
      log "DistributedDataParallel, NCCL: 2 processes on 2 GPUs vs 1, same global batch"
      train --dropout 0 --json "$out/ddp_1gpu.json"
      train --dropout 0 --nproc 2 --json "$out/ddp_2gpu.json"
      compare "$out/ddp_2gpu.json" "$out/ddp_1gpu.json" --rtol 1e-3
      train --dropout 0 --reference --json "$out/ddp_1gpu_reference.json"
      train --dropout 0 --reference --nproc 2 --json "$out/ddp_2gpu_reference.json"
      rate "$out"/ddp_*.json
    fi
    ;;
  esac
done
log "done, status $status"
exit $status
