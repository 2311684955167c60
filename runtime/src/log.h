// The runtime's warnings and log lines ($ATTNJIT_LOG): one line to stderr
// in one write, so lines from several threads never interleave.
#pragma once

#include <cstdio>
#include <string>

namespace attnjit {

inline void log_line(const std::string& line) {
  const std::string text = line + "\n";
  std::fputs(text.c_str(), stderr);
}

}  // namespace attnjit
