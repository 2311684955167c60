// The C API without a GPU: status codes and messages, struct versioning,
// flag checks, no-JIT, statistics and prewarm. Variants are compiled for an
// explicit target (sm_80) through NVRTC into temporary cache directories.
#include "attnjit/attnjit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnjit/driver.h"
#include "runtime/cache_test_support.h"

namespace {

using attnjit::testing::TempDir;

// Options that ignore the environment's cache settings.
attnjit_context_options isolated_options(const std::string& cache_dir, int no_jit = 0) {
  static const char* const kNoAotDirs[1] = {nullptr};
  attnjit_context_options options;
  attnjit_context_options_init(&options);
  options.cache_dir = cache_dir.c_str();
  options.aot_dirs = kNoAotDirs;
  options.num_aot_dirs = 0;
  options.no_jit = no_jit;
  options.log = 0;
  return options;
}

attnjit_attention_flags flags_d64(bool causal = false) {
  attnjit_attention_flags flags;
  attnjit_attention_flags_init(&flags);
  flags.head_dim = 64;
  flags.causal = causal ? 1 : 0;
  return flags;
}

// Well-formed arguments for 4 query heads on 1 kv head, D 64, with fake
// device pointers that nothing dereferences.
attnjit_attention_args fake_args(int num_seqs, int total, int max_seqlen) {
  auto fake = [](uintptr_t address) { return reinterpret_cast<void*>(address); };
  attnjit_attention_args args;
  attnjit_attention_args_init(&args);
  args.q = fake(0x10000);
  args.k = fake(0x20000);
  args.v = fake(0x30000);
  args.o = fake(0x40000);
  args.cu_seqlens_q = static_cast<const int32_t*>(fake(0x50000));
  args.cu_seqlens_k = static_cast<const int32_t*>(fake(0x60000));
  args.q_row_stride = args.o_row_stride = 4 * 64;
  args.k_row_stride = args.v_row_stride = 64;
  args.q_head_stride = args.k_head_stride = args.v_head_stride = args.o_head_stride = 64;
  args.num_seqs = num_seqs;
  args.num_heads_q = 4;
  args.num_heads_kv = 1;
  args.total_q = args.total_k = total;
  args.max_seqlen_q = args.max_seqlen_k = max_seqlen;
  return args;
}

// A context that destroys itself.
class Context {
 public:
  explicit Context(const attnjit_context_options& options) {
    EXPECT_EQ(attnjit_context_create(&options, &context_), ATTNJIT_OK)
        << attnjit_last_error_message();
  }
  ~Context() { attnjit_context_destroy(context_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  attnjit_context* get() const { return context_; }

  attnjit_cache_stats stats() const {
    attnjit_cache_stats stats;
    attnjit_cache_stats_init(&stats);
    EXPECT_EQ(attnjit_cache_stats_get(context_, &stats), ATTNJIT_OK)
        << attnjit_last_error_message();
    return stats;
  }

 private:
  attnjit_context* context_ = nullptr;
};

std::string message() { return attnjit_last_error_message(); }

TEST(CApi, VersionAndStatusNames) {
  EXPECT_STREQ(attnjit_version(), "0.1.0");
  EXPECT_STREQ(attnjit_status_name(ATTNJIT_OK), "ATTNJIT_OK");
  EXPECT_STREQ(attnjit_status_name(ATTNJIT_ERROR_NO_JIT), "ATTNJIT_ERROR_NO_JIT");
  EXPECT_STREQ(attnjit_status_name(static_cast<attnjit_status>(99)), "ATTNJIT_UNKNOWN_STATUS");
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(attnjit_context_create(nullptr, nullptr), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("out is null"), std::string::npos) << message();
  attnjit_kernel* kernel = nullptr;
  attnjit_attention_flags flags = flags_d64();
  EXPECT_EQ(attnjit_get_attention_kernel(nullptr, &flags, "sm_80", &kernel),
            ATTNJIT_ERROR_ARGUMENT);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(attnjit_attention_launch(nullptr, nullptr, nullptr), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_EQ(attnjit_prewarm_wait(nullptr), ATTNJIT_ERROR_ARGUMENT);
  attnjit_cache_stats stats;
  attnjit_cache_stats_init(&stats);
  EXPECT_EQ(attnjit_cache_stats_get(nullptr, &stats), ATTNJIT_ERROR_ARGUMENT);
  attnjit_context_destroy(nullptr);  // ignored
}

TEST(CApi, StructSizeIsChecked) {
  TempDir dir;
  attnjit_context_options options = isolated_options(dir.path());
  options.struct_size = sizeof(size_t);
  attnjit_context* context = nullptr;
  EXPECT_EQ(attnjit_context_create(&options, &context), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("struct_size"), std::string::npos) << message();
  EXPECT_EQ(context, nullptr);

  Context ok(isolated_options(dir.path()));
  attnjit_attention_flags flags = flags_d64();
  flags.struct_size = 4;
  attnjit_kernel* kernel = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(ok.get(), &flags, "sm_80", &kernel),
            ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("flags->struct_size"), std::string::npos) << message();
}

TEST(CApi, OptionsAreChecked) {
  TempDir dir;
  attnjit_context_options options = isolated_options(dir.path());
  options.no_jit = 7;
  attnjit_context* context = nullptr;
  EXPECT_EQ(attnjit_context_create(&options, &context), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("no_jit"), std::string::npos) << message();
  options = isolated_options(dir.path());
  options.aot_dirs = nullptr;
  options.num_aot_dirs = 2;
  EXPECT_EQ(attnjit_context_create(&options, &context), ATTNJIT_ERROR_ARGUMENT);
}

struct BadFlags {
  const char* name;
  void (*edit)(attnjit_attention_flags&);
  const char* expected;  // in the message
};

TEST(CApi, FlagsAreValidated) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  const BadFlags cases[] = {
      {"head dim", [](attnjit_attention_flags& f) { f.head_dim = 72; }, "72"},
      {"clamp without window",
       [](attnjit_attention_flags& f) {
         f.mm_prefix = 1;
         f.mm_clamp = 1;
       },
       "window"},
      {"bool", [](attnjit_attention_flags& f) { f.causal = 2; }, "causal"},
      {"dtype", [](attnjit_attention_flags& f) { f.dtype = 7; }, "dtype"},
      {"sinks", [](attnjit_attention_flags& f) { f.sinks = 9; }, "sinks"},
  };
  for (const BadFlags& c : cases) {
    attnjit_attention_flags flags = flags_d64();
    c.edit(flags);
    attnjit_kernel* kernel = nullptr;
    EXPECT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel),
              ATTNJIT_ERROR_FLAGS)
        << c.name;
    EXPECT_NE(message().find(c.expected), std::string::npos) << c.name << ": " << message();
    EXPECT_EQ(kernel, nullptr);
  }
  attnjit_attention_flags flags = flags_d64();
  attnjit_kernel* kernel = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_75", &kernel),
            ATTNJIT_ERROR_FLAGS);
  EXPECT_NE(message().find("sm_75"), std::string::npos) << message();
  EXPECT_EQ(context.stats().compiles, 0u);
}

