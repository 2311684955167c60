// The one list of launch arguments (attnjit/attention_args_list.h) against
// what is made from it: the C struct's binary layout, pinned field by field
// to the layout the ABI shipped with; the C++ struct's fields and their
// types and defaults; the C API's copy from one into the other, group by
// group under struct_size (runtime/src/c_api_args.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "attnjit/attention_args.h"
#include "attnjit/attnjit.h"
#include "c_api_args.h"

namespace attnjit {
namespace {

struct Field {
  std::string name;
  size_t offset, size;
  int group;  // the index of its group in ATTNJIT_ATTENTION_ARG_GROUPS
  bool operator==(const Field& o) const {
    return name == o.name && offset == o.offset && size == o.size && group == o.group;
  }
};

std::ostream& operator<<(std::ostream& os, const Field& f) {
  return os << f.name << " at " << f.offset << ", " << f.size << " bytes, group " << f.group;
}

// The list's fields in the C struct, in the list's order.
std::vector<Field> list_fields() {
  std::vector<Field> fields;
  int group = 0;
#define FIELD(type, name, init) \
  fields.push_back({#name, offsetof(attnjit_attention_args, name), sizeof(type), group});
#define GROUP(GROUP_FIELDS, X) GROUP_FIELDS(X)++ group;
  ATTNJIT_ATTENTION_ARG_GROUPS(GROUP, FIELD)
#undef GROUP
#undef FIELD
  return fields;
}

// attnjit_attention_args as API versions 1 to 3 laid it out (x86-64 and
// aarch64 Linux: 8-byte pointers, int64_t and size_t): every field's
// offset and size and the struct's size may never change, only grow at
// the end.
TEST(AttentionArgsList, TheCStructKeepsItsBinaryLayout) {
  const std::vector<Field> shipped = {
      {"q", 8, 8, 0},
      {"k", 16, 8, 0},
      {"v", 24, 8, 0},
      {"o", 32, 8, 0},
      {"lse", 40, 8, 0},
      {"sinks", 48, 8, 0},
      {"cu_seqlens_q", 56, 8, 0},
      {"cu_seqlens_k", 64, 8, 0},
      {"mm_span_offsets", 72, 8, 0},
      {"mm_spans", 80, 8, 0},
      {"q_row_stride", 88, 8, 0},
      {"q_head_stride", 96, 8, 0},
      {"k_row_stride", 104, 8, 0},
      {"k_head_stride", 112, 8, 0},
      {"v_row_stride", 120, 8, 0},
      {"v_head_stride", 128, 8, 0},
      {"o_row_stride", 136, 8, 0},
      {"o_head_stride", 144, 8, 0},
      {"num_seqs", 152, 4, 0},
      {"num_heads_q", 156, 4, 0},
      {"num_heads_kv", 160, 4, 0},
      {"total_q", 164, 4, 0},
      {"total_k", 168, 4, 0},
      {"max_seqlen_q", 172, 4, 0},
      {"max_seqlen_k", 176, 4, 0},
      {"scale", 180, 4, 0},
      {"softcap", 184, 4, 0},
      {"window_left", 188, 4, 0},
      {"window_right", 192, 4, 0},
      {"block_table", 200, 8, 1},
      {"seqused_k", 208, 8, 1},
      {"block_table_stride", 216, 8, 1},
      {"k_page_stride", 224, 8, 1},
      {"v_page_stride", 232, 8, 1},
      {"page_size", 240, 4, 1},
      {"num_pages", 244, 4, 1},
      {"num_splits", 248, 4, 2},
      {"workspace", 256, 8, 2},
      {"workspace_bytes", 264, 8, 2},
      {"k_scale", 272, 8, 3},
      {"v_scale", 280, 8, 3},
  };
  EXPECT_EQ(offsetof(attnjit_attention_args, struct_size), 0u);
  EXPECT_EQ(sizeof(attnjit_attention_args::struct_size), 8u);
  EXPECT_EQ(list_fields(), shipped);
  EXPECT_EQ(sizeof(attnjit_attention_args), 288u);
  EXPECT_EQ(alignof(attnjit_attention_args), 8u);
  // A version-1 struct_size (its struct padded to 8): the least accepted.
  EXPECT_EQ(detail::kCArgsV1Size, 200u);
}

// Each entry of the list is a field of both structs, of the list's type;
// the C++ struct's defaults and the C init function's are the list's.
TEST(AttentionArgsList, BothStructsHoldEachEntryWithItsTypeAndDefault) {
#define SAME_TYPE(type, name, init)                                          \
  static_assert(std::is_same_v<decltype(AttentionArgs::name), type>, #name); \
  static_assert(std::is_same_v<decltype(attnjit_attention_args::name), type>, #name);
  ATTNJIT_ATTENTION_ARGS(SAME_TYPE)
#undef SAME_TYPE
  // The C++ struct is the C struct but struct_size, field for field.
  EXPECT_EQ(sizeof(attnjit_attention_args), sizeof(size_t) + sizeof(AttentionArgs));
#define SAME_OFFSET(type, name, init) \
  EXPECT_EQ(offsetof(attnjit_attention_args, name), sizeof(size_t) + offsetof(AttentionArgs, name));
  ATTNJIT_ATTENTION_ARGS(SAME_OFFSET)
#undef SAME_OFFSET

  const AttentionArgs cxx;
  attnjit_attention_args c;
  attnjit_attention_args_init(&c);
  EXPECT_EQ(c.struct_size, sizeof(c));
#define DEFAULT(type, name, init)                        \
  EXPECT_EQ(cxx.name, static_cast<type>(init)) << #name; \
  EXPECT_EQ(c.name, static_cast<type>(init)) << #name;
  ATTNJIT_ATTENTION_ARGS(DEFAULT)
#undef DEFAULT
}

// A value for field number i of type T that no other field and no default
// holds.
template <class T>
T marker(int i) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(uintptr_t(0x1000 + 64 * i));
  } else {
    return T(1000 + i);
  }
}

// For the struct_size of each API version's header (each group's end),
// and one byte short of each: the groups that fit are copied whole, the
// others keep their defaults.
TEST(AttentionArgsList, TheCApiCopiesTheGroupsItsStructSizeHolds) {
  attnjit_attention_args c;
  attnjit_attention_args_init(&c);
  int index = 0;
#define SET(type, name, init) c.name = marker<type>(index++);
  ATTNJIT_ATTENTION_ARGS(SET)
#undef SET
  const std::vector<Field> fields = list_fields();
  std::vector<size_t> group_ends;
  for (const Field& f : fields) {
    if (size_t(f.group) >= group_ends.size()) group_ends.resize(f.group + 1, 0);
    group_ends[f.group] = std::max(group_ends[f.group], f.offset + f.size);
  }
  ASSERT_EQ(group_ends.size(), 4u);
  std::vector<size_t> sizes;
  for (const size_t end : group_ends) {
    sizes.push_back(end);
    sizes.push_back(end - 1);
  }
  sizes.push_back(sizeof(c));
  for (const size_t size : sizes) {
    SCOPED_TRACE("struct_size " + std::to_string(size));
    c.struct_size = size;
    const AttentionArgs a = detail::args_from_c(c);
    const AttentionArgs defaults;
    size_t i = 0;
#define CHECK(type, field, init)                                                     \
  {                                                                                  \
    const Field& f = fields[i];                                                      \
    ASSERT_EQ(f.name, #field);                                                       \
    if (size >= group_ends[f.group]) {                                               \
      EXPECT_EQ(a.field, marker<type>(int(i))) << #field;                            \
    } else {                                                                         \
      EXPECT_EQ(a.field, defaults.field) << #field << " (past the caller's struct)"; \
    }                                                                                \
    ++i;                                                                             \
  }
    ATTNJIT_ATTENTION_ARGS(CHECK)
#undef CHECK
    EXPECT_EQ(i, fields.size());
  }
}

}  // namespace
}  // namespace attnjit
