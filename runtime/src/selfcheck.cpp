#include "attnjit/selfcheck.h"

#include <algorithm>
#include <array>
#include <climits>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "selfcheck_user.h"

namespace attnjit {
namespace {

// A device allocation that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes == 0 ? 16 : bytes) {
    ptr_ = Driver::get().mem_alloc(bytes_);
  }
  ~DeviceBuffer() { Driver::get().mem_free(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(ptr_);
  }
  template <class T>
  void upload(const std::vector<T>& host) {
    if (!host.empty()) Driver::get().copy_to_device(ptr_, host.data(), host.size() * sizeof(T));
  }
  template <class T>
  std::vector<T> download(size_t count) const {
    std::vector<T> host(count);
    if (count) Driver::get().copy_to_host(host.data(), ptr_, count * sizeof(T));
    return host;
  }
  void poison() { Driver::get().memset_d8(ptr_, 0xFF, bytes_); }

 private:
  size_t bytes_;
  CuDevicePtr ptr_ = 0;
};

std::vector<int32_t> prefix_sums(const std::vector<int>& lengths) {
  std::vector<int32_t> cu(1, 0);
  for (int n : lengths) cu.push_back(cu.back() + n);
  return cu;
}

ReferenceProblem::Sinks to_reference(SinkMode mode) {
  switch (mode) {
    case SinkMode::kNullLogit:
      return ReferenceProblem::Sinks::kNullLogit;
    case SinkMode::kBiasKey0:
      return ReferenceProblem::Sinks::kBiasKey0;
    case SinkMode::kNone:
      break;
  }
  return ReferenceProblem::Sinks::kNone;
}

// Random normal values rounded to the element type; returns the device
// bits and fills `rounded` with the values the reference must use.
std::vector<uint16_t> random_elements(size_t count, DType dtype, std::mt19937_64& rng,
                                      std::vector<float>& rounded) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<uint16_t> bits(count);
  rounded.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const float x = normal(rng);
    bits[i] = dtype == DType::kBF16 ? float_to_bf16(x) : float_to_fp16(x);
    rounded[i] = dtype == DType::kBF16 ? bf16_to_float(bits[i]) : fp16_to_float(bits[i]);
  }
  return bits;
}

ReferenceProblem make_problem(const AttentionFlags& flags, const CheckShape& shape,
                              SinkMode ref_sinks) {
  ReferenceProblem pr;
  pr.num_seqs = int(shape.seqlens_q.size());
  pr.num_heads_q = shape.num_heads_q;
  pr.num_heads_kv = shape.num_heads_kv;
  pr.head_dim = flags.head_dim;
  pr.head_dim_v = flags.head_dim_v;
  pr.cu_seqlens_q = prefix_sums(shape.seqlens_q);
  pr.cu_seqlens_k = prefix_sums(shape.seqlens_k);
  pr.causal = flags.causal;
  if (flags.window) {
    pr.window_left = shape.window_left;
    pr.window_right = shape.window_right;
  }
  pr.sink_mode = to_reference(ref_sinks);
  pr.mm_prefix = flags.mm_prefix;
  pr.mm_clamp = flags.mm_clamp;
  pr.mm_span_offsets.push_back(0);
  for (int b = 0; b < pr.num_seqs; ++b) {
    if (flags.mm_prefix && b < int(shape.spans.size())) {
      for (const auto& [r0, r1] : shape.spans[b]) {
        pr.mm_spans.push_back(r0);
        pr.mm_spans.push_back(r1);
      }
    }
    pr.mm_span_offsets.push_back(int32_t(pr.mm_spans.size() / 2));
  }
  pr.softcap = flags.softcap ? shape.softcap : 0.0;
  return pr;
}

// A paged K/V cache holding the problem's keys (reference.h, PagedKv):
// pages in a shuffled order with NaN spare pages and NaN rows past each
// sequence's keys; sequence 1's first page is sequence 0's (its keys and
// values are made equal first, in pr and the bits). -1 marks table
// entries the kernel must never read.
struct PagedCache {
  int page_size = 0, num_pages = 0, max_pages = 0;
  std::vector<uint16_t> k, v;  // [num_pages, page_size, Hkv, D] (v: Dv)
  std::vector<int32_t> block_table, seqused_k;
};