TEST(CApi, NoJitMissIsAnError) {
  TempDir dir;
  Context context(isolated_options(dir.path(), /*no_jit=*/1));
  attnjit_attention_flags flags = flags_d64();
  attnjit_kernel* kernel = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel),
            ATTNJIT_ERROR_NO_JIT);
  EXPECT_FALSE(message().empty());
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(context.stats().compiles, 0u);
}

TEST(CApi, CompilesOnceThenHitsMemoryThenDisk) {
  TempDir dir;
  attnjit_attention_flags flags = flags_d64(/*causal=*/true);
  std::string key;
  {
    Context context(isolated_options(dir.path()));
    attnjit_kernel* first = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &first), ATTNJIT_OK)
        << message();
    EXPECT_EQ(message(), "");
    EXPECT_STREQ(attnjit_kernel_source(first), "compiled");
    key = attnjit_kernel_key(first);
    EXPECT_EQ(key.size(), 64u);
    EXPECT_NE(std::string(attnjit_kernel_signature(first)).find("@sm_80"), std::string::npos);
    EXPECT_NE(std::string(attnjit_kernel_name(first)).find("attention_prefill"), std::string::npos);
    attnjit_kernel* again = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &again), ATTNJIT_OK);
    EXPECT_EQ(again, first);
    const attnjit_cache_stats stats = context.stats();
    EXPECT_EQ(stats.compiles, 1u);
    EXPECT_EQ(stats.disk_hits, 0u);
    EXPECT_EQ(stats.disk_disabled, 0);
  }
  // A fresh context over the same directory, in strict no-JIT mode.
  Context context(isolated_options(dir.path(), /*no_jit=*/1));
  attnjit_kernel* kernel = nullptr;
  ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
      << message();
  EXPECT_STREQ(attnjit_kernel_source(kernel), "disk");
  EXPECT_EQ(attnjit_kernel_key(kernel), key);
  const attnjit_cache_stats stats = context.stats();
  EXPECT_EQ(stats.compiles, 0u);
  EXPECT_EQ(stats.disk_hits, 1u);
}

