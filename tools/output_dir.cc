#include "tools/output_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace fleetsim {

namespace fs = std::filesystem;

namespace {

// The pid recorded in a lock file, or -1.
long ReadPid(const std::string& lock) {
  std::FILE* f = std::fopen(lock.c_str(), "r");
  if (!f) return -1;
  long pid = -1;
  if (std::fscanf(f, "%ld", &pid) != 1) pid = -1;
  std::fclose(f);
  return pid;
}

bool Alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Creates the lock file exclusively; takes over one whose owner is gone.
Status TakeLock(const std::string& dir, const std::string& lock) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      const bool ok = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
      ::close(fd);
      if (!ok) {
        ::unlink(lock.c_str());
        return Status::Invalid("cannot write lock file \"" + lock + "\"");
      }
      return Status::Ok();
    }
    if (errno != EEXIST) return Status::Invalid("cannot create lock file \"" + lock + "\": " + std::strerror(errno));
    const long owner = ReadPid(lock);
    if (Alive(owner))
      return Status::Invalid("output folder \"" + dir + "\" is in use by another fleetsim command (pid " +
                             std::to_string(owner) + ", lock file \"" + lock + "\")");
    ::unlink(lock.c_str());  // stale: its owner is gone
  }
  return Status::Invalid("output folder \"" + dir + "\" is in use by another fleetsim command (lock file \"" + lock +
                         "\")");
}

}  // namespace

const char OutputDir::kMarker[] = ".fleetsim-output";

Status OutputDir::Begin(const std::string& dir, std::unique_ptr<OutputDir>* out) {
  fs::path final_dir = fs::path(dir).lexically_normal();
  if (final_dir.filename().empty()) final_dir = final_dir.parent_path();  // "out/" -> "out"
  const std::string name = final_dir.filename().string();
  if (name.empty() || name == "." || name == "..")
    return Status::Invalid("output folder \"" + dir +
                           "\": name a folder of its own (e.g. out/run1); the results replace the folder as a whole");
  std::error_code ec;
  const fs::path parent = final_dir.has_parent_path() ? final_dir.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) return Status::Invalid("cannot create output folder \"" + parent.string() + "\": " + ec.message());
  const fs::file_status st = fs::symlink_status(final_dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    return Status::Invalid("output folder \"" + dir + "\" exists and is not a folder");
  // The outputs replace DIR as a whole, so DIR must be empty or hold an
  // earlier command's outputs: `--out ~` or `--out src/` must never wipe
  // a user's files.
  if (fs::exists(st) && !fs::exists(final_dir / kMarker, ec) && !fs::is_empty(final_dir, ec))
    return Status::Invalid("output folder \"" + dir + "\" holds files that fleetsim did not write (it has no " +
                           std::string(kMarker) + "), and the results would replace them: name a new folder");
  const std::string lock = (parent / ("." + name + ".lock")).string();
  FLEETSIM_RETURN_IF_ERROR(TakeLock(dir, lock));
  const std::string tmp = (parent / ("." + name + ".tmp-" + std::to_string(::getpid()))).string();
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) {
    ::unlink(lock.c_str());
    return Status::Invalid("cannot create output folder \"" + tmp + "\": " + ec.message());
  }
  std::ofstream marker(fs::path(tmp) / kMarker);
  marker << "fleetsim output folder: the next command that writes here replaces it as a whole\n";
  marker.close();
  if (!marker) {
    fs::remove_all(tmp, ec);
    ::unlink(lock.c_str());
    return Status::Invalid("cannot write in output folder \"" + tmp + "\"");
  }
  out->reset(new OutputDir(final_dir.string(), tmp, lock));
  return Status::Ok();
}

OutputDir::~OutputDir() {
  std::error_code ec;
  if (!committed_) fs::remove_all(tmp_, ec);
  ::unlink(lock_.c_str());
}

Status OutputDir::Commit() {
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    // Swap the new folder with the old one in one step, then drop the old.
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp_, ec);  // the old outputs
    } else if (errno == EINVAL || errno == ENOSYS) {
      // No atomic exchange on this file system: two renames, the old
      // folder kept aside until the new one is in place.
      const std::string old = tmp_ + ".old";
      if (::rename(dir_.c_str(), old.c_str()) != 0)
        return Status::Invalid("cannot replace output folder \"" + dir_ + "\": " + std::strerror(errno));
      if (::rename(tmp_.c_str(), dir_.c_str()) != 0) {
        const int err = errno;
        ::rename(old.c_str(), dir_.c_str());
        return Status::Invalid("cannot replace output folder \"" + dir_ + "\": " + std::strerror(err));
      }
      fs::remove_all(old, ec);
    } else {
      return Status::Invalid("cannot replace output folder \"" + dir_ + "\": " + std::strerror(errno));
    }
  } else if (::rename(tmp_.c_str(), dir_.c_str()) != 0) {
    return Status::Invalid("cannot create output folder \"" + dir_ + "\": " + std::strerror(errno));
  }
  committed_ = true;
  return Status::Ok();
}

}  // namespace fleetsim