PagedCache make_paged_cache(ReferenceProblem& pr, std::vector<uint16_t>& k_bits,
                            std::vector<uint16_t>& v_bits, int page_size, std::mt19937_64& rng) {
  const size_t row = size_t(pr.num_heads_kv) * pr.head_dim;  // a token's k
  const size_t row_v =
      size_t(pr.num_heads_kv) * (pr.head_dim_v > 0 ? pr.head_dim_v : pr.head_dim);  // its v
  PagedCache c;
  c.page_size = page_size;
  std::vector<int> pages_of(pr.num_seqs);
  for (int b = 0; b < pr.num_seqs; ++b) {
    const int n_k = pr.cu_seqlens_k[b + 1] - pr.cu_seqlens_k[b];
    c.seqused_k.push_back(n_k);
    pages_of[b] = (n_k + page_size - 1) / page_size;
    c.max_pages = std::max(c.max_pages, pages_of[b]);
  }
  // Prefix sharing: sequence 1 starts with sequence 0's first (full) page.
  const bool share = pr.num_seqs >= 2 && c.seqused_k[0] >= page_size && c.seqused_k[1] >= page_size;
  if (share) {
    const size_t from = size_t(pr.cu_seqlens_k[0]) * row, to = size_t(pr.cu_seqlens_k[1]) * row;
    const size_t n = size_t(page_size) * row;
    std::copy_n(k_bits.begin() + from, n, k_bits.begin() + to);
    std::copy_n(pr.k.begin() + from, n, pr.k.begin() + to);
    const size_t from_v = size_t(pr.cu_seqlens_k[0]) * row_v;
    const size_t to_v = size_t(pr.cu_seqlens_k[1]) * row_v;
    const size_t n_v = size_t(page_size) * row_v;
    std::copy_n(v_bits.begin() + from_v, n_v, v_bits.begin() + to_v);
    std::copy_n(pr.v.begin() + from_v, n_v, pr.v.begin() + to_v);
  }
  int distinct = 0;
  for (int b = 0; b < pr.num_seqs; ++b) distinct += pages_of[b] - (share && b == 1 ? 1 : 0);
  c.num_pages = distinct + 3;  // spare pages stay NaN
  std::vector<int32_t> physical(c.num_pages);
  for (int i = 0; i < c.num_pages; ++i) physical[i] = i;
  std::shuffle(physical.begin(), physical.end(), rng);
  const int stride = c.max_pages + 2;
  c.block_table.assign(size_t(pr.num_seqs) * stride, -1);
  c.k.assign(size_t(c.num_pages) * page_size * row, 0xFFFF);
  c.v.assign(size_t(c.num_pages) * page_size * row_v, 0xFFFF);
  int next = 0;
  for (int b = 0; b < pr.num_seqs; ++b) {
    for (int t = 0; t < pages_of[b]; ++t) {
      const bool shared = share && b == 1 && t == 0;
      const int page = shared ? c.block_table[0] : physical[next++];
      c.block_table[size_t(b) * stride + t] = page;
      const int rows = std::min(page_size, c.seqused_k[b] - t * page_size);
      const size_t token = size_t(pr.cu_seqlens_k[b]) + size_t(t) * page_size;
      const size_t dst = size_t(page) * page_size;
      std::copy_n(k_bits.begin() + token * row, rows * row, c.k.begin() + dst * row);
      std::copy_n(v_bits.begin() + token * row_v, rows * row_v, c.v.begin() + dst * row_v);
    }
  }
  c.max_pages = stride;
  return c;
}

void compare(const ReferenceResult& ref, const std::vector<uint16_t>& o_bits,
             const std::vector<float>& lse, bool with_lse, DType dtype, CheckResult& out) {
  std::vector<double> o(ref.o.size());
  for (size_t i = 0; i < o.size(); ++i) {
    if (o_bits[i] == 0xFFFF) out.output_written = false;
    o[i] = dtype == DType::kBF16 ? bf16_to_float(o_bits[i]) : fp16_to_float(o_bits[i]);
  }
  out.o_error = relative_error(o, ref.o);
  if (!with_lse) return;
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    const double r = ref.lse[i];
    if (std::isinf(r)) {
      if (!(std::isinf(lse[i]) && lse[i] < 0)) out.lse_inf_ok = false;
      continue;
    }
    const double err = std::abs(double(lse[i]) - r);
    if (std::isnan(err)) {
      out.lse_error = err;  // fails every bound
      return;
    }
    out.lse_error = std::max(out.lse_error, err);
  }
}

}  // namespace

