// One compiled variant of the attention spec (or of a spec that extends
// it): its kernel, what a launch reads of its tile configuration, and for
// a user spec's variant where the spec's own args go in its params struct.
// It launches itself; which variant a launch runs (the split and
// small_pages siblings, the tiers answering while a variant compiles) is
// AttentionKernel's business, and the choices are the planner's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attention/tile_config.h"
#include "attnjit/attention_args.h"
#include "attnjit/cache.h"
#include "attnjit/kernel.h"
#include "attnjit/spec.h"
#include "planner.h"

namespace attnjit {

// The tile configuration of a variant, from its signature's typed tuning
// values by the one rule the kernels use (tile_config.cuh).
attention::TileConfig tile_config_of(const Signature& sig);

// Rows of V's blocks in the small_pages sibling of a variant of this tile
// configuration where that sibling is another kernel, else 0.
int small_pages_rows_of(const attention::TileConfig& tile, bool paged);

// Where a user spec's own args go in its params struct (after the
// inherited attention args), checked by name and type before a launch and
// written at it. The fields of a spec, not of a kernel: a tier's kernel
// checks the requested spec's args and launches with its own.
class UserParams {
 public:
  static constexpr size_t kMaxBytes = 4096;
  // The fields of `spec` after those of `base`, the spec it extends.
  UserParams(std::shared_ptr<const Spec> spec, const Spec& base);

  const Spec& spec() const { return *spec_; }
  size_t size() const { return size_; }
  // No args of its own, not even hidden ones: the params are the attention spec's.
  bool empty() const { return fields_.empty(); }
  // Errors (kArgument) for an arg that is missing, of another type, or not
  // the spec's; or, with no args at all, for a spec that has args.
  void require_none() const;
  void check(const AttentionArgs& a, const std::vector<UserArg>& user_args) const;
  // The checked args and the divisors' multipliers into `params`.
  void write(unsigned char* params, const std::vector<UserArg>& user_args) const;

 private:
  struct Field {
    std::string name;
    ArgType type;
    size_t offset;
    // Hidden: the multiplier for division by this int32 arg (one of the
    // spec's own or an inherited one), computed at each launch from the
    // value at divisor_offset in the params (not passed by the caller).
    std::string divisor_of;
    size_t divisor_offset = 0;
  };
  std::shared_ptr<const Spec> spec_;
  std::vector<Field> fields_;
  std::string key_token_tensor_;  // one of its per-key-token tensors (read via cu_seqlens_k)
  size_t size_ = 0;
};

class Variant {
 public:
  // The kernel of `found` (the cache's entry for `sig`).
  Variant(const Signature& sig, const LookupResult& found);

  const AttentionFlags& flags() const { return flags_; }
  const Schedule& schedule() const { return schedule_; }
  Kernel& kernel() const { return *kernel_; }
  int block_m() const { return block_m_; }
  int pack_gqa() const { return pack_gqa_; }
  EntrySource source() const { return source_; }
  // What the planner reads of this variant.
  VariantShape shape() const;
  // The split schedule of a launch of this variant (one part where it
  // does not split) on a GPU of `sm_count` SMs (0: the current device's).
  SplitPlan split_plan(const AttentionArgs& a, int sm_count = 0) const;

  // A user spec's variant: its spec's args' places.
  void set_user_params(std::shared_ptr<const UserParams> user) { user_ = std::move(user); }

  // One launch on `stream` with args already checked (validate_attention_args
  // and, for a user spec's variant, UserParams::check).
  void launch(const AttentionArgs& a, CuStream stream, const std::vector<UserArg>& user_args) const;

 private:
  AttentionFlags flags_;
  Schedule schedule_;
  std::unique_ptr<Kernel> kernel_;
  int block_m_ = 0;
  int pack_gqa_ = 0;  // 0 none, 1 packed
  bool tma_ = false;  // the sm_90a warpgroup path: k and v through TMA maps
  TmaBox tma_box_;
  int block_n_ = 0, min_blocks_ = 1, split_keys_ = 0;
  // The rows of V's blocks in this variant's small_pages sibling where that
  // is another kernel (TileConfig::v_block_rows below block_n), else 0: a
  // paged launch whose boxes are that many rows goes to the sibling.
  int small_pages_rows_ = 0;
  EntrySource source_ = EntrySource::kCompiled;
  std::shared_ptr<const UserParams> user_;
};

}  // namespace attnjit
