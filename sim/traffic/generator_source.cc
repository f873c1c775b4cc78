#include "sim/traffic/generator_source.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

// A fixed length that Validate accepts; stands in for the samplers when a
// length table supplies the lengths instead.
LengthSpec Placeholder() {
  LengthSpec s;
  s.kind = LengthSpec::Kind::kFixed;
  s.value = 1;
  return s;
}

// max_arrival_s as SimTime; kTimeNever when it is beyond the range.
SimTime ArrivalLimit(double s) {
  return s < 9.2e9 ? SecondsToTime(s) : kTimeNever;
}

// The longest prompt the generator can draw (before any system prompt).
int64_t LongestPrompt(const TrafficSpec& spec, const LengthTable* table) {
  if (table) {
    int64_t longest = 0;
    for (const LengthTable::Row& r : table->rows()) longest = std::max<int64_t>(longest, r.prompt_tokens);
    return longest;
  }
  return spec.prompt.kind == LengthSpec::Kind::kFixed ? spec.prompt.value : spec.prompt.max;
}

Status IntInRange(const char* path, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return Status::Ok();
  return Status::Invalid(std::string(path) + ": expected an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got " + std::to_string(v));
}

Status ValidatePrefixAndSessions(const TrafficSpec& spec, const LengthTable* table) {
  if (spec.shared_prefix) {
    const SharedPrefixSpec& sp = *spec.shared_prefix;
    FLEETSIM_RETURN_IF_ERROR(
        IntInRange("traffic.generator.shared_prefix.groups", sp.groups, 1, kMaxSharedPrefixGroups));
    FLEETSIM_RETURN_IF_ERROR(
        IntInRange("traffic.generator.shared_prefix.tokens", sp.tokens, 1, kMaxSharedPrefixTokens));
    const int64_t longest = LongestPrompt(spec, table);
    const int64_t limit = std::numeric_limits<int32_t>::max();
    if (sp.tokens + longest > limit) {
      return Status::Invalid("traffic.generator.shared_prefix.tokens: " + std::to_string(sp.tokens) +
                             " plus the longest prompt (" + std::to_string(longest) + ") exceeds " +
                             std::to_string(limit) + " tokens");
    }
  }
  if (spec.sessions) {
    const SessionSpec& ss = *spec.sessions;
    FLEETSIM_RETURN_IF_ERROR(IntInRange("traffic.generator.sessions.turns", ss.turns, 1, kMaxSessionTurns));
    if (!(ss.think_time_s > 0) || !std::isfinite(ss.think_time_s)) {
      return Status::Invalid("traffic.generator.sessions.think_time_s: expected a positive number, got " +
                             FormatNumber(ss.think_time_s));
    }
    FLEETSIM_RETURN_IF_ERROR(IntInRange("traffic.generator.sessions.max_context_tokens",
                                        ss.max_context_tokens, 1, kMaxSessionContextTokens));
  }
  return Status::Ok();
}

}  // namespace

Status GeneratorSource::Make(const TrafficSpec& spec, Rng rng,
                             std::unique_ptr<RequestSource>* out) {
  FLEETSIM_RETURN_IF_ERROR(ArrivalTimes::Validate(spec.arrival, spec.rate_per_s, spec.cv, "traffic"));
  std::unique_ptr<LengthTable> table;
  if (!spec.lengths_csv.empty()) {
    FLEETSIM_RETURN_IF_ERROR(LengthTable::Load(spec.lengths_csv, &table));
  } else {
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.prompt, "traffic.prompt"));
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.output, "traffic.output"));
  }
  FLEETSIM_RETURN_IF_ERROR(ValidatePrefixAndSessions(spec, table.get()));
  if (spec.max_requests < 0) {
    return Status::Invalid("traffic.max_requests: expected >= 0, got " +
                           std::to_string(spec.max_requests));
  }
  if (std::isnan(spec.max_arrival_s) || spec.max_arrival_s < 0) {
    return Status::Invalid("traffic.max_arrival_s: expected >= 0, got " +
                           FormatNumber(spec.max_arrival_s));
  }
  if (spec.max_requests == std::numeric_limits<int64_t>::max() &&
      !std::isfinite(spec.max_arrival_s)) {
    return Status::Invalid(
        "traffic: a generator needs max_requests or max_arrival_s, or it never ends");
  }
  // Four sub-streams, drawn in a fixed order from the given one; the first
  // two are what they were before groups and sessions existed.
  Rng gaps(rng.NextU64());
  Rng lengths(rng.NextU64());
  Rng groups(rng.NextU64());
  Rng think(rng.NextU64());
  out->reset(new GeneratorSource(spec, gaps, lengths, groups, think, std::move(table)));
  return Status::Ok();
}

