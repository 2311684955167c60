// The sm_90a warpgroup MMA building blocks in isolation (templates/testing/
// wgmma_probe.cuh): swizzled cp.async tiles, K-major and MN-major
// descriptors, register-A MMAs and the accumulator layout, for every
// chunk width (D = 64, 80, 96, 128, 256) and several key-tile widths,
// compared element by element with a CPU product of the same bf16 inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "attnjit/nvrtc.h"
#include "attnjit/selfcheck.h"
#include "gpu/gpu_test_util.h"

namespace attnjit {
namespace {

struct DeviceBuffer {
  CuDevicePtr ptr = 0;
  explicit DeviceBuffer(size_t bytes) : ptr(Driver::get().mem_alloc(bytes)) {}
  ~DeviceBuffer() { Driver::get().mem_free(ptr); }
};

void run_probe(int d, int bn, uint64_t seed) {
  SCOPED_TRACE(fmt::format("D={} BN={} seed={}", d, bn, seed));
  GeneratedSource source;
  source.name = fmt::format("wgmma_probe_d{}_n{}.cu", d, bn);
  source.entry = "wgmma_probe";
  source.text = fmt::format(
      "#include \"testing/wgmma_probe.cuh\"\n"
      "using T = ::attnjit::types::bf16;\n"
      "extern \"C\" __global__ void __launch_bounds__(128) wgmma_probe(const T* q, const T* k,\n"
      "    const T* v, const T* p, float* s, float* o) {{\n"
      "  ::attnjit::testing::wgmma_probe<{}, {}, T>(q, k, v, p, s, o);\n"
      "}}\n"
      "extern \"C\" __device__ const unsigned wgmma_probe_launch_info[4] = {{128, {}, 1, 0}};\n",
      d, bn, 1024 + (64 + 2 * bn) * d * 2);
  CompileOptions options;
  options.target = parse_target("sm_90a");
  const CompiledKernel compiled = compile_source(source, options);

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  auto fill = [&](size_t n, std::vector<uint16_t>& bits, std::vector<float>& values) {
    bits.resize(n);
    values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      bits[i] = float_to_bf16(normal(rng));
      values[i] = bf16_to_float(bits[i]);
    }
  };
  std::vector<uint16_t> qb, kb, vb, pb;
  std::vector<float> qf, kf, vf, pf;
  fill(size_t(64) * d, qb, qf);
  fill(size_t(bn) * d, kb, kf);
  fill(size_t(bn) * d, vb, vf);
  fill(size_t(64) * bn, pb, pf);

  Driver& drv = Driver::get();
  CuContext ctx = drv.current_or_primary_context();
  DeviceBuffer q(qb.size() * 2), k(kb.size() * 2), v(vb.size() * 2), p(pb.size() * 2);
  DeviceBuffer s(size_t(64) * bn * 4), o(size_t(64) * d * 4);
  drv.copy_to_device(q.ptr, qb.data(), qb.size() * 2);
  drv.copy_to_device(k.ptr, kb.data(), kb.size() * 2);
  drv.copy_to_device(v.ptr, vb.data(), vb.size() * 2);
  drv.copy_to_device(p.ptr, pb.data(), pb.size() * 2);
  drv.memset_d8(s.ptr, 0xff, size_t(64) * bn * 4);  // NaN until written
  drv.memset_d8(o.ptr, 0xff, size_t(64) * d * 4);
  CuModule module = drv.load_module(ctx, compiled.cubin);
  CuFunction fn = drv.get_function(module, "wgmma_probe");
  const int smem = 1024 + (64 + 2 * bn) * d * 2;
  drv.set_max_dynamic_smem(fn, smem);
  void* args[] = {&q.ptr, &k.ptr, &v.ptr, &p.ptr, &s.ptr, &o.ptr};
  drv.launch(fn, 1, 1, 1, 128, unsigned(smem), nullptr, args);
  drv.synchronize();
  std::vector<float> s_host(size_t(64) * bn), o_host(size_t(64) * d);
  drv.copy_to_host(s_host.data(), s.ptr, s_host.size() * 4);
  drv.copy_to_host(o_host.data(), o.ptr, o_host.size() * 4);
  drv.unload_module(ctx, module);

  int bad = 0;
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < bn; ++j) {
      double want = 0;
      for (int c = 0; c < d; ++c) want += double(qf[i * d + c]) * kf[j * d + c];
      const double got = s_host[i * bn + j];
      if (!(std::abs(got - want) <= 1e-3 * (1 + std::abs(want))) && bad++ < 5)
        ADD_FAILURE() << fmt::format("S[{}][{}] = {} want {}", i, j, got, want);
    }
    for (int c = 0; c < d; ++c) {
      double want = 0;
      for (int j = 0; j < bn; ++j) want += double(pf[i * bn + j]) * vf[j * d + c];
      const double got = o_host[i * d + c];
      if (!(std::abs(got - want) <= 1e-3 * (1 + std::abs(want))) && bad++ < 10)
        ADD_FAILURE() << fmt::format("O[{}][{}] = {} want {}", i, c, got, want);
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(WgmmaLayout, SwizzledTilesDescriptorsAndFragments) {
  ATTNJIT_REQUIRE_GPU();
  if (current_device_target() != parse_target("sm_90a")) {
    GTEST_SKIP() << "the warpgroup path needs an sm_90a GPU";
  }
  for (int d : {64, 80, 96, 128, 256}) {
    for (int bn : {16, 64, 128}) {
      if ((64 + 2 * bn) * d * 2 + 1024 > 227 * 1024) continue;
      run_probe(d, bn, testing::fresh_seed());
    }
  }
}

}  // namespace
}  // namespace attnjit
