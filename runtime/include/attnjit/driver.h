// The CUDA Driver API, opened with dlopen on first use: nothing in attnjit
// links libcuda, so specs, codegen, NVRTC and the cache work on a machine
// without a driver. The first call that needs the driver loads it; if that
// fails, every such call throws Error(kDriver) with the dlopen message
// ("libcuda.so.1: cannot open shared object ...").
// ATTNJIT_LIBCUDA overrides the library path (no fallback is tried then).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "attnjit/target.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

// The driver's own opaque handle types, declared at global scope as
// <cuda.h> does, so that CuStream is CUstream (and cudaStream_t) itself.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;

namespace attnjit {

// Opaque driver handles: the same types as CUcontext, CUmodule, CUfunction,
// CUstream and CUdeviceptr.
using CuContext = ::CUctx_st*;
using CuModule = ::CUmod_st*;
using CuFunction = ::CUfunc_st*;
using CuStream = ::CUstream_st*;
using CuDevicePtr = unsigned long long;

// The 128 bytes of a TMA descriptor (CUtensorMap), as a kernel parameter.
struct alignas(128) TensorMapBytes {
  uint64_t opaque[16] = {};
};

// The element type of a tiled TMA map.
enum class TiledElement { kBF16, kF16, kByte };

// A 3-D or 4-D tensor for a tiled TMA map: dims and box innermost first,
// byte strides of dims 1 .. rank-1 (dim 0 is contiguous). Contiguous k/v
// are [tokens, heads, D]; a paged cache adds the page as a fourth
// dimension: [pages, rows of a page, heads, D]. An fp8 cache is copied as
// bytes (kByte) and converted by the kernel.
struct TiledTensor {
  const void* base = nullptr;
  TiledElement element = TiledElement::kBF16;
  int rank = 3;  // at most 5
  uint64_t dims[5] = {};
  uint64_t strides[4] = {};
  uint32_t box[5] = {};
  int swizzle_bytes = 0;  // 128, 64, 32 or 0 (none)
};

struct DeviceInfo {
  int ordinal = -1;
  int major = 0, minor = 0;
  int sm_count = 0;
  size_t max_smem_optin = 0;  // bytes per block after opting in
  std::string name;
};

class Driver {
 public:
  // The process-wide driver; loads libcuda and calls cuInit once.
  // Throws Error(kDriver) if libcuda is missing or cuInit fails.
  static Driver& get();
  // True if a driver could be loaded and at least one device exists.
  // Never throws.
  static bool available(std::string* why = nullptr);
  // True once libcuda was loaded and initialized in this process; never
  // loads it (for destructors that must not start the driver).
  static bool loaded() noexcept;

  // The current context of the calling thread, or the primary context of
  // device 0 (retained and made current) when there is none.
  CuContext current_or_primary_context();
  // A process-unique id of the context (handles can be reused after a
  // context is destroyed; ids are not).
  unsigned long long context_id(CuContext ctx);
  DeviceInfo device_of(CuContext ctx);

  CuModule load_module(CuContext ctx, const std::string& cubin);
  void unload_module(CuContext ctx, CuModule module) noexcept;
  CuFunction get_function(CuModule module, const std::string& name);
  // Reads a small __device__ global (launch info) from a loaded module.
  void read_global(CuContext ctx, CuModule module, const std::string& name, void* dst,
                   size_t bytes);
  void set_max_dynamic_smem(CuFunction fn, int bytes);
  // cuTensorMapEncodeTiled (a host-side encode, no context needed).
  // Throws Error(kDriver) with the shape if the driver rejects it.
  void encode_tensor_map(TensorMapBytes& map, const TiledTensor& tensor);
  // cuLaunchKernelEx on `stream`; no synchronization, no allocation.
  void launch(CuFunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
              unsigned smem_bytes, CuStream stream, void** args);

  // For tests, benchmarks and the reference check (never on the launch path).
  CuDevicePtr mem_alloc(size_t bytes);
  void mem_free(CuDevicePtr ptr) noexcept;
  void copy_to_device(CuDevicePtr dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, CuDevicePtr src, size_t bytes);
  void memset_d8(CuDevicePtr dst, unsigned char value, size_t bytes);
  // Stream-ordered (and captured into a CUDA graph when the stream is).
  void memset_d8_async(CuDevicePtr dst, unsigned char value, size_t bytes, CuStream stream);
  void synchronize();  // the current context
  // Whether `stream` is being captured into a CUDA graph (false where the
  // driver lacks cuStreamIsCapturing).
  bool stream_capturing(CuStream stream);

  // The raw symbol, for tests that need more (nullptr if absent).
  void* symbol(const char* name);

 private:
  Driver();
  struct Impl;
  Impl* impl_;  // never freed: the driver lives as long as the process
};

// The target that the calling thread's current context (the primary context
// of device 0 when there is none) runs best, e.g. sm_90a on an H100/H200.
// Remembered per thread and context: the device query costs microseconds
// and the kernel memory-hit path must not pay it. Throws Error(kDriver).
Target current_device_target();
// The SMs of that device, remembered the same way.
int current_device_sm_count();

}  // namespace attnjit

#pragma GCC visibility pop