bool CheckResult::passed(double bound) const {
  return o_error <= bound && lse_error <= 2e-2 && lse_inf_ok && guard_intact && output_written;
}

double error_bound(DType dtype) { return dtype == DType::kBF16 ? 1e-2 : 3e-3; }

namespace {

// Page sizes 16 to 256 over the standard shapes, and 48 and 192, which
// neither divide nor are multiples of the key tiles of 64 and 128 (the
// TMA boxes are their gcd); then an engine's batch: decodes (one query)
// beside chunks over cached prefixes, a chunk boundary inside a span (its
// cached keys and its keys in the chunk both seen), a sequence of one key
// and one of none.
void add_paged_shapes(std::vector<CheckShape>& shapes) {
  const int sizes[] = {16, 256, 64, 192, 32, 48};
  for (size_t i = 0; i < shapes.size(); ++i) shapes[i].page_size = sizes[i % 6];
  CheckShape mixed{"paged_decode_and_chunks", {1, 1, 300, 1, 0, 1}, {500, 17, 700, 1, 40, 64},
                   8, 2, 127, 0, {}, 2.f};
  mixed.spans = {{{100, 480}}, {}, {{380, 450}, {600, 650}}, {}, {}, {{0, 63}}};
  mixed.page_size = 16;
  shapes.push_back(mixed);
  mixed.name = "paged_decode_and_chunks_p128";
  mixed.page_size = 128;
  shapes.push_back(mixed);
}

// Decode batches (split-KV): one query per sequence mostly, three in one
// (a speculative step), contexts of 0, 1 and 7 keys up to 32768, GQA 8 so
// a kv head's eight query heads share its tile; a window of a few tiles; a
// span holding the query and one ending at it. Split counts: the
// library's, none, two, and the most (128, cut to the keys' tiles).
void add_decode_shapes(std::vector<CheckShape>& shapes) {
  CheckShape decode{"decode", {1, 1, 3, 0, 1, 1, 1, 1}, {1, 600, 5000, 7, 0, 64, 32768, 7},
                    16, 2, 300, 0, {}, 2.f};
  decode.spans = {{}, {}, {{4500, 4998}}, {}, {}, {{0, 63}}, {{32000, 32767}}, {}};
  const std::pair<const char*, int> splits[] = {
      {"decode_auto", 0}, {"decode_split1", 1}, {"decode_split2", 2}, {"decode_split_max", 128}};
  for (const auto& [name, count] : splits) {
    decode.name = name;
    decode.num_splits = count;
    shapes.push_back(decode);
    // The 32768-key context once: the fp64 reference pays for every key.
    decode.seqlens_k[6] = 2500;
    decode.spans[6] = {{2000, 2499}};
  }
}

}  // namespace

std::vector<CheckShape> standard_check_shapes(const AttentionFlags& flags) {
  std::vector<CheckShape> shapes;
  // Ragged batch: lengths 0 and 1 and off the tile, GQA 4, a window smaller
  // than a tile, spans at the start, across a tile edge, adjacent.
  CheckShape ragged{"ragged_gqa4", {0, 1, 77, 200}, {0, 1, 77, 200}, 4, 1, 5, 3, {}, 2.f};
  ragged.spans = {
      {}, {{0, 0}}, {{0, 9}, {60, 70}}, {{0, 9}, {60, 70}, {100, 190}, {191, 195}, {196, 199}}};
  shapes.push_back(ragged);
  // q shorter than k (bottom-right), GQA 8, a window of 0 on the left and
  // unbounded on the right, a span longer than the window; a chunk of 128
  // queries (whole 64- and 128-row tiles of one head).
  CheckShape chunked{"q_shorter_gqa8", {17, 64, 128}, {150, 194, 300}, 8, 1, 0, -1, {}, 2.f};
  chunked.spans = {{{120, 149}}, {{0, 3}, {130, 193}}, {{150, 200}, {240, 299}}};
  shapes.push_back(chunked);
  // MHA, one long sequence, windows larger than the sequence, the right one
  // INT_MAX (position + window must not wrap in the kernel's tile range).
  CheckShape mha{"mha_long_window", {257}, {257}, 2, 2, 300, INT_MAX, {}, 2.f};
  mha.spans = {{{31, 33}, {64, 127}, {128, 200}}};
  shapes.push_back(mha);
  // Windows of a few tiles on both sides; a sequence with no keys; a
  // group of 3 (no power of two: packed rows split by a true multiply).
  CheckShape mixed{"window_tiles_empty_k", {5, 140}, {0, 300}, 6, 2, 70, 20, {}, 2.f};
  mixed.spans = {{}, {{10, 150}, {290, 299}}};
  shapes.push_back(mixed);
  if (!flags.window) {
    // Window sizes are ignored without the flag; keep one shape each.
    shapes.resize(3);
  }
  add_decode_shapes(shapes);
  if (flags.kv_layout == KvLayout::kPaged) add_paged_shapes(shapes);
  return shapes;
}

