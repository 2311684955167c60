// NVRTC on the axpy family (the attention family is compiled by its own
// tests): binaries, PTX, resource usage, failures and dumps.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "attnjit/codegen.h"
#include "attnjit/nvrtc.h"
#include "attnjit/nvrtc_version.h"
#include "test_support.h"

namespace attnjit {
namespace {

namespace fs = std::filesystem;
using testing::error_message;

struct Variant {
  GeneratedSource source;
  CompileOptions options;
};

Variant axpy_variant(const std::string& flags, const std::string& target) {
  const Spec spec = testing::axpy_spec();
  CompileOptions options;
  options.target = parse_target(target);
  const Signature signature =
      make_signature(spec, resolve_flags(spec, parse_flag_assignments(spec, flags)), options);
  return Variant{generate_source(spec, signature), options};
}

CompiledKernel compile_axpy(const std::string& flags, const std::string& target) {
  const Variant variant = axpy_variant(flags, target);
  return compile_source(variant.source, variant.options);
}

// A fresh directory under the build's temp dir, removed afterwards, and
// the environment variables a test sets, restored.
class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "attnjit-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    save("ATTNJIT_DUMP_DIR");
    save("TMPDIR");
    ::unsetenv("ATTNJIT_DUMP_DIR");
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    fs::remove_all(dir_);
  }
  void save(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
  }
  fs::path dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(Nvrtc, Version) {
  EXPECT_TRUE(std::regex_match(nvrtc_version(), std::regex(R"(\d+\.\d+)"))) << nvrtc_version();
}

TEST_F(NvrtcTest, CompilesForSm80AndSm90a) {
  for (const char* target : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(target);
    const CompiledKernel kernel = compile_axpy("", target);
    EXPECT_EQ(kernel.entry, "axpy");
    ASSERT_GT(kernel.cubin.size(), 4u);
    EXPECT_EQ(kernel.cubin.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_NE(kernel.ptx.find(".visible .entry axpy("), std::string::npos);
    EXPECT_NE(kernel.ptx.find(std::string(".target ") + target), std::string::npos);
    EXPECT_NE(kernel.log.find("Compiling entry function 'axpy'"), std::string::npos) << kernel.log;
    EXPECT_GT(kernel.compile_seconds, 0.0);
    EXPECT_LT(kernel.compile_seconds, 30.0);
    EXPECT_GT(kernel.resources.registers, 0);
    EXPECT_LE(kernel.resources.registers, 255);
    EXPECT_EQ(kernel.resources.static_smem, 0);
    EXPECT_EQ(kernel.resources.stack_frame, 0);
    EXPECT_EQ(kernel.resources.spill_stores, 0);
    EXPECT_EQ(kernel.resources.spill_loads, 0);
    EXPECT_EQ(kernel.resources.threads, std::string(target) == "sm_90a" ? 256 : 128);
    EXPECT_EQ(kernel.resources.dynamic_smem, 0);
    EXPECT_EQ(kernel.resources.min_blocks, 1);
  }
}

TEST_F(NvrtcTest, ResourcesFollowTheVariant) {
  // 128 threads * 4 elements * 8 bytes of static shared memory.
  const CompiledKernel staged = compile_axpy("stage_in_smem=true,vec=4,dtype=f64", "sm_90a");
  EXPECT_EQ(staged.resources.static_smem, 128 * 4 * 8);
  EXPECT_EQ(staged.resources.threads, 128);
  // A local array read at a runtime index lives on the stack.
  const CompiledKernel scratch = compile_axpy("mode=scratch", "sm_80");
  EXPECT_GT(scratch.resources.stack_frame, 0);
  EXPECT_EQ(scratch.resources.static_smem, 0);
}

TEST_F(NvrtcTest, PtxIsDroppedUnlessAsked) {
  Variant variant = axpy_variant("", "sm_80");
  variant.options.emit_ptx = false;
  const CompiledKernel kernel = compile_source(variant.source, variant.options);
  EXPECT_TRUE(kernel.ptx.empty());
  EXPECT_EQ(kernel.resources.threads, 128);  // still read from the PTX
}

TEST_F(NvrtcTest, BrokenSourceIsACompileErrorWithLogOptionsAndDump) {
  ::setenv("TMPDIR", dir_.c_str(), 1);
  Variant variant = axpy_variant("", "sm_80");
  variant.source.text += "\nthis is not cuda;\n";  // the next to last line
  const std::string message =
      error_message([&] { compile_source(variant.source, variant.options); }, ErrorKind::kCompile);
  EXPECT_EQ(message.rfind("nvrtc could not compile axpy_ee8da1eb.cu (entry axpy) for sm_80: "
                          "NVRTC_ERROR_COMPILATION\ntiles: from the tuning rule at "
                          "axpy.yaml:23:7\nsource: " +
                              dir_.string() + "/attnjit-",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("\noptions: --gpu-architecture=sm_80 --no-source-include "
                         "--ptxas-options=-v --std=c++17 --use_fast_math\nlog:\n"),
            std::string::npos)
      << message;
  const auto bad_line = std::count(variant.source.text.begin(), variant.source.text.end(), '\n');
  EXPECT_NE(message.find("axpy_ee8da1eb.cu(" + std::to_string(bad_line) + "): error"),
            std::string::npos)
      << message;
  const std::smatch path = [&] {
    std::smatch match;
    std::regex_search(message, match, std::regex("source: (\\S+)"));
    return match;
  }();
  ASSERT_TRUE(fs::exists(path[1].str())) << path[1];
  EXPECT_EQ(testing::read_text(path[1].str()), variant.source.text);
  EXPECT_TRUE(fs::exists(fs::path(path[1].str()).replace_extension(".log")));
}

TEST_F(NvrtcTest, TemplateErrorsReachTheMessage) {
  ::setenv("ATTNJIT_DUMP_DIR", dir_.c_str(), 1);
  // The template's static_assert rejects vec=8, which this spec allows.
  std::string yaml = testing::read_text(testing::axpy_spec_path());
  yaml.replace(yaml.find("values: [1, 2, 4]"), 17, "values: [1, 2, 4, 8]");
  const Spec spec = parse_spec(yaml, "axpy8.yaml");
  CompileOptions options;
  options.target = parse_target("sm_80");
  const Signature signature =
      make_signature(spec, resolve_flags(spec, {{"vec", int64_t{8}}}), options);
  const GeneratedSource source = generate_source(spec, signature);
  const std::string message =
      error_message([&] { compile_source(source, options); }, ErrorKind::kCompile);
  EXPECT_NE(message.find("axpy: vec must be 1, 2 or 4"), std::string::npos) << message;
  EXPECT_NE(message.find("source: " + (dir_ / source.name).string() + "\n"), std::string::npos)
      << message;
}

TEST_F(NvrtcTest, DumpDirKeepsSuccessfulCompilesToo) {
  ::setenv("ATTNJIT_DUMP_DIR", (dir_ / "dumps").c_str(), 1);
  const Variant variant = axpy_variant("", "sm_80");
  const CompiledKernel kernel = compile_source(variant.source, variant.options);
  const fs::path stem = dir_ / "dumps" / "axpy_ee8da1eb";
  EXPECT_EQ(testing::read_text(stem.string() + ".cu"), variant.source.text);
  EXPECT_EQ(testing::read_text(stem.string() + ".ptx"), kernel.ptx);
  EXPECT_EQ(testing::read_text(stem.string() + ".log"), kernel.log);
}

TEST_F(NvrtcTest, UnwritableDumpDirIsReportedNotFatal) {
  ::setenv("ATTNJIT_DUMP_DIR", "/proc/attnjit-cannot-write-here", 1);
  Variant variant = axpy_variant("", "sm_80");
  variant.source.text += "\n#error broken on purpose\n";
  const std::string message =
      error_message([&] { compile_source(variant.source, variant.options); }, ErrorKind::kCompile);
  EXPECT_NE(message.find("\nsource: (not dumped: "), std::string::npos) << message;
  EXPECT_NE(message.find("broken on purpose"), std::string::npos) << message;
}

TEST(Resources, PtxasReport) {
  const std::string log =
      "ptxas info    : 16 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 99 registers, used 1 barriers, 77 bytes smem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     40 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 360 bytes cmem[0]\n"
      "ptxas info    : Compile time = 13.1 ms\n";
  ResourceUsage usage;
  parse_ptxas_report(log, "k", usage);
  EXPECT_EQ(usage.registers, 168);
  EXPECT_EQ(usage.static_smem, 1024);
  EXPECT_EQ(usage.stack_frame, 40);
  EXPECT_EQ(usage.spill_stores, 24);
  EXPECT_EQ(usage.spill_loads, 16);
  ResourceUsage missing;
  parse_ptxas_report(log, "absent", missing);
  EXPECT_EQ(missing.registers, -1);
  EXPECT_EQ(missing.stack_frame, -1);
}

TEST(Resources, LaunchInfo) {
  ResourceUsage bytes;
  ASSERT_TRUE(parse_launch_info(
      ".global .align 4 .b8 k_launch_info[16] = {128, 0, 0, 0, 0, 152, 1, 0, 2};", "k", bytes));
  EXPECT_EQ(bytes.threads, 128);
  EXPECT_EQ(bytes.dynamic_smem, 0x19800);
  EXPECT_EQ(bytes.min_blocks, 2);
  ResourceUsage words;
  ASSERT_TRUE(
      parse_launch_info(".global .align 4 .u32 k_launch_info[4] = {256, 4096, 1, 0};", "k", words));
  EXPECT_EQ(words.threads, 256);
  EXPECT_EQ(words.dynamic_smem, 4096);
  EXPECT_EQ(words.min_blocks, 1);
  ResourceUsage none;
  EXPECT_FALSE(parse_launch_info(".global .align 4 .b8 other_launch_info[16] = {1};", "k", none));
  EXPECT_EQ(none.threads, -1);
}

}  // namespace
}  // namespace attnjit
