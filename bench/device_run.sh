#!/usr/bin/env bash
# One call on the GPU machine: build, GPU tests, Python tests and examples,
# the side-by-side benchmark. Logs go to $OUT (or ./device-out).
#   STAGES="build gpu python bench jit profile" bash bench/device_run.sh
#   STAGES="build gpu" GTEST_FILTER='*paged*' GPU_SHARDS=8 (8 test processes at once;
#   GTEST_FILTER_FILE=F runs the tests F names, such as a cut run's gpu-unfinished.txt)
#   STAGES="build paged" PAGED_ARGS=--quick (paged stage: bench_paged.py's arguments)
#   PAGED_AB_ENV="ATTNJIT_TUNING=block_n=64|ATTNJIT_TUNING=stages=3" (paged stage: run bench_paged.py again
#   with these variables set, for an A/B of a runtime switch in one call; scope a split-only
#   param to the split variants, ATTNJIT_TUNING=split_kv=true:decode_mma=1,block_m=64,stages=8, or it
#   reaches the prefill variant a decode gets first too)
#   STAGES="build overhead" (python/bench_overhead.py: host time per Python call vs SDPA)
#   STAGES="build bench" BENCH_ARGS="--only full_d80,causal_d256" (bench_attention.py's arguments)
#   STAGES="build decode" DECODE_ARGS=--quick (decode stage: bench_decode.py's arguments;
#   DECODE_AB_ENV as PAGED_AB_ENV)
#   STAGES="build kbench" KBENCH_AB_ENV="ATTNJIT_TUNING=stages=3" (kernel_bench --no-tune on the
#   peer, decode and user problems, KBENCH_PROBLEMS=a,b to choose, then again with each setting)
#   STAGES="build user" (user-spec variants vs FlexAttention and FA4, check --spec on the examples;
#   USER_ARGS=--user-vm: first calls through the expression VM's tier)
#   STAGES="build decode_profile" (ncu on the decode rows; DECODE_PROFILE_PEERS, DECODE_PROFILE_PROBLEM;
#   DECODE_PROFILE_SOURCE=1 adds per-instruction counters and stall samples as CSV)
#   STAGES="build paged_profile" PAGED_PROFILE_PROBLEMS=chunked_prefill_p16,chunked_prefill_p64
#   (ncu on one paged launch per problem)
#   STAGES="build peer_profile" PROFILE_PROBLEMS=causal_gqa_d128 PEER_PROFILE_PEER=cudnn (ncu
#   counters per useful FLOP, attnjit's kernel beside SDPA's; bench/peer_once.py runs the peer)
#   STAGES="build user_profile" USER_PROFILE_PROBLEMS=streaming_llm (ncu: a spec's kernel beside
#   FA4's block-sparse one on the same mask; FA4 installed first)
#   STAGES="build source_profile" PROFILE_PROBLEMS=causal_expr PROFILE_SKIP=22 PROFILE_COUNT=2
#   (executed instructions per SASS instruction and source line, as CSV)
#   PROFILE_PROBLEMS=gpt_oss_window127_null,causal_gqa_d128 (profile stage; PROFILE_SKIP=22
#   PROFILE_COUNT=2 on a user problem: the built-in's last launch and the spec's first)
#   TUNE_PROBLEMS=mimo_window64_key0,... TUNE_TIMEOUT=150 (tune stage)
#   TRY="causal_gqa_d128@stages=3;block_m=128,block_n=128,warps=8 full_d80@..." (try stage:
#   tile configs by hand beside each problem's default, each checked, then timed)
#   SANITIZE_VARIANTS=bf16_d128_causal,... (sanitize stage: memcheck, racecheck)
#   STAGES="build manifest" (record the seed examples' variants, build a cache
#   from the manifest without the driver, rerun them on it with no JIT)
#   BASE_PATCH=file (build stage: a copy of the tree with the patch applied is
#   built too; the setting "base" in PAGED_AB_ENV, DECODE_AB_ENV or
#   KBENCH_AB_ENV runs that stage's command there: an A/B of a template or
#   runtime change in one call, e.g. BASE_PATCH=base.patch PAGED_AB_ENV=base
#   with the patch taking the tree back to the code before the change; the
#   base run's JSON still names HEAD's commit; BASE_TARGETS="attnjit_kernel_bench" builds
#   only those targets of the base tree; BUILD_TARGETS the same for the tree itself, e.g.
#   "attnjit_kernel_bench attnjit_python attnjit" where no stage runs the tests)
# ATTNJIT_COMMIT=<sha> names the commit in the JSON results; without it
# the checkout's `git rev-parse` does, which on the device machine can be
# an older commit than the tree (its git metadata is not always synced).
# A device call runs at most 600 s: "build gpu" alone takes 6-7 min on a
# fresh machine; give python, user, decode and bench calls of their own.
set -uo pipefail
# Logs are written to a work folder and packed into $OUT/logs.tgz after
# every stage: the machine returns only a few files per call, and a call
# that runs past its limit returns what $OUT held then (the stages done).
FINAL_OUT=${OUT:-$PWD/device-out}; mkdir -p "$FINAL_OUT"
OUT=$(mktemp -d)
pack() { tar czf "$FINAL_OUT/logs.tgz.part" -C "$OUT" . && mv "$FINAL_OUT/logs.tgz.part" "$FINAL_OUT/logs.tgz"; }
trap pack EXIT
STAGES=${STAGES:-build gpu python bench}
export PATH=/opt/torch/.venv/bin:$PATH:/usr/local/cuda/bin
export ATTNJIT_CACHE_DIR=$PWD/build-gpu/kcache
export PYTHONPATH=$PWD/build-gpu/python
# FlashAttention-4, where a session installed it (docs/device.md): its
# package on PYTHONPATH, for bench_attention.py's FA4 column.
if [[ -s /tmp/fa4.env ]]; then source /tmp/fa4.env; fi
commit=${ATTNJIT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
status=0
stage() {
  pack
  [[ " $STAGES " == *" $1 "* ]]
}
# with_ab SETTINGS NAME TAIL CMD...: runs CMD, then again under each of
# SETTINGS ('|' between runs, each VAR=value ...): an A/B of runtime
# switches in one call. OUTJSON in CMD becomes $OUT/NAME.json (then
# NAME-b1.json, ...); the output goes to NAME.txt (NAME-b1.txt, ...), its
# last TAIL lines shown.
with_ab() {
  local settings=$1 name=$2 tail_n=$3 ab stem a n=0
  shift 3
  local runs=("") more=()
  IFS='|' read -ra more <<<"$settings"
  runs+=("${more[@]}")
  for ab in "${runs[@]}"; do
    stem=$name
    if [[ -n $ab ]]; then
      n=$((n + 1))
      stem=$name-b$n
      echo "--- again with $ab"
    fi
    local args=()
    for a in "$@"; do args+=("${a//OUTJSON/$OUT/$stem.json}"); done
    if [[ $ab == base ]]; then
      if [[ -z ${BASE_TREE:-} ]]; then
        echo "with_ab: 'base' needs BASE_PATCH and the build stage in the same call"; status=1; continue
      fi
      # The same command in the patched copy, on its own build and cache.
      (cd "$BASE_TREE" && PYTHONPATH=$BASE_TREE/build-gpu/python \
        ATTNJIT_CACHE_DIR=$BASE_TREE/build-gpu/kcache "${args[@]}") 2>&1 |
        tee "$OUT/$stem.txt" | tail -"$tail_n"
    else
      env $ab "${args[@]}" 2>&1 | tee "$OUT/$stem.txt" | tail -"$tail_n"
    fi
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  done
}
if stage build; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNJIT_BUILD_PYTHON=ON \
    >"$OUT/cmake.log" 2>&1 && cmake --build build-gpu -j16 ${BUILD_TARGETS:+--target $BUILD_TARGETS} \
    >"$OUT/build.log" 2>&1 \
    || { tail -50 "$OUT/build.log"; exit 1; }
  if [[ -n ${BASE_PATCH:-} ]]; then
    BASE_TREE=$(mktemp -d)/tree
    mkdir -p "$BASE_TREE"
    tar --exclude=./build-gpu --exclude=./device-out -cf - . | tar -xf - -C "$BASE_TREE"
    patch_file=$(realpath "$BASE_PATCH")
    # (git apply changes nothing unless the whole patch applies.)
    { (cd "$BASE_TREE" && { git apply "$patch_file" || patch --batch -p1 <"$patch_file"; }) &&
      cmake -S "$BASE_TREE" -B "$BASE_TREE/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DATTNJIT_BUILD_PYTHON=ON && cmake --build "$BASE_TREE/build-gpu" -j16 \
        ${BASE_TARGETS:+--target $BASE_TARGETS}; } \
      >"$OUT/base-build.log" 2>&1 || { tail -30 "$OUT/base-build.log"; exit 1; }
    echo "base: $BASE_PATCH applied and built in $BASE_TREE"
  fi
fi
if stage gpu; then
  # The matrix's kernels compiled 16 at a time first (in-process, the soak
  # alone would compile them one by one for minutes).
  timeout 300 ./build-gpu/cli/attnjit build-cache --target sm_90a --no-check -j16 \
    >"$OUT/build-cache.log" 2>&1 || status=1
  # GPU_SHARDS=N runs the tests as N processes at once on the one GPU
  # (gtest sharding): the host-side reference is most of a matrix test's time.
  # GTEST_FILTER_FILE=F: the tests named in F, one per line (a previous
  # call's gpu-unfinished.txt).
  if [[ -n ${GTEST_FILTER_FILE:-} ]]; then
    GTEST_FILTER=$(paste -sd: "$GTEST_FILTER_FILE")
  fi
  shards=${GPU_SHARDS:-1}
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout ${GPU_TIMEOUT:-400} \
      ./build-gpu/tests/attnjit_gpu_tests ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} \
      >"$OUT/gpu-tests-$i.log" 2>&1 &
  done
  for ((i = 0; i < shards; ++i)); do wait -n || status=1; done
  cat "$OUT"/gpu-tests-*.log >"$OUT/gpu-tests.log"
  grep -E "^\[  (PASSED|FAILED) |FAILED|tests ran" "$OUT/gpu-tests.log" | tail -30
  # The tests no process finished (cut by GPU_TIMEOUT): the next call's
  # GTEST_FILTER_FILE.
  ./build-gpu/tests/attnjit_gpu_tests --gtest_list_tests ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} |
    python3 bench/gpu_unfinished.py "$OUT"/gpu-tests-[0-9]*.log >"$OUT/gpu-unfinished.txt"
  echo "unfinished (gpu-unfinished.txt): $(wc -l <"$OUT/gpu-unfinished.txt")"
  [[ -s $OUT/gpu-unfinished.txt ]] && status=1
