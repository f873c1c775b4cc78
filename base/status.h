// Status: the user-error channel (LevelDB style). A Status is either ok or
// carries a one-line message meant for the person who wrote the input: it
// names the file and JSON path or file:line, and what was expected. Broken
// internal invariants are not Statuses: they abort via FLEETSIM_CHECK.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace fleetsim {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Invalid(std::string msg) { return Status(std::move(msg)); }
  // A configuration that is well formed but cannot run: it does not fit in
  // memory, its tp does not divide the heads, its GPUs have no link. The
  // planner drops such a configuration with the message; a run still fails.
  static Status Infeasible(std::string msg) {
    Status s(std::move(msg));
    s.infeasible_ = true;
    return s;
  }

  // The machine, not the input, is in the way: a port already taken. The
  // CLI exits 1 for it, not 2.
  static Status Unavailable(std::string msg) {
    Status s(std::move(msg));
    s.unavailable_ = true;
    return s;
  }

  bool ok() const { return !failed_; }
  bool infeasible() const { return infeasible_; }
  bool unavailable() const { return unavailable_; }
  const std::string& message() const { return msg_; }

  // Prefixes the message with `where` ("file.json: "), for callers that know
  // the context the callee did not.
  Status WithPrefix(const std::string& where) const {
    if (ok()) return *this;
    Status s(where + msg_);
    s.infeasible_ = infeasible_;
    s.unavailable_ = unavailable_;
    return s;
  }

 private:
  explicit Status(std::string msg) : msg_(std::move(msg)), failed_(true) {}
  std::string msg_;
  bool failed_ = false;
  bool infeasible_ = false;
  bool unavailable_ = false;
};

#define FLEETSIM_RETURN_IF_ERROR(expr)         \
  do {                                         \
    ::fleetsim::Status _st = (expr);           \
    if (!_st.ok()) return _st;                 \
  } while (0)

// Internal invariant: aborts with file:line. Never for user input.
#define FLEETSIM_CHECK(cond)                                                  \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "fleetsim: internal error at %s:%d: %s\n",         \
                   __FILE__, __LINE__, #cond);                                \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

}  // namespace fleetsim
