// Record mode (ATTNJIT_RECORD): the manifest that many processes and
// threads append to, its reader, and the one place AttentionKernel::get
// records a variant.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "attnjit/attention.h"
#include "attnjit/error.h"
#include "attnjit/record.h"
#include "cache_test_support.h"

namespace attnjit {
namespace {

using testing::TempDir;

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Long flag texts, so that a torn or interleaved write would show.
RecordedVariant variant(int i) {
  std::string flags = "variant=" + std::to_string(i);
  while (flags.size() < 300) flags += ",padding=" + std::to_string(i);
  return RecordedVariant{"family_" + std::to_string(i % 3), flags, i % 2 ? "sm_80" : "sm_90a"};
}

TEST(Record, LineIsOneJsonObject) {
  EXPECT_EQ(manifest_line(RecordedVariant{"attention_prefill", "dtype=bf16,head_dim=128", "sm_90a"}),
            "{\"spec\":\"attention_prefill\",\"flags\":\"dtype=bf16,head_dim=128\","
            "\"target\":\"sm_90a\"}\n");
}

TEST(Record, ProcessesAndThreadsWriteEachVariantOncePerProcessWithNoTornLine) {
  TempDir dir;
  const std::string path = dir / "manifest";
  constexpr int kProcesses = 4, kThreads = 4, kVariants = 40, kRepeats = 20;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Every thread requests every variant many times, in its own order.
      std::vector<std::thread> threads;
      bool ok = true;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (int r = 0; r < kRepeats; ++r) {
            for (int i = 0; i < kVariants; ++i) {
              if (!record_variant(path, variant((i * 7 + t + r) % kVariants))) ok = false;
            }
          }
        });
      }
      for (auto& th : threads) th.join();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  // Every line reads back (none torn), and each variant is there once per
  // process.
  std::vector<ManifestLine> read;
  ASSERT_NO_THROW(read = read_manifest(path));
  EXPECT_EQ(lines_of(path).size(), size_t(kProcesses * kVariants));
  std::map<RecordedVariant, int> count;
  for (const ManifestLine& line : read) ++count[line.variant];
  ASSERT_EQ(count.size(), size_t(kVariants));
  for (int i = 0; i < kVariants; ++i) EXPECT_EQ(count[variant(i)], kProcesses) << i;
}

TEST(Record, ReaderNamesTheFileAndLineOfABadLine) {
  TempDir dir;
  const std::string good = R"({"spec":"a","flags":"x=1","target":"sm_80"})";
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {good + "\n{\"spec\":\"a\",\"flags\":\"x=1\",\"tar", ":2: not a JSON object"},
      {good + "\n\n[1, 2]\n", ":3: not a JSON object"},
      {R"({"spec":"a","flags":"x=1"})" "\n", ":1: missing field 'target'"},
      {R"({"spec":"a","flags":1,"target":"sm_80"})" "\n", ":1: field 'flags' is not a string"},
      {R"({"spec":"a","flags":"x","target":"sm_80","extra":1})" "\n",
       ":1: unknown field 'extra'"},
  };
  for (const auto& c : cases) {
    const std::string path = dir / "manifest";
    write_file(path, c.text);
    try {
      read_manifest(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + c.message, 0), 0u) << e.what();
    }
  }
  write_file(dir / "ok", "\n" + good + "\n" + good + "\n");
  const std::vector<ManifestLine> lines = read_manifest(dir / "ok");
  ASSERT_EQ(lines.size(), 2u);  // duplicates are the caller's to drop
  EXPECT_EQ(lines[0].line, 2);
  EXPECT_EQ(lines[1].variant, (RecordedVariant{"a", "x=1", "sm_80"}));
  EXPECT_THROW(read_manifest(dir / "missing"), Error);
}

// One NVRTC compile (sm_80, memory-only caches): the first request records
// the variant, later ones (memo hits, and a second cache's miss) do not.
TEST(Record, AttentionKernelGetRecordsAVariantOnce) {
  TempDir dir;
  const std::string path = dir / "manifest";
  ::setenv("ATTNJIT_RECORD", path.c_str(), 1);
  AttentionFlags flags;
  flags.head_dim = 64;
  flags.causal = true;
  const Target target = parse_target("sm_80");
  KernelCache first(CacheConfig{});
  KernelCache second(CacheConfig{});
  try {
    AttentionKernel::get(flags, first, &target);
    AttentionKernel::get(flags, first, &target);
    AttentionKernel::get(flags, second, &target);
  } catch (...) {
    ::unsetenv("ATTNJIT_RECORD");
    throw;
  }
  ::unsetenv("ATTNJIT_RECORD");
  const std::vector<ManifestLine> lines = read_manifest(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].variant,
            (RecordedVariant{"attention_prefill", flags.to_flag_set().str(), "sm_80"}));
}

}  // namespace
}  // namespace attnjit
