// Checked reading of a parsed JSON document: every access names its path, a
// wrong type or a missing key is recorded (the first one wins) instead of
// thrown, and reading carries on with a neutral value so that a builder can
// read everything and ask once at the end whether the document was valid.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace fleetsim::report {

// The first error met while reading one file.
class JsonErrors {
 public:
  explicit JsonErrors(std::string file) : file_(std::move(file)) {}
  void Fail(const std::string& path, const std::string& what);
  bool ok() const { return first_.empty(); }
  // Ok, or Invalid("<file>: <path>: <what>").
  Status status() const;

 private:
  std::string file_, first_;
};

// A value at a path. A Node without a value is either absent (Opt of a
// missing key) or the child of a value that was already reported.
class Node {
 public:
  Node(const nlohmann::json* v, std::string path, JsonErrors* errors)
      : v_(v), path_(std::move(path)), errors_(errors) {}

  bool present() const;  // there and not null
  const std::string& path() const { return path_; }

  Node Get(const std::string& key) const;  // required key (its value may be null)
  Node Opt(const std::string& key) const;  // optional key

  double Num() const;                       // a number
  std::optional<double> NumOrNull() const;  // a number, or null / absent
  int64_t Int() const;                      // an integral number
  std::optional<int64_t> IntOrNull() const;
  std::string Str() const;                               // a string
  std::string StrOr(const std::string& fallback) const;  // a string, or null / absent
  std::optional<std::string> StrOrNull() const;
  bool Bool() const;
  bool BoolOr(bool fallback) const;
  std::vector<Node> Items() const;                            // an array
  std::vector<Node> ItemsOrEmpty() const;                     // an array, or null / absent
  std::vector<std::pair<std::string, Node>> Members() const;  // an object
  std::vector<std::pair<std::string, Node>> MembersOrEmpty() const;

  // Records "<path>: <what>" (or "<path>: missing" for a Node without value).
  void Fail(const std::string& what) const;

 private:
  std::string Child(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const nlohmann::json* v_;
  std::string path_;
  JsonErrors* errors_;
};

// Reads and parses `path` as a JSON object: Invalid naming the file on a
// missing file, a syntax error or a document that is not an object.
Status ReadJsonObject(const std::string& path, nlohmann::json* out);

}  // namespace fleetsim::report
