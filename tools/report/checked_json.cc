#include "tools/report/checked_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/json_parse.h"

namespace fleetsim::report {

void JsonErrors::Fail(const std::string& path, const std::string& what) {
  if (first_.empty()) first_ = path.empty() ? what : path + ": " + what;
}

Status JsonErrors::status() const { return ok() ? Status::Ok() : Status::Invalid(file_ + ": " + first_); }

bool Node::present() const { return v_ != nullptr && !v_->is_null(); }

void Node::Fail(const std::string& what) const {
  // A child of a value already reported adds nothing: its parent's error stands.
  errors_->Fail(path_, v_ == nullptr ? "missing" : what);
}

Node Node::Get(const std::string& key) const {
  if (v_ == nullptr || !v_->is_object()) {
    Fail("expected an object");
    return Node(nullptr, Child(key), errors_);
  }
  auto it = v_->find(key);
  if (it == v_->end()) {
    errors_->Fail(Child(key), "missing");
    return Node(nullptr, Child(key), errors_);
  }
  return Node(&*it, Child(key), errors_);
}

Node Node::Opt(const std::string& key) const {
  if (v_ == nullptr || v_->is_null()) return Node(nullptr, Child(key), errors_);
  if (!v_->is_object()) {
    Fail("expected an object");
    return Node(nullptr, Child(key), errors_);
  }
  auto it = v_->find(key);
  return Node(it == v_->end() ? nullptr : &*it, Child(key), errors_);
}

double Node::Num() const {
  if (v_ != nullptr && v_->is_number()) {
    const double d = v_->get<double>();
    if (std::isfinite(d)) return d;
  }
  Fail("expected a number");
  return 0;
}

std::optional<double> Node::NumOrNull() const {
  if (!present()) return std::nullopt;
  if (!v_->is_number()) {
    Fail("expected a number or null");
    return std::nullopt;
  }
  const double d = v_->get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

int64_t Node::Int() const {
  if (v_ != nullptr && v_->is_number_integer()) return v_->get<int64_t>();
  if (v_ != nullptr && v_->is_number_float()) {
    const double d = v_->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  Fail("expected an integer");
  return 0;
}

std::optional<int64_t> Node::IntOrNull() const {
  if (!present()) return std::nullopt;
  return Int();
}

std::string Node::Str() const {
  if (v_ != nullptr && v_->is_string()) return v_->get<std::string>();
  Fail("expected a string");
  return "";
}

std::string Node::StrOr(const std::string& fallback) const {
  if (!present()) return fallback;
  return Str();
}

std::optional<std::string> Node::StrOrNull() const {
  if (!present()) return std::nullopt;
  return Str();
}

bool Node::Bool() const {
  if (v_ != nullptr && v_->is_boolean()) return v_->get<bool>();
  Fail("expected true or false");
  return false;
}

bool Node::BoolOr(bool fallback) const { return present() ? Bool() : fallback; }

std::vector<Node> Node::Items() const {
  std::vector<Node> out;
  if (v_ == nullptr || !v_->is_array()) {
    Fail("expected an array");
    return out;
  }
  out.reserve(v_->size());
  for (size_t i = 0; i < v_->size(); ++i) out.emplace_back(&(*v_)[i], path_ + "[" + std::to_string(i) + "]", errors_);
  return out;
}

std::vector<Node> Node::ItemsOrEmpty() const { return present() ? Items() : std::vector<Node>{}; }

std::vector<std::pair<std::string, Node>> Node::Members() const {
  std::vector<std::pair<std::string, Node>> out;
  if (v_ == nullptr || !v_->is_object()) {
    Fail("expected an object");
    return out;
  }
  for (auto it = v_->begin(); it != v_->end(); ++it)
    out.emplace_back(it.key(), Node(&it.value(), Child(it.key()), errors_));
  return out;
}

std::vector<std::pair<std::string, Node>> Node::MembersOrEmpty() const {
  return present() ? Members() : std::vector<std::pair<std::string, Node>>{};
}

Status ReadJsonObject(const std::string& path, nlohmann::json* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "report input", &text));
  FLEETSIM_RETURN_IF_ERROR(ParseJson(text, out).WithPrefix(path + ": "));
  if (!out->is_object()) return Status::Invalid(path + ": expected a JSON object");
  return Status::Ok();
}

}  // namespace fleetsim::report
