#include "attnjit/sha256.h"

#include <openssl/evp.h>

#include "check.h"

namespace attnjit {

struct Sha256::Context {
  Context() : digest(EVP_MD_CTX_new()) {}
  ~Context() { EVP_MD_CTX_free(digest); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  EVP_MD_CTX* digest;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  ATTNJIT_CHECK(context_->digest != nullptr &&
                    EVP_DigestInit_ex(context_->digest, EVP_sha256(), nullptr) == 1,
                "OpenSSL could not start a SHA-256 digest");
}

Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) {
  ATTNJIT_CHECK(EVP_DigestUpdate(context_->digest, bytes.data(), bytes.size()) == 1,
                "OpenSSL could not update a SHA-256 digest");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  ATTNJIT_CHECK(EVP_DigestFinal_ex(context_->digest, digest, &size) == 1,
                "OpenSSL could not finish a SHA-256 digest");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < size; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 0xf];
  }
  return text;
}

std::string sha256_hex(const std::string& bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex();
}

}  // namespace attnjit