namespace {

CheckResult run_check(const AttentionFlags& flags, const CheckShape& shape, uint64_t seed,
                      KernelCache& cache, std::optional<SinkMode> reference_sinks,
                      const std::map<std::string, int64_t>& tuning_overrides,
                      CheckTier tier, const UserCheck* user, const Schedule& schedule);

}  // namespace

CheckResult check_attention(const AttentionFlags& flags, const CheckShape& shape, uint64_t seed,
                            KernelCache& cache, std::optional<SinkMode> reference_sinks,
                            const std::map<std::string, int64_t>& tuning_overrides,
                            CheckTier tier, const Schedule& schedule) {
  return run_check(flags, shape, seed, cache, reference_sinks, tuning_overrides, tier, nullptr,
                   schedule);
}

CheckResult check_user_attention(std::shared_ptr<const Spec> spec, const AttentionFlags& flags,
                                 const CheckShape& shape, uint64_t seed,
                                 const std::vector<UserCheckArg>& user_args, KernelCache& cache,
                                 CheckTier tier, const Schedule& schedule) {
  if (flags.kv_layout != KvLayout::kContiguous) {
    throw Error(ErrorKind::kArgument, "check_user_attention: contiguous K/V only");
  }
  const UserCheck user{std::move(spec), &user_args};
  return run_check(flags, shape, seed, cache, std::nullopt, {}, tier, &user, schedule);
}

