// File-system primitives of the kernel cache (private to runtime/src):
// whole-file reads, mkdir -p, atomic publication, advisory locks. They
// report errno values instead of throwing, so that the cache can decide
// which failures disable the disk and which cost one write.
#pragma once

#include <chrono>
#include <string>

namespace attnjit::cache_disk {

struct ReadResult {
  enum Status { kOk, kMissing, kFailed } status = kFailed;
  std::string bytes;   // kOk
  std::string reason;  // kFailed
};

// kMissing when the file or a directory on its path does not exist.
ReadResult read_file(const std::string& path);

struct WriteResult {
  int error = 0;       // errno of the failing call; 0 on success
  std::string reason;  // "mkdir /x/ab: Permission denied"
  bool ok() const { return error == 0; }
};

// mkdir -p; retried once from the top, so a directory removed concurrently
// is recreated.
WriteResult ensure_directory(const std::string& dir);

// Writes `bytes` to `path` atomically: a unique temp file in the same
// directory (mkstemp), fsync, rename over `path`. The temp file is removed
// on failure. ENOENT means the directory vanished.
WriteResult publish_file(const std::string& path, const std::string& bytes);

// 64 lowercase hex digits: the only key text that may become a file name.
bool is_key_hex(const std::string& text);

// A failure that says nothing lasting about the directory (full disk,
// quota, a file size limit, I/O error, out of descriptors): the write is
// lost, the directory stays in use.
bool is_transient(int error);

// An exclusive flock on `path` (created if needed), released on
// destruction, which also removes the file (while it is still locked), so
// that a directory of locks is left empty. A process that waited on the
// removed file finds that it is no longer the one at `path` and locks the
// path anew: two holders never overlap. acquire() polls for at most
// `limit` and returns an unheld lock when the file cannot be opened or
// locked in time, so a caller never blocks forever and falls back to
// working without it.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  static FileLock acquire(const std::string& path, std::chrono::milliseconds limit);
  bool held() const { return fd_ >= 0; }

 private:
  void release() noexcept;
  int fd_ = -1;
  std::string path_;
};

}  // namespace attnjit::cache_disk
