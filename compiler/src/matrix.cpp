// expand_matrix(): the variants an offline cache build and the GPU test
// matrix cover.
#include <set>

#include "attnjit/error.h"
#include "attnjit/spec.h"

namespace attnjit {
namespace {

// The axes of one entry in the spec's flag order, so that the product is
// enumerated the same way whatever order the YAML lists them in; the last
// axis varies fastest.
std::vector<std::pair<std::string, std::vector<FlagValue>>> ordered_axes(const Spec& spec,
                                                                         const MatrixEntry& entry) {
  std::vector<std::pair<std::string, std::vector<FlagValue>>> axes;
  for (const FlagDecl& decl : spec.flags) {
    const auto it = entry.axes.find(decl.name);
    if (it != entry.axes.end()) axes.emplace_back(decl.name, it->second);
  }
  return axes;
}

}  // namespace

MatrixExpansion expand_matrix(const Spec& spec) {
  MatrixExpansion expansion;
  std::set<std::string> seen;
  for (const MatrixEntry& entry : spec.matrix) {
    const auto axes = ordered_axes(spec, entry);
    std::vector<std::size_t> position(axes.size(), 0);
    bool done = false;
    for (const auto& axis : axes) done = done || axis.second.empty();
    while (!done) {
      std::map<std::string, FlagValue> given;
      for (std::size_t i = 0; i < axes.size(); ++i) {
        given[axes[i].first] = axes[i].second[position[i]];
      }
      try {
        FlagSet flags = resolve_flags(spec, given);
        if (seen.insert(flags.str()).second) expansion.variants.push_back(std::move(flags));
      } catch (const Error& error) {
        if (error.kind() != ErrorKind::kFlags) throw;
        ++expansion.dropped_illegal;
      }
      // Advance the odometer; done when the first axis wraps.
      done = true;
      for (std::size_t i = axes.size(); i-- > 0;) {
        if (++position[i] < axes[i].second.size()) {
          done = false;
          break;
        }
        position[i] = 0;
      }
    }
  }
  return expansion;
}

std::vector<FlagSet> matrix_and_presets(const Spec& spec) {
  std::vector<FlagSet> all = expand_matrix(spec).variants;
  std::set<std::string> seen;
  for (const FlagSet& flags : all) seen.insert(flags.str());
  for (const Preset& preset : spec.presets) {
    FlagSet flags = resolve_preset(spec, preset.name);
    if (seen.insert(flags.str()).second) all.push_back(std::move(flags));
  }
  return all;
}

std::string FlagSet::str() const {
  std::string text;
  for (const auto& [name, value] : values) {
    if (!text.empty()) text += ',';
    text += name + "=" + to_string(value);
  }
  return text;
}

}  // namespace attnjit
