// A compiled variant, loaded lazily into each CUDA context that launches it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attnjit/cache.h"
#include "attnjit/driver.h"
#include "attnjit/signature.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

class Kernel {
 public:
  explicit Kernel(std::shared_ptr<const CacheEntry> entry);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const CacheEntry& entry() const { return *entry_; }
  const std::string& name() const { return entry_->display_name; }

  // Loads the module into the calling thread's current context on first use
  // there (cuModuleLoadData, shared-memory attribute set once) and launches
  // on `stream` with the threads and dynamic shared memory recorded in the
  // module's launch info. No synchronization, no allocation after the first
  // launch in a context. Throws Error(kDriver).
  void launch(unsigned grid_x, unsigned grid_y, unsigned grid_z, CuStream stream, void** args);

  // Threads per block and dynamic shared memory, from the launch info.
  // Loads the module into the current context if needed.
  unsigned threads();
  unsigned smem_bytes();

 private:
  struct Loaded {
    CuContext ctx = nullptr;
    unsigned long long ctx_id = 0;  // Driver::context_id: never reused
    CuModule module = nullptr;
    CuFunction fn = nullptr;
    unsigned threads = 0;
    unsigned smem = 0;
  };
  const Loaded& loaded_for_current_context();
  std::unique_ptr<Loaded> load_into(CuContext ctx);

  std::shared_ptr<const CacheEntry> entry_;
  std::mutex mutex_;  // held only to search or append loaded_
  // One per context; few, searched linearly. Heap nodes so that a reference
  // handed out stays valid while another context appends.
  std::vector<std::unique_ptr<const Loaded>> loaded_;
};

}  // namespace attnjit

#pragma GCC visibility pop