GeneratorSource::GeneratorSource(const TrafficSpec& spec, Rng gaps, Rng lengths, Rng groups, Rng think,
                                 std::unique_ptr<const LengthTable> table)
    : arrivals_(spec.arrival, spec.rate_per_s, spec.cv, gaps),
      length_rng_(lengths),
      group_rng_(groups),
      think_rng_(think),
      prompt_(table ? Placeholder() : spec.prompt),
      output_(table ? Placeholder() : spec.output),
      table_(std::move(table)),
      model_(spec.model),
      max_requests_(spec.max_requests),
      max_arrival_(ArrivalLimit(spec.max_arrival_s)),
      shared_prefix_(spec.shared_prefix),
      sessions_(spec.sessions) {}

void GeneratorSource::DrawLengths(int32_t* prompt, int32_t* output) {
  if (table_) {
    const LengthTable::Row& r = table_->Sample(length_rng_);
    *prompt = r.prompt_tokens;
    *output = r.output_tokens;
  } else {
    *prompt = prompt_.Sample(length_rng_);
    *output = output_.Sample(length_rng_);
  }
}

void GeneratorSource::AppendFreshBlocks(std::vector<uint64_t>* blocks, int64_t prompt_tokens) {
  const size_t n = static_cast<size_t>((prompt_tokens + kPrefixBlockTokens - 1) / kPrefixBlockTokens);
  while (blocks->size() < n) blocks->push_back(next_fresh_id_++);
}

void GeneratorSource::StartBlocks(std::vector<uint64_t>* blocks, int32_t prompt_tokens) {
  blocks->clear();
  if (shared_prefix_) {
    const uint64_t group = group_rng_.Below(static_cast<uint64_t>(shared_prefix_->groups));
    const uint64_t first = kGroupIdBase + group * kGroupIdStride;
    // Only the system prompt's full blocks are the same for the whole group.
    const int32_t full = shared_prefix_->tokens / kPrefixBlockTokens;
    for (int32_t i = 0; i < full; ++i) blocks->push_back(first + static_cast<uint64_t>(i));
  }
  AppendFreshBlocks(blocks, prompt_tokens);
}

void GeneratorSource::FillCommon(Request* out, SimTime at) {
  out->id = static_cast<uint64_t>(emitted_++);
  out->arrival = at;
  out->priority = 0;
  if (model_.empty()) {
    out->model.clear();
  } else {
    out->model = model_;
  }
}

bool GeneratorSource::Next(Request* out) {
  if (done_) return false;
  if (emitted_ >= max_requests_) {
    done_ = true;
    pending_.clear();
    return false;
  }
  if (sessions_) return NextTurn(out);
  const SimTime at = arrivals_.Next();
  if (at >= max_arrival_ || at == kTimeNever) {
    done_ = true;
    return false;
  }
  FillCommon(out, at);
  DrawLengths(&out->prompt_tokens, &out->output_tokens);
  out->session_id = -1;
  if (shared_prefix_) {
    out->prompt_tokens += shared_prefix_->tokens;  // Make checked that it fits
    StartBlocks(&out->prefix_blocks, out->prompt_tokens);
    out->prefix_block_tokens = kPrefixBlockTokens;
  } else {
    out->prefix_blocks.clear();
    out->prefix_block_tokens = 0;
  }
  return true;
}

