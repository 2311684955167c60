// The CUDA Driver API through dlopen (no link dependency on libcuda).
//
// <cuda.h> is included for types, enums and the prototypes that decltype
// turns into function-pointer types; no driver function is called directly,
// so nothing here links libcuda. Entry points are resolved with
// cuGetProcAddress_v2 at the API version whose signatures this file uses
// (CUDA 12.0; none of them changed through 13.x), falling back to dlsym of
// the versioned exported names on a driver without cuGetProcAddress_v2.
#include "attnjit/driver.h"

#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "attnjit/error.h"

namespace attnjit {
namespace {

static_assert(std::is_same_v<CuContext, CUcontext> && std::is_same_v<CuModule, CUmodule> &&
                  std::is_same_v<CuFunction, CUfunction> && std::is_same_v<CuStream, CUstream> &&
                  std::is_same_v<CuDevicePtr, CUdeviceptr>,
              "driver.h's handles must be the driver's own types");

// The driver API version whose signatures the pointers below have.
constexpr int kApiVersion = 12000;
constexpr const char* kDefaultLibrary = "libcuda.so.1";
constexpr const char* kFallbackLibrary = "libcuda.so";
constexpr const char* kNoDriverHint =
    "launching kernels needs an NVIDIA driver; spec parsing, code generation "
    "and cache building work without one";

struct DriverApi {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleGetGlobal) module_get_global = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemsetD8) memset_d8 = nullptr;
  // Optional (resolved after the others, may stay null).
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;
};

using GetProcAddress = decltype(&::cuGetProcAddress_v2);

std::atomic<bool> g_driver_loaded{false};

std::string dlerror_text(const std::string& path) {
  const char* text = dlerror();
  std::string message = text ? text : "unknown dlopen error";
  // glibc already starts the message with the path; other loaders may not.
  if (message.compare(0, path.size(), path) == 0) return message;
  return path + ": " + message;
}

}  // namespace

struct Driver::Impl {
  std::once_flag once;
  std::string load_error;  // non-empty: the driver is unusable
  std::string library;     // the path that was opened
  void* handle = nullptr;
  GetProcAddress get_proc_address = nullptr;
  DriverApi api;

  std::mutex mutex;  // guards the two members below
  CUcontext primary = nullptr;
  std::vector<DeviceInfo> devices;  // by ordinal; ordinal -1 = not queried

  void load();
  bool open_library();
  bool resolve_all();
  void ensure() {
    std::call_once(once, [this] { load(); });
    if (!load_error.empty()) throw Error(ErrorKind::kDriver, load_error);
  }

  template <typename Fn>
  bool resolve(const char* name, const char* exported, Fn& out);
  void* lookup(const char* name, const char* exported);

  std::string describe(CUresult result) const;
  [[noreturn]] void fail(const std::string& call, CUresult result) const {
    throw Error(ErrorKind::kDriver, fmt::format("{} failed: {}", call, describe(result)));
  }
  void check(CUresult result, const char* call) const {
    if (result != CUDA_SUCCESS) fail(call, result);
  }
  class ScopedContext;
};

void* Driver::Impl::lookup(const char* name, const char* exported) {
  if (get_proc_address) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult result =
        get_proc_address(name, &fn, kApiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    if (result == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && fn) return fn;
  }
  return dlsym(handle, exported);
}

template <typename Fn>
bool Driver::Impl::resolve(const char* name, const char* exported, Fn& out) {
  out = reinterpret_cast<Fn>(lookup(name, exported));
  if (out) return true;
  load_error = fmt::format(
      "the CUDA driver {} lacks {} (attnjit needs a driver for CUDA 12.0 or "
      "newer)",
      library, exported);
  return false;
}

bool Driver::Impl::open_library() {
  const char* override_path = std::getenv("ATTNJIT_LIBCUDA");
  bool overridden = override_path && *override_path;
  library = overridden ? override_path : kDefaultLibrary;
  handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle) return true;
  std::string reason = dlerror_text(library);
  if (!overridden) {
    handle = dlopen(kFallbackLibrary, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library = kFallbackLibrary;
      return true;
    }
  }
  load_error = fmt::format("cannot load the CUDA driver ({}): {}", reason, kNoDriverHint);
  return false;
}