fi
if stage python; then
  python3 -m pytest -q python/tests >"$OUT/pytest.log" 2>&1 || status=1
  tail -3 "$OUT/pytest.log"
  for ex in python/examples/*.py; do
    python3 "$ex" >"$OUT/$(basename "$ex" .py).log" 2>&1 || status=1
    echo "$ex: $(tail -2 "$OUT/$(basename "$ex" .py).log" | tr '\n' ' ')"
  done
fi
if stage overhead; then
  # Host time per Python call against torch SDPA on a tiny problem.
  python3 python/bench_overhead.py --json "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
if stage bench; then
  python3 bench/triton_peer.py >"$OUT/triton-peer-check.txt" 2>&1 || status=1
  tail -1 "$OUT/triton-peer-check.txt"
  python3 bench/bench_attention.py ${BENCH_ARGS:-} --commit "$commit" --out "$OUT/bench.json" \
    >"$OUT/bench.txt" 2>&1 || status=1
  cat "$OUT/bench.txt" | tail -30
fi
if stage paged; then
  # The paged K/V cache: the Triton paged kernel's check on the GPU, then the
  # engine problems side by side (PAGED_ARGS=--quick for one of each kind;
  # the check is skipped when PAGED_ARGS names peers without a Triton one).
  if [[ " ${PAGED_ARGS:-} " != *[[:space:]]--peers[[:space:]=]* || ${PAGED_ARGS:-} == *triton* ]]; then
    python3 bench/triton_paged_peer.py >"$OUT/triton-paged-check.txt" 2>&1 || status=1
    tail -1 "$OUT/triton-paged-check.txt"
  fi
  with_ab "${PAGED_AB_ENV:-}" bench-paged 110 \
    python3 bench/bench_paged.py ${PAGED_ARGS:-} --commit "$commit" --out OUTJSON
fi
if stage decode; then
  # Decode (issue 13): the Triton split-KV kernel's check on the GPU, then
  # the decode problems and the batch x context sweep against the measured
  # read bandwidth (DECODE_ARGS=--quick for one small problem of each kind).
  # (The Triton check compiles and checks every config: 6 min on the H200;
  # skipped when DECODE_ARGS names peers without a Triton one.)
  if [[ " ${DECODE_ARGS:-} " != *[[:space:]]--peers[[:space:]=]* || ${DECODE_ARGS:-} == *triton* ]]; then
    python3 bench/triton_decode_peer.py >"$OUT/triton-decode-check.txt" 2>&1 || status=1
    tail -1 "$OUT/triton-decode-check.txt"
  fi
  with_ab "${DECODE_AB_ENV:-}" bench-decode 60 \
    python3 bench/bench_decode.py ${DECODE_ARGS:-} --commit "$commit" --out OUTJSON
fi
if stage kbench; then
  # The peer, decode and re-expressed user problems' default kernels in
  # isolated launches (KBENCH_PROBLEMS=a,b to choose), then again under
  # each KBENCH_AB_ENV setting, e.g. "ATTNJIT_TUNING=stages=3".
  with_ab "${KBENCH_AB_ENV:-}" kbench 40 \
    ./build-gpu/bench/attnjit_kernel_bench OUTJSON --no-tune ${KBENCH_PROBLEMS:-}
fi
if stage user; then
  # Variants written in a spec (specs/examples) against FlexAttention with
  # the same mask/score, and the re-expressed built-ins against their flags.
  python3 bench/bench_user_variants.py ${USER_ARGS:-} --commit "$commit" --out "$OUT/bench-user.json" \
    2>&1 | tee "$OUT/bench-user.txt" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  # The re-expressed built-ins again in isolated launches (no Python, no
  # host time between the events), beside their flags.
  ./build-gpu/bench/attnjit_kernel_bench "$OUT/kbench-user.json" --no-tune \
    causal_expr,sliding_window_expr,key0_bias_expr >"$OUT/kbench-user.txt" 2>&1 || status=1
  cat "$OUT/kbench-user.txt"
  for s in specs/examples/*.yaml; do
    ./build-gpu/cli/attnjit check --spec "$s" >"$OUT/check-$(basename "$s" .yaml).log" 2>&1 || status=1
    echo "check $s: $(tail -1 "$OUT/check-$(basename "$s" .yaml).log")"
  done
fi
if stage jit; then
  ./build-gpu/bench/attnjit_jit_costs "$OUT/jit.json" >"$OUT/jit.txt" 2>&1 || status=1
  ./build-gpu/bench/attnjit_launch_overhead "$OUT/launch.json" >"$OUT/launch.txt" 2>&1 || status=1
  tail -5 "$OUT/jit.txt"; tail -3 "$OUT/launch.txt"
fi
if stage tune; then
  # The autotuner, one problem per run (each writes its own JSON).
  IFS=, read -ra problems <<<"${TUNE_PROBLEMS:-mimo_window64_key0,gpt_oss_window127_null}"
  for pr in "${problems[@]}"; do
    timeout "${TUNE_TIMEOUT:-150}" ./build-gpu/bench/attnjit_kernel_bench "$OUT/tune-$pr.json" \
      --tune "$pr" >"$OUT/tune-$pr.txt" 2>&1 || status=1
    grep -E "tuned" "$OUT/tune-$pr.txt"
  done
fi
if stage try; then
  # kernel_bench --try: each problem's default and the listed tuning
  # overrides, every config checked against the reference before timing.
  for entry in ${TRY:-}; do
    if [[ $entry != *@* ]]; then
      echo "try: '$entry' is not problem@config;config"; status=1; continue
    fi
    pr=${entry%%@*}
    timeout "${TUNE_TIMEOUT:-150}" ./build-gpu/bench/attnjit_kernel_bench "$OUT/try-$pr.json" \
      "--try=${entry#*@}" "$pr" >"$OUT/try-$pr.txt" 2>&1 || status=1
    grep -vE "^problem" "$OUT/try-$pr.txt"
  done
fi
# ncu's options for one launch of attention_prefill and the sections every
# profile stage reads (clocks left alone); a stage adds its own after.
ncu_attention() {
  local skip=$1 count=$2
  shift 2
  ncu --clock-control none --kernel-name attention_prefill --launch-skip "$skip" \
    --launch-count "$count" \
    --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis "$@"
}
if stage profile; then
  # One launch of each problem's kernel under ncu.
  IFS=, read -ra problems <<<"${PROFILE_PROBLEMS:-gpt_oss_window127_null,causal_gqa_d128}"
  for pr in "${problems[@]}"; do
    ncu_attention "${PROFILE_SKIP:-3}" "${PROFILE_COUNT:-1}" --section InstructionStats \
      ./build-gpu/bench/attnjit_kernel_bench "$OUT/profile-$pr.json" --no-tune "$pr" \
      >"$OUT/ncu-$pr.txt" 2>&1 || status=1
    grep -E "Duration|Throughput|Occupancy|Warp Cycles|Issued|Executed Instructions" "$OUT/ncu-$pr.txt" | head -24
  done
fi
if stage peer_profile; then
  # attnjit's kernel and a peer's (SDPA cuDNN unless PEER_PROFILE_PEER says)
  # on each PROFILE_PROBLEMS problem under ncu, with the counters that say
  # what a useful FLOP costs: executed instructions (per opcode), shared
  # wavefronts, pipe activity. One launch each after warm-up runs.
  IFS=, read -ra problems <<<"${PROFILE_PROBLEMS:-causal_gqa_d128}"
  peer=${PEER_PROFILE_PEER:-cudnn}
  metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg,\
smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed_pipe_alu.sum,\
smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_xu.sum,\
smsp__inst_executed_pipe_lsu.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
smsp__thread_inst_executed.sum,sass__inst_executed_per_opcode,smsp__issue_active.avg.pct_of_peak_sustained_active
  ncu_metrics() {  # KERNEL_REGEX SKIP CMD...: one launch's counters
    local kernel=$1 skip=$2
    shift 2
    ncu --clock-control none --kernel-name "$kernel" --launch-skip "$skip" --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --metrics "$metrics" \
      --print-metric-instances details "$@"
  }
  for pr in "${problems[@]}"; do
    ncu_metrics attention_prefill 3 \
      ./build-gpu/bench/attnjit_kernel_bench "$OUT/peer-profile-$pr.json" --no-tune "$pr" \
      >"$OUT/ncu-metrics-attnjit-$pr.txt" 2>&1 || status=1
    ncu_metrics "regex:.*(cudnn|fmha|flash|sm90).*" 2 \
      python bench/peer_once.py "$pr" "$peer" --runs 4 \
      >"$OUT/ncu-metrics-$peer-$pr.txt" 2>&1 || status=1
    for who in attnjit "$peer"; do
      echo "== $who $pr"
      grep -E "  [a-z].*(duration|inst_executed|wavefronts|cycles|issue_active)|Duration|Pipe|Issue|Throughput" \
        "$OUT/ncu-metrics-$who-$pr.txt" | grep -v per_opcode | head -30
    done
  done
fi
if stage user_profile; then
  # A user variant's kernel (attnjit's) beside FA4's block-sparse kernel on
  # the same mask (FA4 installed: docs/device.md), each the one call
  # bench/user_once.py makes between cudaProfilerStart and Stop: time,
  # executed instructions by pipe, shared wavefronts, issue activity and
  # the stall reasons (USER_PROFILE_PROBLEMS from bench_user_variants.py).
  IFS=, read -ra problems <<<"${USER_PROFILE_PROBLEMS:-streaming_llm,strided}"
  metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg,\
smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed_pipe_alu.sum,\
smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,\
launch__grid_size,launch__block_size,dram__bytes_read.sum
  for pr in "${problems[@]}"; do
    for who in attnjit fa4; do
      ncu --clock-control none --profile-from-start off --section SpeedOfLight \
        --section WarpStateStats --section Occupancy --metrics "$metrics" \
        python3 bench/user_once.py "$pr" "$who" >"$OUT/ncu-user-$who-$pr.txt" 2>&1 || status=1
      echo "== $who $pr"
      grep -E "^  [a-z_]+__|Duration|Stall|Warp Cycles|Issued Warp|Achieved Occupancy|==PROF==" \
        "$OUT/ncu-user-$who-$pr.txt" | head -40
    done
  done
fi
if stage source_profile; then
  # Executed instructions per SASS instruction of PROFILE_SKIP /
  # PROFILE_COUNT launches of each PROFILE_PROBLEMS problem, as CSV
  # (source-<problem>.csv; SASS only). The kernels compile with -lineinfo
  # here, so the same variants compiled with ATTNJIT_LINEINFO=1 on any
  # machine with the same NVRTC give the same cubin, whose
  # `nvdisasm --print-line-info` maps each address to its source line:
  # where two kernels' instruction counts part, line by line.
  IFS=, read -ra problems <<<"${PROFILE_PROBLEMS:-causal_expr}"
  for pr in "${problems[@]}"; do
    ATTNJIT_LINEINFO=1 ncu --clock-control none --kernel-name attention_prefill \
      --launch-skip "${PROFILE_SKIP:-3}" --launch-count "${PROFILE_COUNT:-1}" \
      --section SourceCounters --section InstructionStats -o "$OUT/source-$pr" -f \
      ./build-gpu/bench/attnjit_kernel_bench "$OUT/source-$pr.json" --no-tune "$pr" \
      >"$OUT/source-$pr.log" 2>&1 || status=1
    ncu -i "$OUT/source-$pr.ncu-rep" --page source --csv --print-source sass \
      >"$OUT/source-$pr.csv" 2>"$OUT/source-$pr.err" || status=1
    rm -f "$OUT/source-$pr.ncu-rep"
    echo "$pr: $(wc -l <"$OUT/source-$pr.csv") lines of source counters; $(tail -1 "$OUT/source-$pr.err")"
  done
fi
if stage paged_profile; then
  # ncu on one timed launch of each paged problem (issue 12: what bounds
  # small pages; PAGED_PROFILE_PROBLEMS from bench_paged.py's names):
  # stall reasons, issue slots, L2 and DRAM traffic per request.
  IFS=, read -ra problems <<<"${PAGED_PROFILE_PROBLEMS:-chunked_prefill_p16,chunked_prefill_p64}"
  for pr in "${problems[@]}"; do
    ncu_attention 5 1 --section MemoryWorkloadAnalysis_Tables \
      python3 bench/bench_paged.py --only "$pr" --peers attnjit_paged \
      >"$OUT/ncu-paged-$pr.txt" 2>&1 || status=1
    echo "$pr:"
    grep -E "Duration|DRAM Throughput|L2 Hit|No Eligible|Issued Warp|Stall|Sectors/Req" \
      "$OUT/ncu-paged-$pr.txt" | head -16
  done
fi
if stage decode_profile; then
  # ncu on one timed decode launch per attnjit row (issue 13: what bounds
  # the fp8 decode): stall reasons, issue slots, memory throughput.
  IFS=, read -ra peers <<<"${DECODE_PROFILE_PEERS:-attnjit_paged_fp8,attnjit_paged}"
  for peer in "${peers[@]}"; do
    ncu_attention 5 1 \
      python3 bench/bench_decode.py --no-sweep --only "${DECODE_PROFILE_PROBLEM:-decode_64x8k_d128}" \
      --peers "$peer" >"$OUT/ncu-decode-$peer.txt" 2>&1 || status=1
    echo "$peer:"
    grep -E "Duration|DRAM Throughput|No Eligible|Issued Warp|Stall" "$OUT/ncu-decode-$peer.txt" | head -12
    if [[ -n ${DECODE_PROFILE_SOURCE:-} ]]; then
      # Per-instruction counters and warp-stall samples of the same launch
      # (-lineinfo, as source_profile), as CSV: where each role waits.
      ATTNJIT_LINEINFO=1 ncu --clock-control none --kernel-name attention_prefill \
        --launch-skip 5 --launch-count 1 --section SourceCounters --section WarpStateStats \
        -o "$OUT/source-decode-$peer" -f \
        python3 bench/bench_decode.py --no-sweep --only "${DECODE_PROFILE_PROBLEM:-decode_64x8k_d128}" \
        --peers "$peer" >"$OUT/source-decode-$peer.log" 2>&1 || status=1
      ncu -i "$OUT/source-decode-$peer.ncu-rep" --page source --csv --print-source sass \
        >"$OUT/source-decode-$peer.csv" 2>"$OUT/source-decode-$peer.err" || status=1
      rm -f "$OUT/source-decode-$peer.ncu-rep"
      echo "$peer: $(wc -l <"$OUT/source-decode-$peer.csv") lines of source counters"
    fi
  done
fi
if stage sanitize; then
  # compute-sanitizer on a sample of the matrix: one variant per sink mode,
  # an mm-prefix one and the head dims whose tiles differ most.
  variants=${SANITIZE_VARIANTS:-bf16_d128_causal,bf16_d64_causal_window_null_logit,bf16_d64_causal_window_bias_key0,bf16_d80_causal_window_mmprefix_clamp,bf16_d256_causal_window_mmprefix_clamp,fp16_d96_causal}
  filter=$(sed 's#\([^,]*\)#Spec/AttentionMatrix.MatchesReferenceOnEveryShape/\1#g; s#,#:#g' <<<"$variants")
  for tool in memcheck racecheck; do
    timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      ./build-gpu/tests/attnjit_gpu_tests --gtest_filter="$filter" \
      >"$OUT/$tool.log" 2>&1 || status=1
    echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/$tool.log" | tr '\n' ' ')"
  done
fi
if stage twogpu; then
  # Engines split heads over GPUs: one process per GPU sharing one disk
  # cache (cold, so both compile the same variants at once: each is built
  # once and both hit it), then one process driving both GPUs.
  export ATTNJIT_CACHE_DIR=$(mktemp -d)
  for ex in gpt_oss_paged_decode gemma4_model_step; do
    CUDA_VISIBLE_DEVICES=0 python3 python/examples/$ex.py >"$OUT/twogpu-0-$ex.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 python3 python/examples/$ex.py >"$OUT/twogpu-1-$ex.log" 2>&1 &
  done
  wait
  for log in "$OUT"/twogpu-*.log; do echo "$(basename "$log"): $(tail -2 "$log" | tr '\n' ' ')"; done
  grep -h PASSED "$OUT"/twogpu-*.log | wc -l | sed 's/^/passed: /'
  python3 -m pytest -q python/tests -k "follows_the_tensors_device" >"$OUT/twogpu-pytest.log" 2>&1 || status=1
  tail -2 "$OUT/twogpu-pytest.log"
  export ATTNJIT_CACHE_DIR=$PWD/build-gpu/kcache
fi
if stage manifest; then
  # Record mode end to end: the three seed examples record what they request
  # (ATTNJIT_RECORD); build-cache builds exactly that with the driver hidden
  # (as on a machine without a GPU); the examples then run again on that
  # cache alone, with an empty user directory and compiling forbidden.
  rec=$(mktemp -d)
  examples="mimo_vision_window gemma4_sliding_images gpt_oss_sinks"
  for ex in $examples; do
    ATTNJIT_RECORD=$rec/manifest python3 python/examples/$ex.py \
      >"$OUT/manifest-record-$ex.log" 2>&1 || status=1
  done
  cp "$rec/manifest" "$OUT/manifest.jsonl"
  echo "recorded: $(wc -l <"$rec/manifest") lines, $(sort -u "$rec/manifest" | wc -l) distinct"
  ATTNJIT_LIBCUDA=$rec/no-libcuda.so ./build-gpu/cli/attnjit build-cache \
    --manifest "$rec/manifest" --out "$rec/aot" >"$OUT/manifest-build.log" 2>&1 || status=1
  grep -E "^building|^sm_|nothing compiled" "$OUT/manifest-build.log"
  ./build-gpu/cli/attnjit inspect -q "$rec/aot" | tail -1
  mkdir -p "$rec/empty"
  for ex in $examples; do
    ATTNJIT_AOT_DIRS=$rec/aot ATTNJIT_CACHE_DIR=$rec/empty ATTNJIT_NO_JIT=1 \
      python3 python/examples/$ex.py >"$OUT/manifest-aot-$ex.log" 2>&1 || status=1
    echo "no-JIT $ex: $(tail -2 "$OUT/manifest-aot-$ex.log" | tr '\n' ' ')"
  done
  if [[ -n "$(find "$rec/empty" -name '*.ajk')" ]]; then
    echo "manifest: something was compiled into the empty user directory"; status=1
  fi
  rm -rf "$rec"
fi
exit $status  # (the EXIT trap packs the logs)