bool GeneratorSource::NextTurn(Request* out) {
  if (!have_next_start_) {
    next_start_ = arrivals_.Next();
    have_next_start_ = true;
  }
  // Every waiting turn belongs to a session older than the next start, so
  // "<=" breaks a tie by session id as the heap does.
  const bool follow_up = !pending_.empty() && pending_.front().arrival <= next_start_;
  const SimTime at = follow_up ? pending_.front().arrival : next_start_;
  if (at >= max_arrival_ || at == kTimeNever) {
    done_ = true;
    pending_.clear();
    return false;
  }
  FillCommon(out, at);
  int32_t turn = 1;
  if (follow_up) {
    std::pop_heap(pending_.begin(), pending_.end(), LaterTurn());
    PendingTurn& t = pending_.back();
    out->prompt_tokens = t.prompt_tokens;
    out->output_tokens = t.output_tokens;
    out->session_id = t.session;
    out->prefix_blocks.assign(t.blocks.begin(), t.blocks.end());
    AppendFreshBlocks(&out->prefix_blocks, t.prompt_tokens);
    turn = t.turn;
    t.blocks.clear();
    spare_blocks_.push_back(std::move(t.blocks));
    pending_.pop_back();
  } else {
    have_next_start_ = false;
    out->session_id = sessions_started_++;
    DrawLengths(&out->prompt_tokens, &out->output_tokens);
    if (shared_prefix_) out->prompt_tokens += shared_prefix_->tokens;  // Make checked that it fits
    StartBlocks(&out->prefix_blocks, out->prompt_tokens);
  }
  out->prefix_block_tokens = kPrefixBlockTokens;
  ScheduleNextTurn(*out, turn);
  return true;
}

void GeneratorSource::ScheduleNextTurn(const Request& out, int32_t turn) {
  if (turn >= sessions_->turns) return;
  // Drawn whether or not the turn is sent, so that the cap and the arrival
  // limit do not shift later draws.
  const double think_s = think_rng_.Exponential(sessions_->think_time_s);
  int32_t new_prompt = 0, output = 0;
  DrawLengths(&new_prompt, &output);
  // int64: prompt + output <= max_context_tokens <= 2^30 for every sent
  // turn, so these sums cannot overflow, and what is kept fits an int32_t.
  const int64_t prompt = int64_t{out.prompt_tokens} + out.output_tokens + new_prompt;
  if (prompt + output > sessions_->max_context_tokens) return;  // the conversation outgrew the context
  if (!(think_s < 9.2e9)) return;  // beyond SimTime's range: never arrives
  const SimTime gap = SecondsToTime(think_s);
  // out.arrival < max_arrival_, so the difference cannot overflow; a turn
  // at or after the limit would never be sent.
  if (gap >= max_arrival_ - out.arrival) return;
  PendingTurn t;
  t.arrival = out.arrival + gap;
  t.session = out.session_id;
  t.turn = turn + 1;
  t.prompt_tokens = static_cast<int32_t>(prompt);
  t.output_tokens = output;
  if (!spare_blocks_.empty()) {
    t.blocks = std::move(spare_blocks_.back());
    spare_blocks_.pop_back();
  }
  // A prefix cache holds only the full blocks of this turn's prompt.
  const size_t full = static_cast<size_t>(out.prompt_tokens / kPrefixBlockTokens);
  FLEETSIM_CHECK(full <= out.prefix_blocks.size());
  t.blocks.assign(out.prefix_blocks.begin(), out.prefix_blocks.begin() + static_cast<std::ptrdiff_t>(full));
  pending_.push_back(std::move(t));
  std::push_heap(pending_.begin(), pending_.end(), LaterTurn());
}

}  // namespace fleetsim
