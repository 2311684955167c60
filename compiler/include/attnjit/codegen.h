// Source generation: one self-contained translation unit per variant.
//
// The generated text is only the flag values and the entry point; all logic
// lives in the embedded template headers (DESIGN.md decision 1). Example:
//
//   #include "attention/prefill.cuh"
//   struct attnjit_config {
//     using dtype = ::attnjit::types::bf16;
//     static constexpr int head_dim = 128;
//     static constexpr bool causal = true;
//     enum class sinks_t : int { none = 0, null_logit = 1, bias_key0 = 2 };
//     static constexpr sinks_t sinks = sinks_t::null_logit;
//     static constexpr int block_m = 128;   // tuning params
//   };
//   extern "C" __global__ void __launch_bounds__(attnjit_config::warps * 32)
//   attention_prefill(const ::attnjit::types::bf16* q, ..., int window_left) {
//     ::attnjit::attention_prefill<attnjit_config>(q, ..., window_left);
//   }
//
// The family's template defines `::attnjit::<entry><Config>(args...)` as a
// __device__ function and `::attnjit::<entry>_launch_info<Config>` (see
// templates/README.md). The generated source also defines
// `extern "C" __device__ const unsigned <entry>_launch_info[4]`
// = {threads, dynamic smem bytes, 0, 0} read by the runtime at module load.
#pragma once

#include <string>
#include <vector>

#include "attnjit/signature.h"
#include "attnjit/spec.h"

namespace attnjit {

struct GeneratedSource {
  std::string name;      // "<display_name>.cu", for NVRTC and dumps
  std::string text;      // the translation unit
  std::string entry;     // extern "C" kernel name
};

// Throws Error(kCodegen) if the template is not embedded.
GeneratedSource generate_source(const Spec& spec, const Signature& signature);

// The embedded template headers (templates/**, captured at build time).
struct EmbeddedHeader {
  std::string path;      // relative to templates/, e.g. "attention/mask.cuh"
  std::string contents;
};
const std::vector<EmbeddedHeader>& embedded_headers();
const EmbeddedHeader* find_embedded_header(const std::string& path);
// SHA-256 over all embedded headers (sorted by path): part of every key.
const std::string& embedded_headers_digest();

}  // namespace attnjit
