// The embedded specs pre-parsed: attnjit_pack_specs (compiler/tools/
// pack_specs.cpp) packs each one's Spec, as parse_spec reads its YAML, at
// build time; the library embeds the packs and load_embedded_spec unpacks
// them, so that no process parses their YAML.
#pragma once

#include <string>
#include <string_view>

#include "attnjit/spec.h"

namespace attnjit::detail {

// Every member of the Spec and of everything it holds, locations included:
// unpack_spec(pack_spec(spec)) equals `spec`. The bytes are read only by
// the library built from the same sources (no version, no other reader);
// bytes unpack_spec cannot read are a programmer error.
std::string pack_spec(const Spec& spec);
Spec unpack_spec(std::string_view bytes);

// The pack embedded for `name` (an embedded_spec_names() entry); empty in
// attnjit_pack_specs, which makes them and parses the YAML instead.
std::string_view embedded_spec_pack(const std::string& name);

}  // namespace attnjit::detail
