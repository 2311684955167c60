#!/usr/bin/env bash
# Builds and runs attnjit's libFuzzer targets (tests/fuzz/CMakeLists.txt).
#
#   run_fuzzers.sh build SOURCE_DIR WORK_DIR
#       configures SOURCE_DIR with clang and -DATTNJIT_BUILD_FUZZERS=ON in
#       WORK_DIR/build and builds the fuzzers (incremental after the first
#       time).
#   run_fuzzers.sh fuzz SOURCE_DIR WORK_DIR TARGET SECONDS
#       runs attnjit_fuzz_TARGET for SECONDS on a scratch copy of
#       SOURCE_DIR/tests/fuzz/corpus/TARGET (new inputs never land in the
#       committed corpus); any crash, sanitizer report, leak or timeout is a
#       failure, and its reproducer is kept in WORK_DIR/findings/TARGET.
#   run_fuzzers.sh all SOURCE_DIR WORK_DIR [SECONDS]
#       both, for every target.
#
# Exits 77 (ctest: skipped) when clang or libFuzzer is not installed.
# ATTNJIT_FUZZ_CXX overrides the compiler (default clang++-14, else clang++).
set -euo pipefail

targets=(parse_spec decode_entry flag_assignments parse_expr)

skip() {
  echo "fuzz: skipped: $*" >&2
  exit 77
}

find_clang() {
  local cxx="${ATTNJIT_FUZZ_CXX:-}"
  if [[ -z "$cxx" ]]; then
    cxx="$(command -v clang++-14 || command -v clang++ || true)"
  fi
  [[ -n "$cxx" ]] || skip "no clang++ (install clang-14 and libclang-rt-14-dev: .ci/setup)"
  # libFuzzer ships in compiler-rt (Debian: libclang-rt-14-dev).
  local probe
  probe="$(mktemp -d)"
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    >"$probe/probe.cpp"
  if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" \
      >"$probe/log" 2>&1; then
    cat "$probe/log" >&2
    rm -rf "$probe"
    skip "$cxx cannot link -fsanitize=fuzzer (install libclang-rt-14-dev: .ci/setup)"
  fi
  rm -rf "$probe"
  echo "$cxx"
}

build() {
  local source="$1" work="$2"
  local cxx
  cxx="$(find_clang)"
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  mkdir -p "$work"
  # Reconfigured only when the cache is missing; later runs only rebuild.
  if [[ ! -f "$work/build/CMakeCache.txt" ]]; then
    cmake -S "$source" -B "$work/build" "${generator[@]}" \
      -DCMAKE_CXX_COMPILER="$cxx" \
      -DCMAKE_BUILD_TYPE=FuzzDebug \
      -DCMAKE_CXX_FLAGS_FUZZDEBUG="-O1 -g" \
      -DATTNJIT_BUILD_FUZZERS=ON \
      -DATTNJIT_BUILD_TESTS=ON \
      -DATTNJIT_BUILD_CLI=OFF \
      -DATTNJIT_BUILD_BENCH=OFF \
      -DATTNJIT_BUILD_PYTHON=OFF \
      -DATTNJIT_INSTALL=OFF >"$work/configure.log" 2>&1 ||
      { cat "$work/configure.log" >&2; rm -f "$work/build/CMakeCache.txt"; exit 1; }
  fi
  local jobs
  jobs="$(nproc 2>/dev/null || echo 2)"
  cmake --build "$work/build" --parallel "$jobs" --target \
    attnjit_fuzz_parse_spec attnjit_fuzz_decode_entry attnjit_fuzz_flag_assignments \
    attnjit_fuzz_parse_expr \
    attnjit_fuzz_make_entry_seeds
}

fuzzer_path() {
  local work="$1" target="$2"
  find "$work/build" -type f -name "attnjit_fuzz_$target" -perm -u+x | head -n 1
}

fuzz() {
  local source="$1" work="$2" target="$3" seconds="$4"
  local binary
  binary="$(fuzzer_path "$work" "$target")"
  if [[ -z "$binary" ]]; then
    find_clang >/dev/null  # skips (77) when clang is the reason
    echo "fuzz: attnjit_fuzz_$target is not built under $work/build (run the build step)" >&2
    exit 1
  fi
  local seeds="$source/tests/fuzz/corpus/$target"
  [[ -d "$seeds" ]] || { echo "fuzz: no seed corpus at $seeds" >&2; exit 1; }
  local scratch="$work/corpus/$target"
  local findings="$work/findings/$target"
  rm -rf "$scratch" "$findings"
  mkdir -p "$scratch" "$findings"
  if [[ "$target" == decode_entry ]]; then
    "$(fuzzer_path "$work" make_entry_seeds)" "$scratch"
  fi
  local dict=()
  [[ -f "$source/tests/fuzz/$target.dict" ]] && dict=(-dict="$source/tests/fuzz/$target.dict")
  echo "fuzz: $target for ${seconds}s, seeds from $seeds"
  # -rss_limit_mb and -timeout make a blow-up or a hang a finding too.
  local status=0
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
    "$binary" "$scratch" "$seeds" "${dict[@]}" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$findings/" 2>"$work/$target.log" || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|INFO: seed corpus)' \
    "$work/$target.log" || true
  if ((status != 0)) || compgen -G "$findings/*" >/dev/null; then
    tail -n 60 "$work/$target.log" >&2
    echo "fuzz: $target found a problem (exit $status); reproducers in $findings:" >&2
    ls -l "$findings" >&2
    exit 1
  fi
  echo "fuzz: $target: no finding"
}

mode="${1:-}"
case "$mode" in
  build) build "$2" "$3" ;;
  fuzz) fuzz "$2" "$3" "$4" "$5" ;;
  all)
    build "$2" "$3"
    for target in "${targets[@]}"; do fuzz "$2" "$3" "$target" "${4:-20}"; done
    ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
