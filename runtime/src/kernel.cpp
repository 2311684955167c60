// A cached variant, loaded lazily into each CUDA context that launches it.
//
// The launch path looks the context up under a mutex held only for the
// search; after the first launch in a context it allocates nothing.
#include "attnjit/kernel.h"

#include <fmt/format.h>

#include "attnjit/error.h"

namespace attnjit {
namespace {

// Dynamic shared memory above this needs the per-function opt-in.
constexpr unsigned kDefaultSmemLimit = 48 * 1024;
constexpr unsigned kMaxThreadsPerBlock = 1024;
// Contexts a kernel is expected to meet; more only costs a reallocation.
constexpr size_t kExpectedContexts = 8;

}  // namespace

Kernel::Kernel(std::shared_ptr<const CacheEntry> entry) : entry_(std::move(entry)) {
  loaded_.reserve(kExpectedContexts);
}

Kernel::~Kernel() {
  // Unloading must not be what first starts the driver.
  if (!Driver::loaded()) return;
  try {
    Driver& driver = Driver::get();
    for (const auto& loaded : loaded_) driver.unload_module(loaded->ctx, loaded->module);
  } catch (...) {
    // Best effort: the process may be shutting down.
  }
}

std::unique_ptr<Kernel::Loaded> Kernel::load_into(CuContext ctx) {
  Driver& driver = Driver::get();
  const CompiledKernel& kernel = entry_->kernel;
  if (kernel.entry.empty())
    throw Error(ErrorKind::kDriver,
                fmt::format("{}: the cache entry names no entry point", name()));
  auto loaded = std::make_unique<Loaded>();
  loaded->ctx = ctx;
  loaded->ctx_id = driver.context_id(ctx);
  loaded->module = driver.load_module(ctx, kernel.cubin);
  try {
    loaded->fn = driver.get_function(loaded->module, kernel.entry);
    unsigned info[4] = {0, 0, 0, 0};
    driver.read_global(ctx, loaded->module, kernel.entry + "_launch_info", info, sizeof(info));
    if (info[0] == 0 || info[0] > kMaxThreadsPerBlock)
      throw Error(ErrorKind::kDriver,
                  fmt::format("launch info gives {} threads per block", info[0]));
    loaded->threads = info[0];
    loaded->smem = info[1];
    if (loaded->smem > kDefaultSmemLimit)
      driver.set_max_dynamic_smem(loaded->fn, static_cast<int>(loaded->smem));
  } catch (const Error& e) {
    driver.unload_module(ctx, loaded->module);
    throw Error(e.kind(), fmt::format("{}: {}", name(), e.what()));
  }
  return loaded;
}

const Kernel::Loaded& Kernel::loaded_for_current_context() {
  Driver& driver = Driver::get();
  CuContext ctx = driver.current_or_primary_context();
  const unsigned long long id = driver.context_id(ctx);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& loaded : loaded_)
      if (loaded->ctx_id == id) return *loaded;
  }
  // Loaded outside the lock: launches in other contexts go on meanwhile.
  std::unique_ptr<Loaded> fresh = load_into(ctx);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& loaded : loaded_) {
    if (loaded->ctx_id != id) continue;
    Driver::get().unload_module(ctx, fresh->module);  // another thread won
    return *loaded;
  }
  loaded_.push_back(std::move(fresh));
  return *loaded_.back();
}

void Kernel::launch(unsigned grid_x, unsigned grid_y, unsigned grid_z, CuStream stream,
                    void** args) {
  const Loaded& loaded = loaded_for_current_context();
  Driver::get().launch(loaded.fn, grid_x, grid_y, grid_z, loaded.threads, loaded.smem, stream,
                       args);
}

unsigned Kernel::threads() { return loaded_for_current_context().threads; }

unsigned Kernel::smem_bytes() { return loaded_for_current_context().smem; }

}  // namespace attnjit
