// Helpers shared by the traffic tests.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/traffic/request.h"
#include "sim/traffic/source.h"

namespace fleetsim {
namespace testing_traffic {

inline std::string DataPath(const std::string& name) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/tests/traffic/data/" + name;
}

inline std::unique_ptr<std::istream> StreamOf(const std::string& text) {
  return std::make_unique<std::istringstream>(text);
}

// Pulls the whole stream.
inline std::vector<Request> Drain(RequestSource& src) {
  std::vector<Request> out;
  Request r;
  while (src.Next(&r)) out.push_back(r);
  return out;
}

// A source over a fixed list, for testing wrappers.
class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<Request> rows, Status end = Status::Ok())
      : rows_(std::move(rows)), end_(std::move(end)) {}
  bool Next(Request* out) override {
    if (i_ == rows_.size()) {
      status_ = end_;
      return false;
    }
    ++pulled_;
    *out = rows_[i_++];
    return true;
  }
  const Status& status() const override { return status_; }
  size_t pulled() const { return pulled_; }

 private:
  std::vector<Request> rows_;
  Status end_;
  Status status_;
  size_t i_ = 0;
  size_t pulled_ = 0;
};

}  // namespace testing_traffic
}  // namespace fleetsim
