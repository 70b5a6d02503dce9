#!/usr/bin/env bash
# One GPU-machine session for the whole project (the device allowance is small: batch).
#
#   OUT=/tmp/out bash tools/gpu/device_session.sh main     # benchmarks + suite twice
#   OUT=/tmp/out bash tools/gpu/device_session.sh extra    # sanitizers + workgroup GEMM
#   OUT=/tmp/out bash tools/gpu/device_session.sh verify   # app/example/difftest/Hopper + sanitizers
#   OUT=/tmp/out bash tools/gpu/device_session.sh final    # main (quick) + verify in one call
#   OUT=/tmp/out bash tools/gpu/device_session.sh check    # the same, correctness first
#   OUT=/tmp/out bash tools/gpu/device_session.sh correct  # suite + verify only (6 parts)
#   OUT=/tmp/out bash tools/gpu/device_session.sh suite    # the suite alone, both modes
#   OUT=/tmp/out bash tools/gpu/device_session.sh bench    # benchmarks + GEMM only
#   OUT=/tmp/out bash tools/gpu/device_session.sh new      # the newest forms' tests + benches
#   OUT=/tmp/out bash tools/gpu/device_session.sh all_new  # whole suite (plain) + newest + benches
#   OUT=/tmp/out bash tools/gpu/device_session.sh pending        # forms merged without hardware: checks
#   OUT=/tmp/out bash tools/gpu/device_session.sh pending_bench  # ... then their timed tables
#   OUT=/tmp/out bash tools/gpu/device_session.sh pending_rest   # ... then the whole suite + extra benches
#   OUT=/tmp/out bash tools/gpu/device_session.sh attention_tests  # attention tests, sanitizers
#   OUT=/tmp/out bash tools/gpu/device_session.sh attention_bench  # bench/attention.py
#   OUT=/tmp/out bash tools/gpu/device_session.sh tune_attention  # Q placement, key blocks vs flash
#   OUT=/tmp/out bash tools/gpu/device_session.sh attention_round  # tune, then all attention checks
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_cluster_auto  # auto + cluster: 2, table
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_ab  # A/B of pipeline knobs (AB_KNOBS)
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_profile  # ncu: ours vs torch.matmul
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_store_cost  # the GEMM without D stores
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_tma_store  # D through the copy engine
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_c_ahead    # C's loads a box ahead
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_streamk    # stream-K: checks, A/B
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_table      # cuBLAS's kernels, the table
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_pending    # paired split, 240: checks, ncu
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_clipped    # 240 with clipped boxes
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_232        # 232: checks, vs 240/256
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_stage_row  # 64-byte stages: checks, A/B
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_tall      # 256x160 tiles: checks, A/B
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_pp240      # paired ping-pong 240, table
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_memcheck_wide  # memcheck, every SM
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_split_profile  # ncu: the last round split or not
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_hot        # ncu: where the warps wait, per instruction
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_f32_epilogue  # f32 D's store cost at 232; ncu
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_odd        # 240: checks, against 256, group sizes
#   OUT=/tmp/out bash tools/gpu/device_session.sh gemm_next       # H200: 240 checks + table; ncu 240/256
#
# Runs from the source tree with the machine's python3 (numpy, torch, triton, cupy,
# cuda-bindings); no Pants there. Writes every log and JSON under $OUT and prints a short
# summary last. Steps, in order of value:
#   1. benchmarks: plain-source kernels with/without -O, tuned row kernels vs Triton and
#      torch.compile, launch overhead vs CuPy/Triton/torch, tensor_transfer TMA vs replay
#   2. the hardware suite twice at once, plain and -O --fp-contract=off, each recording a
#      digest of every output buffer; compare_records.py then checks they are identical
#   3. the new -O / tensor forms under compute-sanitizer memcheck and racecheck
#   4. the workgroup GEMM benchmark (bench/gemm.py)
set -u
OUT=${OUT:-/tmp/mettle-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
export METTLE_PTXAS=${METTLE_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
cd "$(dirname "$0")/../.."
# pytest travels as wheels in .whl/ when the machine's python3 lacks it (tools/gpu/README.md)
if ! python3 -c "import pytest" 2>/dev/null && ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
t0=$SECONDS
step() { echo "=== $* ($((SECONDS - t0)) s)"; }
PYTEST="python3 -m pytest -q -p no:cacheprovider"

benchmarks() {
  step "benchmarks"
  timeout 120 python3 bench/plain_kernels.py --reps 20 ${QUICK:+--quick} \
    --json "$OUT/plain_kernels.json" > "$OUT/plain_kernels.txt" 2>&1
  timeout 80 python3 bench/gpu_kernels.py --reps 20 --json "$OUT/gpu_kernels.json" \
    > "$OUT/gpu_kernels.txt" 2>&1
  timeout 90 python3 bench/launch_overhead.py --json "$OUT/launch_overhead.json" \
    > "$OUT/launch_overhead.txt" 2>&1
  [ -z "${QUICK:-}" ] && timeout 60 python3 bench/transfer.py --json "$OUT/transfer.json" \
    > "$OUT/transfer.txt" 2>&1
  return 0
}

suite() {
  step "hardware suite: plain and -O --fp-contract=off, recorded"
  # PARTS parts per mode, dealt largest file first so the parts take about as long;
  # SUITE_TIMEOUT per part (a part beside the sanitizer runs of verify_tests once took
  # longer than 290 s)
  # (SUITE_FILES: these test files only, e.g. the parts a cut run left unfinished)
  files=${SUITE_FILES:+$(echo $SUITE_FILES | tr ' ' '\n')}
  files=${files:-$(wc -l tests/gpu/test_*.py examples/*/test_*.py 2>/dev/null |
        grep -v " total$" | grep -v gemm_hopper | sort -rn | awk '{print $2}')}
  parts=${PARTS:-4}
  for mode in plain-nocontract O-nocontract; do
  for part in $(seq 0 $((parts - 1))); do
    set -- $(echo "$files" | awk -v p=$part -v n=$parts 'NR % n == p')
    METTLE_GPU_OPT=$mode METTLE_GPU_RECORD="$OUT/rec_$mode.$part.jsonl" \
      timeout ${SUITE_TIMEOUT:-290} $PYTEST -rfE "$@" > "$OUT/suite_$mode.$part.txt" 2>&1 &
  done
  done
  wait
  cat "$OUT"/rec_plain-nocontract.*.jsonl > "$OUT/rec_plain.jsonl" 2>/dev/null
  cat "$OUT"/rec_O-nocontract.*.jsonl > "$OUT/rec_opt.jsonl" 2>/dev/null
  python3 tests/gpu/compare_records.py "$OUT/rec_plain.jsonl" "$OUT/rec_opt.jsonl" \
    --ignore atomics_u32:olds atomics_u64:counters > "$OUT/compare.txt" 2>&1
}

extra() {
  step "sanitizers on the new forms"
  new="tests/gpu/test_residency.py tests/gpu/test_async_staging.py tests/gpu/test_transfer.py
       tests/gpu/test_subgroup_versioning.py"
  # (test_residency.py holds the 3-stage pipeline case; fused-bias m16n8 epilogues: a
  # loop, the 3-stage pipeline and a 2:4 loop, each fused/replayed/plain)
  fused='seed1 and (fp8-loop-row- or fp8-pipeline or sparse-loop-matrix)'
  for tool in memcheck racecheck; do
    METTLE_GPU_SANITIZER=$tool timeout 150 $PYTEST $new > "$OUT/sanitizer_$tool.txt" 2>&1 &
    METTLE_GPU_SANITIZER=$tool timeout 150 $PYTEST tests/gpu/test_fused_bias.py -k "$fused" \
      > "$OUT/sanitizer_${tool}_fused_bias.txt" 2>&1 &
  done
  wait
  step "workgroup GEMM"
  timeout 200 python3 bench/gemm.py --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
}

verify_tests() {
  # what the suite's file list leaves out (the app and example programs, the kernel
  # differential tests, the Hopper GEMM), the new forms under the sanitizers (a subset: the
  # sanitizers are slow), and the workgroup GEMM's 16-bit-result rows
  step "app, examples, difftest kernels, Hopper GEMM tests"
  timeout 290 $PYTEST -rfEs app/test_gemm_app.py examples/gemm/test_gemm_example.py \
      > "$OUT/suite_app.txt" 2>&1 &
  timeout 290 $PYTEST -rfE tests/difftest/test_kernels_gpu.py > "$OUT/suite_difftest.txt" 2>&1 &
  timeout 290 $PYTEST -rfE tests/gpu/test_gemm_hopper.py > "$OUT/suite_hopper.txt" 2>&1 &
  fused='seed1 and (fp8-loop-row- or fp8-pipeline or sparse-loop-matrix)'
  for tool in memcheck racecheck; do
    METTLE_GPU_SANITIZER=$tool timeout 290 $PYTEST tests/gpu/test_residency.py \
      tests/gpu/test_wmma_staging.py tests/gpu/test_load_ahead.py tests/gpu/test_load_combine.py \
      > "$OUT/sanitizer_$tool.txt" 2>&1 &
    METTLE_GPU_SANITIZER=$tool timeout 290 $PYTEST tests/gpu/test_fused_bias.py -k "$fused" \
      > "$OUT/sanitizer_${tool}_fused_bias.txt" 2>&1 &
    METTLE_GPU_SANITIZER=$tool timeout 290 $PYTEST tests/gpu/test_gemm_hopper.py \
      -k "small or persistent" > "$OUT/sanitizer_${tool}_gemm_hopper.txt" 2>&1 &
  done
  wait
}

verify_gemm() {
  step "workgroup GEMM, f32 and 16-bit results"
  timeout 150 python3 bench/gemm.py --out f32,f16 --json "$OUT/gemm.json" \
      --shapes 4096x4096x4096,8192x8192x8192,8192x8192x1024,16384x1024x4096,5000x3000x4104 \
      > "$OUT/gemm.txt" 2>&1
}

newest_benchmarks() {
  # the newest forms' benchmarks, alone on the GPU; $1 and $2: the short and long limits (s)
  step "newest forms: benchmarks"
  timeout "$1" python3 bench/kloop_held.py --json "$OUT/kloop_held.json" \
      > "$OUT/kloop_held.txt" 2>&1
  timeout "$2" python3 bench/gemm_fp8.py --json "$OUT/gemm_fp8.json" > "$OUT/gemm_fp8.txt" 2>&1
  timeout "$2" python3 bench/attention.py --shapes b16h16n2048d64 --dtypes f16 \
      --json "$OUT/attention.json" > "$OUT/attention.txt" 2>&1
}

new_forms() {
  # the forms added last (struct values, undeclared-shape staging, FP8 wgmma, tile values),
  # the runtime and docs tests, then their benchmarks alone on the GPU
  step "new forms: tests"
  timeout 300 $PYTEST -rfE tests/gpu/test_runtime.py tests/gpu/test_docs_gpu.py \
      tests/gpu/test_aggregates.py > "$OUT/suite_new_runtime.txt" 2>&1 &
  timeout 300 $PYTEST -rfE tests/gpu/test_wmma_staging.py > "$OUT/suite_new_staging.txt" 2>&1 &
  timeout 300 $PYTEST -rfE tests/gpu/test_gemm_fp8.py > "$OUT/suite_new_fp8.txt" 2>&1 &
  timeout 300 $PYTEST -rfE tests/gpu/test_attention.py > "$OUT/suite_new_attention.txt" 2>&1 &
  timeout 300 $PYTEST -rA tests/gpu/test_gemm_hopper.py -k tensor_maps \
      > "$OUT/suite_new_hopper_maps.txt" 2>&1 &
  for tool in memcheck racecheck; do
    METTLE_GPU_SANITIZER=$tool timeout 300 $PYTEST tests/gpu/test_gemm_fp8.py -k 128x256x128 \
      tests/gpu/test_aggregates.py > "$OUT/sanitizer_${tool}_new.txt" 2>&1 &
  done
  wait
  newest_benchmarks 60 90
  timeout 70 python3 bench/plain_kernels.py --reps 20 --quick --json "$OUT/plain_kernels.json" \
      > "$OUT/plain_kernels.txt" 2>&1
}

all_new() {
  # one call for everything a session changed: the whole suite (plain), the newest forms'
  # files alone, then their benchmarks alone on the GPU
  step "whole suite (plain) and the newest forms"
  newest="tests/gpu/test_runtime.py tests/gpu/test_docs_gpu.py tests/gpu/test_aggregates.py
          tests/gpu/test_wmma_staging.py tests/gpu/test_gemm_fp8.py tests/gpu/test_attention.py"
  rest=$(ls tests/gpu/test_*.py | grep -v -e gemm_hopper $(for f in $newest; do echo "-e $f"; done) |
         xargs wc -l | grep -v " total$" | sort -rn | awk '{print $2}')
  for part in 0 1 2 3; do
    set -- $(echo "$rest" | awk -v p=$part 'NR % 4 == p')
    timeout 300 $PYTEST -rfE "$@" > "$OUT/suite_plain.$part.txt" 2>&1 &
  done
  for f in $newest; do
    timeout 300 $PYTEST -rfE "$f" > "$OUT/suite_new_$(basename "$f" .py).txt" 2>&1 &
  done
  timeout 300 $PYTEST -rA tests/gpu/test_gemm_hopper.py -k tensor_maps \
      > "$OUT/suite_new_hopper_maps.txt" 2>&1 &
  wait
  newest_benchmarks 50 80
}

attention_tests() {
  # the attention example: its hardware tests (three parts at once; each test runs its
  # group of cases in a process of its own) and the tile tests, beside compute-sanitizer
  # memcheck and racecheck; every log goes to stdout too (about 5-7 minutes: three forms,
  # mma, wgmma and wgmma-ss)
  step "attention: tests and compute-sanitizer"
  t=tests/gpu/test_attention.py
  timeout 480 $PYTEST -rA $t -k "matches_sdpa and not bf16" > "$OUT/suite_attention_f16.txt" 2>&1 &
  timeout 480 $PYTEST -rA $t -k "matches_sdpa and bf16 or group" \
    > "$OUT/suite_attention_bf16.txt" 2>&1 &
  for tool in memcheck racecheck; do
    timeout 480 $PYTEST -rA $t -k "sanitizer and $tool" > "$OUT/sanitizer_attention_$tool.txt" 2>&1 &
  done
  # the tile forms under the example: every form, ragged n, d64 with 64 keys a step, d128
  # with 128 (tiles in dynamic workgroup memory), a launch short of that memory
  timeout 480 $PYTEST -rA tests/gpu/test_tile_frag.py > "$OUT/suite_attention_tiles.txt" 2>&1 &
  wait
  cat "$OUT"/suite_attention_*.txt "$OUT"/sanitizer_attention_*.txt
}

attention_bench() {
  # bench/attention.py alone on the GPU (about 2-4 minutes). ATTENTION_BENCH_ARGS: more
  # flags, e.g. "--forms mma,wgmma,wgmma-ss --bf16" for the whole table
  step "attention: benchmark"
  timeout 420 python3 bench/attention.py --json "$OUT/attention.json" ${ATTENTION_BENCH_ARGS:-} \
    2>&1 | tee "$OUT/attention.txt"
}

attention_session() {
  # tests, then the benchmark: over one call's 10 minutes with three forms; use
  # attention_tests and attention_bench as two calls
  attention_tests
  attention_bench
}

pending_checks() {
  # every form merged without a hardware run (the device was withdrawn two sessions in a
  # row), at once, each a process of its own: `schedule: auto` (both branches), `cluster: 2`
  # (both schedules; tails, then 200 back-to-back 4096^3 launches per configuration, each
  # process under a limit so a hang is reported), the 16-bit and FP8 split regions on the
  # warp MMA, the gemm example, the wgmma model's kernels on silicon, register tiles and
  # attention in both forms (mma.sync and --gpu-tile-wgmma, sanitizers included), and the
  # tagged-enum payloads kept in registers (test_aggregates)
  step "pending: checks of the forms merged without a hardware run"
  timeout 240 python3 bench/gemm.py --check-auto --no-bench --out f32,f16 --formats f16 \
    > "$OUT/pending_auto16.txt" 2>&1 &
  timeout 200 python3 bench/gemm.py --check-auto --small --no-bench --out f16 --formats bf16 \
    > "$OUT/pending_autobf16.txt" 2>&1 &
  timeout 200 python3 bench/gemm_fp8.py --check --no-bench --forms auto \
    > "$OUT/pending_autofp8.txt" 2>&1 &
  timeout 300 python3 bench/gemm.py --check-cluster --no-stress --no-bench \
    > "$OUT/pending_cluster.txt" 2>&1 &
  timeout 480 $PYTEST -rfE tests/gpu/test_gemm_cluster.py > "$OUT/pending_cluster_tests.txt" 2>&1 &
  timeout 240 $PYTEST -rfE examples/gemm/test_gemm_example.py > "$OUT/pending_example.txt" 2>&1 &
  timeout 300 $PYTEST -rfE tests/gpu/test_gemm_split16.py tests/gpu/test_gemm_fp8_split.py \
    > "$OUT/pending_split.txt" 2>&1 &
  timeout 300 $PYTEST -rfE -s tests/gpu/test_wgmma_model.py > "$OUT/pending_wgmma_model.txt" 2>&1 &
  timeout 400 $PYTEST -rfE tests/gpu/test_tile_frag.py > "$OUT/pending_tiles.txt" 2>&1 &
  timeout 480 $PYTEST -rfE tests/gpu/test_attention.py > "$OUT/pending_attention.txt" 2>&1 &
  timeout 200 $PYTEST -rfE tests/gpu/test_aggregates.py > "$OUT/pending_aggregates.txt" 2>&1 &
  wait
  grep -h "base offset" "$OUT/pending_wgmma_model.txt"
  for f in "$OUT"/pending_*.txt; do echo "$(basename "$f"): $(tail -1 "$f")"; done
}

pending_bench() {
  # the timed tables, alone on the GPU: attention in both forms beside flash and cuDNN,
  # then the whole GEMM table (persistent, ping-pong, auto, cluster: 2 columns, FP8 rows)
  step "pending: benchmarks"
  timeout 240 python3 bench/attention.py --forms mma,wgmma --bf16 --json "$OUT/attention.json" \
    > "$OUT/attention.txt" 2>&1
  timeout 330 python3 bench/gemm.py --out f32,f16 --fp8 e4m3 --json "$OUT/gemm.json" \
    > "$OUT/gemm.txt" 2>&1
  for f in attention gemm; do tail -40 "$OUT/$f.txt"; done
}

pending_rest() {
  # the whole hardware suite (plain) in 4 parts, then the pitch-isolation shapes behind
  # `schedule: auto`'s rule, the cluster grid sizes, and the unaligned-K fallbacks
  step "pending: whole suite (plain)"
  files=$(ls tests/gpu/test_*.py | xargs wc -l | grep -v " total$" | sort -rn | awk '{print $2}')
  for part in 0 1 2 3; do
    set -- $(echo "$files" | awk -v p=$part 'NR % 4 == p')
    timeout 290 $PYTEST -rfE "$@" > "$OUT/suite_plain.$part.txt" 2>&1 &
  done
  wait
  step "pending: isolation and fallback benchmarks"
  timeout 120 python3 bench/gemm.py --out f32 --formats f16 --shapes isolate --fp8 "" \
    --json "$OUT/gemm_isolate.json" > "$OUT/gemm_isolate.txt" 2>&1
  for sms in 128 120; do
    timeout 100 python3 bench/gemm.py --shapes 4096x4096x4096 --out f16 --no-auto \
      --no-pingpong --fp8 "" --cluster-sms $sms --json "$OUT/gemm_cluster_sms$sms.json" \
      > "$OUT/gemm_cluster_sms$sms.txt" 2>&1
  done
  timeout 80 python3 bench/gemm_fallback.py --json "$OUT/gemm_fallback.json" \
    > "$OUT/gemm_fallback.txt" 2>&1
  for f in gemm_isolate gemm_cluster_sms128 gemm_cluster_sms120 gemm_fallback; do
    tail -30 "$OUT/$f.txt"
  done
}

tune_attention() {
  # the attention tuning questions still open (docs/internals/tile-wgmma.md "Next steps"):
  # Q in workgroup memory (both wgmma operands from descriptors; 163 registers at d64, 131
  # at d128: three workgroups an SM) against Q in registers (185, 194), with 64 keys a
  # step at d64 (101 registers) or 32 at d128 (109), or 128 at d128 (80 KiB of tiles in
  # dynamic workgroup memory); then the two tuning options (docs/reference/tiles.md):
  # the rescale skip and the copy wait at the matmul, alone and together. TUNE_EXTRA: more
  # --variant words (e.g. artifact=PATH modules built from an edited source)
  step "attention variants"
  timeout ${TUNE_TIMEOUT:-420} python3 bench/attention_variants.py \
    --json "$OUT/attention_variants.json" \
    --variant reg --variant ss tile_wgmma_a=shared \
    --variant ss-bn64 tile_wgmma_a=shared BLOCK_N=64 \
    --variant ss-bn32 tile_wgmma_a=shared BLOCK_N=32 \
    --variant ss-bn128 tile_wgmma_a=shared BLOCK_N=128 \
    --variant reg-bn128 BLOCK_N=128 \
    --variant skip-reg tile_rescale_skip=1 \
    --variant skip-ss tile_wgmma_a=shared tile_rescale_skip=1 \
    --variant wait-reg tile_copy_wait=matmul \
    --variant wait-ss tile_wgmma_a=shared tile_copy_wait=matmul \
    --variant both-ss tile_wgmma_a=shared tile_rescale_skip=1 tile_copy_wait=matmul \
    --variant both-ss-bn64 tile_wgmma_a=shared BLOCK_N=64 tile_rescale_skip=1 \
        tile_copy_wait=matmul ${TUNE_EXTRA:-} \
    > "$OUT/attention_variants.txt" 2>&1
  tail -34 "$OUT/attention_variants.txt"
}

attention_round() {
  # one call (about 9 minutes): the variants timed alone, then at once the attention
  # tests of every form, both sanitizers, the tile tests and auto + cluster: 2's checks,
  # each cut at the call's end (a cut log says so: no summary line)
  TUNE_TIMEOUT=240 tune_attention
  attention_checks
}

attention_checks() {
  # every attention check at once, until ROUND_END seconds into the call (default 575)
  step "attention checks"
  left=$((${ROUND_END:-575} - SECONDS)); t=tests/gpu/test_attention.py
  timeout $left $PYTEST -rfE $t -k "matches_sdpa and not bf16" > "$OUT/suite_attention_f16.txt" 2>&1 &
  timeout $left $PYTEST -rfE $t -k "matches_sdpa and bf16 or group" \
    > "$OUT/suite_attention_bf16.txt" 2>&1 &
  for tool in memcheck racecheck; do
    timeout $left $PYTEST -rfE $t -k "sanitizer and $tool" > "$OUT/sanitizer_attention_$tool.txt" 2>&1 &
  done
  timeout $left $PYTEST -rfE tests/gpu/test_tile_frag.py > "$OUT/suite_attention_tiles.txt" 2>&1 &
  timeout $left python3 bench/gemm.py --check-cluster --cluster-schedules auto --no-bench \
    --out f32,f16 > "$OUT/gemm_cluster_auto_checks.txt" 2>&1 &
  wait
  for f in "$OUT"/suite_attention_*.txt "$OUT"/sanitizer_attention_*.txt; do
    echo "$(basename "$f"): $(tail -1 "$f")"
  done
  tail -8 "$OUT/gemm_cluster_auto_checks.txt"
  grep -h -E "^(FAILED|ERROR)" "$OUT"/*.txt | head -30
}

gemm_ab() {
  # A/B of pipeline knobs (toolchain/compiler/targets/ptx/tensor/wgmma.py): per KNOB=INT of
  # AB_KNOBS, the table's shipped `auto` next to `auto` compiled with that knob (`base`
  # columns), in the same interleaved rounds; WITH_PROFILE: then gemm_profile; AB_CHECKS:
  # then every check of the ping-pong, auto and clustered forms at once, and WITH_ATTENTION
  # the attention checks, until ROUND_END (default 575 s)
  for knob in ${AB_KNOBS:-PINGPONG_C_FIRST=1}; do
    step "A/B $knob"
    name=gemm_ab_${knob//=/-}${AB_TAG:-}     # no '=' in a file name the device returns
    timeout ${AB_TIMEOUT:-200} python3 bench/gemm.py --out f32,f16 --formats ${AB_FORMATS:-f16} \
      --no-cluster --fp8 "" --baseline $knob --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
    # the row, then auto, auto/noC, base, base/noC (TFLOP/s)
    grep "^row" "$OUT/$name.txt" | cut -c6- | awk 'NR == 1 {print "row auto auto/noC base base/noC"; next}
      {print $1, $2, $4, $5, $(NF-3), $(NF-2)}'
  done
  [ -n "${WITH_PROFILE:-}" ] && gemm_profile
  [ -z "${AB_CHECKS:-}" ] && return 0
  step "checks of the ping-pong, auto and clustered forms"
  schedule_checks
  [ -n "${WITH_ATTENTION:-}" ] && attention_checks
  wait
  report_checks gemm_check_pingpong gemm_check_auto gemm_check_cluster
}

schedule_checks() {
  # in the background, until ROUND_END (sets $left for the caller's own checks): the
  # ping-pong, auto and clustered forms' checks of bench/gemm.py
  left=$((${ROUND_END:-575} - SECONDS))
  timeout $left python3 bench/gemm.py --check-pingpong --no-bench --out f32,f16 \
    > "$OUT/gemm_check_pingpong.txt" 2>&1 &
  timeout $left python3 bench/gemm.py --check-auto --no-bench --out f32,f16 --formats bf16 \
    > "$OUT/gemm_check_auto.txt" 2>&1 &
  timeout $left python3 bench/gemm.py --check-cluster --cluster-schedules auto,pingpong \
    --no-stress --small --no-bench --out f32,f16 > "$OUT/gemm_check_cluster.txt" 2>&1 &
}

ab_rows() {
  # an A/B's rows from bench/gemm.py's table in FILE: the contender (column "$2": au+cl, the
  # paired auto kernel, or auto) with and without C, the baseline likewise, torch.matmul
  local with=14 without=15
  [ "$2" = auto ] && with=4 without=5
  grep "^row" "$1" | cut -c6- | awk -v w=$with -v wo=$without -v name="$2" \
    'NR > 1 {print $1, $2, name, $w, $wo, "base", $(NF-3), $(NF-2), "torch", $16}'
}

sanitize_case() {
  # memcheck and racecheck of one tools/gpu/gemm_case.py launch in the background:
  # $1 the logs' suffix, $2 the time limit (s), the rest gemm_case.py's arguments
  local name=$1 limit=$2; shift 2
  for tool in memcheck racecheck; do
    timeout $limit compute-sanitizer --tool $tool python3 tools/gpu/gemm_case.py "$@" \
      > "$OUT/sanitizer_${tool}_$name.txt" 2>&1 &
  done
}

report_sanitizers() {
  # one line per sanitizer log of suffix $1: its summary, the case's verdict
  for f in "$OUT"/sanitizer_*_$1.txt; do
    echo "$(basename "$f"): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|wrong|exact|Error' "$f" | tr '\n' ' ' | cut -c1-300)"
  done
}

report_checks() {
  # one line per check log named: its length and its last line (CHECK OK / FAILED)
  for f in "$@"; do
    echo "$f: $(grep -c '' "$OUT/$f.txt") lines, $(tail -1 "$OUT/$f.txt")"
  done
}

gemm_profile() {
  # Nsight Compute's speed-of-light, compute and memory sections for one launch of ours
  # (persistent, PROFILE_SCHEDULE, clusters of PROFILE_CLUSTER, PROFILE_BN columns, f16 D,
  # no C) and of torch.matmul, per PROFILE_SHAPES
  for shape in ${PROFILE_SHAPES:-4096x4096x4096 8192x8192x1024}; do
    step "ncu $shape ${PROFILE_SCHEDULE:-auto} cluster ${PROFILE_CLUSTER:-1} bn ${PROFILE_BN:-256}"
    timeout ${PROFILE_TIMEOUT:-150} ncu --target-processes all -k "regex:gemm|nvjet|sm90|cutlass" \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section LaunchStats --section Occupancy ${PROFILE_SECTIONS:-} \
      python3 bench/gemm.py --once $shape --once-schedule ${PROFILE_SCHEDULE:-auto} \
      --once-cluster ${PROFILE_CLUSTER:-1} --bn ${PROFILE_BN:-256} > "$OUT/ncu_${shape}_${PROFILE_SCHEDULE:-auto}${PROFILE_CLUSTER:-1}_${PROFILE_BN:-256}.txt" 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Executed Ipc A|Issue Slots Busy|SM Busy|Registers Per|Achieved Occupancy|Max Bandwidth|L1/TEX Hit|L2 Hit|Warp Cycles Per|Avg. Active Threads" \
      "$OUT/ncu_${shape}_${PROFILE_SCHEDULE:-auto}${PROFILE_CLUSTER:-1}_${PROFILE_BN:-256}.txt" | head -60
  done
}

gemm_store_cost() {
  # bench/gemm_epilogue_cost.py: each persistent schedule with and without its D stores
  step "what D's stores cost"
  timeout ${STORE_COST_TIMEOUT:-150} python3 bench/gemm_epilogue_cost.py \
    --json "$OUT/gemm_epilogue_cost.json" ${STORE_COST_ARGS:-} > "$OUT/gemm_epilogue_cost.txt" 2>&1
  cat "$OUT/gemm_epilogue_cost.txt"
}

gemm_tma_store() {
  # D through the copy engine (the shipped `auto` is the store path, `base` the register
  # stores): the A/B, then store_checks
  AB_KNOBS="TMA_STORE=0" gemm_ab
  store_checks
}

gemm_c_ahead() {
  # the store epilogue's C loads one box ahead: the shipped `auto` against
  # STORE_C_AHEAD=0 (each box's loads just before its sums), AB_REPEAT times (default 3:
  # the with-C rows differ by a few percent from run to run), then the store path's checks
  for i in $(seq ${AB_REPEAT:-3}); do AB_KNOBS="STORE_C_AHEAD=0" AB_TAG=_$i gemm_ab; done
  store_checks
}

gemm_streamk() {
  # stream-K (`workspace:`): its checks as shipped (STREAM_K 1) and with the last round
  # after whole rounds split too (2), compute-sanitizer on a split launch, then `auto` with
  # a workspace against the same kernel with STREAM_K=0 (the split off) on SK_SHAPES (few
  # tiles, long K: the launches it splits, and controls), AB_REPEAT times (default 2)
  step "stream-K checks"
  for mode in 1 2; do
    timeout 300 python3 bench/gemm.py --check-streamk --stream-k $mode --no-bench --out f32,f16 \
      > "$OUT/gemm_check_streamk_$mode.txt" 2>&1 &
  done
  for tool in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $tool python3 tools/gpu/gemm_case.py 1000x1000x1000 \
      --schedule cooperative --fmt f16 --out f16 --workspace \
      > "$OUT/sanitizer_${tool}_streamk.txt" 2>&1 &
  done
  timeout 300 python3 bench/gemm_fp8.py --check --no-bench --forms streamk --out bf16,f32 \
    > "$OUT/gemm_check_streamk_fp8.txt" 2>&1 &
  wait
  for mode in 1 2; do
    grep -E "stream-K .*(inf|nan)|bitwise|stress" "$OUT/gemm_check_streamk_$mode.txt" | head -20
  done
  grep -v -E "exact True| ok$" "$OUT/gemm_check_streamk_fp8.txt" | tail -5
  report_checks gemm_check_streamk_1 gemm_check_streamk_2 gemm_check_streamk_fp8
  for tool in memcheck racecheck; do
    echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|wrong' "$OUT/sanitizer_${tool}_streamk.txt" | tr '\n' ' ')"
  done
  for i in $(seq ${AB_REPEAT:-2}); do
    step "A/B stream-K $i"
    name=gemm_ab_streamk_$i
    timeout 200 python3 bench/gemm.py --out f32,f16 --formats ${AB_FORMATS:-f16,bf16} --workspace \
      --shapes ${SK_SHAPES:-256x1024x16384,512x1024x16384,1024x1024x8192,1024x2048x8192,2048x1024x4096,2048x2048x8192,4096x4096x4096} \
      --no-cluster --fp8 "" --baseline STREAM_K=0 --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
    grep "^row" "$OUT/$name.txt" | cut -c6- | awk 'NR == 1 {print "row auto auto/noC base base/noC torch"; next}
      {print $1, $2, $4, $5, $(NF-3), $(NF-2), $16}'
  done
}

gemm_table() {
  # the issue's table in one call: the kernels cuBLAS runs per shape (names: tile, cluster),
  # then bench/gemm.py's whole table (f16/bf16 inputs, f32 and 16-bit D, the FP8 rows
  # against torch._scaled_mm) and the plain-source K loop, alone on the GPU
  step "cuBLAS kernels"
  timeout 100 python3 tools/gpu/cublas_kernels.py > "$OUT/cublas_kernels.txt" 2>&1
  step "GEMM table"
  # (TABLE_ARGS: more columns, e.g. "--baseline-bn 232 --baseline-cluster": the paired
  # 232-wide auto on every shape as the base columns)
  timeout ${TABLE_TIMEOUT:-380} python3 bench/gemm.py --out f32,f16 --fp8 e4m3 ${TABLE_ARGS:-} \
    --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
  step "plain-source K loop"
  timeout 80 python3 bench/kloop_held.py --json "$OUT/kloop_held.json" > "$OUT/kloop_held.txt" 2>&1
  cut -c1-150 "$OUT/cublas_kernels.txt"
  grep "^row" "$OUT/gemm.txt" | cut -c6-
  tail -8 "$OUT/gemm.txt"; tail -6 "$OUT/kloop_held.txt"
}

gemm_pending() {
  # the checks the paired split and the 240-wide tile have not had on hardware: both under
  # compute-sanitizer, the FP8 stream-K form, the auto and cluster checks at 240 (tails
  # in M and N), all at once; then Nsight Compute on the paired kernel at the odd shape
  step "paired split and 240: sanitizers and checks"
  for tool in memcheck racecheck; do
    timeout 280 compute-sanitizer --tool $tool python3 tools/gpu/gemm_case.py 1000x1000x1000 \
      --schedule cooperative --cluster 2 --fmt f16 --out f16 --workspace \
      > "$OUT/sanitizer_${tool}_paired_split.txt" 2>&1 &
    timeout 280 compute-sanitizer --tool $tool python3 tools/gpu/gemm_case.py 700x1000x300 \
      --schedule auto --cluster 2 --bn 240 --fmt bf16 --out bf16 --pad 63 \
      > "$OUT/sanitizer_${tool}_bn240.txt" 2>&1 &
  done
  timeout 280 python3 bench/gemm_fp8.py --check --no-bench --forms streamk --out bf16,f32 \
    > "$OUT/gemm_check_streamk_fp8.txt" 2>&1 &
  timeout 280 python3 bench/gemm.py --check-auto --bn 240 --no-bench --out f32,f16 \
    > "$OUT/gemm_check_auto_bn240.txt" 2>&1 &
  timeout 280 python3 bench/gemm.py --check-cluster --bn 240 --no-stress --no-bench --out f32,f16 \
    > "$OUT/gemm_check_cluster_bn240.txt" 2>&1 &
  wait
  report_checks gemm_check_streamk_fp8 gemm_check_auto_bn240 gemm_check_cluster_bn240
  for f in "$OUT"/sanitizer_*_{paired_split,bn240}.txt; do
    echo "$(basename "$f"): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|wrong|exact|Error' "$f" | tr '\n' ' ' | cut -c1-300)"
  done
  # the tile width on the odd shape: 192 (16 columns of tiles, 4.85 rounds of 0.75 tiles)
  # against 256 (12 columns, 3.64 rounds), both paired `auto`, in one process
  step "odd shape: 192-wide against 256-wide tiles"
  timeout ${BN_TIMEOUT:-170} python3 bench/gemm.py --shapes 5000x3000x4104 --bn ${BN_WIDTH:-192} \
    --baseline-bn 256 --baseline-cluster --out f32,f16 --fp8 "" --no-pingpong \
    --json "$OUT/gemm_bn_odd.json" > "$OUT/gemm_bn_odd.txt" 2>&1
  ab_rows "$OUT/gemm_bn_odd.txt" au+cl
  tail -3 "$OUT/gemm_bn_odd.txt"
  PROFILE_SHAPES=5000x3000x4104 PROFILE_CLUSTER=2 PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-150} gemm_profile
}

gemm_stage_row() {
  # 64-byte stages (wgmma.STAGE_ROW=64: twice the stages of half the bytes) on hardware:
  # the checks of auto and of clusters of 2 at 232 with the knob, memcheck and racecheck on
  # a paired launch with tails, then A/B against the shipped 128-byte stages at the paired
  # 232 width (au+cl against base, one process), and at 256 (auto against base) if time is
  # left
  step "STAGE_ROW=64: checks and sanitizers at 232"
  timeout 200 python3 bench/gemm.py --knob STAGE_ROW=64 --check-auto --bn 232 --no-bench \
    --out f32,f16 > "$OUT/gemm_check_auto_sr64.txt" 2>&1 &
  timeout 200 python3 bench/gemm.py --knob STAGE_ROW=64 --check-cluster --bn 232 --no-stress \
    --no-bench --cluster-schedules cooperative,auto --out f32,f16 \
    > "$OUT/gemm_check_cluster_sr64.txt" 2>&1 &
  sanitize_case sr64 200 700x1000x300 --schedule auto --cluster 2 --bn 232 --fmt bf16 \
    --out bf16 --pad 63 --knob STAGE_ROW=64
  wait
  report_checks gemm_check_auto_sr64 gemm_check_cluster_sr64
  report_sanitizers sr64
  step "A/B at paired 232: base = STAGE_ROW=64"
  timeout ${AB_TIMEOUT:-200} python3 bench/gemm.py --bn 232 --no-pingpong --formats f16 \
    --out f32,f16 --fp8 "" --baseline STAGE_ROW=64 --baseline-bn 232 --baseline-cluster \
    --shapes ${SR_SHAPES:-5000x3000x4104,4096x4096x4104,4096x4096x4096,8192x8192x8192} \
    --json "$OUT/gemm_sr64_232.json" > "$OUT/gemm_sr64_232.txt" 2>&1
  ab_rows "$OUT/gemm_sr64_232.txt" au+cl
  [ "$SECONDS" -gt "${SR_256_AFTER:-430}" ] && return 0
  step "A/B at 256 auto: base = STAGE_ROW=64"
  timeout 150 python3 bench/gemm.py --no-cluster --formats f16 --out f32,f16 --fp8 "" \
    --baseline STAGE_ROW=64 --shapes 4096x4096x4096,8192x8192x8192 \
    --json "$OUT/gemm_sr64_256.json" > "$OUT/gemm_sr64_256.txt" 2>&1
  ab_rows "$OUT/gemm_sr64_256.txt" auto
}

gemm_tall() {
  # 256-row tiles (wgmma.tall: two 64-row blocks per consumer, one B stage feeding both):
  # the hardware checks at 256x160 (every check shape, the split paths, persistent tails,
  # 200 launches back to back), memcheck and racecheck on a launch with tails, then A/B
  # against the shipped paired 232 auto kernel in one process (TALL_SHAPES)
  step "256x160: checks and sanitizers"
  timeout 240 python3 bench/gemm.py --check --bm 256 --bn 160 --no-bench --out f32,f16 \
    > "$OUT/gemm_check_tall.txt" 2>&1 &
  sanitize_case tall 200 700x1000x300 --schedule cooperative --bm 256 --bn 160 --fmt bf16 \
    --out bf16 --pad 63
  wait
  report_checks gemm_check_tall
  report_sanitizers tall
  step "A/B: 256x160 (auto, persist) against paired 232 auto (base)"
  timeout ${AB_TIMEOUT:-240} python3 bench/gemm.py --bm 256 --bn 160 --no-pingpong \
    --no-cluster --formats ${TALL_FORMATS:-f16,bf16} --out f32,f16 --fp8 "" \
    --baseline-bm 128 --baseline-bn 232 --baseline-cluster \
    --shapes ${TALL_SHAPES:-5000x3000x4104,4096x4096x4096,8192x8192x8192} \
    --json "$OUT/gemm_tall.json" > "$OUT/gemm_tall.txt" 2>&1
  ab_rows "$OUT/gemm_tall.txt" auto
}

gemm_232() {
  # the 232-wide tile (13 tiles across N = 3000, cooperative only, paired B halves of 120
  # and 112 rows): the hardware checks of auto and of clusters of 2, memcheck and
  # racecheck on a paired launch with tails, then the odd shape timed against 240 and
  # 256, each A/B in one process
  # (and 240's checks: until now --check-* ignored --bn and checked 256-wide kernels)
  step "232 and 240: checks and sanitizers"
  for bn in 232 240; do
    scheds=cooperative,auto; [ $bn = 240 ] && scheds=cooperative,pingpong,auto
    timeout 230 python3 bench/gemm.py --check-auto --bn $bn --no-bench --out f32,f16 \
      > "$OUT/gemm_check_auto_bn$bn.txt" 2>&1 &
    timeout 230 python3 bench/gemm.py --check-cluster --bn $bn --no-stress --no-bench \
      --cluster-schedules $scheds --out f32,f16 > "$OUT/gemm_check_cluster_bn$bn.txt" 2>&1 &
  done
  sanitize_case bn232 220 700x1000x300 --schedule auto --cluster 2 --bn 232 --fmt bf16 \
    --out bf16 --pad 63
  wait
  report_checks gemm_check_auto_bn232 gemm_check_cluster_bn232 gemm_check_auto_bn240 \
    gemm_check_cluster_bn240
  report_sanitizers bn232
  for base in ${BN232_BASES:-240 256}; do
    if [ "$SECONDS" -gt "${BN232_AB_AFTER:-420}" ]; then return; fi   # the call's time is short
    step "odd shape: 232 against $base, paired auto"
    timeout ${BN_TIMEOUT:-150} python3 bench/gemm.py --shapes 5000x3000x4104 --bn 232 \
      --baseline-bn $base --baseline-cluster --out f32,f16 --fp8 "" --no-pingpong \
      --json "$OUT/gemm_bn232_vs_$base.json" > "$OUT/gemm_bn232_vs_$base.txt" 2>&1
    ab_rows "$OUT/gemm_bn232_vs_$base.txt" au+cl
    tail -3 "$OUT/gemm_bn232_vs_$base.txt"
  done
}

gemm_pp240() {
  # paired ping-pong at 240, whose half tiles' B boxes are now 64 and 56 rows (each on a
  # swizzle atom): its cluster checks, memcheck and racecheck with tails; then the table
  # with the paired 232-wide auto as the base columns
  step "paired ping-pong at 240: checks and sanitizers"
  timeout 200 python3 bench/gemm.py --check-cluster --bn 240 --no-bench \
    --cluster-schedules pingpong --out f32,f16 > "$OUT/gemm_check_cluster_pp240.txt" 2>&1 &
  sanitize_case pp240 200 700x1000x300 --schedule pingpong --cluster 2 --bn 240 --fmt f16 \
    --out f32 --pad 20
  wait
  report_checks gemm_check_cluster_pp240
  report_sanitizers pp240
  TABLE_ARGS="--baseline-bn 232 --baseline-cluster" gemm_table
}

gemm_memcheck_wide() {
  # compute-sanitizer memcheck on launches that fill every multiprocessor (272 tiles of
  # 240, 2000x4000x300), per width and schedule whose epilogue keeps a second D map: the
  # maps of %smid 128 and up once wrote past their workspace
  step "memcheck on every multiprocessor"
  local cases=${WIDE_CASES:-"pingpong:2:240:f32:20 auto:1:240:f32:20 auto:2:232:bf16:63 auto:1:192:f16:20 cooperative:1:256:f32:20"}
  for c in $cases; do
    set -- ${c//:/ }
    timeout ${WIDE_TIMEOUT:-300} compute-sanitizer --tool memcheck python3 tools/gpu/gemm_case.py 2000x4000x300 \
      --schedule $1 --cluster $2 --bn $3 --fmt f16 --out $4 --pad $5 \
      > "$OUT/memcheck_wide_$1_$2_$3.txt" 2>&1 &
  done
  timeout ${WIDE_TIMEOUT:-300} $PYTEST tests/gpu/test_gemm_hopper.py -k narrow_widths \
    > "$OUT/test_narrow_widths.txt" 2>&1 &
  wait
  tail -3 "$OUT/test_narrow_widths.txt"
  for f in "$OUT"/memcheck_wide_*.txt; do
    echo "$(basename "$f"): $(grep -E 'ERROR SUMMARY|wrong|exact|Error' "$f" | sort | uniq -c | tr '\n' ' ' | cut -c1-300)"
  done
}

gemm_clipped() {
  # the 240-wide tile with D through the copy engine (its last box clipped at the tile's
  # width by a rank-3 map; the knob is named so that the A/B stays one if the default
  # changes): the hardware checks of both auto branches and in clusters of 2, memcheck
  # on both branches, then the odd shape timed at 240 against 256 and against 240 with D
  # from the registers (CLIPPED_STORE=0), each in one process
  step "240 with clipped boxes: checks and memcheck"
  timeout 220 python3 bench/gemm.py --knob CLIPPED_STORE=1 --check-auto --bn 240 --no-bench --out f32,f16 \
    > "$OUT/gemm_check_auto_clipped.txt" 2>&1 &
  timeout 220 python3 bench/gemm.py --knob CLIPPED_STORE=1 --check-cluster --bn 240 --no-stress --no-bench \
    --out f32,f16 > "$OUT/gemm_check_cluster_clipped.txt" 2>&1 &
  for pad in 8 20; do                        # A/B rows 308: misaligned, 320: aligned
    timeout 220 compute-sanitizer --tool memcheck python3 tools/gpu/gemm_case.py \
      700x1000x300 --schedule auto --bn 240 --fmt bf16 --out bf16 --pad $pad --dpad 8 \
      --knob CLIPPED_STORE=1 \
      > "$OUT/sanitizer_memcheck_clipped_$pad.txt" 2>&1 &
  done
  wait
  report_checks gemm_check_auto_clipped gemm_check_cluster_clipped
  for f in "$OUT"/sanitizer_memcheck_clipped_*.txt; do
    echo "$(basename "$f"): $(grep -E 'ERROR SUMMARY|wrong|exact|Error' "$f" | tr '\n' ' ' | cut -c1-300)"
  done
  step "odd shape: 240 (clipped boxes) against 256, paired auto"
  timeout ${BN_TIMEOUT:-170} python3 bench/gemm.py --shapes ${CLIP_SHAPES:-5000x3000x4104} \
    --knob CLIPPED_STORE=1 --bn 240 --baseline-bn 256 --baseline-cluster --out f32,f16 --fp8 "" --no-pingpong \
    --json "$OUT/gemm_clipped_vs_256.json" > "$OUT/gemm_clipped_vs_256.txt" 2>&1
  ab_rows "$OUT/gemm_clipped_vs_256.txt" au+cl
  tail -3 "$OUT/gemm_clipped_vs_256.txt"
  if [ "$SECONDS" -gt "${CLIP_AB_AFTER:-330}" ]; then return; fi   # the call's time is short
  step "odd shape: 240 clipped boxes against 240 from the registers, paired auto"
  timeout ${BN_TIMEOUT:-170} python3 bench/gemm.py --shapes ${CLIP_SHAPES:-5000x3000x4104} \
    --knob CLIPPED_STORE=1 --bn 240 --baseline CLIPPED_STORE=0 --baseline-cluster --out f32,f16 --fp8 "" \
    --no-pingpong --json "$OUT/gemm_clipped_vs_regs.json" > "$OUT/gemm_clipped_vs_regs.txt" 2>&1
  ab_rows "$OUT/gemm_clipped_vs_regs.txt" au+cl
  tail -3 "$OUT/gemm_clipped_vs_regs.txt"
}

gemm_split_profile() {
  # Nsight Compute (clocks locked: no power effects) on one launch of paired `auto` with a
  # workspace at the odd shape, per STREAM_K (0: no split code, 1: the shipped rule, which
  # leaves this launch whole, 2: the last round split), with the warp stall reasons
  for knob in ${SPLIT_KNOBS:-0 1 2}; do
    step "ncu 5000x3000x4104 paired auto STREAM_K=$knob"
    f="$OUT/ncu_split_$knob.txt"
    timeout 120 ncu -k regex:gemm --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis \
      python3 tools/gpu/gemm_case.py 5000x3000x4104 --schedule auto --cluster 2 --fmt f16 \
      --out f16 --pad 0 --workspace --grid 132 --knob STREAM_K=$knob > "$f" 2>&1
    grep -E "wrong|Duration|SM Busy|L2 Cache Throughput|DRAM Throughput|L2 Hit|Warp Cycles Per Issued|No Eligible|Active Warps Per" "$f"
  done
}

gemm_odd() {
  # the odd shape's best form on this card: the clipped 240-wide checks (both auto
  # branches, in clusters of 2, memcheck on rows misaligned and aligned), 240 against 256
  # (paired auto, one process), then the tile order's group size at 240 (`persistent: G`,
  # GROUP_SIZES against the default 8, one process each) and at 4096^3 (SQUARE_GROUPS)
  CLIP_AB_AFTER=0 gemm_clipped
  for g in ${GROUP_SIZES:-4 16}; do           # (not GROUPS: bash sets that one)
    step "odd shape: persistent: 8 against persistent: $g, paired auto at 240"
    timeout ${GROUP_TIMEOUT:-120} python3 bench/gemm.py --shapes 5000x3000x4104 --bn 240 \
      --baseline-group $g --baseline-cluster --out f32,f16 --fp8 "" --no-pingpong \
      --json "$OUT/gemm_group$g.json" > "$OUT/gemm_group$g.txt" 2>&1
    ab_rows "$OUT/gemm_group$g.txt" au+cl
  done
  for g in ${SQUARE_GROUPS:-16}; do          # 4096^3: unpaired auto (ping-pong), 512 tiles
    step "4096^3: persistent: 8 against persistent: $g, auto"
    timeout ${GROUP_TIMEOUT:-120} python3 bench/gemm.py --shapes 4096x4096x4096 \
      --baseline-group $g --out f32,f16 --fp8 "" --no-pingpong --no-cluster \
      --json "$OUT/gemm_group${g}_4096.json" > "$OUT/gemm_group${g}_4096.txt" 2>&1
    ab_rows "$OUT/gemm_group${g}_4096.txt" auto
  done
}

gemm_next() {
  # on an H200: the clipped 240-wide checks and 240 against 256 (gemm_odd without the
  # group sizes), then the issue's table (gemm_table); on any card: Nsight Compute on
  # paired auto at 240 and 256 on the odd shape, each beside torch.matmul's kernel
  if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    GROUP_SIZES=" " SQUARE_GROUPS=" " gemm_odd
    gemm_table
  fi
  for bn in 240 256; do
    PROFILE_SHAPES=5000x3000x4104 PROFILE_CLUSTER=2 PROFILE_BN=$bn gemm_profile
  done
}

gemm_hot() {
  # Nsight Compute's per-instruction warp-stall samples of one launch per HOT_CASES entry
  # (gemm_case.py arguments, `;`-separated), the hottest HOT_TOP instructions by
  # tools/gpu/ncu_hot.py (a large HOT_TOP lists them all, for tools/gpu/sass_blocks.py to
  # sum per SASS block against the same kernel disassembled on the CPU machine)
  i=0
  IFS=';' read -ra cases <<< "${HOT_CASES:-5000x3000x4104 --schedule auto --cluster 2 --fmt f16 --out f16 --pad 0;4096x4096x4096 --schedule auto --fmt f16 --out f16 --pad 0}"
  for c in "${cases[@]}"; do
    i=$((i + 1))
    step "ncu source counters: $c"
    timeout 150 ncu -k regex:^gemm -c 1 --section WarpStateStats --section SourceCounters \
      --section SpeedOfLight -f -o "$OUT/hot_$i" python3 tools/gpu/gemm_case.py $c \
      > "$OUT/hot_$i.log" 2>&1
    ncu -i "$OUT/hot_$i.ncu-rep" --page source --csv --print-source sass > "$OUT/hot_$i.csv" 2>&1
    python3 tools/gpu/ncu_hot.py ${HOT_TOP:-45} < "$OUT/hot_$i.csv" > "$OUT/hot_$i.txt" 2>&1
    grep -E "wrong|Duration|SM Active|Elapsed" "$OUT/hot_$i.log"; cat "$OUT/hot_$i.txt"
    rm -f "$OUT/hot_$i.ncu-rep" "$OUT/hot_$i.csv"
  done
}

gemm_f32_epilogue() {
  # what an f32 D's epilogue costs the paired 232-wide auto (the odd shape's f32 rows trail
  # its 16-bit ones): bench/gemm_epilogue_cost.py with and without D's stores, f32 and f16
  # D, alone on the GPU; then the Hopper GEMM tests beside Nsight Compute's warp stalls of
  # both D formats on the odd shape
  step "D stores' cost: paired 232 auto, f32 and f16 D"
  timeout ${COST_TIMEOUT:-220} python3 bench/gemm_epilogue_cost.py --shapes 5000x3000x4104,4096x4096x4096 \
    --schedules auto --bn 232 --cluster 2 --out f32,f16 --json "$OUT/gemm_epilogue_cost.json" \
    > "$OUT/gemm_epilogue_cost.txt" 2>&1
  cat "$OUT/gemm_epilogue_cost.txt"
  step "Hopper GEMM tests; ncu warp stalls"
  timeout 280 $PYTEST -rfE tests/gpu/test_gemm_hopper.py > "$OUT/suite_hopper.txt" 2>&1 &
  HOT_TOP=30 HOT_CASES="5000x3000x4104 --schedule auto --cluster 2 --bn 232 --fmt f16 --out f32 --pad 0;5000x3000x4104 --schedule auto --cluster 2 --bn 232 --fmt f16 --out f16 --pad 0" \
    gemm_hot > "$OUT/hot.txt" 2>&1
  wait
  cat "$OUT/hot.txt"
}

store_checks() {
  # the cases around D's store rule (N a whole number of 16-byte units), every schedule's
  # checks, the fused epilogues and FP8 on the GPU, compute-sanitizer on the store path
  step "D's store rule: N = 257 (registers), 264 and 256 (copy engine)"
  for c in "129x257x65 --schedule auto --pad 63" "129x264x65 --schedule auto --pad 63" \
           "300x256x200 --schedule auto --pad 56" "300x520x200 --schedule auto --pad 64" \
           "300x520x200 --schedule pingpong --pad 56" "129x264x65 --schedule auto --pad 63 --knob TMA_STORE=0"; do
    for f in "--fmt bf16 --out f32" "--fmt f16 --out f16"; do
      timeout 60 python3 tools/gpu/gemm_case.py $c $f --grid 3 --dpad 8 2>&1 | tail -3
    done
  done
  step "checks with D through the copy engine"
  schedule_checks
  timeout $left python3 bench/gemm.py --check --small --epilogue all --no-bench \
    --out f32,f16 --formats f16 > "$OUT/gemm_check_epilogue.txt" 2>&1 &
  timeout $left $PYTEST -rfE tests/gpu/test_gemm_fp8.py > "$OUT/suite_fp8.txt" 2>&1 &
  for tool in memcheck racecheck; do
    timeout $left compute-sanitizer --tool $tool python3 tools/gpu/gemm_case.py 300x520x200 \
      --schedule auto --fmt f16 --out f16 --grid 3 --pad 56 --dpad 8 \
      > "$OUT/sanitizer_${tool}_store.txt" 2>&1 &
  done
  wait
  report_checks gemm_check_pingpong gemm_check_auto gemm_check_cluster gemm_check_epilogue
  echo "fp8: $(tail -1 "$OUT/suite_fp8.txt")"
  for tool in memcheck racecheck; do tail -2 "$OUT/sanitizer_${tool}_store.txt"; done
}

gemm_cluster_auto() {
  # `schedule: auto, cluster: 2` (docs/reference/gemm.md "Clusters of 2"): the paired
  # cooperative pipeline on misaligned rows, unpaired ping-pong on aligned ones; both
  # branches checked, 200 launches back to back, then the table with its `au+cl` column
  step "auto + cluster: checks and 200 launches"
  timeout 240 python3 bench/gemm.py --check-cluster --cluster-schedules auto --no-bench \
      --out f32,f16 > "$OUT/gemm_cluster_auto_checks.txt" 2>&1
  step "workgroup GEMM table with auto + cluster"
  timeout 300 python3 bench/gemm.py --out f32,f16 --json "$OUT/gemm.json" \
      --shapes 4096x4096x4096,8192x8192x8192,8192x8192x1024,16384x1024x4096,5000x3000x4104 \
      > "$OUT/gemm.txt" 2>&1
}

MODE=${1:-main}
case "$MODE" in
  main) benchmarks; suite ;;
  extra) extra ;;
  verify) verify_tests; verify_gemm ;;
  # the whole check in one call: benchmarks alone on the GPU, then every correctness
  # run at once (none of them is timed), then the GEMM benchmark alone
  final) QUICK=1 benchmarks; suite & verify_tests & wait; verify_gemm ;;
  # correctness first when the call's time is short: the same steps, benchmarks last
  check) suite & verify_tests & wait; verify_gemm; QUICK=1 benchmarks ;;
  # correctness alone (the call's whole time): more, longer parts
  correct) PARTS=6 SUITE_TIMEOUT=450; suite & verify_tests & wait ;;
  # the hardware suite alone, both modes (a whole call: beside verify_tests its parts
  # outran 450 s on an H100's 16 cores)
  suite) PARTS=${PARTS:-6} SUITE_TIMEOUT=${SUITE_TIMEOUT:-540}; suite ;;
  # the benchmarks alone (after a `correct` call)
  bench) QUICK=1 benchmarks; verify_gemm ;;
  new) new_forms ;;
  all_new) all_new ;;
  attention) attention_session ;;
  attention_tests) attention_tests ;;
  attention_bench) attention_bench ;;
  # three calls for what was merged without hardware (about 8-9 minutes each)
  pending) pending_checks ;;
  pending_bench) pending_bench ;;
  pending_rest) pending_rest ;;
  tune_attention) tune_attention ;;
  attention_round) attention_round ;;
  attention_checks) attention_checks ;;
  gemm_cluster_auto) gemm_cluster_auto ;;
  gemm_ab) gemm_ab ;;
  gemm_profile) gemm_profile ;;
  gemm_store_cost) gemm_store_cost ;;
  gemm_tma_store) gemm_tma_store ;;
  gemm_clipped) gemm_clipped ;;
  gemm_232) gemm_232 ;;
  gemm_tall) gemm_tall ;;
  gemm_stage_row) gemm_stage_row ;;
  gemm_pp240) gemm_pp240 ;;
  gemm_memcheck_wide) gemm_memcheck_wide ;;
  gemm_c_ahead) gemm_c_ahead ;;
  gemm_streamk) gemm_streamk ;;
  gemm_table) gemm_table ;;
  gemm_pending) gemm_pending ;;
  gemm_split_profile) gemm_split_profile ;;
  gemm_hot) gemm_hot ;;
  gemm_f32_epilogue) gemm_f32_epilogue ;;
  gemm_odd) gemm_odd ;;
  gemm_next) gemm_next ;;
  *) echo "usage: device_session.sh main|extra|verify|final|check|correct|suite|bench|new|all_new|attention|attention_tests|attention_bench|pending|pending_bench|pending_rest|tune_attention|attention_round|attention_checks|gemm_cluster_auto|gemm_ab|gemm_profile|gemm_store_cost|gemm_tma_store|gemm_c_ahead|gemm_streamk|gemm_table|gemm_pending|gemm_split_profile|gemm_hot|gemm_f32_epilogue|gemm_clipped|gemm_232|gemm_stage_row|gemm_pp240|gemm_memcheck_wide|gemm_odd|gemm_next" >&2
     exit 2 ;;
esac

# The summary goes to stdout and to $OUT/00-summary.txt. A device call returns only the
# last 12,000 characters of stdout and the first files of $OUT by name, so the tables come
# first and the pass/fail lines last, and the file's name sorts first.
{
step "summary"
[ -f "$OUT/plain_kernels.txt" ] && grep -E "^(softmax|layernorm|gemm_kloop|vadd_gs|saxpy)" "$OUT/plain_kernels.txt" | head -40
[ -f "$OUT/gpu_kernels.txt" ] && grep -E "_vs_" "$OUT/gpu_kernels.txt"
[ -f "$OUT/transfer.txt" ] && tail -4 "$OUT/transfer.txt"
[ -f "$OUT/launch_overhead.txt" ] && tail -14 "$OUT/launch_overhead.txt"
for f in kloop_held gemm_fp8 attention; do [ -f "$OUT/$f.txt" ] && tail -16 "$OUT/$f.txt"; done
grep "^row" "$OUT/gemm.txt" 2>/dev/null | cut -c6-
for f in "$OUT"/suite_*.txt "$OUT"/sanitizer_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f"): $(tail -1 "$f")"
done
grep -h "^FAILED\|^ERROR" "$OUT"/suite_*.txt "$OUT"/sanitizer_*.txt 2>/dev/null | sort | uniq -c |
  head -40
[ -f "$OUT/compare.txt" ] && grep -v "^only in" "$OUT/compare.txt" | tail -12
} 2>&1 | tee "$OUT/00-summary.txt"
step "done"
