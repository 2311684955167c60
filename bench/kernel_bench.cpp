// Times attnjit's kernels on the peer problems (docs/device.md) with CUDA events:
// median of 20 launches after 3 warm-up ones, useful TFLOP/s over unmasked pairs
// only, the memory floor at the measured copy bandwidth. Peers are timed by
// bench/bench_attention.py in the same run. Writes JSON (argv[1]).
//   attnjit_kernel_bench OUT.json [--tune | --no-tune | --try=CFG;CFG...] [problem,problem,...]
// --tune also times every config of tuning_grid() per problem (the spec's
// rules are built from that, bench/tuning_table.py); --try times the given
// tuning overrides instead (each as $ATTNJIT_TUNING spells one, e.g.
// "block_m=128,block_n=128,warps=8"; the rule fills the rest),
// every config checked against the CPU reference first; the problem list
// restricts the run (bench/device_run.sh's profile stage uses one). After
// them, the user specs that re-express built-in flags (problems.h
// user_problems: causal_expr, sliding_window_expr, key0_bias_expr) in the
// same isolated launches beside the built-in, outputs compared.
#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention/tile_config.h"
#include "attnjit/attention.h"
#include "attnjit/driver.h"
#include "attnjit/selfcheck.h"
#include "attnjit/spec.h"
#include "problems.h"