// Destroying a context waits for its kernels' variants still compiling in
// the background while a tier answers for them: the compile lands in the
// context's directory before destroy returns (and never outlives its cache).
TEST(CApi, DestroyingAContextJoinsItsBackgroundCompiles) {
  TempDir dir;
  setenv("ATTNJIT_TIERED", "1", 1);
  attnjit_attention_flags generic = flags_d64();  // causal D64's generic variant
  generic.window = 1;
  generic.mm_prefix = 1;
  generic.sinks = ATTNJIT_SINKS_NULL_LOGIT;
  generic.return_lse = 1;
  {
    Context builder(isolated_options(dir.path()));
    attnjit_kernel* kernel = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(builder.get(), &generic, "sm_80", &kernel), ATTNJIT_OK)
        << message();
  }
  const attnjit_attention_flags causal = flags_d64(/*causal=*/true);
  {
    Context context(isolated_options(dir.path()));
    attnjit_kernel* kernel = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &causal, "sm_80", &kernel), ATTNJIT_OK)
        << message();
    // Answered from the disk, where only its generic variant is: a tier.
    EXPECT_STREQ(attnjit_kernel_source(kernel), "disk");
  }
  // The variant itself on disk now (no tier, no JIT: nothing else could answer).
  setenv("ATTNJIT_TIERED", "0", 1);
  Context later(isolated_options(dir.path(), /*no_jit=*/1));
  attnjit_kernel* kernel = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(later.get(), &causal, "sm_80", &kernel), ATTNJIT_OK)
      << message();
  EXPECT_STREQ(attnjit_kernel_source(kernel), "disk");
  unsetenv("ATTNJIT_TIERED");
}

TEST(CApi, StatsHonourAnOlderCallersStructSize) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  attnjit_cache_stats stats;
  attnjit_cache_stats_init(&stats);
  stats.struct_size = offsetof(attnjit_cache_stats, disk_hits);
  stats.disk_hits = 12345;  // past the caller's size: must stay untouched
  ASSERT_EQ(attnjit_cache_stats_get(context.get(), &stats), ATTNJIT_OK);
  EXPECT_EQ(stats.memory_hits, 0u);
  EXPECT_EQ(stats.disk_hits, 12345u);
  EXPECT_EQ(stats.struct_size, offsetof(attnjit_cache_stats, disk_hits));
}

TEST(CApi, PrewarmCompilesTwoVariantsInTheBackground) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  std::vector<attnjit_attention_flags> list(2);
  list[0] = flags_d64(/*causal=*/true);
  attnjit_attention_flags_init(&list[1]);
  list[1].head_dim = 80;
  list[1].window = 1;
  list[1].sinks = ATTNJIT_SINKS_BIAS_KEY0;
  attnjit_prewarm_job* job = nullptr;
  ASSERT_EQ(attnjit_prewarm(context.get(), list.data(), list.size(), "sm_80",
                            /*threads=*/2, &job),
            ATTNJIT_OK)
      << message();
  size_t done = 99, total = 0;
  ASSERT_EQ(attnjit_prewarm_progress(job, &done, &total), ATTNJIT_OK);
  EXPECT_EQ(total, 2u);
  EXPECT_LE(done, 2u);
  ASSERT_EQ(attnjit_prewarm_wait(job), ATTNJIT_OK) << message();
  EXPECT_EQ(context.stats().compiles, 2u);
  for (const attnjit_attention_flags& flags : list) {
    attnjit_kernel* kernel = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
        << message();
    EXPECT_STREQ(attnjit_kernel_source(kernel), "compiled");
  }
  EXPECT_EQ(context.stats().compiles, 2u);  // both were prewarmed
}

