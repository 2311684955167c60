// Attention arguments for tests that launch nothing on a device: well-
// formed ones with fake device pointers, for launches that stop at an
// argument check before the driver (user_spec_test.cpp,
// user_vm_tier_test.cpp), and the sizes of a decode-shaped batch, for
// which variant a launch runs (tier_runtime_test.cpp).
#pragma once

#include <cstdint>

#include "attnjit/attention.h"

namespace attnjit::testing {

// One sequence of 256 tokens, 4 query heads over 1 kv head of head dim
// `head_dim`.
inline AttentionArgs fake_args(int head_dim = 128) {
  auto fake = [](uintptr_t address) { return reinterpret_cast<const void*>(address); };
  AttentionArgs a;
  a.q = fake(0x10000);
  a.k = fake(0x20000);
  a.v = fake(0x30000);
  a.o = const_cast<void*>(fake(0x40000));
  a.cu_seqlens_q = static_cast<const int32_t*>(fake(0x50000));
  a.cu_seqlens_k = static_cast<const int32_t*>(fake(0x60000));
  a.q_row_stride = a.o_row_stride = 4 * head_dim;
  a.k_row_stride = a.v_row_stride = head_dim;
  a.q_head_stride = a.k_head_stride = a.v_head_stride = a.o_head_stride = head_dim;
  a.num_seqs = 1;
  a.num_heads_q = 4;
  a.num_heads_kv = 1;
  a.total_q = a.total_k = 256;
  a.max_seqlen_q = a.max_seqlen_k = 256;
  return a;
}

// Four sequences of one new token over 4096 keys, 8 heads: a batch that
// goes to the split-KV sibling (sizes only; no pointers).
inline AttentionArgs decode_shape() {
  AttentionArgs a;
  a.num_seqs = 4;
  a.num_heads_q = 8;
  a.num_heads_kv = 8;
  a.total_q = 4;
  a.max_seqlen_q = 1;
  a.max_seqlen_k = 4096;
  return a;
}

}  // namespace attnjit::testing