namespace {

using namespace attnjit;
using EventCreate = int (*)(void**, unsigned);
using EventRecord = int (*)(void*, CuStream);
using EventSync = int (*)(void*);
using EventElapsed = int (*)(float*, void*, void*);

// Random inputs for the timed launches: q, k and v each draw their
// elements independently, element i of tensor `stream` being a table of
// 2^20 normal values read at a hash of (stream, i). Every tensor needs its
// own draws: with q's values reused as k's, each query's own key
// dominates its row of scores, P is nearly one-hot, and the products'
// data is easier than a model's (the tensor cores' power, hence their
// clock, depends on the data).
class RandomNormals {
 public:
  explicit RandomNormals(std::mt19937& rng) : table_(size_t(1) << 20) {
    std::normal_distribution<float> normal;
    for (float& x : table_) x = normal(rng);
  }
  float at(uint64_t stream, uint64_t i) const {
    uint64_t z = i + (stream + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return table_[(z ^ (z >> 31)) & (table_.size() - 1)];
  }

 private:
  std::vector<float> table_;
};

// Visible keys of query position p (docs/semantics.md), as a count.
long long visible_count(const bench::Problem& pr, int p, int n,
                        const std::vector<std::pair<int, int>>& spans) {
  int lo = 0, hi = n - 1;
  if (pr.causal) hi = std::min(hi, p);
  if (pr.window_left >= 0) lo = std::max(lo, p - pr.window_left);
  if (pr.window_right >= 0) hi = std::min(hi, p + pr.window_right);
  long long count = hi >= lo ? hi - lo + 1 : 0;
  for (const auto& [r0, r1] : spans) {
    if (p < r0 || p > r1) continue;
    // A span is bounded by the left window alone (docs/semantics.md).
    const int s_lo = std::max(r0, pr.window_left >= 0 ? p - pr.window_left : r0);
    for (int j = s_lo; j <= r1; ++j) count += (j < lo || j > hi);
  }
  return count;
}

}  // namespace

// Device buffers freed when the scope ends, by an error too (a problem
// that fails must not keep its gigabytes from the next).
struct DeviceBuffers {
  Driver& d;
  std::vector<CuDevicePtr> ptrs;
  explicit DeviceBuffers(Driver& driver) : d(driver) {}
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers() {
    for (CuDevicePtr p : ptrs) d.mem_free(p);
  }
  CuDevicePtr alloc(size_t bytes) {
    ptrs.push_back(d.mem_alloc(bytes));
    return ptrs.back();
  }
};

// A user spec (specs/examples) on the built-in's tensors `a`, in isolated
// launches like the built-in's (`builtin_ms`): its variant of the flags
// with the mask's own flags off, its args as the problem gives them. The
// outputs are compared (the re-expressed mask is the built-in's, so they
// agree to rounding; causal_expr bit for bit). Prints one row.
nlohmann::json time_user_spec(const bench::UserProblem& u, const AttentionFlags& builtin,
                              AttentionArgs a, double builtin_ms,
                              const std::function<double(const std::function<void()>&)>& time) {
  Driver& d = Driver::get();
  auto spec = std::make_shared<const Spec>(
      load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + u.name + ".yaml"));
  AttentionFlags uf = builtin;
  uf.causal = u.causal;
  uf.window = false;
  uf.sinks = SinkMode::kNone;
  const FlagSet own = uf.to_flag_set();
  const std::map<std::string, FlagValue> values(own.values.begin(), own.values.end());
  auto kernel = AttentionKernel::get_user(spec, resolve_flags(*spec, values));
  std::vector<UserArg> args;
  DeviceBuffers buffers(d);
  for (const auto& [name, value] : u.ints) args.push_back({name, int32_t(value)});
  for (const auto& [name, value] : u.per_head) {
    const std::vector<float> host(a.num_heads_q, value);
    const CuDevicePtr slot = buffers.alloc(host.size() * 4);
    d.copy_to_device(slot, host.data(), host.size() * 4);
    args.push_back({name, reinterpret_cast<const void*>(slot)});
  }
  // The built-in's output (launched last by its timing), then the user's
  // into a poisoned buffer of its own.
  const size_t out_bytes = size_t(a.total_q) * a.num_heads_q * builtin.head_dim * 2;
  std::vector<uint16_t> want(out_bytes / 2), got(out_bytes / 2);
  d.synchronize();
  d.copy_to_host(want.data(), reinterpret_cast<CuDevicePtr>(a.o), out_bytes);
  const CuDevicePtr user_o = buffers.alloc(out_bytes);
  d.memset_d8(user_o, 0xff, out_bytes);
  a.sinks = nullptr;
  a.o = reinterpret_cast<void*>(user_o);
  a.window_left = a.window_right = -1;
  // The variant these args run, compiled before the clock (not the VM).
  kernel->kernel_for(a);
  kernel->wait_specialized();
  const double ms = time([&] { kernel->launch(a, nullptr, args); });
  d.synchronize();
  d.copy_to_host(got.data(), user_o, out_bytes);
  double max_diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double diff = std::fabs(double(bf16_to_float(got[i])) - bf16_to_float(want[i]));
    max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
  }
  std::printf("%-26s %10.3f   built-in %s %.3f ms: %+.1f%%, max |o - o_builtin| %.2e  (%s)\n",
              u.name.c_str(), ms, u.builtin.name.c_str(), builtin_ms, (ms / builtin_ms - 1) * 100,
              max_diff, kernel->kernel_for(a).name().c_str());
  return {{"problem", u.name},         {"ms", ms},
          {"builtin", u.builtin.name}, {"builtin_ms", builtin_ms},
          {"max_abs_diff", max_diff},  {"variant", kernel->kernel_for(a).name()}};
}

