// A compiled variant and its launch (variant.h): the tile configuration a
// launch reads, the kernel params filled from AttentionArgs, the split
// plan and workspace, the TMA maps, and a user spec's own args.
#include "variant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "attention_prefill_params.h"
#include "attention_prefill_params_host.h"
#include "common/int_divisor.cuh"
#include "attnjit/driver.h"
#include "attnjit/error.h"
#include "attnjit/expr.h"
#include "attnjit/kernel_params.h"
#include "kv_tensor_maps.h"
#include "launch_scratch.h"

namespace attnjit {

attention::TileConfig tile_config_of(const Signature& sig) {
  const auto param = [&](const char* name) { return int(sig.tuning_value(name)); };
  struct {  // the names attention::tile_shape_of reads
    int head_dim, block_m, block_n, warps, stages, min_blocks, pack_gqa, wgmma, smem_per_sm;
    int decode_mma, producer_warps, head_dim_v;
    bool register_cap, kv_fp8, split_kv, small_pages;
  } v{};
  v.head_dim = int(sig.flags.get_int("head_dim"));
  v.head_dim_v = int(sig.flags.get_int("head_dim_v"));
  v.block_m = param("block_m");
  v.block_n = param("block_n");
  v.warps = param("warps");
  v.stages = param("stages");
  v.min_blocks = param("min_blocks");
  v.pack_gqa = param("pack_gqa");
  v.wgmma = param("wgmma");
  v.smem_per_sm = attention::smem_per_sm(sig.options.target.sm);
  v.decode_mma = param("decode_mma");
  v.producer_warps = param("producer_warps");
  v.register_cap = sig.options.max_registers != 0;
  v.kv_fp8 = sig.flags.get_name("kv_dtype") == "fp8_e4m3";
  v.split_kv = sig.flags.get_bool("split_kv");
  v.small_pages = sig.flags.get_bool("small_pages");
  return attention::make_tile_config(attention::tile_shape_of(v));
}

namespace {

// Rows of V's blocks in the small_pages sibling of a variant of this tile
// configuration where that sibling is another kernel (TileConfig::
// v_block_rows below block_n), else 0: a paged launch whose boxes are that
// many rows goes to the sibling.
int small_pages_rows_of(const attention::TileConfig& tile, bool paged) {
  attention::TileShape small = tile.shape;
  small.small_pages = true;
  const int rows = attention::make_tile_config(small).v_block_rows;
  return paged && rows < tile.shape.block_n ? rows : 0;
}

VariantShape shape_of(const Signature& sig, const attention::TileConfig& tile) {
  VariantShape v;
  v.block_m = tile.shape.block_m;
  v.block_n = tile.shape.block_n;
  v.pack_gqa = tile.shape.pack_gqa != 0;
  v.split_keys = int(sig.tuning_value("split_keys"));
  v.min_blocks = tile.blocks_per_sm;
  v.small_pages_rows = small_pages_rows_of(tile, sig.flags.get_name("kv_layout") == "paged");
  v.split_kv = sig.flags.get_bool("split_kv");
  v.small_pages = sig.flags.get_bool("small_pages");
  return v;
}

}  // namespace

VariantShape shape_of(const Signature& sig) { return shape_of(sig, tile_config_of(sig)); }

namespace {

// The kernel ABI: the struct generated from the spec's `args`, filled by
// field in one place. Scalars the flags switch off are passed neutral.
using KernelParams = attention_prefill_params<void>;
static_assert(sizeof(TensorMap) == sizeof(TensorMapBytes), "a TMA map is 128 bytes");

KernelParams kernel_params(const AttentionFlags& flags, const AttentionArgs& a) {
  KernelParams p{};
  // Every kernel arg AttentionArgs has under the same name (the generated
  // copy: the spec's args are the one list), then those the launch
  // derives or passes neutral (tests/runtime/kernel_params_test.cpp holds
  // the list of the others).
  attention_prefill_params_copy_same_named(a, p);
  // Once per launch, not per tile in the kernel (validate: Hkv divides Hq).
  p.gqa_group = a.num_heads_kv > 0 ? a.num_heads_q / a.num_heads_kv : 1;
  p.gqa_group_magic = ::attnjit::divisor_magic(p.gqa_group);
  p.scale = a.scale > 0 ? a.scale : 1.f / std::sqrt(float(flags.head_dim));
  p.softcap = flags.softcap ? a.softcap : 0.f;
  p.window_left = flags.window ? a.window_left : -1;
  p.window_right = flags.window ? a.window_right : -1;
  p.num_splits = 1;  // Variant::launch sets the split schedule (a.num_splits is a request)
  return p;
}

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::kArgument, message); }