TEST(CApi, PrewarmReportsFailuresAtWait) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  std::vector<attnjit_attention_flags> list = {flags_d64(), flags_d64()};
  list[1].head_dim = 72;
  attnjit_prewarm_job* job = nullptr;
  ASSERT_EQ(attnjit_prewarm(context.get(), list.data(), list.size(), "sm_80",
                            /*threads=*/0, &job),
            ATTNJIT_OK)
      << message();
  EXPECT_EQ(attnjit_prewarm_wait(job), ATTNJIT_ERROR_FLAGS);
  EXPECT_NE(message().find("1 of 2"), std::string::npos) << message();
  EXPECT_NE(message().find("72"), std::string::npos) << message();
  EXPECT_EQ(context.stats().compiles, 1u);

  // Bad structs are refused before anything starts.
  list[1] = flags_d64();
  list[1].causal = 3;
  EXPECT_EQ(attnjit_prewarm(context.get(), list.data(), list.size(), "sm_80", 1, &job),
            ATTNJIT_ERROR_FLAGS);
  EXPECT_EQ(job, nullptr);
}

// A caller built against an older header passes an array of its smaller
// structs: the library steps by their struct_size, not by its own.
TEST(CApi, PrewarmStepsThroughAnOlderCallersArrayByItsStructSize) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  constexpr size_t kV2Size = offsetof(attnjit_attention_flags, kv_layout) + sizeof(int32_t);
  static_assert(kV2Size % alignof(attnjit_attention_flags) == 0, "v2 structs tile an array");
  std::vector<unsigned char> bytes(2 * kV2Size);
  attnjit_attention_flags f = flags_d64(/*causal=*/true);
  f.struct_size = kV2Size;
  std::memcpy(bytes.data(), &f, kV2Size);
  f.head_dim = 80;
  std::memcpy(bytes.data() + kV2Size, &f, kV2Size);
  attnjit_prewarm_job* job = nullptr;
  ASSERT_EQ(attnjit_prewarm(context.get(),
                            reinterpret_cast<const attnjit_attention_flags*>(bytes.data()), 2,
                            "sm_80", 1, &job),
            ATTNJIT_OK)
      << message();
  ASSERT_EQ(attnjit_prewarm_wait(job), ATTNJIT_OK) << message();
  EXPECT_EQ(context.stats().compiles, 2u);
}

// A version-3 caller's struct ends where version 4's head_dim_v would have
// sat in its tail padding: whatever those bytes hold is not read.
TEST(CApi, AVersion3StructsPaddingIsNotReadAsAField) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  attnjit_attention_flags f = flags_d64();
  f.struct_size = offsetof(attnjit_attention_flags, reserved0) + sizeof(int32_t);  // v3's sizeof
  f.reserved0 = 128;   // (the padding's bytes)
  f.head_dim_v = 128;  // past its struct_size
  attnjit_kernel* kernel = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(context.get(), &f, "sm_90a", &kernel), ATTNJIT_OK)
      << message();
  static_assert(offsetof(attnjit_attention_flags, head_dim_v) >=
                    offsetof(attnjit_attention_flags, reserved0) + sizeof(int32_t),
                "a field appended past the previous version's sizeof");
}

TEST(CApi, ContextOutlivedByItsPrewarm) {
  TempDir dir;
  attnjit_context_options options = isolated_options(dir.path());
  attnjit_context* context = nullptr;
  ASSERT_EQ(attnjit_context_create(&options, &context), ATTNJIT_OK);
  attnjit_attention_flags flags = flags_d64();
  attnjit_prewarm_job* job = nullptr;
  ASSERT_EQ(attnjit_prewarm(context, &flags, 1, "sm_80", 1, &job), ATTNJIT_OK);
  attnjit_context_destroy(context);
  EXPECT_EQ(attnjit_prewarm_wait(job), ATTNJIT_OK) << message();
}

