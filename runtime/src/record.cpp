// Record mode (ATTNJIT_RECORD): the manifest of the variants a process
// requests, and its reader.
#include "attnjit/record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "attnjit/env.h"
#include "attnjit/error.h"

namespace attnjit {

bool RecordedVariant::operator<(const RecordedVariant& o) const {
  return std::tie(spec, flags, target) < std::tie(o.spec, o.flags, o.target);
}

std::string manifest_line(const RecordedVariant& v) {
  const nlohmann::ordered_json line = {{"spec", v.spec}, {"flags", v.flags}, {"target", v.target}};
  return line.dump() + "\n";
}

namespace {

bool append_line(const std::string& path, const std::string& line, std::string* why) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  // One write of the whole line: with O_APPEND, concurrent writers' lines
  // never interleave. A short write (a full disk) leaves a torn last line,
  // which the reader reports with its line number.
  ssize_t n;
  do {
    n = ::write(fd, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (n == static_cast<ssize_t>(line.size())) return true;
  *why = n < 0 ? std::strerror(error) : "short write";
  return false;
}

}  // namespace

bool record_variant(const std::string& path, const RecordedVariant& variant) {
  // Never destroyed: a thread may record while the process exits.
  static std::mutex& mutex = *new std::mutex;
  static auto& written = *new std::set<std::pair<std::string, RecordedVariant>>;
  static bool warned = false;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = written.emplace(path, variant);
  if (!inserted) return true;
  std::string why;
  if (append_line(path, manifest_line(variant), &why)) return true;
  written.erase(it);  // try again at the next request
  if (!warned) {
    warned = true;
    std::fprintf(stderr, "attnjit: warning: cannot record to ATTNJIT_RECORD=%s: %s\n",
                 path.c_str(), why.c_str());
  }
  return false;
}

void record_requested_variant(const std::string& spec, const FlagSet& flags, const Target& target) {
  const std::string path = env_text("ATTNJIT_RECORD");
  if (path.empty()) return;
  record_variant(path, RecordedVariant{spec, flags.str(), target.name()});
}

std::vector<ManifestLine> read_manifest(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorKind::kArgument, "cannot read manifest '" + path + "': it is a directory");
  }
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorKind::kArgument,
                "cannot read manifest '" + path + "': " + std::strerror(errno));
  }
  std::vector<ManifestLine> lines;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    const auto fail = [&](const std::string& what) {
      return Error(ErrorKind::kArgument, path + ":" + std::to_string(number) + ": " + what);
    };
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      throw fail("not a JSON object (expected {\"spec\": ..., \"flags\": ..., \"target\": ...})");
    }
    ManifestLine line;
    line.line = number;
    for (const auto& [name, field] :
         {std::pair<const char*, std::string*>{"spec", &line.variant.spec},
          {"flags", &line.variant.flags},
          {"target", &line.variant.target}}) {
      const auto found = json.find(name);
      if (found == json.end()) throw fail(std::string("missing field '") + name + "'");
      if (!found->is_string()) throw fail(std::string("field '") + name + "' is not a string");
      *field = found->get<std::string>();
    }
    for (const auto& item : json.items()) {
      if (item.key() != "spec" && item.key() != "flags" && item.key() != "target") {
        throw fail("unknown field '" + item.key() + "'");
      }
    }
    lines.push_back(std::move(line));
  }
  if (in.bad()) {
    throw Error(ErrorKind::kArgument, "cannot read manifest '" + path + "'");
  }
  return lines;
}

}  // namespace attnjit