bool Driver::Impl::resolve_all() {
  DriverApi& a = api;
  return resolve("cuDeviceGet", "cuDeviceGet", a.device_get) &&
         resolve("cuDeviceGetCount", "cuDeviceGetCount", a.device_get_count) &&
         resolve("cuDeviceGetName", "cuDeviceGetName", a.device_get_name) &&
         resolve("cuDeviceGetAttribute", "cuDeviceGetAttribute", a.device_get_attribute) &&
         resolve("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", a.primary_ctx_retain) &&
         resolve("cuCtxGetCurrent", "cuCtxGetCurrent", a.ctx_get_current) &&
         resolve("cuCtxSetCurrent", "cuCtxSetCurrent", a.ctx_set_current) &&
         resolve("cuCtxGetDevice", "cuCtxGetDevice", a.ctx_get_device) &&
         resolve("cuCtxPushCurrent", "cuCtxPushCurrent_v2", a.ctx_push_current) &&
         resolve("cuCtxPopCurrent", "cuCtxPopCurrent_v2", a.ctx_pop_current) &&
         resolve("cuCtxSynchronize", "cuCtxSynchronize", a.ctx_synchronize) &&
         resolve("cuModuleLoadData", "cuModuleLoadData", a.module_load_data) &&
         resolve("cuModuleUnload", "cuModuleUnload", a.module_unload) &&
         resolve("cuModuleGetFunction", "cuModuleGetFunction", a.module_get_function) &&
         resolve("cuModuleGetGlobal", "cuModuleGetGlobal_v2", a.module_get_global) &&
         resolve("cuFuncSetAttribute", "cuFuncSetAttribute", a.func_set_attribute) &&
         resolve("cuLaunchKernelEx", "cuLaunchKernelEx", a.launch_kernel_ex) &&
         resolve("cuMemAlloc", "cuMemAlloc_v2", a.mem_alloc) &&
         resolve("cuMemFree", "cuMemFree_v2", a.mem_free) &&
         resolve("cuMemcpyHtoD", "cuMemcpyHtoD_v2", a.memcpy_htod) &&
         resolve("cuMemcpyDtoH", "cuMemcpyDtoH_v2", a.memcpy_dtoh) &&
         resolve("cuMemsetD8", "cuMemsetD8_v2", a.memset_d8);
}

// Runs once. Leaves load_error set on any failure; never throws.
void Driver::Impl::load() {
  if (!open_library()) return;
  // Resolved directly: needed before (and to report) a failing cuInit.
  api.get_error_name =
      reinterpret_cast<decltype(api.get_error_name)>(dlsym(handle, "cuGetErrorName"));
  api.get_error_string =
      reinterpret_cast<decltype(api.get_error_string)>(dlsym(handle, "cuGetErrorString"));
  api.init = reinterpret_cast<decltype(api.init)>(dlsym(handle, "cuInit"));
  get_proc_address = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!api.init) {
    load_error = fmt::format("the CUDA driver {} lacks cuInit: {}", library, kNoDriverHint);
    return;
  }
  CUresult result = api.init(0);
  if (result != CUDA_SUCCESS) {
    load_error = fmt::format("cuInit failed: {}", describe(result));
    return;
  }
  if (!resolve_all()) return;
  // Optional: only the TMA kernels need it; its absence is reported when
  // one is launched (Driver::encode_tensor_map).
  api.tensor_map_encode_tiled = reinterpret_cast<decltype(api.tensor_map_encode_tiled)>(
      lookup("cuTensorMapEncodeTiled", "cuTensorMapEncodeTiled"));
  g_driver_loaded.store(true, std::memory_order_release);
}

std::string Driver::Impl::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name) api.get_error_name(result, &name);
  if (api.get_error_string) api.get_error_string(result, &text);
  std::string shown_name = name ? name : fmt::format("CUDA_ERROR_{}", static_cast<int>(result));
  return fmt::format("{} ({})", shown_name, text ? text : "no description");
}

