// One attention variant used from two CUDA contexts on device 0: the kernel
// object is shared, its module is loaded into each context on first use
// there, and each context's results match the CPU reference. The contexts
// are created with the driver's own entry points (Driver::symbol), so the
// runtime's code is exercised exactly as an engine with its own contexts
// would.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

// The few context calls this test needs; CUresult is an int-sized enum.
struct ContextApi {
  using Create = int (*)(CuContext*, unsigned, int);
  using Destroy = int (*)(CuContext);
  using SetCurrent = int (*)(CuContext);
  using GetCurrent = int (*)(CuContext*);
  using DeviceGet = int (*)(int*, int);
  Create create = nullptr;
  Destroy destroy = nullptr;
  SetCurrent set_current = nullptr;
  GetCurrent get_current = nullptr;
  DeviceGet device_get = nullptr;

  static ContextApi load() {
    Driver& driver = Driver::get();
    ContextApi api;
    // Exported names with the ABI these pointers have (CUDA 12 and 13).
    api.create = reinterpret_cast<Create>(driver.symbol("cuCtxCreate_v2"));
    api.destroy = reinterpret_cast<Destroy>(driver.symbol("cuCtxDestroy_v2"));
    api.set_current = reinterpret_cast<SetCurrent>(driver.symbol("cuCtxSetCurrent"));
    api.get_current = reinterpret_cast<GetCurrent>(driver.symbol("cuCtxGetCurrent"));
    api.device_get = reinterpret_cast<DeviceGet>(driver.symbol("cuDeviceGet"));
    return api;
  }
  bool complete() const { return create && destroy && set_current && get_current && device_get; }
};

// Restores the thread's current context at the end of a test.
class CurrentContextGuard {
 public:
  explicit CurrentContextGuard(const ContextApi& api) : api_(api) { api_.get_current(&saved_); }
  ~CurrentContextGuard() { api_.set_current(saved_); }

 private:
  const ContextApi& api_;
  CuContext saved_ = nullptr;
};

CuContext create_context(const ContextApi& api) {
  int device = 0;
  EXPECT_EQ(api.device_get(&device, 0), 0);
  CuContext ctx = nullptr;
  EXPECT_EQ(api.create(&ctx, 0, device), 0);
  return ctx;
}

AttentionFlags gpt_oss_flags() {
  return AttentionFlags::from_flag_set(resolve_preset(attention_spec(), "gpt_oss_sliding"));
}

std::string describe(const CheckResult& r) {
  return r.variant + " on " + r.shape + ": o_err " + std::to_string(r.o_error) + ", lse_err " +
         std::to_string(r.lse_error) + (r.guard_intact ? "" : ", wrote past total_q") +
         (r.output_written ? "" : ", left rows unwritten");
}

TEST(TwoContexts, OneVariantLaunchesInEachContext) {
  ATTNJIT_REQUIRE_GPU();
  const ContextApi api = ContextApi::load();
  ASSERT_TRUE(api.complete()) << "the driver lacks a context entry point";
  CurrentContextGuard guard(api);
  CuContext a = create_context(api);
  CuContext b = create_context(api);
  ASSERT_TRUE(a && b && a != b);

  KernelCache cache{CacheConfig{}};  // memory only: this test's own
  const AttentionFlags flags = gpt_oss_flags();
  const CheckShape shape = standard_check_shapes(flags).front();
  std::shared_ptr<AttentionKernel> seen;
  // Alternate, so that each context launches after the other loaded too.
  for (CuContext ctx : {a, b, a, b}) {
    ASSERT_EQ(api.set_current(ctx), 0);
    const CheckResult r = check_attention(flags, shape, testing::fresh_seed(), cache);
    EXPECT_TRUE(r.passed(error_bound(flags.dtype)))
        << (ctx == a ? "context a: " : "context b: ") << describe(r);
    auto kernel = AttentionKernel::get(flags, cache);
    if (seen) EXPECT_EQ(kernel.get(), seen.get()) << "one kernel object";
    seen = kernel;
  }
  EXPECT_EQ(cache.stats().compiles, 1u);
  api.set_current(nullptr);
  EXPECT_EQ(api.destroy(a), 0);
  EXPECT_EQ(api.destroy(b), 0);
}

TEST(TwoContexts, ConcurrentThreadsEachWithItsContext) {
  ATTNJIT_REQUIRE_GPU();
  const ContextApi api = ContextApi::load();
  ASSERT_TRUE(api.complete());
  CurrentContextGuard guard(api);
  CuContext contexts[2] = {create_context(api), create_context(api)};
  ASSERT_TRUE(contexts[0] && contexts[1]);
  api.set_current(nullptr);

  KernelCache cache{CacheConfig{}};
  AttentionFlags flags = gpt_oss_flags();
  flags.return_lse = true;
  const std::vector<CheckShape> shapes = standard_check_shapes(flags);
  // The kernels these shapes reach, counted serially in a cache of their own:
  // the variant, and its split-KV sibling for the decode-shaped ones.
  uint64_t kernels_reached = 0;
  {
    api.set_current(contexts[0]);
    KernelCache serial{CacheConfig{}};
    for (const CheckShape& shape : shapes) check_attention(flags, shape, 1, serial);
    kernels_reached = serial.stats().compiles;
    api.set_current(nullptr);
  }
  ASSERT_GE(kernels_reached, 1u);
  constexpr int kRounds = 3;
  std::vector<std::string> failures[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      if (api.set_current(contexts[t]) != 0) {
        failures[t].push_back("cuCtxSetCurrent failed");
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        for (const CheckShape& shape : shapes) {
          try {
            const CheckResult r = check_attention(flags, shape, testing::fresh_seed(), cache);
            if (!r.passed(error_bound(flags.dtype))) failures[t].push_back(describe(r));
          } catch (const std::exception& e) {
            failures[t].push_back(e.what());
          }
        }
      }
      api.set_current(nullptr);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 2; ++t) {
    for (const std::string& failure : failures[t])
      ADD_FAILURE() << "context " << t << ": " << failure;
  }
  // Two threads asking for the same kernels at once compile each once.
  EXPECT_EQ(cache.stats().compiles, kernels_reached);
  EXPECT_EQ(api.destroy(contexts[0]), 0);
  EXPECT_EQ(api.destroy(contexts[1]), 0);
}

// An engine may tear a context down and make another; the driver may hand
// out the old handle again. The kernel must not launch a module of the
// destroyed context there.
TEST(TwoContexts, AContextCreatedAfterOneWasDestroyed) {
  ATTNJIT_REQUIRE_GPU();
  const ContextApi api = ContextApi::load();
  ASSERT_TRUE(api.complete());
  CurrentContextGuard guard(api);
  KernelCache cache{CacheConfig{}};
  AttentionFlags flags = gpt_oss_flags();
  flags.softcap = true;
  const CheckShape shape = standard_check_shapes(flags).front();
  for (int generation = 0; generation < 3; ++generation) {
    CuContext ctx = create_context(api);
    ASSERT_NE(ctx, nullptr);
    const CheckResult r = check_attention(flags, shape, testing::fresh_seed(), cache);
    EXPECT_TRUE(r.passed(error_bound(flags.dtype)))
        << "generation " << generation << ": " << describe(r);
    api.set_current(nullptr);
    ASSERT_EQ(api.destroy(ctx), 0);
  }
}

}  // namespace
}  // namespace attnjit
