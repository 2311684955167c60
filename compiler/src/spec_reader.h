// Reading a YAML spec node by node, with every error reported as
// Error(kSpec, "file:line:col: message").
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attnjit/spec.h"

namespace attnjit::detail {

struct MapEntry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

const MapEntry* find_entry(const std::vector<MapEntry>& entries, std::string_view key);

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  // Parses the text; malformed YAML becomes a kSpec error with its position.
  YAML::Node load(const std::string& yaml_text) const;

  SourceLocation location(const YAML::Node& node) const;
  [[noreturn]] void fail(const SourceLocation& at, const std::string& message) const;
  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const;

  // The entries of a map in document order. A non-map, a key that is not a
  // plain name, a duplicate key, and (when `known_keys` is not empty) an
  // unknown key are errors; `what` names the map in messages ("spec",
  // "flag 'causal'").
  std::vector<MapEntry> entries(const YAML::Node& map, std::string_view what,
                                const std::vector<std::string>& known_keys) const;
  // Like entries(), but the keys are names the spec declares: each must
  // pass identifier_problem(); `noun` names them ("flag", "preset").
  std::vector<MapEntry> named_entries(const YAML::Node& map, std::string_view what,
                                      std::string_view noun) const;
  // A missing required key is reported at the map itself.
  const MapEntry& required(const std::vector<MapEntry>& entries, const YAML::Node& map,
                           std::string_view key, std::string_view what) const;

  std::vector<YAML::Node> items(const YAML::Node& sequence, std::string_view what) const;
  // A sequence, or a single scalar read as a sequence of one.
  std::vector<YAML::Node> items_or_scalar(const YAML::Node& node, std::string_view what) const;

  std::string text(const YAML::Node& node, std::string_view what) const;
  // `what` starts the message: "flag name 'x' is a C++ keyword".
  std::string identifier(const YAML::Node& node, std::string_view what) const;
  std::string identifier(const MapEntry& entry, std::string_view what) const;
  // A plain decimal scalar that fits in a 32-bit int (generated code
  // declares these values as `int`).
  int64_t integer(const YAML::Node& node, std::string_view what) const;
  bool boolean(const YAML::Node& node, std::string_view what) const;

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// Whether a scalar was written without quotes (only plain scalars can be
// booleans or numbers).
bool is_plain_scalar(const YAML::Node& node);

}  // namespace attnjit::detail