// The autotuner's search space: mma.sync configs (targets before sm_90a)
// or, on sm_90a, warpgroup configs (64 rows per warpgroup plus the
// producer warpgroup), each kept only if its shared memory fits the blocks
// per SM it asks for (227 KiB per SM on Hopper, 1 KiB reserved per block)
// and, for wgmma, its accumulators (S: BN/2, P: BN/4, O: D/2 registers per
// thread, plus about 30) fit the consumers' registers after the producer
// gave its share back. Shared memory and registers come from the kernels'
// own rule (make_tile_config).
std::vector<std::map<std::string, int64_t>> tuning_grid(int head_dim, bool gqa, bool hopper,
                                                        bool decode) {
  using attention::make_tile_config;
  // A grid point's TileShape (its other fields named where they differ).
  const auto shape = [head_dim](int bm, int warps, int bn, int stages, int min_blocks) {
    return attention::TileShapeBuilder()
        .head_dim(head_dim)
        .block_m(bm)
        .warps(warps)
        .block_n(bn)
        .stages(stages)
        .min_blocks(min_blocks);
  };
  std::vector<std::map<std::string, int64_t>> grid;
  const long smem_limit_decode = 227 * 1024;
  if (decode && hopper) {
    // Split-KV decode: one consumer warpgroup of 64 packed rows; the key
    // tile, the pipeline depth, blocks per SM and the fewest keys a split
    // walks.
    for (int bn : {32, 64, 128}) {
      for (int stages : {2, 3, 4, 6}) {
        for (int min_blocks : {1, 2, 3, 4}) {
          const attention::TileConfig c =
              make_tile_config(shape(64, 4, bn, stages, min_blocks).pack_gqa(1).wgmma(true));
          if (long(c.smem_bytes + 1024) * min_blocks + 1024L * min_blocks > smem_limit_decode) {
            continue;
          }
          if (bn / 2 + bn / 4 + head_dim / 2 + 30 > c.consumer_registers) continue;
          for (int split_keys : {256, 512, 1024}) {
            grid.push_back({{"block_m", 64},
                            {"warps", 4},
                            {"block_n", bn},
                            {"stages", stages},
                            {"min_blocks", min_blocks},
                            {"pack_gqa", 1},
                            {"wgmma", 1},
                            {"split_keys", split_keys},
                            {"decode_mma", 0}});
          }
        }
      }
    }
    return grid;
  }
  auto add = [&](int bm, int warps, int bn, int stages, int min_blocks, int wgmma) {
    for (int pack = 0; pack <= (gqa ? 1 : 0); ++pack) {
      // Every param but split_keys named: a rule's decode_mma must not slip
      // into a config the table then prints without it.
      grid.push_back({{"block_m", bm},
                      {"warps", warps},
                      {"block_n", bn},
                      {"stages", stages},
                      {"min_blocks", min_blocks},
                      {"pack_gqa", pack},
                      {"wgmma", wgmma},
                      {"decode_mma", 0}});
    }
  };
  const long smem_limit = 227 * 1024;
  auto fits = [&](const attention::TileConfig& c) {
    const long min_blocks = c.shape.min_blocks;
    return long(c.smem_bytes) * min_blocks <= smem_limit - min_blocks * 1024;
  };
  std::vector<std::pair<int, int>> ampere_tiles = {{64, 4}, {128, 8}, {128, 4}, {64, 2}};
  if (hopper) ampere_tiles.clear();
  for (auto [bm, warps] : ampere_tiles) {
    for (int bn : {32, 64, 128}) {
      for (int stages : {2, 3}) {
        for (int min_blocks : {1, 2}) {
          if (!fits(make_tile_config(shape(bm, warps, bn, stages, min_blocks)))) continue;
          add(bm, warps, bn, stages, min_blocks, 0);
        }
      }
    }
  }
  if (!hopper) return grid;
  for (int bm : {64, 128, 192}) {
    for (int bn : {16, 32, 64, 80, 96, 128, 176}) {
      // Deep pipelines let a short (windowed) block have all its key tiles
      // in flight at once.
      for (int stages : {2, 3, 4, 6, 8}) {
        for (int min_blocks : {1, 2, 4}) {
          if (bn == 16 && stages < 4) continue;
          const attention::TileConfig c =
              make_tile_config(shape(bm, bm / 16, bn, stages, min_blocks).wgmma(true));
          if (!fits(c)) continue;
          if (bn / 2 + bn / 4 + head_dim / 2 + 30 > c.consumer_registers) continue;
          add(bm, bm / 16, bn, stages, min_blocks, 1);
        }
      }
    }
  }
  return grid;
}

using Configs = std::vector<std::map<std::string, int64_t>>;

// --try=CFG;CFG: tuning overrides, each as $ATTNJIT_TUNING spells one.
Configs parse_tries(const std::string& list) {
  Configs tries;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find(';', at), list.size());
    if (end > at) tries.push_back(parse_tuning_overrides(list.substr(at, end - at), "--try"));
    at = end + 1;
  }
  return tries;
}

