// The kernel ABI of a family: one parameter struct generated from the
// spec's `args`. The entry point takes it as its single __grid_constant__
// parameter; the host fills it by field. The same text is compiled by
// NVRTC (a generated header beside the embedded templates) and by the host
// compiler (written into the build tree by attnjit_params_header), so the
// two sides cannot disagree on an argument's name, type or position, and
// static_asserts in the text pin the layout on both.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnjit/spec.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// One field of the struct, laid out as both compilers lay it out (natural
// alignment; a TMA map is 128 bytes aligned to 64).
struct ParamField {
  std::string name;
  ArgType type;
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct ParamsLayout {
  std::vector<ParamField> fields;  // in the spec's `args` order
  std::size_t size = 0;            // sizeof, padded to `align`
  std::size_t align = 1;
};

ParamsLayout params_layout(const Spec& spec);

// "<family>_params": a struct template over the type flags that pointer
// args name (in flag order), e.g. attention_prefill_params<dtype>.
std::string params_struct_name(const Spec& spec);
std::vector<std::string> params_type_flags(const Spec& spec);
// "<family>_params.h", the include name the template and the generated
// unit use.
std::string params_header_name(const Spec& spec);
// The header's text. Throws Error(kCodegen) for a name that is not an
// identifier (a Spec can be built without parse_spec).
std::string params_header_text(const Spec& spec);
// The host-only companion (`<struct>_host.h`, built beside it, never given
// to NVRTC): each field a host argument struct has under the same name
// copied from it (`<struct>_copy_same_named`), and which fields those are.
std::string params_host_header_text(const Spec& spec);

}  // namespace attnjit

#pragma GCC visibility pop
