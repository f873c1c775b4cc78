// Opening input files (scenarios, traces, length CSVs, profiles) one way
// everywhere: only regular files are read, and opening never blocks.
//
// Why: open(2) on a FIFO for reading waits for a writer, and reading a
// directory, /dev/zero or a terminal either fails with an unhelpful message
// or never ends. Every input is therefore opened with O_NONBLOCK (which makes
// opening a FIFO return at once), checked with fstat on the descriptor that
// will be read (no race between a stat and the open), and refused unless it
// is a regular file. Errors are one-line user-input Statuses:
//   cannot open <what> "<path>": <strerror>
//   cannot open <what> "<path>": not a regular file (a FIFO)
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fleetsim {

namespace file_internal {

inline const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

inline Status CannotOpen(std::string_view what, const std::string& path, const std::string& why) {
  return Status::Invalid("cannot open " + std::string(what) + " \"" + path + "\": " + why);
}

}  // namespace file_internal

// Opens `path` for reading and returns the descriptor in *fd (the caller
// closes it). `what` names the file's role in messages ("trace", "scenario",
// "profile", "length CSV"). Refuses anything but a regular file, without
// blocking; the descriptor is left in blocking mode for reading.
inline Status OpenRegularFileFd(const std::string& path, std::string_view what, int* fd) {
  *fd = -1;
  const int f = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f < 0) {
    const int err = errno != 0 ? errno : ENOENT;
    return file_internal::CannotOpen(what, path, std::strerror(err));
  }
  struct stat st;
  if (::fstat(f, &st) != 0) {
    const int err = errno;
    ::close(f);
    return file_internal::CannotOpen(what, path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(f);
    return file_internal::CannotOpen(what, path,
                                     std::string("not a regular file (") + file_internal::KindOf(st.st_mode) + ")");
  }
  const int flags = ::fcntl(f, F_GETFL);
  if (flags >= 0) ::fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
  *fd = f;
  return Status::Ok();
}

// The same, as a stdio stream opened "rb" (the caller fcloses it).
inline Status OpenRegularFile(const std::string& path, std::string_view what, std::FILE** out) {
  *out = nullptr;
  int fd;
  FLEETSIM_RETURN_IF_ERROR(OpenRegularFileFd(path, what, &fd));
  std::FILE* f = ::fdopen(fd, "rb");
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    return file_internal::CannotOpen(what, path, std::strerror(err));
  }
  *out = f;
  return Status::Ok();
}

// Checks, without reading it, that `path` can be opened as OpenRegularFile
// would (for `validate`, which reports a missing or unusable input before
// anything is simulated).
inline Status CheckRegularFile(const std::string& path, std::string_view what) {
  int fd;
  FLEETSIM_RETURN_IF_ERROR(OpenRegularFileFd(path, what, &fd));
  ::close(fd);
  return Status::Ok();
}

// Reads a whole regular file into *out (scenarios and profiles: small JSON
// documents parsed at once). Errors as OpenRegularFile, or
// `cannot read <what> "path": <strerror>`.
inline Status ReadWholeFile(const std::string& path, std::string_view what, std::string* out) {
  out->clear();
  std::FILE* f;
  FLEETSIM_RETURN_IF_ERROR(OpenRegularFile(path, what, &f));
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) {
    return Status::Invalid("cannot read " + std::string(what) + " \"" + path + "\": " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace fleetsim
