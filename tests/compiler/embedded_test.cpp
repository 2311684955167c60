// The embedded headers: what generated code may include, and their digest.
#include "attnjit/embedded.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace attnjit {
namespace {

TEST(Embedded, HeadersAreSortedAndFoundByPath) {
  const std::vector<EmbeddedHeader>& headers = embedded_headers();
  ASSERT_FALSE(headers.empty());
  for (std::size_t i = 1; i < headers.size(); ++i) EXPECT_LT(headers[i - 1].path, headers[i].path);
  const EmbeddedHeader* axpy = find_embedded_header("testing/axpy.cuh");
  ASSERT_NE(axpy, nullptr);
  EXPECT_EQ(axpy->contents,
            testing::read_text(std::string(ATTNJIT_SOURCE_DIR) + "/templates/testing/axpy.cuh"));
  EXPECT_EQ(find_embedded_header("testing/missing.cuh"), nullptr);
  EXPECT_EQ(embedded_headers_digest().size(), 64u);
}

}  // namespace
}  // namespace attnjit
