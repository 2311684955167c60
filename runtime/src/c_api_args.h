// The C API's launch arguments into the C++ ones: attnjit_attention_args
// (attnjit.h) and AttentionArgs (attention_args.h) are both expanded from
// attention_args_list.h, and so is the copy, group by group under the
// caller's struct_size. tests/runtime/attention_args_list_test.cpp holds
// it to every field and every group boundary.
#pragma once

#include <algorithm>
#include <cstddef>

#include "attnjit/attention_args.h"
#include "attnjit/attnjit.h"

namespace attnjit {
namespace detail {

// Where a group's fields end in attnjit_attention_args: a caller's struct
// holds the group when its struct_size reaches that.
#define ATTNJIT_C_ARG_END(type, name, init) offsetof(attnjit_attention_args, name) + sizeof(type),
#define ATTNJIT_C_ARG_GROUP_END(GROUP) std::max({size_t(0), GROUP(ATTNJIT_C_ARG_END)})

// sizeof the struct a version-1 header declared (its fields, padded to the
// struct's alignment): the smallest struct_size the C API takes.
inline constexpr size_t kCArgsV1Size =
    (ATTNJIT_C_ARG_GROUP_END(ATTNJIT_ATTENTION_ARGS_V1) + alignof(attnjit_attention_args) - 1) /
    alignof(attnjit_attention_args) * alignof(attnjit_attention_args);

// The fields of every group that c's struct_size holds; the fields of the
// groups past it keep AttentionArgs' defaults (the list's). Checks
// nothing: the caller has checked c.struct_size >= kCArgsV1Size.
inline AttentionArgs args_from_c(const attnjit_attention_args& c) {
  AttentionArgs a;
#define ATTNJIT_C_ARG_COPY(type, name, init) a.name = c.name;
#define ATTNJIT_C_ARG_COPY_GROUP(GROUP, X)                                           \
  if (constexpr size_t end = ATTNJIT_C_ARG_GROUP_END(GROUP); c.struct_size >= end) { \
    GROUP(X)                                                                         \
  }
  ATTNJIT_ATTENTION_ARG_GROUPS(ATTNJIT_C_ARG_COPY_GROUP, ATTNJIT_C_ARG_COPY)
#undef ATTNJIT_C_ARG_COPY_GROUP
#undef ATTNJIT_C_ARG_COPY
  return a;
}

#undef ATTNJIT_C_ARG_GROUP_END
#undef ATTNJIT_C_ARG_END

}  // namespace detail
}  // namespace attnjit
