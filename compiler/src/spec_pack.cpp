// pack_spec() and unpack_spec(). Each struct's members are listed once, in
// fields(), and the writer and the reader walk the same lists, so that the
// two agree by construction. Each list is a structured binding, which must
// name every member of its struct: a member added to a struct stops this
// file compiling until it is listed here.
//
// The bytes: the members in list order; integers, enums and bools as zigzag
// LEB128 varints, a double as a varint of its bits, a string or a container
// as its count and then its items (a map as its entries in key order), an
// optional as a bool and then its value, a variant as its index and then
// the alternative.
#include "spec_pack.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "check.h"

namespace attnjit::detail {
namespace {

uint64_t zigzag(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

int64_t unzigzag(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

class Writer {
 public:
  template <class T>
  void scalar(T value) {
    put(zigzag(static_cast<int64_t>(value)));
  }
  void scalar(double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    put(bits);
  }
  void text(const std::string& value) {
    count(value.size());
    bytes_ += value;
  }
  // Writes a container's count and returns it.
  std::size_t count(std::size_t n) {
    scalar(n);
    return n;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void put(uint64_t value) {
    for (; value >= 0x80; value >>= 7) bytes_ += static_cast<char>((value & 0x7f) | 0x80);
    bytes_ += static_cast<char>(value);
  }
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  template <class T>
  void scalar(T& value) {
    value = static_cast<T>(unzigzag(get()));
  }
  void scalar(double& value) {
    const uint64_t bits = get();
    std::memcpy(&value, &bits, sizeof bits);
  }
  void text(std::string& value) {
    const std::size_t n = count(0);
    value.assign(rest_.data(), n);
    rest_.remove_prefix(n);
  }
  // Reads a container's count (the argument is the writer's).
  std::size_t count(std::size_t) {
    std::size_t n = 0;
    scalar(n);
    // Every item takes at least one byte.
    ATTNJIT_CHECK(n <= rest_.size(), "a spec pack counts more items than it holds bytes");
    return n;
  }
  bool done() const { return rest_.empty(); }

 private:
  uint64_t get() {
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      ATTNJIT_CHECK(!rest_.empty() && shift < 64, "a spec pack ends inside a number");
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  }
  std::string_view rest_;
};

// The walk, for either: the overloads below and fields() are found by
// argument-dependent lookup on Io.
template <class Io, class T>
void item(Io& io, T& value) {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    io.scalar(value);
  } else {
    fields(io, value);
  }
}

template <class Io, class... T>
void items(Io& io, T&... values) {
  (item(io, values), ...);
}

template <class Io>
void item(Io& io, std::string& value) {
  io.text(value);
}

template <class Io, class T>
void item(Io& io, std::vector<T>& values) {
  values.resize(io.count(values.size()));
  for (T& value : values) item(io, value);
}

template <class Io, class T, std::size_t N>
void item(Io& io, T (&values)[N]) {
  for (T& value : values) item(io, value);
}

template <class Io, class A, class B>
void item(Io& io, std::pair<A, B>& value) {
  items(io, value.first, value.second);
}

template <class Io, class K, class V>
void item(Io& io, std::map<K, V>& value) {
  std::vector<std::pair<K, V>> entries(value.begin(), value.end());
  item(io, entries);
  value = std::map<K, V>(entries.begin(), entries.end());
}

template <class Io, class T>
void item(Io& io, std::optional<T>& value) {
  bool present = value.has_value();
  io.scalar(present);
  if (present && !value) value.emplace();
  if (present) item(io, *value);
}

template <class Variant, std::size_t... I>
void emplace_alternative(Variant& value, std::size_t index, std::index_sequence<I...>) {
  ((index == I ? void(value.template emplace<I>()) : void()), ...);
}

template <class Io, class... T>
void item(Io& io, std::variant<T...>& value) {
  std::size_t index = value.index();
  io.scalar(index);
  ATTNJIT_CHECK(index < sizeof...(T), "a spec pack's variant index is out of range");
  if (index != value.index()) emplace_alternative(value, index, std::index_sequence_for<T...>());
  std::visit([&](auto& alternative) { item(io, alternative); }, value);
}

// --- Each struct's members ---------------------------------------------------

template <class Io>
void fields(Io& io, SourceLocation& x) {
  auto& [file, line, column] = x;
  items(io, file, line, column);
}

template <class Io>
void fields(Io& io, FlagDecl& x) {
  auto& [name, type, int_values, enum_values, default_value, doc, loc] = x;
  items(io, name, type, int_values, enum_values, default_value, doc, loc);
}

template <class Io>
void fields(Io& io, Constraint& x) {
  auto& [when, require, forbid, why, loc] = x;
  items(io, when, require, forbid, why, loc);
}

template <class Io>
void fields(Io& io, TuningRule& x) {
  auto& [when, targets, values, why, unsupported, loc] = x;
  items(io, when, targets, values, why, unsupported, loc);
}

template <class Io>
void fields(Io& io, Tuning& x) {
  auto& [params, defaults, rules] = x;
  items(io, params, defaults, rules);
}

template <class Io>
void fields(Io& io, ArgDecl& x) {
  auto& [name, type, elem_flag, no_alias, doc, loc, per, table_size, table_size_arg, sorted,
         divisor_of] = x;
  items(io, name, type, elem_flag, no_alias, doc, loc, per, table_size, table_size_arg, sorted,
        divisor_of);
}

template <class Io>
void fields(Io& io, Preset& x) {
  auto& [name, flags, doc, loc] = x;
  items(io, name, flags, doc, loc);
}

template <class Io>
void fields(Io& io, MatrixEntry& x) {
  auto& [axes, loc] = x;
  items(io, axes, loc);
}

template <class Io>
void fields(Io& io, ExprScalar& x) {
  auto& [name, type] = x;
  items(io, name, type);
}

template <class Io>
void fields(Io& io, ExprTensor& x) {
  auto& [name, elem, per, size, size_arg, sorted] = x;
  items(io, name, elem, per, size, size_arg, sorted);
}

template <class Io>
void fields(Io& io, ExprContext& x) {
  auto& [scalars, tensors, other_args, has_head_counts] = x;
  items(io, scalars, tensors, other_args, has_head_counts);
}

template <class Io>
void fields(Io& io, ExprNode& x) {
  auto& [op, type, int_value, float_value, bool_value, var, index, kids, offset] = x;
  items(io, op, type, int_value, float_value, bool_value, var, index, kids, offset);
}

template <class Io>
void fields(Io& io, Expr& x) {
  auto& [kind, nodes, root, context, text] = x;
  items(io, kind, nodes, root, context, text);
}

template <class Io>
void fields(Io& io, Spec& x) {
  auto& [family, description, template_path, template_loc, entry, flags, constraints, tuning, args,
         presets, matrix, source_name, extends, params_family, mask, score, tune_as,
         expression_vm] = x;
  items(io, family, description, template_path, template_loc, entry, flags, constraints, tuning,
        args, presets, matrix, source_name, extends, params_family, mask, score, tune_as,
        expression_vm);
}

}  // namespace

std::string pack_spec(const Spec& spec) {
  // The walk is the reader's too, so it takes members it may assign: a copy.
  Spec walked = spec;
  Writer writer;
  item(writer, walked);
  return writer.bytes();
}

Spec unpack_spec(std::string_view bytes) {
  Reader reader(bytes);
  Spec spec;
  item(reader, spec);
  ATTNJIT_CHECK(reader.done(), "a spec pack has bytes after its Spec");
  return spec;
}

}  // namespace attnjit::detail
