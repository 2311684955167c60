#include "spec_reader.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

#include <yaml-cpp/depthguard.h>

#include "attnjit/error.h"
#include "names.h"

namespace attnjit::detail {
namespace {

std::string without_final_period(std::string message) {
  while (!message.empty() && (message.back() == '.' || message.back() == ' ')) {
    message.pop_back();
  }
  return message;
}

// The 1-based column of a tab in the indentation of line `line` (1-based)
// of `text`, or 0.
int indentation_tab_column(const std::string& text, int line) {
  std::size_t at = 0;
  for (int n = 1; n < line && at != std::string::npos; ++n) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos) return 0;
  int first_tab = 0;
  for (std::size_t i = at; i < text.size() && text[i] != '\n'; ++i) {
    if (text[i] == '\t') {
      if (first_tab == 0) first_tab = int(i - at) + 1;
    } else if (text[i] != ' ' && text[i] != '\r') {
      return first_tab;  // text follows: the tab was indentation
    }
  }
  return 0;
}

}  // namespace

const MapEntry* find_entry(const std::vector<MapEntry>& entries, std::string_view key) {
  for (const MapEntry& entry : entries) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

YAML::Node SpecReader::load(const std::string& yaml_text) const {
  try {
    return YAML::Load(yaml_text);
  } catch (const YAML::DeepRecursion& e) {
    // (yaml-cpp's own message names only the file: "bad file".)
    fail(SourceLocation{file_, e.mark.line < 0 ? 1 : e.mark.line + 1,
                        e.mark.column < 0 ? 1 : e.mark.column + 1},
         "yaml nested too deeply (" + std::to_string(e.depth()) +
             " levels; a spec needs a handful)");
  } catch (const YAML::Exception& e) {
    const SourceLocation at{file_, e.mark.line < 0 ? 1 : e.mark.line + 1,
                            e.mark.column < 0 ? 1 : e.mark.column + 1};
    // yaml-cpp reports a tab-indented line as a malformed map or a
    // misplaced tab, on that line or the next one.
    for (int line = at.line; line >= std::max(1, at.line - 1); --line) {
      if (const int column = indentation_tab_column(yaml_text, line)) {
        fail(SourceLocation{file_, line, column},
             "tabs are not allowed for indentation (indent with spaces)");
      }
    }
    fail(at, "malformed yaml: " + escaped(without_final_period(e.msg)));
  }
}

SourceLocation SpecReader::location(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  // Nodes of an empty document carry no position; point at its start.
  if (mark.line < 0 || mark.column < 0) return SourceLocation{file_, 1, 1};
  return SourceLocation{file_, mark.line + 1, mark.column + 1};
}

void SpecReader::fail(const SourceLocation& at, const std::string& message) const {
  throw Error(ErrorKind::kSpec, at.str() + ": " + message);
}

void SpecReader::fail(const YAML::Node& at, const std::string& message) const {
  fail(location(at), message);
}

std::vector<MapEntry> SpecReader::entries(const YAML::Node& map, std::string_view what,
                                          const std::vector<std::string>& known_keys) const {
  if (!map.IsMap()) fail(map, std::string(what) + " must be a map");
  std::vector<MapEntry> result;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key_node = it->first;  // a copy: it->first is a temporary
    if (!key_node.IsScalar()) fail(key_node, "keys in " + std::string(what) + " must be names");
    MapEntry entry{key_node.Scalar(), key_node, it->second};
    if (const MapEntry* first = find_entry(result, entry.key)) {
      const SourceLocation first_at = location(first->key_node);
      fail(key_node, "duplicate key " + quoted(entry.key) + " in " + std::string(what) +
                         " (first at " + std::to_string(first_at.line) + ":" +
                         std::to_string(first_at.column) + ")");
    }
    const bool known = known_keys.empty() || std::find(known_keys.begin(), known_keys.end(),
                                                       entry.key) != known_keys.end();
    if (!known) {
      fail(key_node, "unknown key " + quoted(entry.key) + " in " + std::string(what) +
                         did_you_mean(entry.key, known_keys));
    }
    result.push_back(std::move(entry));
  }
  return result;
}

std::vector<MapEntry> SpecReader::named_entries(const YAML::Node& map, std::string_view what,
                                                std::string_view noun) const {
  std::vector<MapEntry> result = entries(map, what, {});
  for (const MapEntry& entry : result) identifier(entry, std::string(noun) + " name");
  return result;
}

const MapEntry& SpecReader::required(const std::vector<MapEntry>& entries, const YAML::Node& map,
                                     std::string_view key, std::string_view what) const {
  const MapEntry* entry = find_entry(entries, key);
  if (entry == nullptr) {
    fail(map, "missing key " + quoted(key) + " in " + std::string(what));
  }
  return *entry;
}

std::vector<YAML::Node> SpecReader::items(const YAML::Node& sequence, std::string_view what) const {
  if (!sequence.IsSequence()) fail(sequence, std::string(what) + " must be a list");
  std::vector<YAML::Node> result;
  for (const YAML::Node& item : sequence) result.push_back(item);
  return result;
}

std::vector<YAML::Node> SpecReader::items_or_scalar(const YAML::Node& node,
                                                    std::string_view what) const {
  if (node.IsScalar()) return {node};
  if (!node.IsSequence()) fail(node, std::string(what) + " must be a value or a list");
  return items(node, what);
}

std::string SpecReader::text(const YAML::Node& node, std::string_view what) const {
  if (!node.IsScalar()) fail(node, std::string(what) + " must be text");
  return node.Scalar();
}

std::string SpecReader::identifier(const YAML::Node& node, std::string_view what) const {
  if (!node.IsScalar()) fail(node, std::string(what) + " must be a name");
  const std::string name = node.Scalar();
  if (auto problem = identifier_problem(name)) {
    fail(node, std::string(what) + " " + quoted(name) + " " + *problem);
  }
  return name;
}

std::string SpecReader::identifier(const MapEntry& entry, std::string_view what) const {
  return identifier(entry.key_node, what);
}

int64_t SpecReader::integer(const YAML::Node& node, std::string_view what) const {
  const std::string shown = node.IsScalar() ? " " + quoted(node.Scalar()) : "";
  const std::string not_an_int =
      std::string(what) + " must be an integer" + (shown.empty() ? "" : ", got" + shown);
  if (!is_plain_scalar(node)) fail(node, not_an_int);
  const std::string& digits = node.Scalar();
  const char* first = digits.data();
  const char* last = digits.data() + digits.size();
  if (first != last && *first == '+') ++first;
  int64_t value = 0;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error == std::errc::result_out_of_range || (error == std::errc() && end == last &&
                                                  (value < std::numeric_limits<int32_t>::min() ||
                                                   value > std::numeric_limits<int32_t>::max()))) {
    fail(node, std::string(what) + shown + " is out of range for a 32-bit int");
  }
  if (error != std::errc() || end != last) fail(node, not_an_int);
  return value;
}

bool SpecReader::boolean(const YAML::Node& node, std::string_view what) const {
  if (is_plain_scalar(node) && node.Scalar() == "true") return true;
  if (is_plain_scalar(node) && node.Scalar() == "false") return false;
  const std::string shown = node.IsScalar() ? ", got " + quoted(node.Scalar()) : "";
  fail(node, std::string(what) + " must be true or false" + shown);
}

}  // namespace attnjit::detail
