// SHA-256, the one hash attnjit names things by: cache keys, display names,
// the embedded headers' digest.
#pragma once

#include <memory>
#include <string>
#include <string_view>

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// An incremental SHA-256; OpenSSL stays out of this header.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // 64 lowercase hex digits. Finishes the digest: call it once.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string sha256_hex(const std::string& bytes);

}  // namespace attnjit

#pragma GCC visibility pop
