// Helpers for tests that drive the fleetsim executable: a scratch folder that
// removes itself, and a way to run a command and capture what it printed.
#pragma once

#include <filesystem>
#include <string>

namespace fleetsim::clitest {

// A fresh, uniquely named folder under the system temp directory (mkdtemp),
// removed with everything in it when the object goes away. Tests running in
// parallel (ctest -j) never share one.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Absolute path of `name` inside the folder.
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to `name` inside the folder, byte for byte; returns its path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  // The exit status; -N when the process died of signal N (a crash), -1000
  // when the command could not be started at all.
  int exit_code = -1000;
  // stdout and stderr together, in the order written.
  std::string output;
};

// Runs `command` through /bin/sh with stderr folded into stdout.
CommandResult RunCommand(const std::string& command);

// The fleetsim executable built next to the tests.
std::string FleetsimBinary();

// `s` single-quoted for /bin/sh.
std::string ShellQuote(const std::string& s);

// Runs fleetsim with the given (already quoted where needed) arguments.
CommandResult RunFleetsim(const std::string& args);

// Number of lines in `text`: newline characters, plus one for a final line
// that lacks its newline.
int CountLines(const std::string& text);

}  // namespace fleetsim::clitest
