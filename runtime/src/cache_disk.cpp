#include "cache_disk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace attnjit::cache_disk {
namespace {

// Larger files are not cache entries (a cubin is at most a few MiB).
constexpr off_t kMaxEntryBytes = off_t{1} << 30;

WriteResult failure(int error, const std::string& what) {
  return WriteResult{error, fmt::format("{}: {}", what, std::strerror(error))};
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

WriteResult make_directories(const std::string& dir) {
  // Each prefix that ends before a '/', then the whole path.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int error = errno;
    struct stat st;
    if (::stat(prefix.c_str(), &st) != 0) return failure(error, "mkdir " + prefix);
    if (!S_ISDIR(st.st_mode)) return failure(ENOTDIR, "mkdir " + prefix);
  }
  return {};
}

bool write_all(int fd, const std::string& bytes) {
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ReadResult read_file(const std::string& path) {
  ReadResult result;
  // O_NONBLOCK: a FIFO at an entry's path would otherwise block this open
  // until some writer appears; the fstat below then rejects it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      result.status = ReadResult::kMissing;
      return result;
    }
    result.reason = fmt::format("open: {}", std::strerror(error));
    return result;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxEntryBytes) {
    result.reason = "not a regular file of a plausible size";
    ::close(fd);
    return result;
  }
  result.bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < result.bytes.size()) {
    ssize_t n = ::read(fd, &result.bytes[done], result.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.reason = fmt::format("read: {}", std::strerror(errno));
      ::close(fd);
      return result;
    }
    if (n == 0) break;  // shrank meanwhile: decoding reports the truncation
    done += static_cast<size_t>(n);
  }
  result.bytes.resize(done);
  ::close(fd);
  result.status = ReadResult::kOk;
  return result;
}

WriteResult ensure_directory(const std::string& dir) {
  WriteResult result = make_directories(dir);
  if (result.ok()) return result;
  return make_directories(dir);
}

WriteResult publish_file(const std::string& path, const std::string& bytes) {
  std::string temp = fmt::format("{}/.{}.tmp.XXXXXX", parent_of(path), base_of(path));
  int fd = ::mkostemp(&temp[0], O_CLOEXEC);
  if (fd < 0) return failure(errno, "create a file in " + parent_of(path));
  auto abandon = [&](const std::string& what) {
    int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return failure(error, what);
  };
  // mkstemp makes the file private; an entry is as readable as the directory.
  if (::fchmod(fd, 0644) != 0) return abandon("chmod " + temp);
  if (!write_all(fd, bytes)) return abandon("write " + temp);
  if (::fsync(fd) != 0) return abandon("fsync " + temp);
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return failure(error, "close " + temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return failure(error, "rename to " + path);
  }
  return {};
}

bool is_key_hex(const std::string& text) {
  if (text.size() != 64) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_transient(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:  // this file over a size limit (RLIMIT_FSIZE); others fit
    case EISDIR:     // something else occupies this one entry's path:
    case ENOTEMPTY:  // the publish rename fails for it alone
    case EIO:
    case EINTR:
    case EAGAIN:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return true;
    default:
      return false;
  }
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this == &other) return *this;
  release();
  fd_ = other.fd_;
  path_ = std::move(other.path_);
  other.fd_ = -1;
  return *this;
}

namespace {

// Whether `fd` is the file linked at `path` now.
bool is_linked_at(int fd, const std::string& path) {
  struct stat held, linked;
  if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &linked) != 0) return false;
  return held.st_dev == linked.st_dev && held.st_ino == linked.st_ino;
}

}  // namespace

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  // Removed while still locked, so that no lock file stays behind. A
  // process waiting on this file then locks an unlinked file, sees that
  // (acquire) and starts over on the path; the path's file is only ever
  // unlinked by its holder. (Only if the file is still ours: were the
  // directory removed and a peer's new lock file put there meanwhile,
  // that one stays.)
  if (is_linked_at(fd_, path_)) ::unlink(path_.c_str());
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
  fd_ = -1;
}

FileLock FileLock::acquire(const std::string& path, std::chrono::milliseconds limit) {
  FileLock lock;
  auto deadline = std::chrono::steady_clock::now() + limit;
  auto pause = std::chrono::milliseconds(1);
  auto wait = [&] {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
    return true;
  };
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return lock;
    bool locked = false;
    while (!(locked = ::flock(fd, LOCK_EX | LOCK_NB) == 0)) {
      bool busy = errno == EWOULDBLOCK || errno == EINTR;
      if (!busy || !wait()) break;
    }
    if (!locked) {
      ::close(fd);
      return lock;
    }
    // The holder before us unlinks the file as it lets go (release): the
    // lock is ours only if the file is still the one at `path`; else the
    // path's current file (or a new one) is tried.
    if (is_linked_at(fd, path)) {
      lock.fd_ = fd;
      lock.path_ = path;
      return lock;
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) return lock;
  }
}

}  // namespace attnjit::cache_disk
