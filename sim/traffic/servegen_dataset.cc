// nlohmann::json is used here only, for the outer object; the distributions
// inside are Python dict literals, parsed by hand.
#include "sim/traffic/servegen_dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "base/file.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

using Json = nlohmann::json;

// Largest dataset file read, bytes: the upstream files are at most a few MB.
constexpr size_t kMaxDatasetBytes = size_t{256} << 20;

void SkipSpaces(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n' || s[*i] == '\r')) ++*i;
}

// A number token: up to the next ',', ':', '}' or space.
std::string_view Token(std::string_view s, size_t* i) {
  const size_t b = *i;
  while (*i < s.size() && s[*i] != ',' && s[*i] != ':' && s[*i] != '}' && s[*i] != ' ') ++*i;
  return s.substr(b, *i - b);
}

}  // namespace

Status ServeGenDataset::Load(const std::string& path, std::unique_ptr<ServeGenDataset>* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "length dataset", &text));
  return FromText(path, text, out);
}

Status ServeGenDataset::ParseDist(const std::string& where, const std::string& text, Dist* out, bool* empty) {
  // {v: p, v: p, ...} with v a non-negative integer, p >= 0; a trailing
  // comma is allowed, as in Python.
  auto bad = [&](const std::string& what) {
    return Status::Invalid(where + ": " + what + " in " + QuoteForMessage(text));
  };
  std::string_view s = text;
  size_t i = 0;
  SkipSpaces(s, &i);
  if (i >= s.size() || s[i] != '{') return bad("expected a {value: probability, ...} literal");
  ++i;
  std::vector<std::pair<int32_t, double>> pairs;
  for (;;) {
    SkipSpaces(s, &i);
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    const std::string_view key = Token(s, &i);
    int64_t v;
    if (!ParseInt64(key, &v) || v < 0 || v > std::numeric_limits<int32_t>::max()) {
      return bad("expected a token count (integer >= 0) as key, got " + QuoteForMessage(key));
    }
    SkipSpaces(s, &i);
    if (i >= s.size() || s[i] != ':') return bad("expected ':' after " + QuoteForMessage(key));
    ++i;
    SkipSpaces(s, &i);
    const std::string_view val = Token(s, &i);
    double p;
    if (!ParseFiniteDouble(val, &p) || p < 0) {
      return bad("expected a probability >= 0, got " + QuoteForMessage(val));
    }
    pairs.emplace_back(static_cast<int32_t>(v), p);
    SkipSpaces(s, &i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    return bad("expected ',' or '}'");
  }
  SkipSpaces(s, &i);
  if (i != s.size()) return bad("unexpected text after '}'");
  *empty = pairs.empty();
  if (pairs.empty()) return Status::Ok();
  std::sort(pairs.begin(), pairs.end());
  out->values.clear();
  out->cum.clear();
  double total = 0;
  for (const auto& [v, p] : pairs) {
    if (p == 0) continue;
    if (!out->values.empty() && out->values.back() == v) return bad("token count " + std::to_string(v) + " twice");
    total += p;
    out->values.push_back(v);
    out->cum.push_back(total);
  }
  if (!(total > 0) || !std::isfinite(total)) return bad("probabilities sum to " + FormatNumber(total));
  return Status::Ok();
}

Status ServeGenDataset::FromText(std::string name, const std::string& text, std::unique_ptr<ServeGenDataset>* out) {
  if (text.size() > kMaxDatasetBytes) {
    return Status::Invalid(name + ": larger than " + std::to_string(kMaxDatasetBytes >> 20) + " MB");
  }
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return Status::Invalid(name + ": invalid JSON at byte " + std::to_string(e.byte));
  } catch (const Json::exception&) {
    return Status::Invalid(name + ": invalid JSON");
  }
  if (!j.is_object()) return Status::Invalid(name + ": expected a JSON object of windows");
  std::unique_ptr<ServeGenDataset> d(new ServeGenDataset());
  d->name_ = std::move(name);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string where = d->name_ + ": window \"" + it.key() + "\"";
    SimTime start;
    if (!ParseSecondsToTime(it.key(), &start) || start < 0) {
      return Status::Invalid(where + ": expected a window start in seconds (>= 0) as key");
    }
    if (!it.value().is_object()) return Status::Invalid(where + ": expected an object of distributions");
    Entry e;
    e.start = start;
    bool skip = false;
    for (const char* field : {"input_tokens", "output_tokens"}) {
      auto f = it.value().find(field);
      if (f == it.value().end()) return Status::Invalid(where + ": missing \"" + field + "\"");
      if (!f->is_string()) return Status::Invalid(where + "." + field + ": expected a string holding a dict");
      bool empty = false;
      FLEETSIM_RETURN_IF_ERROR(ParseDist(where + "." + field, f->get<std::string>(),
                                         field[0] == 'i' ? &e.input : &e.output, &empty));
      skip = skip || empty;
    }
    if (!skip) d->entries_.push_back(std::move(e));
  }
  if (d->entries_.empty()) return Status::Invalid(d->name_ + ": no usable entries");
  std::sort(d->entries_.begin(), d->entries_.end(),
            [](const Entry& a, const Entry& b) { return a.start < b.start; });
  for (size_t k = 1; k < d->entries_.size(); ++k) {
    if (d->entries_[k].start == d->entries_[k - 1].start) {
      return Status::Invalid(d->name_ + ": two windows start at " +
                             FormatNumber(TimeToSeconds(d->entries_[k].start)) + " s");
    }
  }
  *out = std::move(d);
  return Status::Ok();
}

int ServeGenDataset::Find(SimTime window_start) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), window_start,
                             [](SimTime t, const Entry& e) { return t < e.start; });
  return static_cast<int>(it - entries_.begin()) - 1;
}

int32_t ServeGenDataset::Dist::Draw(Rng& rng) const {
  const double u = rng.Uniform() * cum.back();
  size_t k = static_cast<size_t>(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
  if (k >= values.size()) k = values.size() - 1;
  return std::max<int32_t>(values[k], 1);
}

void ServeGenDataset::Sample(int e, Rng& rng, int32_t* prompt, int32_t* output) const {
  const Entry& en = entries_[static_cast<size_t>(e)];
  *prompt = en.input.Draw(rng);
  *output = en.output.Draw(rng);
}

}  // namespace fleetsim
