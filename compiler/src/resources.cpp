// Resource usage of a compiled entry: ptxas's verbose report from the NVRTC
// log, and the launch info the generated source stores in the PTX.
#include <cstdint>
#include <cctype>
#include <string>
#include <vector>
#include <sstream>

#include "attnjit/nvrtc.h"

namespace attnjit {
namespace {

// std::regex is avoided on purpose: inside a Python extension next to
// PyTorch, libstdc++'s regex locale facets crashed (seen on the device
// machine), and these formats need nothing but "number before a word".

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

bool starts_entry_report(const std::string& line) {
  return line.find("Compiling entry function '") != std::string::npos;
}

// The decimal number that ends right before `suffix` in `line` (e.g. "10"
// in "Used 10 registers"), or -1.
int number_before(const std::string& line, const std::string& suffix) {
  const std::size_t at = line.find(suffix);
  if (at == std::string::npos || at == 0) return -1;
  std::size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == at) return -1;
  return static_cast<int>(std::stol(line.substr(begin, at - begin)));
}

}  // namespace

// ptxas prints, for each entry:
//   ptxas info    : Compiling entry function 'axpy' for 'sm_90a'
//   ptxas info    : Function properties for axpy
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
void parse_ptxas_report(const std::string& log, const std::string& entry, ResourceUsage& usage) {
  const std::string heading = "Compiling entry function '" + entry + "'";
  const std::vector<std::string> lines = lines_of(log);
  std::size_t i = 0;
  while (i < lines.size() && lines[i].find(heading) == std::string::npos) ++i;
  // Without the heading (some NVRTC versions drop it when they reuse an
  // earlier ptxas run) the report of a single-entry program is read whole.
  if (i == lines.size()) i = static_cast<std::size_t>(-1);
  for (++i; i < lines.size() && !starts_entry_report(lines[i]); ++i) {
    const std::string& line = lines[i];
    const int registers = number_before(line, " registers");
    if (line.find("Used ") != std::string::npos && registers >= 0) {
      usage.registers = registers;
      // ptxas leaves out "N bytes smem" when the entry has none.
      const int smem = number_before(line, " bytes smem");
      usage.static_smem = smem >= 0 ? smem : 0;
    } else if (line.find("bytes stack frame") != std::string::npos) {
      usage.stack_frame = number_before(line, " bytes stack frame");
      usage.spill_stores = number_before(line, " bytes spill stores");
      usage.spill_loads = number_before(line, " bytes spill loads");
    }
  }
}

// NVVM writes the array as bytes, little endian, trailing zeros left out:
//   .global .align 4 .b8 axpy_launch_info[16] = {128, 0, 0, 0, 0, 16, 0, 0, 1};
// 32-bit elements (.u32 / .b32) are read as well.
bool parse_launch_info(const std::string& ptx, const std::string& entry, ResourceUsage& usage) {
  const std::string name = " " + entry + "_launch_info[";
  const std::size_t at = ptx.find(name);
  if (at == std::string::npos) return false;
  const std::size_t line_begin = ptx.rfind('\n', at) + 1;  // npos + 1 == 0
  const std::string head = ptx.substr(line_begin, at - line_begin);
  bool bytes;
  if (head.find(".b8") != std::string::npos) {
    bytes = true;
  } else if (head.find(".u32") != std::string::npos || head.find(".b32") != std::string::npos) {
    bytes = false;
  } else {
    return false;
  }
  const std::size_t open = ptx.find('{', at);
  const std::size_t close = ptx.find('}', at);
  const std::size_t line_end = ptx.find('\n', at);
  if (open == std::string::npos || close == std::string::npos || close < open ||
      (line_end != std::string::npos && open > line_end)) {
    return false;
  }
  uint32_t words[4] = {0, 0, 0, 0};
  std::istringstream values(ptx.substr(open + 1, close - open - 1));
  std::size_t index = 0;
  for (std::string item; std::getline(values, item, ','); ++index) {
    const uint64_t value = std::stoull(item);
    if (bytes && index < 16)
      words[index / 4] |= static_cast<uint32_t>(value & 0xff) << (8 * (index % 4));
    if (!bytes && index < 4) words[index] = static_cast<uint32_t>(value);
  }
  usage.threads = static_cast<int>(words[0]);
  usage.dynamic_smem = static_cast<int>(words[1]);
  usage.min_blocks = static_cast<int>(words[2]);
  return true;
}

}  // namespace attnjit