namespace {

CheckResult run_check(const AttentionFlags& flags, const CheckShape& shape, uint64_t seed,
                      KernelCache& cache, std::optional<SinkMode> reference_sinks,
                      const std::map<std::string, int64_t>& tuning_overrides,
                      CheckTier tier, const UserCheck* user, const Schedule& schedule) {
  const SinkMode ref_sinks = reference_sinks.value_or(flags.sinks);
  ReferenceProblem pr = make_problem(flags, shape, ref_sinks);
  const int D = flags.head_dim;
  const int DV = flags.value_head_dim();  // of v and o
  const int total_q = pr.cu_seqlens_q.back();
  const int total_k = pr.cu_seqlens_k.back();
  std::mt19937_64 rng(seed);
  const auto q_bits = random_elements(size_t(total_q) * pr.num_heads_q * D, flags.dtype, rng, pr.q);
  auto k_bits = random_elements(size_t(total_k) * pr.num_heads_kv * D, flags.dtype, rng, pr.k);
  auto v_bits = random_elements(size_t(total_k) * pr.num_heads_kv * DV, flags.dtype, rng, pr.v);
  // fp8 K/V: each value quantized to e4m3 (its byte kept in the 16-bit
  // slot until upload), the reference on the dequantized values; scales
  // away from 1 so a missing one shows.
  const bool fp8 = flags.kv_dtype == KvDType::kFp8E4M3;
  const float k_scale = 0.75f, v_scale = 1.5f;
  if (fp8) {
    for (size_t i = 0; i < k_bits.size(); ++i) {
      k_bits[i] = float_to_e4m3(pr.k[i] * 2.f);
      pr.k[i] = e4m3_to_float(uint8_t(k_bits[i])) * k_scale;
      v_bits[i] = float_to_e4m3(pr.v[i] * 2.f);
      pr.v[i] = e4m3_to_float(uint8_t(v_bits[i])) * v_scale;
    }
  }
  // k and v hold NaN rows past the last sequence's keys, counted in
  // total_k, as a buffer sized for more tokens than this batch has: a
  // kernel that lets them into a product (0 * NaN) returns NaN.
  constexpr int kNanRows = 40;
  k_bits.resize(k_bits.size() + size_t(kNanRows) * pr.num_heads_kv * D, 0xFFFF);
  v_bits.resize(v_bits.size() + size_t(kNanRows) * pr.num_heads_kv * DV, 0xFFFF);
  std::uniform_real_distribution<float> uniform(-1.f, 3.f);
  pr.sinks.resize(pr.num_heads_q);
  for (float& s : pr.sinks) s = uniform(rng);
  const bool paged = flags.kv_layout == KvLayout::kPaged;
  PagedCache pages;
  if (paged) pages = make_paged_cache(pr, k_bits, v_bits, shape.page_size, rng);
  std::shared_ptr<AttentionKernel> kernel;
  if (user != nullptr) {
    kernel = AttentionKernel::get_user(user->spec,
                                       resolve_flags(*user->spec, flags.to_flag_map(schedule)),
                                       cache);
    add_user_expressions(*user, pr);
  } else if (schedule == Schedule{}) {
    kernel = AttentionKernel::get(flags, cache, nullptr, tuning_overrides);
  } else {
    kernel = AttentionKernel::get(flags.to_flag_set(schedule), cache, nullptr, tuning_overrides);
  }
  CheckResult result;
  result.shape = shape.name;

  constexpr int kGuardRows = 16;
  const size_t o_elems = size_t(total_q) * pr.num_heads_q * DV;
  const size_t guard_elems = size_t(kGuardRows) * pr.num_heads_q * DV;
  const std::vector<uint16_t>& k_data = paged ? pages.k : k_bits;
  const std::vector<uint16_t>& v_data = paged ? pages.v : v_bits;
  // fp8: one byte per element; the NaN filler (0xFFFF) becomes e4m3 NaN.
  const auto bytes_of = [](const std::vector<uint16_t>& bits) {
    std::vector<uint8_t> out(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) out[i] = bits[i] == 0xFFFF ? 0x7F : uint8_t(bits[i]);
    return out;
  };
  DeviceBuffer q(q_bits.size() * 2), k(k_data.size() * 2), v(v_data.size() * 2),
      scales(8),
      o((o_elems + guard_elems) * 2), lse((size_t(pr.num_heads_q) * total_q + 64) * 4),
      sinks(pr.sinks.size() * 4), cu_q(pr.cu_seqlens_q.size() * 4),
      cu_k(pr.cu_seqlens_k.size() * 4), offsets(pr.mm_span_offsets.size() * 4),
      spans(pr.mm_spans.size() * 4 + 8), table(pages.block_table.size() * 4 + 8),
      seqused(pages.seqused_k.size() * 4 + 8);
  q.upload(q_bits);
  if (fp8) {
    k.upload(bytes_of(k_data));
    v.upload(bytes_of(v_data));
    scales.upload(std::vector<float>{k_scale, v_scale});
  } else {
    k.upload(k_data);
    v.upload(v_data);
  }
  table.upload(pages.block_table);
  seqused.upload(pages.seqused_k);
  sinks.upload(pr.sinks);
  cu_q.upload(pr.cu_seqlens_q);
  cu_k.upload(pr.cu_seqlens_k);
  offsets.upload(pr.mm_span_offsets);
  spans.upload(pr.mm_spans);
  o.poison();
  lse.poison();

  AttentionArgs a;
  a.q = q.as<void>();
  a.k = k.as<void>();
  a.v = v.as<void>();
  a.o = o.as<void>();
  a.lse = lse.as<float>();
  a.sinks = sinks.as<float>();
  a.cu_seqlens_q = cu_q.as<int32_t>();
  a.cu_seqlens_k = cu_k.as<int32_t>();
  a.mm_span_offsets = offsets.as<int32_t>();
  a.mm_spans = spans.as<int32_t>();
  a.q_head_stride = D;
  a.q_row_stride = int64_t(pr.num_heads_q) * D;
  a.o_head_stride = DV;
  a.o_row_stride = int64_t(pr.num_heads_q) * DV;
  a.k_head_stride = D;
  a.k_row_stride = int64_t(pr.num_heads_kv) * D;
  a.v_head_stride = DV;
  a.v_row_stride = int64_t(pr.num_heads_kv) * DV;
  a.num_seqs = pr.num_seqs;
  a.num_heads_q = pr.num_heads_q;
  a.num_heads_kv = pr.num_heads_kv;
  a.total_q = total_q;
  a.total_k = total_k + kNanRows;
  for (int n : shape.seqlens_q) a.max_seqlen_q = std::max(a.max_seqlen_q, n);
  for (int n : shape.seqlens_k) a.max_seqlen_k = std::max(a.max_seqlen_k, n);
  a.softcap = shape.softcap;
  a.window_left = shape.window_left;
  a.window_right = shape.window_right;
  a.num_splits = shape.num_splits;
  if (fp8) {
    a.k_scale = scales.as<float>();
    a.v_scale = scales.as<float>() + 1;
  }
  if (paged) {
    a.cu_seqlens_k = nullptr;  // the paged kernel must not need it
    a.total_k = 0;
    a.block_table = table.as<int32_t>();
    a.seqused_k = seqused.as<int32_t>();
    a.block_table_stride = pages.max_pages;
    a.page_size = pages.page_size;
    a.num_pages = pages.num_pages;
    a.k_page_stride = int64_t(pages.page_size) * a.k_row_stride;
    a.v_page_stride = int64_t(pages.page_size) * a.v_row_stride;
  }
  // The variant this launch runs (the split sibling for a decode). A check is
  // of it unless asked otherwise: where a tier answered (docs/tiers.md),
  // its compile lands first.
  kernel->kernel_for(a);
  if (tier == CheckTier::kSpecialized) kernel->wait_specialized();
  result.variant = kernel->kernel_for(a).name();
  result.source = kernel->source_for(a);
  // A user spec's args: scalars by value, tensors uploaded.
  std::vector<UserArg> user_args;
  std::vector<std::unique_ptr<DeviceBuffer>> user_tensors;
  if (user != nullptr) {
    for (const UserCheckArg& arg : *user->args) {
      if (!arg.ints.empty() || !arg.floats.empty()) {
        const size_t bytes = 4 * (arg.ints.size() + arg.floats.size());
        user_tensors.push_back(std::make_unique<DeviceBuffer>(bytes));
        if (!arg.ints.empty()) user_tensors.back()->upload(arg.ints);
        if (!arg.floats.empty()) user_tensors.back()->upload(arg.floats);
        user_args.push_back(UserArg{arg.name, static_cast<const void*>(
                                                  user_tensors.back()->as<unsigned char>())});
      } else {
        if (user_arg_is_float(*user, arg.name)) {
          user_args.push_back(UserArg{arg.name, arg.float_value});
        } else {
          user_args.push_back(UserArg{arg.name, arg.int_value});
        }
      }
    }
  }
  kernel->launch(a, nullptr, user_args);
  Driver::get().synchronize();

  const auto o_bits = o.download<uint16_t>(o_elems + guard_elems);
  for (size_t i = o_elems; i < o_bits.size(); ++i) {
    if (o_bits[i] != 0xFFFF) result.guard_intact = false;
  }
  const auto lse_out = lse.download<float>(size_t(pr.num_heads_q) * total_q);
  const ReferenceResult ref = reference_attention(pr);
  compare(ref, o_bits, lse_out, flags.return_lse, flags.dtype, result);
  return result;
}

}  // namespace

