// Runs one attention variant on the GPU on fresh random inputs and compares
// it with the CPU reference (reference.h). Shared by the GPU tests, the
// `attnjit run` main job and the benchmarks' correctness column.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/reference.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct CheckShape {
  std::string name;
  std::vector<int> seqlens_q, seqlens_k;  // per sequence
  int num_heads_q = 4, num_heads_kv = 1;
  int window_left = -1, window_right = -1;  // used when the window flag is on
  // Per sequence, inclusive key-position spans (used when mm_prefix is on).
  std::vector<std::vector<std::pair<int, int>>> spans;
  float softcap = 2.f;  // used when the softcap flag is on
  int page_size = 16;   // tokens per page when kv_layout is paged
  int num_splits = 0;   // AttentionArgs::num_splits (0: the library's choice)
};

struct CheckResult {
  std::string variant;  // display name of the kernel
  std::string shape;
  double o_error = 0;          // relative error of o (NaN if any NaN)
  double lse_error = 0;        // max |lse - ref| over finite refs (0 if off)
  bool lse_inf_ok = true;      // -inf exactly where the reference has -inf
  bool guard_intact = true;    // rows past total_q untouched
  bool output_written = true;  // no poison left in o
  EntrySource source = EntrySource::kCompiled;
  bool passed(double bound) const;
};

// The shapes of the GPU test matrix for these flags: ragged varlen batches
// with lengths 0 and 1 and lengths off the tile, q shorter than k, windows
// of 0, smaller than a tile and larger than the sequence, spans at the
// start, across tile edges, longer than the window and adjacent, GQA ratios
// 1, 4 and 8; decode batches (one to three queries per sequence, contexts
// of 0 to 32768 keys) with the split count chosen by the library, forced
// to 1, 2 and the most allowed. Paged variants add page sizes 16 to 256
// (48 and 192 among them: no divisor or multiple of the key tiles),
// decodes beside chunks in one batch, and a chunk boundary inside a span.
//
// With kv_layout paged, check_attention scatters each sequence's keys over
// a shuffled pool of pages (the first page of two sequences shared, as
// prefix caching does, unused rows and spare pages NaN, the table's unused
// entries out of range) and compares with the contiguous reference.
std::vector<CheckShape> standard_check_shapes(const AttentionFlags& flags);

// Which kernel a check launches when the generic tier answers for the
// variant (docs/tiers.md): by default the variant's own (the check waits
// for its compile and reports a compile error); kAsLaunched checks whatever
// get() launches now, the generic variant while the specialized one is
// missing (the generic tier's own tests).
enum class CheckTier { kSpecialized, kAsLaunched };

// `reference_sinks` compares against another sink mode's reference (the
// seed evidence); by default the reference matches the kernel's flags.
// `schedule`: the variant checked is that schedule's (a split one runs its
// split code on every shape), not the one the launch would pick.
CheckResult check_attention(const AttentionFlags& flags, const CheckShape& shape, uint64_t seed,
                            KernelCache& cache = KernelCache::global(),
                            std::optional<SinkMode> reference_sinks = std::nullopt,
                            const std::map<std::string, int64_t>& tuning_overrides = {},
                            CheckTier tier = CheckTier::kSpecialized,
                            const Schedule& schedule = {});

// A value for one of a user spec's own args (docs/expressions.md), as the
// check uploads it: an int32 or float scalar, or a tensor's host data.
struct UserCheckArg {
  std::string name;
  int32_t int_value = 0;
  float float_value = 0;
  std::vector<int32_t> ints;   // a `const int32*` tensor
  std::vector<float> floats;   // a `const float*` tensor
};

// Values for a user spec's own args that make its expressions matter on
// `shape` (for `attnjit check --spec` and tests): int32 scalars between 1
// and the longest sequence, floats in [0.25, 1]; tensors by domain - a
// position inside each sequence (per sequence), runs of about 23 tokens
// with one id (per key or query token), values in [-1, 1] (floats) or
// [0, 8) (ints) per head, kv head or table entry.
std::vector<UserCheckArg> default_user_values(const Spec& spec, const CheckShape& shape,
                                              uint64_t seed);

// check_attention for a variant of a user spec (contiguous K/V): the
// reference evaluates the spec's mask and score trees in fp64 (int32
// exactly as the device does).
// `tier` as check_attention's (the expression VM's tier answers for a
// user spec's variant, docs/tiers.md).
CheckResult check_user_attention(std::shared_ptr<const Spec> spec, const AttentionFlags& flags,
                                 const CheckShape& shape, uint64_t seed,
                                 const std::vector<UserCheckArg>& user_args,
                                 KernelCache& cache = KernelCache::global(),
                                 CheckTier tier = CheckTier::kSpecialized,
                                 const Schedule& schedule = {});

// Error bound for a dtype (docs/semantics.md "Error measure").
double error_bound(DType dtype);

// Host conversions with round-to-nearest-even.
// fp8 e4m3 (the "fn" variant: 0x7F / 0xFF are NaN, no infinities):
// round to nearest (ties to an even code), saturating at 448.
uint16_t float_to_e4m3(float f);
float e4m3_to_float(uint8_t byte);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_fp16(float f);
float fp16_to_float(uint16_t h);

}  // namespace attnjit

#pragma GCC visibility pop
