#include "tests/cli/cli_test_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace fleetsim::clitest {

ScratchDir::ScratchDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "fleetsim_cli_XXXXXX").string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + templ);
  path_ = std::filesystem::path(buf.data());
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  // Give back any permission a test took away so that removal succeeds.
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  }
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::Write(const std::string& name, const std::string& text) const {
  const std::string p = File(name);
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + p);
  return p;
}

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  const std::string full = command + " 2>&1";
  std::FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  if (status == -1) {
    r.exit_code = -1000;
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = -WTERMSIG(status);
  }
  return r;
}

std::string FleetsimBinary() { return FLEETSIM_BINARY_DIR "/fleetsim"; }

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

CommandResult RunFleetsim(const std::string& args) { return RunCommand(ShellQuote(FleetsimBinary()) + " " + args); }

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

}  // namespace fleetsim::clitest