TEST(CApi, LaunchChecksArgumentsBeforeTheDriver) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  attnjit_attention_flags flags = flags_d64();
  attnjit_kernel* kernel = nullptr;
  ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
      << message();

  attnjit_attention_args args;
  attnjit_attention_args_init(&args);
  args.struct_size = 8;
  EXPECT_EQ(attnjit_attention_launch(kernel, &args, nullptr), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_EQ(attnjit_attention_launch(kernel, nullptr, nullptr), ATTNJIT_ERROR_ARGUMENT);

  attnjit_attention_args_init(&args);
  EXPECT_EQ(attnjit_attention_launch(kernel, &args, nullptr), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("`q`"), std::string::npos) << message();

  std::string why;
  if (attnjit::Driver::available(&why)) {
    GTEST_SKIP() << "a GPU is here: the no-driver half runs elsewhere";
  }
  // Well-formed arguments (never dereferenced): the driver is what fails.
  args = fake_args(/*num_seqs=*/1, /*total=*/16, /*max_seqlen=*/16);
  EXPECT_EQ(attnjit_attention_launch(kernel, &args, nullptr), ATTNJIT_ERROR_DRIVER) << message();
  attnjit_kernel* on_device = nullptr;
  EXPECT_EQ(attnjit_get_attention_kernel(context.get(), &flags, nullptr, &on_device),
            ATTNJIT_ERROR_DRIVER);
}

