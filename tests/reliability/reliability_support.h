// Helpers shared by the reliability tests: hostile text, child processes
// that report back through a pipe, and attention variants planted in a
// cache directory so that the runtime API is reached without NVRTC.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "attnjit/attention.h"
#include "attnjit/cache.h"
#include "attnjit/cache_key.h"
#include "attnjit/codegen.h"
#include "attnjit/nvrtc_version.h"
#include "attnjit/signature.h"

namespace attnjit::testing {

// `text` as a YAML double-quoted scalar: every byte survives, control bytes
// as escapes, UTF-8 as is.
inline std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A message a user reads: one line of printable ASCII, of bounded length,
// whatever text caused it.
inline ::testing::AssertionResult is_clear_message(const std::string& message,
                                                   std::size_t max_length = 600) {
  if (message.empty()) return ::testing::AssertionFailure() << "empty message";
  if (message.size() > max_length) {
    return ::testing::AssertionFailure()
           << message.size() << " characters: " << message.substr(0, 200) << "...";
  }
  for (unsigned char c : message) {
    if (c < 0x20 || c >= 0x7f) {
      return ::testing::AssertionFailure() << "byte " << int(c) << " in: " << message;
    }
  }
  if (message.back() == '.') return ::testing::AssertionFailure() << "final period: " << message;
  return ::testing::AssertionSuccess();
}

// A forked child that runs `body` and reports what it wrote to `out` (a
// pipe) and its exit status. Fork only from the test's main thread, before
// starting threads of your own: the children start threads themselves.
struct ChildResult {
  int status = -1;
  std::string output;
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

struct Child {
  pid_t pid = -1;
  int output_fd = -1;
};

inline Child spawn_child(const std::function<int(FILE* out)>& body) {
  Child child;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return child;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  child.pid = ::fork();
  if (child.pid == 0) {
    ::close(pipe_fds[0]);
    FILE* out = ::fdopen(pipe_fds[1], "w");
    int code = 99;
    try {
      code = body(out);
    } catch (const std::exception& e) {
      std::fprintf(out, "exception: %s\n", e.what());
    } catch (...) {
      std::fprintf(out, "unknown exception\n");
    }
    std::fflush(out);
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  child.output_fd = pipe_fds[0];
  return child;
}

inline ChildResult wait_child(const Child& child) {
  ChildResult result;
  if (child.pid < 0) return result;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(child.output_fd, buffer, sizeof buffer)) > 0) {
    result.output.append(buffer, size_t(n));
  }
  ::close(child.output_fd);
  ::waitpid(child.pid, &result.status, 0);
  return result;
}

inline ChildResult run_in_child(const std::function<int(FILE* out)>& body) {
  return wait_child(spawn_child(body));
}

// The signature AttentionKernel::get makes for `flags` on `target`.
inline Signature attention_signature(const AttentionFlags& flags, const Target& target) {
  const Spec& spec = attention_spec();
  return make_signature(spec, resolve_flags(spec, flags.to_flag_map()),
                        CompileOptions::from_environment(target));
}

// Writes a (fake, never launched) entry for this variant into `dir`, under
// the key AttentionKernel::get computes, so that getting the variant is a
// disk hit and needs no NVRTC.
inline void plant_attention_entry(const std::string& dir, const AttentionFlags& flags,
                                  const Target& target) {
  const Signature signature = attention_signature(flags, target);
  CacheEntry entry;
  entry.key = make_cache_key(signature, generate_source(attention_spec(), signature).key_text());
  entry.canonical_signature = signature.canonical();
  entry.display_name = signature.display_name();
  entry.target = target.name();
  entry.nvrtc_version = nvrtc_version();
  entry.kernel.entry = attention_spec().entry;
  entry.kernel.cubin = "planted by the reliability tests; never loaded";
  const std::string path = KernelCache::entry_path(dir, entry.key);
  const std::string shard = path.substr(0, path.rfind('/'));
  ::mkdir(dir.c_str(), 0755);
  ::mkdir(shard.c_str(), 0755);
  const std::string bytes = encode_entry(entry);
  FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
}

}  // namespace attnjit::testing
