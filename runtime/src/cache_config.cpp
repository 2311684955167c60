// The cache's configuration from the environment, read in this one place.
#include <pwd.h>
#include <unistd.h>

#include "attnjit/cache.h"
#include "attnjit/env.h"

namespace attnjit {
namespace {

std::string home_directory() {
  std::string home = env_text("HOME");
  if (!home.empty()) return home;
  const passwd* entry = ::getpwuid(::getuid());
  return entry && entry->pw_dir ? entry->pw_dir : "";
}

std::string default_user_dir() {
  std::string dir = env_text("ATTNJIT_CACHE_DIR");
  if (!dir.empty()) return dir;
  // XDG: a relative value is invalid and must be ignored.
  std::string xdg = env_text("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/attnjit";
  std::string home = home_directory();
  if (home.empty()) return "";  // nowhere to write: memory only
  return home + "/.cache/attnjit";
}

std::vector<std::string> split_dirs(const std::string& text) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) dirs.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

}  // namespace

CacheConfig CacheConfig::from_environment() {
  CacheConfig config;
  config.user_dir = default_user_dir();
  config.aot_dirs = split_dirs(env_text("ATTNJIT_AOT_DIRS"));
  config.no_jit = env_bool("ATTNJIT_NO_JIT", false);
  config.log = env_bool("ATTNJIT_LOG", false);
  return config;
}

const char* to_string(EntrySource source) {
  switch (source) {
    case EntrySource::kMemory:
      return "memory";
    case EntrySource::kAot:
      return "aot";
    case EntrySource::kDisk:
      return "disk";
    case EntrySource::kCompiled:
      return "compiled";
  }
  return "unknown";
}

}  // namespace attnjit
