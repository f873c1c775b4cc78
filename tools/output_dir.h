// OutputDir: a command's output folder, written atomically.
//
// Outputs go into a fresh temporary folder beside DIR (".DIR.tmp-<pid>")
// and replace DIR in one rename when the command succeeds (an atomic swap
// with renameat2 when DIR exists). A command that fails, or is stopped by
// SIGINT or SIGTERM, leaves DIR as it was and no temporary folder behind.
// A lock file beside DIR (".DIR.lock", holding the owner's pid) refuses a
// second command writing into the same folder; a lock left by a process
// that no longer exists is taken over. DIR is replaced only when it is
// empty or holds an earlier command's outputs (the ".fleetsim-output"
// marker every output folder carries); any other folder is refused.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace fleetsim {

class OutputDir {
 public:
  static const char kMarker[];
  // Locks `dir` and creates the temporary folder. Fails (bad input) when
  // `dir` is in use, is not a folder, or cannot be created.
  static Status Begin(const std::string& dir, std::unique_ptr<OutputDir>* out);
  // Without Commit: removes the temporary folder and releases the lock.
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  // Where to write now.
  const std::string& path() const { return tmp_; }
  // The folder the outputs will have once committed.
  const std::string& final_path() const { return dir_; }
  // Moves the outputs into place and releases the lock.
  Status Commit();

 private:
  OutputDir(std::string dir, std::string tmp, std::string lock) : dir_(dir), tmp_(tmp), lock_(lock) {}
  std::string dir_, tmp_, lock_;
  bool committed_ = false;
};

}  // namespace fleetsim
