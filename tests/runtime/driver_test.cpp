// The driver on a machine without libcuda (CI): a clear error, never a
// crash, and nothing else in the library needs it. On a machine with a
// driver these tests skip.
#include "attnjit/driver.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>

#include "attnjit/error.h"
#include "attnjit/kernel.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

bool libcuda_present() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle) dlclose(handle);
  return handle != nullptr;
}

constexpr const char* kHint =
    "launching kernels needs an NVIDIA driver; spec parsing, code generation "
    "and cache building work without one";

TEST(DriverWithoutLibcuda, IsNotAvailableAndSaysWhy) {
  if (libcuda_present()) GTEST_SKIP() << "this machine has a CUDA driver";
  std::string why;
  EXPECT_FALSE(Driver::available(&why));
  EXPECT_FALSE(Driver::available());  // the failure is remembered
  EXPECT_FALSE(Driver::loaded());
  EXPECT_NE(why.find("cannot load the CUDA driver (libcuda.so"), std::string::npos) << why;
  EXPECT_NE(why.find(std::string("): ") + kHint), std::string::npos) << why;
}

TEST(DriverWithoutLibcuda, GetThrowsADriverError) {
  if (libcuda_present()) GTEST_SKIP() << "this machine has a CUDA driver";
  try {
    Driver::get();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDriver);
    EXPECT_EQ(std::string(e.what()).rfind("cannot load the CUDA driver (", 0), 0u) << e.what();
  }
}

// The override path is read once per process, so it is tested in a fresh
// one (the threadsafe death-test style re-executes this test alone).
TEST(DriverWithoutLibcuda, OverridePathAppearsInTheMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("ATTNJIT_LIBCUDA", "/nonexistent/libcuda-test.so", 1);
        std::string why;
        bool available = Driver::available(&why);
        std::fprintf(stderr, "%s\n", why.c_str());
        std::exit(available ? 1 : 0);
      },
      ::testing::ExitedWithCode(0),
      "cannot load the CUDA driver \\(/nonexistent/libcuda-test\\.so: "
      ".*\\): launching kernels needs an NVIDIA driver; spec parsing, code "
      "generation and cache building work without one");
}

// Nothing may link libcuda (not even the toolkit's stub through
// CUDA::nvrtc): in a fresh process, before any driver call, it must not be
// loaded. Meaningful where libcuda exists; here it also cannot be loaded.
TEST(DriverWithoutLibcuda, NothingLinksLibcuda) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void* linked = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        std::exit(linked ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(DriverWithoutLibcuda, KernelLaunchFailsCleanlyAndDestructs) {
  if (libcuda_present()) GTEST_SKIP() << "this machine has a CUDA driver";
  auto entry = std::make_shared<const CacheEntry>(testing::fake_entry("nodriver"));
  Kernel kernel(entry);
  EXPECT_EQ(kernel.name(), "fake_nodriver");
  try {
    kernel.launch(1, 1, 1, nullptr, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDriver);
  }
  EXPECT_THROW(kernel.threads(), Error);
}

}  // namespace
}  // namespace attnjit
