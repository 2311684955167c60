// What a C API context owns is given back when it is destroyed. This binary
// replaces the global operator new and delete to count the calling thread's
// allocations, which is why it is a binary of its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "attnjit/attnjit.h"

namespace {

// Constant-initialized, so reading them needs no allocation of their own.
thread_local bool counting = false;
thread_local long live_allocations = 0;

}  // namespace

void* operator new(std::size_t size) {
  void* memory = std::malloc(size == 0 ? 1 : size);
  if (memory == nullptr) throw std::bad_alloc();
  if (counting) ++live_allocations;
  return memory;
}

void operator delete(void* memory) noexcept {
  if (memory != nullptr && counting) --live_allocations;
  std::free(memory);
}

void operator delete(void* memory, std::size_t) noexcept { operator delete(memory); }

namespace {

void create_and_destroy_context() {
  attnjit_context_options options;
  attnjit_context_options_init(&options);
  options.cache_dir = "";  // memory only: nothing to set up on disk
  attnjit_context* context = nullptr;
  ASSERT_EQ(attnjit_context_create(&options, &context), ATTNJIT_OK) << attnjit_last_error_message();
  attnjit_context_destroy(context);
}

TEST(ContextLifetime, DestroyingAContextFreesEverythingItAllocated) {
  // The first context may set up process-wide state that is kept on purpose.
  create_and_destroy_context();
  constexpr int kContexts = 100;
  counting = true;
  live_allocations = 0;
  for (int i = 0; i < kContexts; ++i) create_and_destroy_context();
  counting = false;
  EXPECT_EQ(live_allocations, 0) << "allocations left behind by " << kContexts << " contexts";
}

}  // namespace
