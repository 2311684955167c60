// The embedded headers: what generated code may include, and their digest.
#include "attnjit/embedded.h"

#include <gtest/gtest.h>
#include <stdio.h>

#include <array>
#include <string>
#include <vector>

#include "test_support.h"

namespace attnjit {
namespace {

bool is_test_only(const EmbeddedHeader& header) { return header.path.rfind("testing/", 0) == 0; }

TEST(Embedded, HeadersAreSortedAndFoundByPath) {
  const std::vector<EmbeddedHeader>& headers = embedded_headers();
  ASSERT_FALSE(headers.empty());
  for (std::size_t i = 1; i < headers.size(); ++i) EXPECT_LT(headers[i - 1].path, headers[i].path);
  const EmbeddedHeader* mask = find_embedded_header("attention/mask.cuh");
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->contents,
            testing::read_text(std::string(ATTNJIT_SOURCE_DIR) + "/templates/attention/mask.cuh"));
  EXPECT_EQ(find_embedded_header("testing/missing.cuh"), nullptr);
  EXPECT_EQ(embedded_headers_digest().size(), 64u);
  EXPECT_EQ(embedded_headers_digest(), headers_digest(headers));
}

// Test binaries register templates/testing/ (tests/support/test_headers.cpp).
TEST(Embedded, TestBinariesSeeTheTestOnlyHeaders) {
  for (const char* path : {"testing/axpy.cuh", "testing/wgmma_probe.cuh"}) {
    const EmbeddedHeader* header = find_embedded_header(path);
    ASSERT_NE(header, nullptr) << path;
    EXPECT_EQ(header->contents,
              testing::read_text(std::string(ATTNJIT_SOURCE_DIR) + "/templates/" + path));
  }
}

// The library itself (here: the attnjit command) embeds everything but
// templates/testing/, so production keys do not change with test headers.
TEST(Embedded, ProductionLeavesTheTestOnlyHeadersOut) {
  const std::string cli = ATTNJIT_CLI_PATH;
  if (cli.empty()) GTEST_SKIP() << "the attnjit command is not built";
  FILE* pipe = ::popen(("'" + cli + "' specs").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  for (size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    output.append(buffer.data(), n);
  ASSERT_EQ(::pclose(pipe), 0) << output;

  std::vector<EmbeddedHeader> production;
  for (const EmbeddedHeader& header : embedded_headers()) {
    if (!is_test_only(header)) production.push_back(header);
  }
  ASSERT_LT(production.size(), embedded_headers().size());
  const std::string expected = "embedded templates: " + std::to_string(production.size()) +
                               " headers, digest " + headers_digest(production).substr(0, 16) +
                               "\n";
  EXPECT_NE(output.find(expected), std::string::npos) << output;
  EXPECT_NE(headers_digest(production), embedded_headers_digest());
}

TEST(EmbeddedDeathTest, RegisteringAfterFirstUseIsAProgrammerError) {
  embedded_headers();
  EXPECT_DEATH(register_embedded_headers({EmbeddedHeader{"testing/late.cuh", ""}}),
               "register_embedded_headers\\(\\) after the headers were first used");
}

}  // namespace
}  // namespace attnjit
