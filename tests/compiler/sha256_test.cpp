#include "attnjit/sha256.h"

#include <gtest/gtest.h>

namespace attnjit {
namespace {

TEST(Sha256, KnownDigestsAndPieces) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 pieces;
  pieces.update("a");
  pieces.update("");
  pieces.update("bc");
  EXPECT_EQ(pieces.hex(), sha256_hex("abc"));
}

}  // namespace
}  // namespace attnjit