// Whether a config passes on the first standard shapes of the flags (fresh
// inputs each), and its largest error.
std::pair<bool, double> check_config(const AttentionFlags& f, const Schedule& schedule,
                                     const std::map<std::string, int64_t>& config) {
  double worst = 0;
  bool passed = true;
  const auto shapes = standard_check_shapes(f);
  for (size_t k = 0; k < shapes.size() && k < 4; ++k) {
    const CheckResult r =
        check_attention(f, shapes[k], 1000 + k, KernelCache::global(), std::nullopt, config,
                        CheckTier::kSpecialized, schedule);
    worst = std::max(worst, r.o_error);
    passed = passed && r.passed(error_bound(f.dtype));
  }
  return {passed, worst};
}

// Each config's kernel, its own variant compiled 16 at a time (a config
// that fails to compile is left out), then timed by time_ms
// (`check`: after check_config, a config that fails it is not timed); the
// best against the default's `ms` is printed. Returns the configs with
// their times (and checks) as JSON.
template <class TimeMs>
nlohmann::json time_configs(const std::string& name, const AttentionFlags& f,
                            const Schedule& schedule,
                            const Configs& configs, bool check, double ms, TimeMs time_ms) {
  std::vector<std::shared_ptr<AttentionKernel>> kernels(configs.size());
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  for (int t = 0; t < 16; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < configs.size(); i = next++) {
        try {
          auto kernel = AttentionKernel::get(f.to_flag_set(schedule), KernelCache::global(),
                                             nullptr, configs[i]);
          kernel->wait_specialized();  // (get() compiles nothing)
          kernels[i] = std::move(kernel);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "config %zu: %s\n", i, e.what());
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  nlohmann::json tuned = nlohmann::json::array();
  double best = ms;
  std::string best_text = "default";
  for (size_t i = 0; i < configs.size(); ++i) {
    if (!kernels[i]) continue;
    nlohmann::json c(configs[i]);
    if (check) {
      const auto [passed, worst] = check_config(f, schedule, configs[i]);
      c["checked_error"] = worst;
      c["checked"] = passed;
      if (!passed) {
        std::printf("  %s %s FAILED its check (rel err %.2e): not timed\n", name.c_str(),
                    c.dump().c_str(), worst);
        tuned.push_back(c);
        continue;
      }
    }
    const double t = time_ms(*kernels[i]);
    if (check) std::printf("  %-24s %.3f ms  %s\n", name.c_str(), t, c.dump().c_str());
    c["ms"] = t;
    tuned.push_back(c);
    if (t < best) {
      best = t;
      best_text = c.dump();
    }
  }
  std::printf("  tuned %-22s best %.3f ms (default %.3f ms): %s\n", name.c_str(), best, ms,
              best_text.c_str());
  return tuned;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool tune = mode == "--tune";
  Configs tries;
  try {
    if (mode.rfind("--try=", 0) == 0) tries = parse_tries(mode.substr(6));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnjit_kernel_bench: %s\n", e.what());
    return 2;
  }
  // Optional third argument: a comma-separated list of problems to run.
  const std::string only = argc > 3 ? "," + std::string(argv[3]) + "," : "";
  std::string why;
  if (!Driver::available(&why)) {
    std::printf("no GPU here (%s)\n", why.c_str());
    return 0;
  }
  Driver& d = Driver::get();
  d.current_or_primary_context();
  auto event_create = reinterpret_cast<EventCreate>(d.symbol("cuEventCreate"));
  auto event_record = reinterpret_cast<EventRecord>(d.symbol("cuEventRecord"));
  auto event_sync = reinterpret_cast<EventSync>(d.symbol("cuEventSynchronize"));
  auto event_elapsed = reinterpret_cast<EventElapsed>(d.symbol("cuEventElapsedTime_v2"));
  if (!event_elapsed)
    event_elapsed = reinterpret_cast<EventElapsed>(d.symbol("cuEventElapsedTime"));
  void *e0, *e1;
  event_create(&e0, 0);
  event_create(&e1, 0);
  const double copy_bw = 4.24e12;  // measured device copy (docs/device.md)

  nlohmann::json results = nlohmann::json::array();
  std::printf("%-26s %10s %10s %10s %10s\n", "problem", "ms", "TFLOP/s", "floor ms", "x floor");
  // The peer and decode problems, then the user specs beside the flags
  // they re-express (selected by the spec's name).
  struct Item {
    bench::Problem pr;
    const bench::UserProblem* user = nullptr;
  };
  std::vector<Item> items;
  for (const bench::Problem& pr : bench::peer_problems()) items.push_back({pr});
  for (const bench::Problem& pr : bench::decode_problems()) items.push_back({pr});
  const std::vector<bench::UserProblem> user_problems = bench::user_problems();
  for (const bench::UserProblem& u : user_problems) items.push_back({u.builtin, &u});
  // One problem: a failure (a launch error, a config that does not
  // compile) is reported and the next problem runs.
  const auto run_item = [&](const Item& item) {
    const bench::Problem& pr = item.pr;
    const std::string& name = item.user ? item.user->name : pr.name;
    const bool decode = pr.seqlen_q > 0;
    const int n_q = decode ? pr.seqlen_q : pr.seqlen;
    if (!only.empty() && only.find("," + name + ",") == std::string::npos) return;
    AttentionFlags f;
    f.head_dim = pr.head_dim;
    f.head_dim_v = pr.head_dim_v;
    const int dv = f.value_head_dim();
    f.causal = pr.causal;
    f.window = pr.window_left >= 0 || pr.window_right >= 0;
    f.sinks = pr.sinks;
    f.mm_prefix = f.mm_clamp = pr.spans;
    // A decode times its split variant (as its launch would pick it).
    const Schedule schedule{decode, false};
    if (pr.kv_fp8) f.kv_dtype = KvDType::kFp8E4M3;
    if (pr.page_size > 0) f.kv_layout = KvLayout::kPaged;
    // Times are the specialized variant's, not a tier's that answers while
    // it compiles (docs/tiers.md): time_ms waits for the one its args run.
    auto kernel = AttentionKernel::get(f.to_flag_set(schedule));
    const int total = pr.batch * pr.seqlen;
    const int total_q = pr.batch * n_q;
    const size_t q_elems = size_t(total_q) * pr.heads_q * pr.head_dim;
    const size_t kv_elems = size_t(total) * pr.heads_kv * pr.head_dim;
    const size_t v_elems = size_t(total) * pr.heads_kv * dv;
    const size_t o_elems = size_t(total_q) * pr.heads_q * dv;
    std::mt19937 rng(1);
    const RandomNormals normals(rng);
    // q, k and v drawn apart (RandomNormals); fp8 K/V: e4m3 bytes of
    // normal values, scales of 1. One host buffer, filled for each in turn.
    const size_t kv_bytes = kv_elems * (pr.kv_fp8 ? 1 : 2);
    const size_t v_bytes = v_elems * (pr.kv_fp8 ? 1 : 2);
    std::vector<uint16_t> host(std::max(q_elems, pr.kv_fp8 ? kv_elems / 2 + 1 : kv_elems));
    const auto upload = [&](CuDevicePtr dst, uint64_t stream, size_t elems, bool fp8) {
      if (fp8) {
        auto* bytes = reinterpret_cast<uint8_t*>(host.data());
        for (size_t i = 0; i < elems; ++i) bytes[i] = uint8_t(float_to_e4m3(normals.at(stream, i)));
        d.copy_to_device(dst, bytes, elems);
      } else {
        for (size_t i = 0; i < elems; ++i) host[i] = float_to_bf16(normals.at(stream, i));
        d.copy_to_device(dst, host.data(), elems * 2);
      }
    };
    DeviceBuffers buffers(d);
    const CuDevicePtr q = buffers.alloc(q_elems * 2), k = buffers.alloc(kv_bytes),
                      v = buffers.alloc(v_bytes), o = buffers.alloc(o_elems * 2),
                      scales = buffers.alloc(2 * sizeof(float));
    upload(q, 0, q_elems, false);
    upload(k, 1, kv_elems, pr.kv_fp8);
    upload(v, 2, v_elems, pr.kv_fp8);
    const float ones[2] = {1.f, 1.f};
    d.copy_to_device(scales, ones, sizeof ones);
    std::vector<int32_t> cu(pr.batch + 1), cu_q(pr.batch + 1), offsets(pr.batch + 1, 0), spans;
    const auto seq_spans =
        pr.spans ? bench::image_spans(pr.seqlen) : std::vector<std::pair<int, int>>{};
    for (int b = 0; b <= pr.batch; ++b) {
      cu[b] = b * pr.seqlen;
      cu_q[b] = b * n_q;
    }
    for (int b = 0; b < pr.batch; ++b) {
      for (auto [r0, r1] : seq_spans) {
        spans.push_back(r0);
        spans.push_back(r1);
      }
      offsets[b + 1] = int(spans.size() / 2);
    }
    const CuDevicePtr cu_d = buffers.alloc(cu.size() * 4), cuq_d = buffers.alloc(cu.size() * 4),
                      off_d = buffers.alloc(offsets.size() * 4),
                      spans_d = buffers.alloc(spans.size() * 4 + 8),
                      sinks_d = buffers.alloc(pr.heads_q * 4);
    d.copy_to_device(cu_d, cu.data(), cu.size() * 4);
    d.copy_to_device(cuq_d, cu_q.data(), cu_q.size() * 4);
    d.copy_to_device(off_d, offsets.data(), offsets.size() * 4);
    if (!spans.empty()) d.copy_to_device(spans_d, spans.data(), spans.size() * 4);
    std::vector<float> sinks(pr.heads_q, 1.f);
    d.copy_to_device(sinks_d, sinks.data(), sinks.size() * 4);

    AttentionArgs a;
    a.q = reinterpret_cast<void*>(q);
    a.k = reinterpret_cast<void*>(k);
    a.v = reinterpret_cast<void*>(v);
    a.o = reinterpret_cast<void*>(o);
    a.sinks = reinterpret_cast<float*>(sinks_d);
    if (pr.kv_fp8) {
      a.k_scale = reinterpret_cast<const float*>(scales);
      a.v_scale = reinterpret_cast<const float*>(scales) + 1;
    }
    a.cu_seqlens_q = reinterpret_cast<int32_t*>(cuq_d);
    a.cu_seqlens_k = reinterpret_cast<int32_t*>(cu_d);
    a.mm_span_offsets = reinterpret_cast<int32_t*>(off_d);
    a.mm_spans = reinterpret_cast<int32_t*>(spans_d);
    a.q_row_stride = int64_t(pr.heads_q) * pr.head_dim;
    a.o_row_stride = int64_t(pr.heads_q) * dv;
    a.k_row_stride = int64_t(pr.heads_kv) * pr.head_dim;
    a.v_row_stride = int64_t(pr.heads_kv) * dv;
    a.q_head_stride = a.k_head_stride = pr.head_dim;
    a.v_head_stride = a.o_head_stride = dv;
    a.num_seqs = pr.batch;
    a.num_heads_q = pr.heads_q;
    a.num_heads_kv = pr.heads_kv;
    a.total_q = total_q;
    a.total_k = total;
    a.max_seqlen_q = n_q;
    a.max_seqlen_k = pr.seqlen;
    a.window_left = pr.window_left;
    a.window_right = pr.window_right;
    // Paged: the same K/V bytes seen as pages of page_size rows (every
    // sequence's keys fill whole pages), each sequence's pages in a
    // shuffled order of the pool.
    if (pr.page_size > 0) {
      // (The pool is the contiguous tensor's rows: whole pages only.)
      if (pr.seqlen % pr.page_size != 0) {
        throw std::runtime_error("a paged problem's keys must fill whole pages");
      }
      const int pages_per_seq = pr.seqlen / pr.page_size;
      std::vector<int32_t> table(size_t(pr.batch) * pages_per_seq), used(pr.batch, pr.seqlen);
      for (size_t i = 0; i < table.size(); ++i) table[i] = int32_t(i);
      std::shuffle(table.begin(), table.end(), rng);
      const CuDevicePtr table_d = buffers.alloc(table.size() * 4),
                        used_d = buffers.alloc(used.size() * 4);
      d.copy_to_device(table_d, table.data(), table.size() * 4);
      d.copy_to_device(used_d, used.data(), used.size() * 4);
      a.block_table = reinterpret_cast<int32_t*>(table_d);
      a.seqused_k = reinterpret_cast<int32_t*>(used_d);
      a.block_table_stride = pages_per_seq;
      a.page_size = pr.page_size;
      a.num_pages = int(table.size());
      a.k_page_stride = int64_t(pr.page_size) * a.k_row_stride;
      a.v_page_stride = int64_t(pr.page_size) * a.v_row_stride;
      a.cu_seqlens_k = nullptr;
    }

    auto time_launches = [&](const std::function<void()>& launch) {
      for (int i = 0; i < 3; ++i) launch();
      std::vector<float> times;
      for (int i = 0; i < 20; ++i) {
        event_record(e0, nullptr);
        launch();
        event_record(e1, nullptr);
        event_sync(e1);
        float t = 0;
        event_elapsed(&t, e0, e1);
        times.push_back(t);
      }
      std::sort(times.begin(), times.end());
      return double(times[times.size() / 2]);
    };
    auto time_ms = [&](AttentionKernel& kern) {
      // The variant these args run (a small_pages sibling at pages of 16
      // keys), compiled before the clock: not a tier answering for it.
      kern.kernel_for(a);
      kern.wait_specialized();
      return time_launches([&] { kern.launch(a, nullptr); });
    };
    double ms = time_ms(*kernel);
    if (item.user) {
      results.push_back(time_user_spec(*item.user, f, a, ms, time_launches));
      return;
    }
    nlohmann::json tuned = nlohmann::json::array();
    if (tune || !tries.empty()) {
      const auto configs =
          tune ? tuning_grid(pr.head_dim, pr.heads_q != pr.heads_kv,
                             current_device_target() == parse_target("sm_90a"), decode)
               : tries;
      tuned = time_configs(pr.name, f, schedule, configs, /*check=*/!tune, ms, time_ms);
    }
    long long pairs = 0;
    for (int p = pr.seqlen - n_q; p < pr.seqlen; ++p) {
      pairs += visible_count(pr, p, pr.seqlen, seq_spans);
    }
    pairs *= pr.batch;
    // Useful FLOPs: 2 per pair and width for S = Q K^T (D) and for P V (Dv).
    const double flops = 2.0 * double(pairs) * (pr.head_dim + dv) * pr.heads_q;
    const double bytes = 2.0 * (q_elems + o_elems) + double(kv_bytes + v_bytes);
    const double floor_ms = std::max(bytes / copy_bw, flops / 793e12) * 1e3;
    std::printf("%-26s %10.3f %10.1f %10.3f %10.2f\n", pr.name.c_str(), ms,
                flops / (ms * 1e-3) / 1e12, floor_ms, ms / floor_ms);
    results.push_back({{"problem", pr.name},
                       {"ms", ms},
                       {"tflops", flops / (ms * 1e-3) / 1e12},
                       {"useful_pairs", pairs},
                       {"bytes", bytes},
                       {"floor_ms", floor_ms},
                       {"variant", kernel->kernel_for(a).name()},
                       {"tuning", tuned}});
  };
  int failed = 0;
  for (const Item& item : items) {
    try {
      run_item(item);
    } catch (const std::exception& e) {
      std::printf("%-26s FAILED: %s\n", (item.user ? item.user->name : item.pr.name).c_str(),
                  e.what());
      ++failed;
    }
  }
  std::ofstream(argc > 1 ? argv[1] : "kernel_bench.json") << results.dump(2) << "\n";
  return failed == 0 ? 0 : 1;
}
