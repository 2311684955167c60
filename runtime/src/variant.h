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

// What the planner reads of the variant `sig` names, from its tile
// configuration (nothing compiled; a compiled variant's own launch bound
// may still change min_blocks).
VariantShape shape_of(const Signature& sig);

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
  // The kernel of `found` (the cache's entry for `sig`); `user` the places
  // of a user spec's own args (null: the attention spec's params).
  Variant(const Signature& sig, const LookupResult& found,
          std::shared_ptr<const UserParams> user = nullptr);

  const AttentionFlags& flags() const { return flags_; }
  const Schedule& schedule() const { return schedule_; }
  Kernel& kernel() const { return *kernel_; }
  int block_m() const { return shape_.block_m; }
  int pack_gqa() const { return shape_.pack_gqa ? 1 : 0; }
  EntrySource source() const { return source_; }
  // What the planner reads of this variant.
  const VariantShape& shape() const { return shape_; }
  // A launch of this variant (plan_launch) on a GPU of `sm_count` SMs (0:
  // the current device's).
  LaunchPlan plan(const AttentionArgs& a, int sm_count = 0) const {
    return plan_launch(shape_, flags_, a, sm_count);
  }

  // One launch on `stream` with args already checked (validate_attention_args
  // and, for a user spec's variant, UserParams::check).
  void launch(const AttentionArgs& a, CuStream stream, const std::vector<UserArg>& user_args) const;

 private:
  AttentionFlags flags_;
  Schedule schedule_;
  std::unique_ptr<Kernel> kernel_;
  VariantShape shape_;
  bool tma_ = false;  // the sm_90a warpgroup path: k and v through TMA maps
  TmaBox tma_box_;
  EntrySource source_ = EntrySource::kCompiled;
  std::shared_ptr<const UserParams> user_;
};

}  // namespace attnjit