// A spec's family (an identifier) as messages quote names.
std::string quote_name(const std::string& name) { return "'" + name + "'"; }

// The given value of a field, or null.
const UserArg* find_arg(const std::vector<UserArg>& args, const std::string& name) {
  const UserArg* found = nullptr;
  for (const UserArg& arg : args) {
    if (arg.name == name) found = &arg;
  }
  return found;
}

// Whether a value has the field's type (pointers: not null, 4-aligned);
// else what the field takes.
const char* type_problem(ArgType type, const UserArg& arg) {
  switch (type) {
    case ArgType::kI32:
      return std::holds_alternative<int32_t>(arg.value) ? nullptr : "an int32";
    case ArgType::kF32:
      return std::holds_alternative<float>(arg.value) ? nullptr : "a float";
    case ArgType::kConstI32Ptr:
    case ArgType::kConstF32Ptr: {
      const void* const* v = std::get_if<const void*>(&arg.value);
      if (v == nullptr || *v == nullptr) return "a device pointer (not null)";
      return (reinterpret_cast<uintptr_t>(*v) & 3) == 0 ? nullptr
                                                         : "a 4-byte aligned device pointer";
    }
    default:
      return "nothing (user args cannot have this type)";
  }
}

}  // namespace

// ---- a user spec's args ------------------------------------------------------

UserParams::UserParams(std::shared_ptr<const Spec> spec, const Spec& base)
    : spec_(std::move(spec)) {
  const ParamsLayout own = params_layout(*spec_);
  const size_t inherited = params_layout(base).fields.size();
  for (size_t i = inherited; i < own.fields.size(); ++i) {
    Field field{own.fields[i].name, own.fields[i].type, own.fields[i].offset,
                spec_->args.at(i).divisor_of};
    if (!field.divisor_of.empty()) {
      const auto divisor =
          std::find_if(own.fields.begin(), own.fields.end(),
                       [&](const ParamField& f) { return f.name == field.divisor_of; });
      if (divisor == own.fields.end() || divisor->type != ArgType::kI32) {
        throw Error(ErrorKind::kSpec, fmt::format("spec {}: the divisor {} is no int32 arg",
                                                  quote_name(spec_->family), field.divisor_of));
      }
      field.divisor_offset = divisor->offset;
    }
    fields_.push_back(std::move(field));
  }
  size_ = own.size;
  for (const std::optional<Expr>* e : {&spec_->mask, &spec_->score}) {
    if (!e->has_value()) continue;
    for (const ExprTensor& tensor : (*e)->context.tensors) {
      if (tensor.per == TensorDomain::kKeyToken) key_token_tensor_ = tensor.name;
    }
  }
}

void UserParams::require_none() const {
  for (const Field& field : fields_) {
    if (!field.divisor_of.empty()) continue;  // the runtime's own
    fail(fmt::format("attention: spec {} has args of its own ({} and more); pass them to launch()",
                     quote_name(spec_->family), field.name));
  }
}

void UserParams::check(const AttentionArgs& a, const std::vector<UserArg>& user_args) const {
  const std::string family = quote_name(spec_->family);
  for (const Field& field : fields_) {
    if (!field.divisor_of.empty()) continue;  // the runtime's own
    const UserArg* arg = find_arg(user_args, field.name);
    if (arg == nullptr) fail(fmt::format("attention: spec {} needs its arg `{}`", family, field.name));
    if (const char* want = type_problem(field.type, *arg)) {
      fail(fmt::format("attention: arg `{}` takes {}", field.name, want));
    }
  }
  for (const UserArg& arg : user_args) {
    const bool known = std::any_of(fields_.begin(), fields_.end(), [&](const Field& f) {
      return f.name == arg.name && f.divisor_of.empty();
    });
    if (!known) fail(fmt::format("attention: spec {} has no arg `{}`", family, arg.name));
  }
  // A per-key-token tensor is indexed through cu_seqlens_k, also with a
  // paged cache (where the kernels need it for nothing else).
  if (!key_token_tensor_.empty() && a.cu_seqlens_k == nullptr) {
    fail(fmt::format("attention: spec {} reads the per-key-token tensor `{}`, indexed through "
                     "cu_seqlens_k: pass cu_seqlens_k (with a paged cache too: where each "
                     "sequence's keys start in that tensor)",
                     family, key_token_tensor_));
  }
}

