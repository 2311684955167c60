// Resource usage of a compiled entry: ptxas's verbose report from the NVRTC
// log, and the launch info the generated source stores in the PTX.
#include <cstdint>
#include <regex>
#include <sstream>

#include "attnjit/nvrtc.h"

namespace attnjit {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

bool starts_entry_report(const std::string& line) {
  return line.find("Compiling entry function '") != std::string::npos;
}

int first_number(const std::smatch& match, std::size_t group) {
  return static_cast<int>(std::stol(match[group].str()));
}

}  // namespace

// ptxas prints, for each entry:
//   ptxas info    : Compiling entry function 'axpy' for 'sm_90a'
//   ptxas info    : Function properties for axpy
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
void parse_ptxas_report(const std::string& log, const std::string& entry, ResourceUsage& usage) {
  static const std::regex kRegisters(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::string heading = "Compiling entry function '" + entry + "'";
  const std::vector<std::string> lines = lines_of(log);
  std::size_t i = 0;
  while (i < lines.size() && lines[i].find(heading) == std::string::npos) ++i;
  for (++i; i < lines.size() && !starts_entry_report(lines[i]); ++i) {
    std::smatch match;
    if (std::regex_search(lines[i], match, kRegisters)) {
      usage.registers = first_number(match, 1);
      // ptxas leaves out "N bytes smem" when the entry has none.
      usage.static_smem = std::regex_search(lines[i], match, kSmem) ? first_number(match, 1) : 0;
    } else if (std::regex_search(lines[i], match, kFrame)) {
      usage.stack_frame = first_number(match, 1);
      usage.spill_stores = first_number(match, 2);
      usage.spill_loads = first_number(match, 3);
    }
  }
}

// NVVM writes the array as bytes, little endian, trailing zeros left out:
//   .global .align 4 .b8 axpy_launch_info[16] = {128, 0, 0, 0, 0, 16, 0, 0, 1};
// 32-bit elements (.u32 / .b32) are read as well.
bool parse_launch_info(const std::string& ptx, const std::string& entry, ResourceUsage& usage) {
  const std::regex pattern(R"(\.(b8|u32|b32)\s+)" + entry +
                           R"(_launch_info\[(\d+)\]\s*=\s*\{([^}]*)\})");
  std::smatch match;
  if (!std::regex_search(ptx, match, pattern)) return false;
  const bool bytes = match[1].str() == "b8";
  uint32_t words[4] = {0, 0, 0, 0};
  std::istringstream values(match[3].str());
  std::size_t index = 0;
  for (std::string item; std::getline(values, item, ','); ++index) {
    const uint64_t value = std::stoull(item);
    if (bytes && index < 16) words[index / 4] |= static_cast<uint32_t>(value & 0xff) << (8 * (index % 4));
    if (!bytes && index < 4) words[index] = static_cast<uint32_t>(value);
  }
  usage.threads = static_cast<int>(words[0]);
  usage.dynamic_smem = static_cast<int>(words[1]);
  usage.min_blocks = static_cast<int>(words[2]);
  return true;
}

}  // namespace attnjit