// Makes `ctx` current for a scope when it is not already.
class Driver::Impl::ScopedContext {
 public:
  ScopedContext(const Impl& impl, CUcontext ctx) : api_(impl.api) {
    CUcontext current = nullptr;
    impl.check(api_.ctx_get_current(&current), "cuCtxGetCurrent");
    if (current == ctx) return;
    impl.check(api_.ctx_push_current(ctx), "cuCtxPushCurrent");
    pushed_ = true;
  }
  ~ScopedContext() {
    CUcontext popped = nullptr;
    if (pushed_) api_.ctx_pop_current(&popped);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const DriverApi& api_;
  bool pushed_ = false;
};

Driver::Driver() : impl_(new Impl) {}

Driver& Driver::get() {
  // Never destroyed: kernels unloaded from static destructors may still
  // need it.
  static Driver* instance = new Driver();
  instance->impl_->ensure();
  return *instance;
}

bool Driver::loaded() noexcept { return g_driver_loaded.load(std::memory_order_acquire); }

bool Driver::available(std::string* why) {
  try {
    Driver& driver = get();
    int count = 0;
    CUresult result = driver.impl_->api.device_get_count(&count);
    if (result != CUDA_SUCCESS) {
      if (why) *why = "cuDeviceGetCount failed: " + driver.impl_->describe(result);
      return false;
    }
    if (count == 0) {
      if (why) *why = "the CUDA driver reports no device";
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    try {
      if (why) *why = e.what();
    } catch (...) {
    }
    return false;
  } catch (...) {
    return false;
  }
}

CuContext Driver::current_or_primary_context() {
  const DriverApi& api = impl_->api;
  CUcontext ctx = nullptr;
  impl_->check(api.ctx_get_current(&ctx), "cuCtxGetCurrent");
  if (ctx) return ctx;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->primary) {
    CUdevice device = 0;
    impl_->check(api.device_get(&device, 0), "cuDeviceGet");
    CUcontext primary = nullptr;
    impl_->check(api.primary_ctx_retain(&primary, device), "cuDevicePrimaryCtxRetain");
    impl_->primary = primary;  // retained for the life of the process
  }
  impl_->check(api.ctx_set_current(impl_->primary), "cuCtxSetCurrent");
  return impl_->primary;
}

DeviceInfo Driver::device_of(CuContext ctx) {
  const DriverApi& api = impl_->api;
  CUdevice device = 0;
  {
    Impl::ScopedContext scope(*impl_, ctx);
    impl_->check(api.ctx_get_device(&device), "cuCtxGetDevice");
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& devices = impl_->devices;
  size_t ordinal = static_cast<size_t>(device);
  if (ordinal < devices.size() && devices[ordinal].ordinal >= 0) return devices[ordinal];
  auto attribute = [&](CUdevice_attribute which, const char* what) {
    int value = 0;
    CUresult result = api.device_get_attribute(&value, which, device);
    if (result != CUDA_SUCCESS) impl_->fail(fmt::format("cuDeviceGetAttribute({})", what), result);
    return value;
  };
  DeviceInfo info;
  info.ordinal = static_cast<int>(device);
  info.major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major");
  info.minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor");
  info.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  info.max_smem_optin = static_cast<size_t>(attribute(
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "max shared memory per block opt-in"));
  char name[256] = {};
  impl_->check(api.device_get_name(name, sizeof(name) - 1, device), "cuDeviceGetName");
  info.name = name;
  if (devices.size() <= ordinal) devices.resize(ordinal + 1);
  devices[ordinal] = info;
  return info;
}

CuModule Driver::load_module(CuContext ctx, const std::string& cubin) {
  if (cubin.empty()) throw Error(ErrorKind::kDriver, "cuModuleLoadData: the cubin is empty");
  Impl::ScopedContext scope(*impl_, ctx);
  CUmodule module = nullptr;
  impl_->check(impl_->api.module_load_data(&module, cubin.data()), "cuModuleLoadData");
  return module;
}

void Driver::unload_module(CuContext ctx, CuModule module) noexcept {
  if (!module) return;
  try {
    Impl::ScopedContext scope(*impl_, ctx);
    impl_->api.module_unload(module);
  } catch (...) {
    // The context may be gone already; there is nothing left to free.
  }
}

CuFunction Driver::get_function(CuModule module, const std::string& name) {
  CUfunction fn = nullptr;
  CUresult result = impl_->api.module_get_function(&fn, module, name.c_str());
  if (result != CUDA_SUCCESS) impl_->fail(fmt::format("cuModuleGetFunction({})", name), result);
  return fn;
}

void Driver::read_global(CuContext ctx, CuModule module, const std::string& name, void* dst,
                         size_t bytes) {
  const DriverApi& api = impl_->api;
  Impl::ScopedContext scope(*impl_, ctx);
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CUresult result = api.module_get_global(&ptr, &size, module, name.c_str());
  if (result != CUDA_SUCCESS) impl_->fail(fmt::format("cuModuleGetGlobal({})", name), result);
  if (size < bytes)
    throw Error(ErrorKind::kDriver,
                fmt::format("global {} has {} bytes, expected at least {}", name, size, bytes));
  impl_->check(api.memcpy_dtoh(dst, ptr, bytes), "cuMemcpyDtoH");
}

void Driver::set_max_dynamic_smem(CuFunction fn, int bytes) {
  CUresult result =
      impl_->api.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (result != CUDA_SUCCESS)
    impl_->fail(fmt::format("cuFuncSetAttribute(max dynamic shared memory = "
                            "{} bytes)",
                            bytes),
                result);
}

void Driver::encode_tensor_map(TensorMapBytes& map, const TiledTensor& t) {
  // CUDA 13's header aligns CUtensorMap to 128 bytes, 12.x's to 64.
  static_assert(sizeof(TensorMapBytes) == sizeof(CUtensorMap) &&
                    alignof(TensorMapBytes) % alignof(CUtensorMap) == 0,
                "TensorMapBytes must hold a CUtensorMap");
  if (!impl_->api.tensor_map_encode_tiled) {
    throw Error(ErrorKind::kDriver,
                fmt::format("the CUDA driver {} lacks cuTensorMapEncodeTiled, which the sm_90a "
                            "kernels need (a driver for CUDA 12.0 or newer)",
                            impl_->library));
  }
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  switch (t.swizzle_bytes) {
    case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
    case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
    default: break;
  }
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  // L2 promotion of 128 bytes, one box row (a swizzle chunk of at most 128
  // bytes): with 256 the decodes were L2-bound and 2-8% slower on the
  // H200, prefills level (docs/tuning.md, "Chosen by the runtime").
  const CUresult result = impl_->api.tensor_map_encode_tiled(
      reinterpret_cast<CUtensorMap*>(&map),
      t.element == TiledElement::kBF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
      : t.element == TiledElement::kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                        : CU_TENSOR_MAP_DATA_TYPE_UINT8,
      cuuint32_t(t.rank), const_cast<void*>(t.base), t.dims, t.strides, t.box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    const int n = t.rank;
    impl_->fail(fmt::format("cuTensorMapEncodeTiled(dims {}, byte strides {}, box {}, swizzle {} B)",
                            fmt::join(t.dims, t.dims + n, "x"),
                            fmt::join(t.strides, t.strides + n - 1, " "),
                            fmt::join(t.box, t.box + n, "x"), t.swizzle_bytes),
                result);
  }
}

void Driver::launch(CuFunction fn, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                    unsigned block_x, unsigned smem_bytes, CuStream stream, void** args) {
  CUlaunchConfig config{};
  config.gridDimX = grid_x;
  config.gridDimY = grid_y;
  config.gridDimZ = grid_z;
  config.blockDimX = block_x;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = smem_bytes;
  config.hStream = stream;
  config.attrs = nullptr;
  config.numAttrs = 0;
  CUresult result = impl_->api.launch_kernel_ex(&config, fn, args, nullptr);
  if (result != CUDA_SUCCESS) impl_->fail("cuLaunchKernelEx", result);
}

CuDevicePtr Driver::mem_alloc(size_t bytes) {
  current_or_primary_context();
  CUdeviceptr ptr = 0;
  CUresult result = impl_->api.mem_alloc(&ptr, bytes);
  if (result != CUDA_SUCCESS) impl_->fail(fmt::format("cuMemAlloc({} bytes)", bytes), result);
  return ptr;
}

void Driver::mem_free(CuDevicePtr ptr) noexcept {
  if (ptr) impl_->api.mem_free(ptr);
}

void Driver::copy_to_device(CuDevicePtr dst, const void* src, size_t bytes) {
  current_or_primary_context();
  impl_->check(impl_->api.memcpy_htod(dst, src, bytes), "cuMemcpyHtoD");
}

void Driver::copy_to_host(void* dst, CuDevicePtr src, size_t bytes) {
  current_or_primary_context();
  impl_->check(impl_->api.memcpy_dtoh(dst, src, bytes), "cuMemcpyDtoH");
}

void Driver::memset_d8(CuDevicePtr dst, unsigned char value, size_t bytes) {
  current_or_primary_context();
  impl_->check(impl_->api.memset_d8(dst, value, bytes), "cuMemsetD8");
}

void Driver::memset_d8_async(CuDevicePtr dst, unsigned char value, size_t bytes, CuStream stream) {
  using MemsetAsync = CUresult (*)(CUdeviceptr, unsigned char, size_t, CUstream);
  static const MemsetAsync memset_async = reinterpret_cast<MemsetAsync>(symbol("cuMemsetD8Async"));
  if (memset_async == nullptr) {
    throw Error(ErrorKind::kDriver, "the CUDA driver has no cuMemsetD8Async");
  }
  current_or_primary_context();
  impl_->check(memset_async(dst, value, bytes, stream), "cuMemsetD8Async");
}

void Driver::synchronize() {
  current_or_primary_context();
  impl_->check(impl_->api.ctx_synchronize(), "cuCtxSynchronize");
}

void* Driver::symbol(const char* name) { return impl_->lookup(name, name); }

bool Driver::stream_capturing(CuStream stream) {
  using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
  static const IsCapturing is_capturing =
      reinterpret_cast<IsCapturing>(symbol("cuStreamIsCapturing"));
  if (is_capturing == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  impl_->check(is_capturing(stream, &status), "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

unsigned long long Driver::context_id(CuContext ctx) {
  // cuCtxGetId (CUDA 12.0+) gives an id that is never reused, unlike the
  // handle, which a context created after another was destroyed may get.
  using GetId = CUresult (*)(CUcontext, unsigned long long*);
  static const GetId get_id = reinterpret_cast<GetId>(symbol("cuCtxGetId"));
  if (get_id == nullptr) return reinterpret_cast<uintptr_t>(ctx);
  unsigned long long id = 0;
  impl_->check(get_id(ctx, &id), "cuCtxGetId");
  return id;
}

namespace {

// The calling thread's current context's device and the target it runs
// best, queried once per context (ids start at 1, so 0 is "none yet").
struct CurrentDevice {
  unsigned long long id = 0;
  int sm_count = 0;
  Target target;
};

const CurrentDevice& current_device() {
  thread_local CurrentDevice cached;
  Driver& driver = Driver::get();
  const CuContext ctx = driver.current_or_primary_context();
  const unsigned long long id = driver.context_id(ctx);
  if (id != cached.id) {
    const DeviceInfo info = driver.device_of(ctx);
    CurrentDevice fresh;
    fresh.target = target_for_device(info.major, info.minor);  // throws below 8.0
    fresh.sm_count = info.sm_count;
    fresh.id = id;
    cached = fresh;
  }
  return cached;
}

}  // namespace

Target current_device_target() { return current_device().target; }

int current_device_sm_count() { return current_device().sm_count; }

}  // namespace attnjit
