// A tiny second kernel family for the compiler's tests: y <- a * x (+ y).
// It uses every kind of flag (type, int, bool, enum), a tuning param and the
// template contract of specs/README.md, and compiles in a fraction of a
// second. Its spec is tests/compiler/data/axpy.yaml; it is not a product.
#pragma once

namespace attnjit {
namespace types {
// Guarded so that a shared types header may define the same names.
#ifndef ATTNJIT_TYPES_F32_DEFINED
#define ATTNJIT_TYPES_F32_DEFINED
using f32 = float;
#endif
#ifndef ATTNJIT_TYPES_F64_DEFINED
#define ATTNJIT_TYPES_F64_DEFINED
using f64 = double;
#endif
}  // namespace types

template <class Config>
struct axpy_traits {
  static constexpr unsigned threads = Config::block_threads;
  static constexpr unsigned smem_bytes = 0;  // no dynamic shared memory
  static constexpr unsigned min_blocks = 1;
};

namespace axpy_detail {

// Scratch mode: a local array read at a runtime index, which ptxas must
// place on the stack; the tests use it to see a non-zero stack frame.
template <class T, int kVec>
__device__ void pass_through_scratch(T (&values)[kVec], long long n) {
  T scratch[16] = {};
  const int shift = static_cast<int>(n & 15);
  for (int i = 0; i < 16; ++i) scratch[(i + shift) & 15] = values[0] * T(i + 1);
  values[0] = scratch[(shift + 5) & 15];
}

// Staging: x goes through static shared memory (threads * vec elements).
template <class Config, class T>
__device__ void pass_through_shared(T (&values)[Config::vec]) {
  constexpr int kElems = static_cast<int>(axpy_traits<Config>::threads) * Config::vec;
  __shared__ T staged[kElems];
  for (int i = 0; i < Config::vec; ++i) staged[threadIdx.x * Config::vec + i] = values[i];
  __syncthreads();
  for (int i = 0; i < Config::vec; ++i) values[i] = staged[threadIdx.x * Config::vec + i];
}

}  // namespace axpy_detail

template <class Config, class Params>
__device__ void axpy_body(const Params& params) {
  using T = typename Config::dtype;
  const T* __restrict__ x = params.x;
  T* __restrict__ y = params.y;
  const float a = params.a;
  const long long n = params.n;
  using Mode = typename Config::mode_t;
  static_assert(Config::vec >= 1 && Config::vec <= 4, "axpy: vec must be 1, 2 or 4");
  const long long first =
      (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * Config::vec;
  T values[Config::vec];
  for (int i = 0; i < Config::vec; ++i) values[i] = first + i < n ? x[first + i] : T(0);
  if constexpr (Config::stage_in_smem) axpy_detail::pass_through_shared<Config>(values);
  if constexpr (Config::mode == Mode::scratch) axpy_detail::pass_through_scratch(values, n);
  for (int i = 0; i < Config::vec; ++i) {
    if (first + i >= n) break;
    T result = T(a) * values[i];
    if constexpr (Config::accumulate) result += y[first + i];
    if constexpr (Config::mode == Mode::clamp)
      result = result < T(-1) ? T(-1) : (result > T(1) ? T(1) : result);
    y[first + i] = result;
  }
}

}  // namespace attnjit