// Version 3: the split-KV workspace a decode needs, forced to 4 splits so
// that no SM count is read: counters [2 sequences, 1 kv head], lse parts
// [4, 2, 4 heads], output parts [4, 2, 4, 64] fp32, each 256-aligned.
TEST(CApi, SplitWorkspaceBytesOfADecode) {
  TempDir dir;
  Context context(isolated_options(dir.path()));
  attnjit_attention_flags flags = flags_d64(/*causal=*/true);
  attnjit_kernel* kernel = nullptr;
  ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
      << message();
  attnjit_attention_args args = fake_args(/*num_seqs=*/2, /*total=*/2, /*max_seqlen=*/1);
  args.total_k = 16384;
  args.max_seqlen_k = 8192;
  args.num_splits = 4;
  size_t bytes = 1;
  ASSERT_EQ(attnjit_split_workspace_bytes(kernel, &args, &bytes), ATTNJIT_OK) << message();
  EXPECT_EQ(bytes, 256u + 256u + 4u * 2 * 4 * 64 * 4);
  args.num_splits = 1;  // never split
  ASSERT_EQ(attnjit_split_workspace_bytes(kernel, &args, &bytes), ATTNJIT_OK) << message();
  EXPECT_EQ(bytes, 0u);
  args.num_splits = -1;
  EXPECT_EQ(attnjit_split_workspace_bytes(kernel, &args, &bytes), ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(message().find("num_splits"), std::string::npos) << message();
  EXPECT_EQ(attnjit_split_workspace_bytes(kernel, &args, nullptr), ATTNJIT_ERROR_ARGUMENT);
}

TEST(CApi, EmptyCacheDirMeansMemoryOnly) {
  Context context(isolated_options(""));
  attnjit_attention_flags flags = flags_d64();
  flags.return_lse = 1;
  attnjit_kernel* kernel = nullptr;
  ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
      << message();
  Context other(isolated_options(""));
  ASSERT_EQ(attnjit_get_attention_kernel(other.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
      << message();
  EXPECT_STREQ(attnjit_kernel_source(kernel), "compiled");
  EXPECT_EQ(other.stats().compiles, 1u);
}

// A destroyed context frees its cache, so the next one may get the same
// address; the typed API's memo must still not serve it the destroyed
// cache's kernels.
TEST(CApi, ContextAfterADestroyedOneCompilesForItself) {
  attnjit_attention_flags flags = flags_d64();
  flags.softcap = 1;
  for (int round = 0; round < 2; ++round) {
    Context context(isolated_options(""));
    attnjit_kernel* kernel = nullptr;
    ASSERT_EQ(attnjit_get_attention_kernel(context.get(), &flags, "sm_80", &kernel), ATTNJIT_OK)
        << message();
    EXPECT_STREQ(attnjit_kernel_source(kernel), "compiled") << "round " << round;
    EXPECT_EQ(context.stats().compiles, 1u) << "round " << round;
  }
}

TEST(CApi, AMisspeltSwitchInTheEnvironmentIsAnError) {
  const char* old = std::getenv("ATTNJIT_NO_JIT");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("ATTNJIT_NO_JIT", "ye", 1);
  attnjit_context* context = nullptr;
  EXPECT_EQ(attnjit_context_create(nullptr, &context), ATTNJIT_ERROR_FLAGS);
  EXPECT_EQ(context, nullptr);
  EXPECT_EQ(message().rfind("ATTNJIT_NO_JIT='ye' is not a boolean", 0), 0u) << message();
  if (old != nullptr) {
    ::setenv("ATTNJIT_NO_JIT", saved.c_str(), 1);
  } else {
    ::unsetenv("ATTNJIT_NO_JIT");
  }
}

TEST(CApi, CheckedModeValidatesHostMetadata) {
  attnjit_attention_flags flags;
  attnjit_attention_flags_init(&flags);
  flags.head_dim = 64;
  // Device pointers are only checked for presence and alignment here.
  const attnjit_attention_args args = fake_args(/*num_seqs=*/2, /*total=*/10, /*max_seqlen=*/7);
  const int32_t good[] = {0, 3, 10};
  EXPECT_EQ(
      attnjit_validate_attention_metadata(&flags, &args, good, good, nullptr, nullptr, 0, nullptr),
      ATTNJIT_OK)
      << attnjit_last_error_message();
  const int32_t decreasing[] = {0, 8, 3};
  EXPECT_EQ(attnjit_validate_attention_metadata(&flags, &args, decreasing, good, nullptr, nullptr,
                                                0, nullptr),
            ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(attnjit_last_error_message()).find("cu_seqlens_q"), std::string::npos)
      << attnjit_last_error_message();
  EXPECT_EQ(
      attnjit_validate_attention_metadata(nullptr, &args, good, good, nullptr, nullptr, 0, nullptr),
      ATTNJIT_ERROR_ARGUMENT);
}

TEST(CApi, CheckedModeValidatesAPagedCachesMetadata) {
  attnjit_attention_flags flags;
  attnjit_attention_flags_init(&flags);
  flags.head_dim = 64;
  flags.kv_layout = ATTNJIT_KV_PAGED;
  attnjit_attention_args args = fake_args(/*num_seqs=*/2, /*total=*/10, /*max_seqlen=*/7);
  args.cu_seqlens_k = nullptr;
  args.total_k = 0;
  args.max_seqlen_k = 40;
  args.block_table = reinterpret_cast<const int32_t*>(uintptr_t{0x70000});
  args.seqused_k = reinterpret_cast<const int32_t*>(uintptr_t{0x80000});
  args.block_table_stride = 3;
  args.page_size = 16;
  args.num_pages = 4;
  args.k_page_stride = args.v_page_stride = 16 * 64;
  const int32_t cu_q[] = {0, 3, 10};
  const int32_t used[] = {20, 40};                // 2 and 3 pages
  const int32_t table[] = {0, 1, -1, 2, 3, 1};   // row 0's third entry is not read
  EXPECT_EQ(attnjit_validate_paged_attention_metadata(&flags, &args, cu_q, used, table, nullptr,
                                                      nullptr, 0, nullptr),
            ATTNJIT_OK)
      << attnjit_last_error_message();
  const int32_t bad_table[] = {0, 1, -1, 2, 3, 4};
  EXPECT_EQ(attnjit_validate_paged_attention_metadata(&flags, &args, cu_q, used, bad_table,
                                                      nullptr, nullptr, 0, nullptr),
            ATTNJIT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(attnjit_last_error_message()).find("`block_table[1][2]` is 4"),
            std::string::npos)
      << attnjit_last_error_message();
  flags.kv_layout = ATTNJIT_KV_CONTIGUOUS;
  EXPECT_EQ(attnjit_validate_paged_attention_metadata(&flags, &args, cu_q, used, table, nullptr,
                                                      nullptr, 0, nullptr),
            ATTNJIT_ERROR_ARGUMENT);
}

}  // namespace