void UserParams::write(unsigned char* params, const std::vector<UserArg>& user_args) const {
  for (const Field& field : fields_) {
    if (!field.divisor_of.empty()) continue;  // below, once every arg is written
    const UserArg& arg = *find_arg(user_args, field.name);  // check() ran
    std::visit([&](const auto& value) { std::memcpy(params + field.offset, &value, sizeof(value)); },
               arg.value);
  }
  // The multipliers for division by an int32 arg, from the value the
  // kernel gets (the spec's own arg or an inherited one like num_heads_kv).
  for (const Field& field : fields_) {
    if (field.divisor_of.empty()) continue;
    int32_t divisor = 0;
    std::memcpy(&divisor, params + field.divisor_offset, sizeof(divisor));
    const int64_t magic = divisor_multiplier(divisor);
    std::memcpy(params + field.offset, &magic, sizeof(magic));
  }
}

// ---- the variant -------------------------------------------------------------

Variant::Variant(const Signature& sig, const LookupResult& found,
                 std::shared_ptr<const UserParams> user)
    : flags_(AttentionFlags::from_flag_set(sig.flags)),
      schedule_(Schedule::of(sig.flags)),
      kernel_(std::make_unique<Kernel>(found.entry)),
      source_(found.source),
      user_(std::move(user)) {
  const attention::TileConfig tile = tile_config_of(sig);
  shape_ = shape_of(sig, tile);
  tma_ = tile.shape.wgmma;  // fp8 K/V: raw byte tiles, which the producer converts
  tma_box_ = TmaBox{tile.tma_chunk, tile.tma_box_rows, tile.swizzle_bytes, tile.mma_decode};
  if (tile.v_block_rows < tile.shape.block_n) tma_box_.v_block_rows = tile.v_block_rows;
  // Blocks per SM: the binary's own launch bound where the entry records
  // it, else the same rule's (what the shared memory allows).
  const int recorded = found.entry->kernel.resources.min_blocks;
  if (recorded > 0) shape_.min_blocks = recorded;
}

void Variant::launch(const AttentionArgs& a, CuStream stream,
                     const std::vector<UserArg>& user_args) const {
  KernelParams params = kernel_params(flags_, a);
  const LaunchPlan plan = this->plan(a);
  params.num_splits = plan.split.num_splits;
  if (plan.split.workspace_bytes > 0) {
    const SplitScratch ws = split_workspace(a, plan.split, stream);
    params.split_counters = ws.counters;
    params.lse_partial = ws.lse;
    params.o_partial = ws.o;
  }
  // The warpgroup kernels copy k and v tiles through TMA maps; the others
  // ignore the (zeroed) fields.
  if (tma_) {
    const TensorMapBytes* maps[2];
    kv_tensor_maps(flags_, a, tma_box_, maps);
    std::memcpy(&params.k_map, maps[0], sizeof(params.k_map));
    std::memcpy(&params.v_map, maps[1], sizeof(params.v_map));
  }
  const LaunchGrid& grid = plan.grid;
  if (!user_ || user_->empty()) {
    void* args[] = {&params};
    kernel_->launch(grid.x, grid.y, grid.z, stream, args);
    return;
  }
  // A user spec's struct: the inherited fields, then its own (checked
  // before anything ran).
  alignas(128) unsigned char buffer[UserParams::kMaxBytes];
  std::memset(buffer, 0, user_->size());
  std::memcpy(buffer, &params, sizeof(params));
  user_->write(buffer, user_args);
  void* args[] = {buffer};
  kernel_->launch(grid.x, grid.y, grid.z, stream, args);
}

LaunchGrid attention_grid(const AttentionArgs& a, int block_m, int pack_gqa, int num_splits) {
  attention::TileConfig tile{};
  tile.shape.block_m = block_m;
  tile.shape.pack_gqa = pack_gqa;
  const attention::GridShape grid = attention::grid_shape(tile, a.max_seqlen_q, a.num_heads_q,
                                                          a.num_heads_kv, a.num_seqs, num_splits);
  return LaunchGrid{grid.x, grid.y, grid.z};
}

}  // namespace attnjit
