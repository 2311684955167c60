// CacheConfig::from_environment: the only reader of the cache's variables.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnjit/cache.h"
#include "attnjit/error.h"

namespace attnjit {
namespace {

// Sets variables for one test and restores the previous values after it.
class ScopedEnvironment {
 public:
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const char* value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

class CacheConfigEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"ATTNJIT_CACHE_DIR", "XDG_CACHE_HOME", "ATTNJIT_AOT_DIRS",
                             "ATTNJIT_NO_JIT", "ATTNJIT_LOG"})
      env_.set(name, nullptr);
    env_.set("HOME", "/home/tester");
  }
  ScopedEnvironment env_;
};

TEST_F(CacheConfigEnv, DefaultsToTheHomeCache) {
  CacheConfig config = CacheConfig::from_environment();
  EXPECT_EQ(config.user_dir, "/home/tester/.cache/attnjit");
  EXPECT_TRUE(config.aot_dirs.empty());
  EXPECT_FALSE(config.no_jit);
  EXPECT_FALSE(config.log);
}

TEST_F(CacheConfigEnv, XdgCacheHomeWinsOverHome) {
  env_.set("XDG_CACHE_HOME", "/xdg");
  EXPECT_EQ(CacheConfig::from_environment().user_dir, "/xdg/attnjit");
  env_.set("XDG_CACHE_HOME", "relative/is/ignored");
  EXPECT_EQ(CacheConfig::from_environment().user_dir, "/home/tester/.cache/attnjit");
}

TEST_F(CacheConfigEnv, CacheDirWinsOverEverything) {
  env_.set("XDG_CACHE_HOME", "/xdg");
  env_.set("ATTNJIT_CACHE_DIR", "/explicit");
  EXPECT_EQ(CacheConfig::from_environment().user_dir, "/explicit");
  env_.set("ATTNJIT_CACHE_DIR", "");  // empty is unset
  EXPECT_EQ(CacheConfig::from_environment().user_dir, "/xdg/attnjit");
}

TEST_F(CacheConfigEnv, AotDirsSplitOnColonsSkippingEmptyParts) {
  env_.set("ATTNJIT_AOT_DIRS", "/a::/b/c:");
  EXPECT_EQ(CacheConfig::from_environment().aot_dirs, (std::vector<std::string>{"/a", "/b/c"}));
}

TEST_F(CacheConfigEnv, SwitchesAreReadAsBooleans) {
  const std::vector<std::pair<const char*, bool>> table = {
      {"1", true},      {"true", true}, {"YES", true},  {"on", true}, {"0", false},
      {"false", false}, {"No", false},  {"OFF", false}, {"", false},
  };
  for (const auto& [text, expected] : table) {
    env_.set("ATTNJIT_NO_JIT", text);
    env_.set("ATTNJIT_LOG", text);
    const CacheConfig config = CacheConfig::from_environment();
    EXPECT_EQ(config.no_jit, expected) << text;
    EXPECT_EQ(config.log, expected) << text;
  }
}

// A misspelt switch used to read as false, so ATTNJIT_NO_JIT=2 quietly
// allowed compiling in production.
TEST_F(CacheConfigEnv, SwitchesRejectAnythingElse) {
  for (const char* name : {"ATTNJIT_NO_JIT", "ATTNJIT_LOG"}) {
    for (const char* text : {"2", "garbage", "y", " 1"}) {
      env_.set(name, text);
      try {
        CacheConfig::from_environment();
        ADD_FAILURE() << name << "=" << text << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kFlags);
        EXPECT_EQ(std::string(e.what()),
                  std::string(name) + "='" + text +
                      "' is not a boolean (accepted: 1/0, true/false, yes/no, on/off in any case; "
                      "empty or unset: false)");
      }
      env_.set(name, nullptr);
    }
  }
}

}  // namespace
}  // namespace attnjit
