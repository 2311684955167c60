// Runs a call that may compile on a thread with a large stack.
//
// Inside the Python extension next to PyTorch a compile crashed on the
// device machine in std::regex (since removed from the resource parser);
// while diagnosing it, lookups that may compile were moved to a thread with
// a 512 MiB stack (reserved address space; only touched pages cost), and
// every compile a launch or a fetch starts still runs on one
// (runtime/src/tiered_variant.cpp), a guard for callers that run on small
// stacks. Falls back to the calling thread if no thread can be made.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <optional>
#include <utility>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

constexpr std::size_t kCompileStackBytes = std::size_t(512) << 20;

template <class Fn>
auto on_large_stack(Fn&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  struct Job {
    Fn* fn;
    std::optional<Result> result;
    std::exception_ptr error;
  };
  Job job{&fn, std::nullopt, nullptr};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return fn();
  pthread_attr_setstacksize(&attr, kCompileStackBytes);
  pthread_t thread;
  const int created = pthread_create(
      &thread, &attr,
      [](void* raw) -> void* {
        Job& j = *static_cast<Job*>(raw);
        try {
          j.result.emplace((*j.fn)());
        } catch (...) {
          j.error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  if (created != 0) return fn();
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(*job.result);
}

}  // namespace attnjit

#pragma GCC visibility pop