uint16_t float_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7F;
  // The non-negative finite codes 0..0x7E, whose values increase with the
  // code: the nearest is one of the two around |f| (binary search; a check
  // quantizes millions of values), ties to the even code.
  static const std::array<float, 0x7F> kValues = [] {
    std::array<float, 0x7F> values{};
    for (int code = 0; code < 0x7F; ++code) values[code] = e4m3_to_float(uint8_t(code));
    return values;
  }();
  const uint16_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::min(std::fabs(f), 448.f);  // saturate (no infinities)
  const int hi = int(std::lower_bound(kValues.begin(), kValues.end(), a) - kValues.begin());
  if (hi == 0) return sign;
  const int lo = hi - 1;
  const float err_lo = a - kValues[lo], err_hi = kValues[hi] - a;
  const int best = err_hi < err_lo ? hi : err_lo < err_hi ? lo : (lo % 2 == 0 ? lo : hi);
  return uint16_t(sign | best);
}

float e4m3_to_float(uint8_t byte) {
  const int e = (byte >> 3) & 15, m = byte & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(float(8 + m), e - 10);
  return (byte & 0x80) ? -magnitude : magnitude;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_fp16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {                                  // subnormal or zero in fp16
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.f;  // 2^24: units of the smallest subnormal
    return uint16_t(sign | uint32_t(std::nearbyint(scaled)));
  }
  uint32_t m = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even
  m -= 0x38000000u;                                // rebias 127 -> 15
  return uint16_t(sign | (m >> 13));
}

float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);
  } else if (exp == 31) {
    f = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    const uint32_t u = ((exp + 112) << 23) | (mant << 13);
    std::memcpy(&f, &u, 4);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= sign;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace attnjit
