// Scenario JSON parsing. nlohmann/json stays in this file: the rest of the
// program sees only ScenarioSpec.
#include "sim/scenario/parse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file.h"
#include "base/json_parse.h"
#include "base/sha256.h"

namespace fleetsim {
namespace {

using nlohmann::json;

// The accepted keys of each object, by path ("[]" for array elements). The
// parser rejects keys outside these tables; ScenarioKeyPaths lists them.
struct KeyTable {
  const char* path;
  std::initializer_list<const char*> keys;
};
const KeyTable kTables[] = {
    {"", {"name", "description", "seed", "duration_s", "warmup_s", "model", "fleet", "traffic", "slo", "perf",
          "failures"}},
    {"fleet",
     {"router", "pools", "gpus_per_node", "nodes_per_rack", "recovery", "health_check", "outlier_ejection", "retries",
      "max_requests_per_replica", "request_timeout_s", "cold_start", "rolling_restarts", "gpu_capacity",
      "activator_timeout_s", "router_options", "metrics_scrape_ms", "admission", "degradation", "regions", "clients",
      "global_balancer", "canary", "placement", "network", "disaggregation"}},
    {"fleet.disaggregation", {"decode_pick", "ttft"}},
    {"fleet.network", {"rail_optimized", "latency_us", "gbps_per_gpu"}},
    {"fleet.admission", {"queue_order", "max_queue_per_replica", "max_queue", "classes", "tenants"}},
    {"fleet.admission.classes[]", {"name", "priority", "weight", "queue_timeout_s"}},
    {"fleet.admission.tenants[]", {"name", "rate_per_s", "burst"}},
    {"fleet.degradation[]", {"policy", "class", "trigger", "max_output_tokens", "pool"}},
    {"fleet.degradation[].trigger", {"queue_per_replica", "predicted_ttft_ms", "saturated"}},
    {"fleet.regions[]", {"name"}},
    {"fleet.clients[]", {"name", "rtt_ms"}},
    {"fleet.global_balancer", {"policy", "latency_budget_ms", "saturation_outstanding", "weights"}},
    {"fleet.canary", {"pool", "baseline", "start_s", "steps", "rollback"}},
    {"fleet.canary.steps[]", {"share", "duration_s"}},
    {"fleet.canary.rollback", {"ttft_p99_margin", "tpot_p99_margin", "error_rate_margin", "min_requests", "max_extensions"}},
    {"fleet.gpu_capacity[]", {"gpu", "pricing_class", "gpus"}},
    {"fleet.health_check", {"interval_s", "timeout_s", "unhealthy_threshold"}},
    {"fleet.outlier_ejection",
     {"consecutive_failures", "interval_s", "base_ejection_s", "max_ejection_s", "max_ejection_percent"}},
    {"fleet.retries", {"max_retries", "base_backoff_ms", "max_backoff_ms", "budget_percent", "min_retry_concurrency"}},
    {"fleet.cold_start",
     {"provision_s", "provision_s_by_class", "container_start_s", "weight_source", "weight_load_gb_per_s", "warmup_s"}},
    {"fleet.cold_start.provision_s_by_class", {"on_demand", "reserved", "spot"}},
    {"fleet.rolling_restarts[]", {"pool", "at_s", "batch", "drain_timeout_s"}},
    {"failures[]", {"model", "mtbf_hours", "mttr_s", "at_s", "node", "replica", "rack", "zone", "kind"}},
    {"fleet.pools[]",
     {"name", "model", "gpu", "replicas", "tp", "pp", "ep", "dp_attention", "expert_load_skew", "expert_balance", "layer_split", "role", "engine", "async_scheduling", "scheduler", "scheduler_options", "preemption",
      "swap_space_gib", "max_model_len", "prefix_caching", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
      "block_size", "kv_cache_dtype", "pricing_class", "usd_per_gpu_hour", "over_max_model_len", "spares", "zone",
      "autoscaler", "warm_start_s", "warm_cost_fraction", "spot", "region", "speculative"}},
    {"fleet.pools[].expert_balance", {"loads", "zipf_s", "redundant_experts"}},
    {"fleet.pools[].speculative", {"method", "draft_model", "num_speculative_tokens", "head_layers", "acceptance"}},
    {"fleet.pools[].speculative.acceptance", {"mean", "concentration"}},
    {"fleet.pools[].autoscaler",
     {"policy", "min_replicas", "max_replicas", "warm_pool", "metric", "target", "metric_delay_s", "options",
      "schedule", "forecaster"}},
    {"fleet.pools[].spot", {"reclaims_per_hour", "notice_s", "fallback"}},
    {"fleet.pools[].autoscaler.schedule[]", {"hour", "replicas"}},
    // The union of every registered autoscaler's options; each policy
    // refuses the ones that are not its own, and checks finer ranges.
    {"fleet.pools[].autoscaler.options",
     {"sync_period_s", "tolerance", "downscale_stabilization_s", "upscale_stabilization_s", "scale_up_pods", "scale_up_percent", "scale_up_period_s", "scale_down_percent", "scale_down_period_s", "tick_s", "container_concurrency", "target_utilization", "stable_window_s", "panic_window_percentage", "panic_threshold_percentage", "max_scale_up_rate", "max_scale_down_rate", "scale_to_zero_grace_s", "scale_down_delay_s", "period_s", "look_back_period_s", "upscaling_factor", "downscaling_factor", "upscale_delay_s", "downscale_delay_s", "downscale_to_zero_delay_s", "adjustment_interval_s", "ttft_ms", "tpot_ms", "no_correction"}},
    // The union of every registered scheduler's options; each scheduler
    // refuses the ones that are not its own.
    {"fleet.pools[].scheduler_options",
     {"watermark", "chunk_size", "reserve_request_length", "chunked_prefill_size", "max_prefill_tokens",
      "schedule_conservativeness", "init_new_token_ratio", "min_new_token_ratio", "new_token_ratio_decay_steps",
      "clip_max_new_tokens"}},
    {"traffic", {"trace", "generator", "max_requests", "max_arrival_s", "mix"}},
    {"traffic.mix[]", {"weight", "tenant", "model", "priority", "location"}},
    {"traffic.trace", {"format", "path", "start_s", "end_s", "rate_scale", "prompt_tokens", "output_tokens", "lengths_csv"}},
    {"traffic.trace.prompt_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.trace.output_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator",
     {"arrival", "rate_per_s", "cv", "prompt_tokens", "output_tokens", "lengths_csv", "model", "shared_prefix",
      "sessions", "concurrency", "think_time_s", "think_time_dist"}},
    {"traffic.generator.prompt_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator.output_tokens", {"dist", "value", "median", "sigma", "min", "max"}},
    {"traffic.generator.shared_prefix", {"groups", "tokens"}},
    {"traffic.generator.sessions", {"turns", "think_time_s", "max_context_tokens"}},
    {"slo", {"ttft_ms", "tpot_ms"}},
    {"perf",
     {"gemm_compute_efficiency", "gemm_memory_efficiency", "attention_compute_efficiency",
      "attention_memory_efficiency", "elementwise_memory_efficiency", "launch_overhead_us",
      "link_efficiency", "profile"}},
};

const KeyTable& TableFor(std::string_view path) {
  for (const KeyTable& t : kTables)
    if (path == t.path) return t;
  std::abort();  // every parsed object has a table
}

// ---- numeric bounds: one table, read by the parser and by ScenarioNumericBounds ----
//
// Every number a scenario holds has a finite range, chosen so that nothing
// the simulator computes from it can leave int64 nanoseconds or int32 token
// counts, whatever the other keys say:
// - Times (duration_s, warmup_s, max_arrival_s, start_s, end_s,
//   think_time_s): at most 1e7 s (116 days), 1e16 ns, so a time, the sum of
//   a few times, or a time plus a ten-second slice stays under int64's
//   9.2e18 ns with a factor of 900 to spare. SLOs (ms) share the bound.
// - Rates (rate_per_s, rate_scale): in [1e-6, 1e6]. A mean gap of at most
//   1e6 s keeps draws in range (and ArrivalTimes saturates anyway); at most
//   a million per second keeps gaps at least 1 us, so arrivals do not
//   collapse onto one nanosecond. cv in [1e-3, 100]: the gamma shape 1/cv^2
//   stays in [1e-4, 1e6], where its sampler is finite.
// - Token counts (lengths, max_model_len, budgets, scheduler sizes): at most
//   2^30, so a prompt plus an output, or a shared prefix plus a prompt, still
//   fits the int32_t a Request holds. A lognormal median is a token count
//   too; sigma at most 10 (larger only piles the draws onto min and max).
// - Fleet shape: replicas at most 1e5, tp and pp at most 1024, block_size at
//   most 1024: products of these with token counts stay far below 2^63.
// - Efficiencies in [1e-3, 1]: a time is work / (peak x efficiency), so an
//   efficiency near zero would turn a kernel into an infinite time (1e-3
//   makes a 405B-parameter decode step minutes, not forever).
//   gpu_memory_utilization only divides memory, so it keeps (0, 1].
// - launch_overhead_us at most 1e6 (1 s per kernel, thousands of kernels
//   per step: under 1e13 ns); swap_space_gib at most 65536 (64 TiB per GPU:
//   at most 2^46 bytes, so a count of KV blocks fits int64); usd_per_gpu_hour
//   at most 1e6.
// - max_requests at most 2^40; seed any non-negative int64.
// scenarios/schema.json states the same bounds (minimum, exclusiveMinimum,
// maximum); tests/cli/schema_test.cc checks them against this table.
constexpr double kMaxSeconds = 1e7;
constexpr double kMaxMillis = kMaxSeconds * 1e3;
constexpr int64_t kMaxTokens = int64_t{1} << 30;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

constexpr NumericBound IntIn(const char* path, int64_t lo, int64_t hi) {
  return {path, true, 0, false, 0, lo, hi};
}
constexpr NumericBound NumIn(const char* path, double lo, double hi) { return {path, false, lo, false, hi, 0, 0}; }
constexpr NumericBound NumAbove(const char* path, double lo, double hi) { return {path, false, lo, true, hi, 0, 0}; }

const NumericBound kBounds[] = {
    // IntIn: an integer in [lo, hi]; NumIn: a number in [lo, hi]; NumAbove: (lo, hi].
    IntIn("seed", 0, kInt64Max),
    NumAbove("duration_s", 0, kMaxSeconds),
    NumIn("warmup_s", 0, kMaxSeconds),
    IntIn("fleet.pools[].replicas", 1, 100000),
    IntIn("fleet.pools[].tp", 1, 1024),
    IntIn("fleet.pools[].pp", 1, 1024),
    IntIn("fleet.pools[].layer_split[]", 1, 100000),
    NumIn("fleet.pools[].expert_balance.loads[]", 0, 1e15),
    NumIn("fleet.pools[].expert_balance.zipf_s", 0, 10),
    IntIn("fleet.pools[].expert_balance.redundant_experts", 0, 65536),
    IntIn("fleet.pools[].ep", 1, 1024),
    NumIn("fleet.pools[].expert_load_skew", 1, 1024),
    IntIn("fleet.pools[].speculative.num_speculative_tokens", 1, 64),
    NumAbove("fleet.pools[].speculative.head_layers", 0, 1024),
    NumIn("fleet.pools[].speculative.acceptance", 0, 1),
    NumIn("fleet.pools[].speculative.acceptance.mean", 0, 1),
    NumIn("fleet.pools[].speculative.acceptance.concentration", 0, 1e6),
    NumIn("fleet.pools[].scheduler_options.watermark", 0, 0.5),
    IntIn("fleet.pools[].scheduler_options.chunk_size", 1, 1 << 24),
    IntIn("fleet.pools[].scheduler_options.reserve_request_length", 0, 1),
    IntIn("fleet.pools[].scheduler_options.chunked_prefill_size", 1, kMaxTokens),
    IntIn("fleet.pools[].scheduler_options.max_prefill_tokens", 1, kMaxTokens),
    NumIn("fleet.pools[].scheduler_options.schedule_conservativeness", 0.01, 100),
    NumIn("fleet.pools[].scheduler_options.init_new_token_ratio", 0, 1),
    NumIn("fleet.pools[].scheduler_options.min_new_token_ratio", 0, 1),
    IntIn("fleet.pools[].scheduler_options.new_token_ratio_decay_steps", 1, kMaxTokens),
    IntIn("fleet.pools[].scheduler_options.clip_max_new_tokens", 1, kMaxTokens),
    NumIn("fleet.pools[].swap_space_gib", 0, 65536),
    IntIn("fleet.pools[].max_model_len", 1, kMaxTokens),
    IntIn("fleet.pools[].max_num_batched_tokens", 1, kMaxTokens),
    IntIn("fleet.pools[].max_num_seqs", 1, kMaxTokens),
    NumAbove("fleet.pools[].gpu_memory_utilization", 0, 1),
    IntIn("fleet.pools[].block_size", 1, 1024),
    NumIn("fleet.pools[].usd_per_gpu_hour", 0, 1e6),
    IntIn("fleet.pools[].spares", 0, 100000),
    NumIn("fleet.pools[].warm_start_s", 0, kMaxSeconds),
    NumIn("fleet.pools[].warm_cost_fraction", 0, 1),
    IntIn("fleet.pools[].autoscaler.min_replicas", 0, 100000),
    IntIn("fleet.pools[].autoscaler.max_replicas", 1, 100000),
    IntIn("fleet.pools[].autoscaler.warm_pool", 0, 100000),
    NumAbove("fleet.pools[].autoscaler.target", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.metric_delay_s", 0, kMaxSeconds),
    NumIn("fleet.pools[].spot.reclaims_per_hour", 0, 1e6),
    NumIn("fleet.pools[].spot.notice_s", 0, kMaxSeconds),
    IntIn("fleet.gpu_capacity[].gpus", 0, int64_t{1} << 40),
    NumAbove("fleet.activator_timeout_s", 0, kMaxSeconds),
    IntIn("fleet.pools[].autoscaler.schedule[].hour", 0, 23),
    IntIn("fleet.pools[].autoscaler.schedule[].replicas", 0, 100000),
    NumIn("fleet.pools[].autoscaler.options.sync_period_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.tolerance", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.downscale_stabilization_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.upscale_stabilization_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_up_pods", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_up_percent", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_up_period_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_down_percent", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_down_period_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.tick_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.container_concurrency", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.target_utilization", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.stable_window_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.panic_window_percentage", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.panic_threshold_percentage", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.max_scale_up_rate", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.max_scale_down_rate", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_to_zero_grace_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.scale_down_delay_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.period_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.look_back_period_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.upscaling_factor", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.downscaling_factor", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.upscale_delay_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.downscale_delay_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.downscale_to_zero_delay_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.adjustment_interval_s", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.ttft_ms", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.tpot_ms", 0, 1e9),
    NumIn("fleet.pools[].autoscaler.options.no_correction", 0, 1e9),
    IntIn("fleet.gpus_per_node", 1, 1024),
    NumIn("fleet.network.latency_us", 0, 1e6),
    NumIn("fleet.network.gbps_per_gpu", 0, 1e6),
    IntIn("fleet.nodes_per_rack", 1, 100000),
    IntIn("fleet.max_requests_per_replica", 1, kMaxTokens),
    NumIn("fleet.metrics_scrape_ms", 0, 3.6e6),
    IntIn("fleet.admission.max_queue_per_replica", 0, kMaxTokens),
    IntIn("fleet.admission.max_queue", 0, kMaxTokens),
    IntIn("fleet.admission.classes[].priority", 0, 1 << 30),
    NumAbove("fleet.admission.classes[].weight", 0, 1e9),
    NumAbove("fleet.admission.classes[].queue_timeout_s", 0, kMaxSeconds),
    NumAbove("fleet.admission.tenants[].rate_per_s", 0, 1e12),
    NumIn("fleet.admission.tenants[].burst", 1, 1e12),
    NumAbove("fleet.degradation[].trigger.queue_per_replica", 0, 1e12),
    NumAbove("fleet.degradation[].trigger.predicted_ttft_ms", 0, 1e12),
    IntIn("fleet.degradation[].max_output_tokens", 1, kMaxTokens),
    NumIn("fleet.global_balancer.latency_budget_ms", 0, 1e9),
    NumIn("fleet.global_balancer.saturation_outstanding", 0, 1e12),
    NumIn("fleet.canary.start_s", 0, kMaxSeconds),
    NumAbove("fleet.canary.steps[].share", 0, 1),
    NumAbove("fleet.canary.steps[].duration_s", 0, kMaxSeconds),
    NumIn("fleet.canary.rollback.ttft_p99_margin", 0, 1e6),
    NumIn("fleet.canary.rollback.tpot_p99_margin", 0, 1e6),
    NumIn("fleet.canary.rollback.error_rate_margin", 0, 1),
    IntIn("fleet.canary.rollback.min_requests", 1, kMaxTokens),
    IntIn("fleet.canary.rollback.max_extensions", 0, 1000),
    NumAbove("fleet.request_timeout_s", 0, kMaxSeconds),
    NumAbove("fleet.health_check.interval_s", 0, kMaxSeconds),
    NumAbove("fleet.health_check.timeout_s", 0, kMaxSeconds),
    IntIn("fleet.health_check.unhealthy_threshold", 1, 1000),
    IntIn("fleet.outlier_ejection.consecutive_failures", 1, 1000000),
    NumAbove("fleet.outlier_ejection.interval_s", 0, kMaxSeconds),
    NumIn("fleet.outlier_ejection.base_ejection_s", 0, kMaxSeconds),
    NumIn("fleet.outlier_ejection.max_ejection_s", 0, kMaxSeconds),
    NumIn("fleet.outlier_ejection.max_ejection_percent", 0, 100),
    IntIn("fleet.retries.max_retries", 0, 100),
    NumIn("fleet.retries.base_backoff_ms", 0, kMaxMillis),
    NumIn("fleet.retries.max_backoff_ms", 0, kMaxMillis),
    NumIn("fleet.retries.budget_percent", 0, 100),
    IntIn("fleet.retries.min_retry_concurrency", 0, 1000000),
    NumIn("fleet.cold_start.provision_s", 0, kMaxSeconds),
    NumIn("fleet.cold_start.container_start_s", 0, kMaxSeconds),
    NumIn("fleet.cold_start.weight_load_gb_per_s", 1e-3, 1e6),
    NumIn("fleet.cold_start.warmup_s", 0, kMaxSeconds),
    NumIn("fleet.cold_start.provision_s_by_class.on_demand", 0, kMaxSeconds),
    NumIn("fleet.cold_start.provision_s_by_class.reserved", 0, kMaxSeconds),
    NumIn("fleet.cold_start.provision_s_by_class.spot", 0, kMaxSeconds),
    NumIn("fleet.rolling_restarts[].at_s", 0, kMaxSeconds),
    IntIn("fleet.rolling_restarts[].batch", 1, 100000),
    NumIn("fleet.rolling_restarts[].drain_timeout_s", 0, kMaxSeconds),
    NumAbove("failures[].mtbf_hours", 0, 1e9),
    NumIn("failures[].mttr_s", 0, kMaxSeconds),
    NumIn("failures[].at_s", 0, kMaxSeconds),
    IntIn("failures[].node", 0, 10000000),
    IntIn("failures[].replica", 0, 10000000),
    IntIn("failures[].rack", 0, 10000000),
    IntIn("traffic.max_requests", 1, int64_t{1} << 40),
    NumAbove("traffic.max_arrival_s", 0, kMaxSeconds),
    NumAbove("traffic.mix[].weight", 0, 1e12),
    IntIn("traffic.mix[].priority", 0, kMaxTokens),
    NumIn("traffic.trace.start_s", 0, kMaxSeconds),
    NumAbove("traffic.trace.end_s", 0, kMaxSeconds),
    NumIn("traffic.trace.rate_scale", 1e-6, 1e6),
    NumIn("traffic.generator.rate_per_s", 1e-6, 1e6),
    NumIn("traffic.generator.cv", 1e-3, 100),
    // A length is an integer (the "fixed" shorthand) or an object.
    IntIn("traffic.generator.prompt_tokens", 1, kMaxTokens),
    IntIn("traffic.generator.prompt_tokens.value", 1, kMaxTokens),
    NumAbove("traffic.generator.prompt_tokens.median", 0, kMaxTokens),
    NumIn("traffic.generator.prompt_tokens.sigma", 0, 10),
    IntIn("traffic.generator.prompt_tokens.min", 1, kMaxTokens),
    IntIn("traffic.generator.prompt_tokens.max", 1, kMaxTokens),
    IntIn("traffic.generator.output_tokens", 1, kMaxTokens),
    IntIn("traffic.generator.output_tokens.value", 1, kMaxTokens),
    NumAbove("traffic.generator.output_tokens.median", 0, kMaxTokens),
    NumIn("traffic.generator.output_tokens.sigma", 0, 10),
    IntIn("traffic.generator.output_tokens.min", 1, kMaxTokens),
    IntIn("traffic.generator.output_tokens.max", 1, kMaxTokens),
    IntIn("traffic.trace.prompt_tokens", 1, kMaxTokens),
    IntIn("traffic.trace.prompt_tokens.value", 1, kMaxTokens),
    NumAbove("traffic.trace.prompt_tokens.median", 0, kMaxTokens),
    NumIn("traffic.trace.prompt_tokens.sigma", 0, 10),
    IntIn("traffic.trace.prompt_tokens.min", 1, kMaxTokens),
    IntIn("traffic.trace.prompt_tokens.max", 1, kMaxTokens),
    IntIn("traffic.trace.output_tokens", 1, kMaxTokens),
    IntIn("traffic.trace.output_tokens.value", 1, kMaxTokens),
    NumAbove("traffic.trace.output_tokens.median", 0, kMaxTokens),
    NumIn("traffic.trace.output_tokens.sigma", 0, 10),
    IntIn("traffic.trace.output_tokens.min", 1, kMaxTokens),
    IntIn("traffic.trace.output_tokens.max", 1, kMaxTokens),
    IntIn("traffic.generator.shared_prefix.groups", 1, kMaxSharedPrefixGroups),
    IntIn("traffic.generator.shared_prefix.tokens", 1, kMaxSharedPrefixTokens),
    IntIn("traffic.generator.sessions.turns", 1, kMaxSessionTurns),
    NumAbove("traffic.generator.sessions.think_time_s", 0, kMaxSeconds),
    IntIn("traffic.generator.concurrency", 1, kMaxClosedLoopUsers),
    NumIn("traffic.generator.think_time_s", 0, kMaxSeconds),
    IntIn("traffic.generator.sessions.max_context_tokens", 1, kMaxSessionContextTokens),
    NumAbove("slo.ttft_ms", 0, kMaxMillis),
    NumAbove("slo.tpot_ms", 0, kMaxMillis),
    NumIn("perf.gemm_compute_efficiency", 1e-3, 1),
    NumIn("perf.gemm_memory_efficiency", 1e-3, 1),
    NumIn("perf.attention_compute_efficiency", 1e-3, 1),
    NumIn("perf.attention_memory_efficiency", 1e-3, 1),
    NumIn("perf.elementwise_memory_efficiency", 1e-3, 1),
    NumIn("perf.launch_overhead_us", 0, 1e6),
    NumIn("perf.link_efficiency", 1e-3, 1),
};

const NumericBound& BoundFor(std::string_view path) {
  for (const NumericBound& b : kBounds)
    if (path == b.path) return b;
  std::abort();  // every numeric key has a bound
}

std::string FormatBound(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

// "a positive integer at most 1024", "a number in [0.001, 1]".
std::string DescribeBound(const NumericBound& b) {
  if (b.integer) {
    const std::string hi = b.int_hi == kInt64Max ? "" : " at most " + std::to_string(b.int_hi);
    if (b.int_lo == 1) return "a positive integer" + hi;
    if (b.int_lo == 0) return "a non-negative integer" + hi;
    return "an integer in [" + std::to_string(b.int_lo) + ", " + std::to_string(b.int_hi) + "]";
  }
  if (b.lo == 0 && b.hi > 1)
    return std::string(b.lo_open ? "a positive number" : "a non-negative number") + " at most " + FormatBound(b.hi);
  return std::string("a number in ") + (b.lo_open ? "(" : "[") + FormatBound(b.lo) + ", " + FormatBound(b.hi) + "]";
}

// A value in a message: at most 40 characters, whatever its size or depth.
std::string Describe(const json& v) { return DescribeJson(v, 40); }

// Whether `v` is an integer within `b` (a number with a zero fraction counts:
// 2.0 is an integer in JSON Schema's sense); sets *x when it is.
bool ReadInt(const json& v, const NumericBound& b, int64_t* x) {
  int64_t n = 0;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(kInt64Max)) return false;
    n = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18)) return false;
    n = static_cast<int64_t>(d);
  } else {
    return false;
  }
  if (n < b.int_lo || n > b.int_hi) return false;
  *x = n;
  return true;
}

// Whether `v` is a finite number within `b`; sets *x when it is.
bool ReadNumber(const json& v, const NumericBound& b, double* x) {
  if (!v.is_number()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || !(b.lo_open ? d > b.lo : d >= b.lo) || !(d <= b.hi)) return false;
  *x = d;
  return true;
}

// A JSON object being read at `path` (display path, with indices) whose
// keys are checked against the table at `table_path`.
class Obj {
 public:
  Obj(const json& j, std::string path, std::string_view table_path, Status* err)
      : j_(j), path_(std::move(path)), table_path_(table_path), err_(err) {
    if (!err_->ok()) return;
    if (!j.is_object()) {
      Fail(path_.empty() ? "" : path_, "expected an object, got " + Describe(j));
      return;
    }
    const KeyTable& t = TableFor(table_path);
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (const char* k : t.keys) known = known || it.key() == k;
      if (!known) {
        std::string valid;
        for (const char* k : t.keys) valid += std::string(valid.empty() ? "" : ", ") + k;
        Fail(Join(it.key()), "unknown key (valid: " + valid + ")");
        return;
      }
    }
  }

  bool ok() const { return err_->ok(); }
  bool Has(const char* key) const { return ok() && j_.contains(key); }
  const json& At(const char* key) const { return j_.at(key); }
  std::string Join(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  // The key's path in the tables ("fleet.pools[].tp").
  std::string TablePath(std::string_view key) const {
    return table_path_.empty() ? std::string(key) : table_path_ + "." + std::string(key);
  }

  void Fail(const std::string& where, const std::string& what) {
    if (!err_->ok()) return;
    *err_ = Status::Invalid(where.empty() ? what : where + ": " + what);
  }

  void String(const char* key, std::string* out, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const json& v = At(key);
    if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
      Fail(Join(key), "expected a non-empty string, got " + Describe(v));
      return;
    }
    *out = v.get<std::string>();
  }

  // An integer (2.0 counts, as in JSON Schema) within the key's bound in
  // kBounds.
  template <typename T>
  void Int(const char* key, T* out, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const NumericBound& b = BoundFor(TablePath(key));
    // Every bound is non-negative and fits the field it fills.
    FLEETSIM_CHECK(b.integer && b.int_lo >= 0 &&
                   static_cast<uint64_t>(b.int_hi) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
    int64_t x = 0;
    if (!ReadInt(At(key), b, &x)) {
      Fail(Join(key), "expected " + DescribeBound(b) + ", got " + Describe(At(key)));
      return;
    }
    *out = static_cast<T>(x);
  }

  void OptBool(const char* key, std::optional<bool>* out) {
    if (!Has(key)) return;
    const json& v = At(key);
    if (!v.is_boolean()) {
      Fail(Join(key), "expected true or false, got " + Describe(v));
      return;
    }
    *out = v.get<bool>();
  }

  template <typename T>
  void OptInt(const char* key, std::optional<T>* out) {
    if (!Has(key)) return;
    T v{};
    Int(key, &v);
    if (ok()) *out = v;
  }

  // A finite number within the key's bound in kBounds.
  void Number(const char* key, double* out, bool required = false) {
    if (!Has(key)) {
      if (required && ok()) Fail(Join(key), "required");
      return;
    }
    const NumericBound& b = BoundFor(TablePath(key));
    FLEETSIM_CHECK(!b.integer);
    if (!ReadNumber(At(key), b, out)) Fail(Join(key), "expected " + DescribeBound(b) + ", got " + Describe(At(key)));
  }
  void OptNumber(const char* key, std::optional<double>* out) {
    if (!Has(key)) return;
    double x = 0;
    Number(key, &x);
    if (ok()) *out = x;
  }

  // One of `choices`; returns its index or -1.
  int Choice(const char* key, std::initializer_list<const char*> choices, bool required) {
    std::string s;
    String(key, &s, required);
    if (!ok() || s.empty()) return -1;
    int i = 0;
    std::string valid;
    for (const char* c : choices) {
      if (s == c) return i;
      valid += std::string(valid.empty() ? "" : ", ") + c;
      ++i;
    }
    Fail(Join(key), "unknown value " + Describe(json(s)) + " (valid: " + valid + ")");
    return -1;
  }

 private:
  const json& j_;
  std::string path_;
  std::string table_path_;
  Status* err_;
};

std::string ResolvePath(const std::string& base_dir, const std::string& p) {
  std::filesystem::path path(p);
  if (path.is_absolute() || base_dir.empty()) return p;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// A model given as a config.json path is named by that path, so it must be
// the same wherever the command runs from: absolute and normal (an engine
// profile fitted for it names it so too).
std::string ModelPath(const std::string& base_dir, const std::string& p) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(ResolvePath(base_dir, p), ec);
  return ec ? ResolvePath(base_dir, p) : abs.lexically_normal().string();
}

// A length object under `gen`, whose key table is at `table_prefix` + key
// ("traffic.generator." or "traffic.trace.").
void ParseLength(Obj& gen, const char* table_prefix, const char* key, LengthSpec* out, Status* err) {
  if (!gen.Has(key)) return;
  const json& v = gen.At(key);
  const std::string path = gen.Join(key);
  const std::string table_path = std::string(table_prefix) + key;
  if (v.is_number()) {  // shorthand for {"dist": "fixed", "value": n}
    const NumericBound& b = BoundFor(table_path);
    int64_t n = 0;
    if (!ReadInt(v, b, &n)) {
      *err = Status::Invalid(path + ": expected " + DescribeBound(b) + " or a length object, got " + Describe(v));
      return;
    }
    out->kind = LengthSpec::Kind::kFixed;
    out->value = static_cast<int32_t>(n);
    return;
  }
  if (!v.is_object()) {
    *err = Status::Invalid(path + ": expected a positive integer or a length object, got " + Describe(v));
    return;
  }
  Obj o(v, path, table_path, err);
  const int dist = o.Choice("dist", {"fixed", "lognormal", "uniform"}, true);
  // Every key present is type-checked, whatever the dist; a key the dist
  // does not use is an error rather than silently ignored.
  o.Int("value", &out->value);
  o.Number("median", &out->median);
  o.Number("sigma", &out->sigma);
  o.Int("min", &out->min);
  o.Int("max", &out->max);
  if (!o.ok() || dist < 0) return;
  static const char* const kUses[3][5] = {{"value"}, {"median", "sigma", "min", "max"}, {"min", "max"}};
  static const char* const kDists[3] = {"fixed", "lognormal", "uniform"};
  for (const char* k : {"value", "median", "sigma", "min", "max"}) {
    bool used = false;
    for (const char* u : kUses[dist]) used = used || (u && std::string_view(u) == k);
    if (o.Has(k) && !used) {
      o.Fail(path + "." + k, std::string("not used by dist \"") + kDists[dist] + "\"");
      return;
    }
  }
  const char* const required[3][2] = {{"value", nullptr}, {"median", "sigma"}, {"min", "max"}};
  for (const char* k : required[dist])
    if (k && !o.Has(k)) {
      o.Fail(path + "." + k, "required");
      return;
    }
  out->kind = dist == 0 ? LengthSpec::Kind::kFixed
              : dist == 1 ? LengthSpec::Kind::kLogNormal
                          : LengthSpec::Kind::kUniform;
  if (out->min > out->max) o.Fail(path + ".min", "greater than max");
}

// An array under `key` of `parent`: calls fn(element, its path) for each.
template <typename Fn>
void ForArray(Obj& parent, const char* key, const std::string& path, Status* err, Fn&& fn) {
  if (!parent.Has(key)) return;
  const json& arr = parent.At(key);
  if (!arr.is_array()) {
    parent.Fail(path, "expected an array, got " + Describe(arr));
    return;
  }
  for (size_t i = 0; i < arr.size() && err->ok(); ++i) fn(arr[i], path + "[" + std::to_string(i) + "]");
}

void ParseTraffic(Obj& top, const std::string& base_dir, ScenarioSpec* spec, Status* err) {
  if (!top.Has("traffic")) {
    top.Fail("traffic", "required");
    return;
  }
  Obj t(top.At("traffic"), "traffic", "traffic", err);
  TrafficSpec& ts = spec->traffic;
  t.Int("max_requests", &ts.max_requests);
  t.Number("max_arrival_s", &ts.max_arrival_s);
  ForArray(t, "mix", "traffic.mix", err, [&](const json& j, const std::string& path) {
    TrafficSpec::MixEntry m;
    Obj o(j, path, "traffic.mix[]", err);
    o.Number("weight", &m.weight, true);
    o.String("tenant", &m.tenant);
    o.String("model", &m.model);
    o.String("location", &m.location);
    if (o.Has("priority")) {
      int32_t p = 0;
      o.Int("priority", &p);
      m.priority = p;
    }
    ts.mix.push_back(std::move(m));
  });
  const bool has_trace = t.Has("trace"), has_gen = t.Has("generator");
  if (t.ok() && has_trace == has_gen) {
    t.Fail("traffic", "expected exactly one of \"trace\" and \"generator\"");
    return;
  }
  if (has_trace) {
    ts.kind = TrafficSpec::Kind::kTrace;
    Obj tr(t.At("trace"), "traffic.trace", "traffic.trace", err);
    // In the order of TraceFormat.
    static constexpr TraceFormat kFormats[] = {TraceFormat::kAzure,     TraceFormat::kMooncake,
                                               TraceFormat::kCsv,       TraceFormat::kBurstGpt,
                                               TraceFormat::kSplitwise, TraceFormat::kServeGen};
    const int fmt = tr.Choice("format", {"azure", "mooncake", "csv", "burstgpt", "splitwise", "servegen"}, true);
    if (fmt >= 0) ts.format = kFormats[fmt];
    tr.String("path", &ts.path, true);
    ts.path = ResolvePath(base_dir, ts.path);
    tr.Number("start_s", &ts.start_s);
    tr.Number("end_s", &ts.end_s);
    tr.Number("rate_scale", &ts.rate_scale);
    if (tr.ok() && ts.end_s <= ts.start_s) tr.Fail("traffic.trace.end_s", "must be greater than start_s");
    // Lengths for a trace that has none of its own (ServeGen describes
    // arrivals only; its dataset files are used when these are absent).
    const bool has_lengths = tr.Has("prompt_tokens") || tr.Has("output_tokens") || tr.Has("lengths_csv");
    if (tr.ok() && has_lengths && ts.format != TraceFormat::kServeGen) {
      const char* key = tr.Has("lengths_csv") ? "lengths_csv" : tr.Has("prompt_tokens") ? "prompt_tokens" : "output_tokens";
      tr.Fail(std::string("traffic.trace.") + key, "only for format \"servegen\" (other traces carry their lengths)");
    }
    tr.String("lengths_csv", &ts.lengths_csv);
    if (!ts.lengths_csv.empty()) ts.lengths_csv = ResolvePath(base_dir, ts.lengths_csv);
    if (tr.ok() && has_lengths && ts.lengths_csv.empty() && !(tr.Has("prompt_tokens") && tr.Has("output_tokens")))
      tr.Fail("traffic.trace", "needs \"lengths_csv\" or both \"prompt_tokens\" and \"output_tokens\"");
    if (tr.ok() && !ts.lengths_csv.empty() && (tr.Has("prompt_tokens") || tr.Has("output_tokens")))
      tr.Fail("traffic.trace", "\"lengths_csv\" and \"prompt_tokens\"/\"output_tokens\" exclude each other");
    ParseLength(tr, "traffic.trace.", "prompt_tokens", &ts.prompt, err);
    ParseLength(tr, "traffic.trace.", "output_tokens", &ts.output, err);
    ts.trace_lengths = has_lengths;
  } else if (has_gen) {
    ts.kind = TrafficSpec::Kind::kGenerator;
    Obj g(t.At("generator"), "traffic.generator", "traffic.generator", err);
    if (g.Has("concurrency")) {
      // Closed loop: the clients' pace replaces the arrival process.
      for (const char* open_loop : {"arrival", "rate_per_s", "cv", "sessions"})
        if (g.ok() && g.Has(open_loop))
          g.Fail(std::string("traffic.generator.") + open_loop,
                 "does not apply with \"concurrency\" (closed-loop clients send as responses come back)");
      ClosedLoopSpec c;
      g.Int("concurrency", &c.users, true);
      g.Number("think_time_s", &c.think_time_s);
      c.exponential = g.Choice("think_time_dist", {"fixed", "exponential"}, false) == 1;
      if (g.ok()) ts.closed_loop = c;
    } else {
      for (const char* closed_loop : {"think_time_s", "think_time_dist"})
        if (g.ok() && g.Has(closed_loop))
          g.Fail(std::string("traffic.generator.") + closed_loop, "applies only with \"concurrency\"");
      const int arr = g.Choice("arrival", {"poisson", "gamma", "constant"}, true);
      ts.arrival = arr == 1 ? ArrivalProcess::kGamma : arr == 2 ? ArrivalProcess::kConstant : ArrivalProcess::kPoisson;
      g.Number("rate_per_s", &ts.rate_per_s, true);
      g.Number("cv", &ts.cv);
    }
    g.String("lengths_csv", &ts.lengths_csv);
    if (!ts.lengths_csv.empty()) ts.lengths_csv = ResolvePath(base_dir, ts.lengths_csv);
    g.String("model", &ts.model);
    const bool has_lengths = g.Has("prompt_tokens") || g.Has("output_tokens");
    if (g.ok() && ts.lengths_csv.empty() && !(g.Has("prompt_tokens") && g.Has("output_tokens")))
      g.Fail("traffic.generator", "needs \"lengths_csv\" or both \"prompt_tokens\" and \"output_tokens\"");
    if (g.ok() && !ts.lengths_csv.empty() && has_lengths)
      g.Fail("traffic.generator", "\"lengths_csv\" and \"prompt_tokens\"/\"output_tokens\" exclude each other");
    ParseLength(g, "traffic.generator.", "prompt_tokens", &ts.prompt, err);
    ParseLength(g, "traffic.generator.", "output_tokens", &ts.output, err);
    // Both optional; absent, the stream is exactly the plain generator's.
    // Whether the system prompt plus the longest prompt fits an int32 is
    // checked when the generator is built (a length CSV's longest row is
    // known only then).
    if (g.Has("shared_prefix")) {
      Obj sp(g.At("shared_prefix"), "traffic.generator.shared_prefix", "traffic.generator.shared_prefix", err);
      SharedPrefixSpec p;
      sp.Int("groups", &p.groups, true);
      sp.Int("tokens", &p.tokens, true);
      if (sp.ok()) ts.shared_prefix = p;
    }
    if (g.Has("sessions")) {
      Obj ss(g.At("sessions"), "traffic.generator.sessions", "traffic.generator.sessions", err);
      SessionSpec p;
      ss.Int("turns", &p.turns, true);
      ss.Number("think_time_s", &p.think_time_s, true);
      ss.Int("max_context_tokens", &p.max_context_tokens);
      if (ss.ok()) ts.sessions = p;
    }
    if (g.ok() && !t.Has("max_requests") && !t.Has("max_arrival_s") && !spec->duration_s)
      g.Fail("traffic", "a generator needs max_requests, max_arrival_s or the scenario's duration_s");
  }
}

// A pool's "autoscaler". Its options are numbers under policy-specific
// names, which the policy's factory checks; replicas (read already) is the
// count at time 0 and must lie within the bounds.
void ParseAutoscaler(const json& j, PoolSpec* p, Status* err) {
  AutoscalerSpec a;
  a.path = p->path + ".autoscaler";
  Obj o(j, a.path, "fleet.pools[].autoscaler", err);
  o.String("policy", &a.policy, true);
  a.min_replicas = 1;
  o.Int("min_replicas", &a.min_replicas);
  a.max_replicas = std::max(p->replicas, a.min_replicas);
  o.Int("max_replicas", &a.max_replicas, true);
  o.Int("warm_pool", &a.warm_pool);
  // In ScalingMetric's order (sim/cluster/autoscaler.h), so the index is
  // the enum (the parser links no policy code).
  if (const int m = o.Choice("metric", {"concurrency", "queue_depth", "kv_utilization", "tokens_per_s", "ttft_ms",
                                        "tpot_ms"},
                             false);
      m >= 0)
    a.metric = static_cast<ScalingMetric>(m);
  o.OptNumber("target", &a.target);
  o.OptNumber("metric_delay_s", &a.metric_delay_s);
  if (const int f = o.Choice("forecaster", {"constant", "arima", "kalman"}, false); f >= 0)
    a.forecaster = f == 0 ? "constant" : f == 1 ? "arima" : "kalman";
  if (o.Has("options")) {
    // Types and ranges from kBounds; which policy takes which option is
    // checked when the run is built.
    Obj so(o.At("options"), a.path + ".options", "fleet.pools[].autoscaler.options", err);
    for (const char* name : TableFor("fleet.pools[].autoscaler.options").keys) {
      if (!so.Has(name)) continue;
      double x = 0;
      so.Number(name, &x);
      if (!so.ok()) break;
      a.options[name] = x;
    }
  }
  if (o.Has("schedule") && o.ok()) {
    const json& sch = o.At("schedule");
    const std::string where = a.path + ".schedule";
    if (!sch.is_array() || sch.empty())
      o.Fail(where, "expected a non-empty array of {\"hour\", \"replicas\"} objects, got " + Describe(sch));
    for (size_t i = 0; o.ok() && i < sch.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      Obj e(sch[i], at, "fleet.pools[].autoscaler.schedule[]", err);
      int hour = 0, n = 0;
      e.Int("hour", &hour, true);
      e.Int("replicas", &n, true);
      if (e.ok() && !a.schedule.empty() && hour <= a.schedule.back().first)
        e.Fail(at + ".hour", "hours must increase along the schedule");
      if (e.ok()) a.schedule.emplace_back(hour, n);
    }
  }
  if (o.ok() && a.min_replicas > a.max_replicas)
    o.Fail(a.path + ".min_replicas", std::to_string(a.min_replicas) + " exceeds max_replicas " +
                                         std::to_string(a.max_replicas));
  if (o.ok() && (p->replicas < a.min_replicas || p->replicas > a.max_replicas))
    o.Fail(p->path + ".replicas", "the count at time 0 (" + std::to_string(p->replicas) +
                                      ") must lie within the autoscaler's bounds [" + std::to_string(a.min_replicas) +
                                      ", " + std::to_string(a.max_replicas) + "]");
  if (o.ok() && p->spares > 0) o.Fail(p->path + ".spares", "an autoscaled pool keeps a warm_pool, not spares");
  a.initial_replicas = p->replicas;
  p->autoscaler = std::move(a);
}

void ParsePools(Obj& fleet, const std::string& base_dir, ScenarioSpec* spec, Status* err) {
  if (!fleet.Has("pools")) {
    fleet.Fail("fleet.pools", "required");
    return;
  }
  const json& arr = fleet.At("pools");
  if (!arr.is_array() || arr.empty()) {
    fleet.Fail("fleet.pools", "expected a non-empty array of pools");
    return;
  }
  for (size_t i = 0; i < arr.size() && err->ok(); ++i) {
    PoolSpec p;
    p.path = "fleet.pools[" + std::to_string(i) + "]";
    Obj o(arr[i], p.path, "fleet.pools[]", err);
    p.name = "pool" + std::to_string(i);
    o.String("name", &p.name);
    p.model = spec->model;
    o.String("model", &p.model);
    // A zoo name, or a Hugging Face config.json (a path, relative to the
    // scenario); the scenario's own model is already resolved.
    if (o.Has("model") && ModelIsFile(p.model)) p.model = ModelPath(base_dir, p.model);
    if (o.ok() && p.model.empty()) o.Fail(p.path + ".model", "required (or set the scenario's \"model\")");
    o.String("gpu", &p.gpu, true);
    o.Int("replicas", &p.replicas);
    o.Int("tp", &p.tp);
    o.Int("pp", &p.pp);
    o.Int("ep", &p.ep);
    {
      std::optional<bool> dpa;
      o.OptBool("dp_attention", &dpa);
      p.dp_attention = dpa.value_or(false);
    }
    o.Number("expert_load_skew", &p.expert_load_skew);
    if (o.Has("expert_balance")) {
      const std::string where = p.path + ".expert_balance";
      if (o.Has("expert_load_skew")) o.Fail(where, "excludes expert_load_skew (the balance derives it)");
      Obj bo(o.At("expert_balance"), where, "fleet.pools[].expert_balance", err);
      PoolSpec::ExpertBalanceSpec eb;
      if (bo.ok() && bo.Has("loads") == bo.Has("zipf_s"))
        bo.Fail(where, "expected one of loads (each expert's routed tokens) and zipf_s");
      if (bo.Has("loads")) {
        const json& ls = bo.At("loads");
        if (!ls.is_array() || ls.empty()) {
          bo.Fail(where + ".loads", "expected a non-empty array of per-expert loads, got " + Describe(ls));
        } else {
          const NumericBound& b = BoundFor("fleet.pools[].expert_balance.loads[]");
          for (size_t k = 0; k < ls.size() && bo.ok(); ++k) {
            double x = 0;
            if (!ReadNumber(ls[k], b, &x))
              bo.Fail(where + ".loads[" + std::to_string(k) + "]", "expected " + DescribeBound(b) + ", got " +
                                                                       Describe(ls[k]));
            eb.loads.push_back(x);
          }
          if (bo.ok() && std::all_of(eb.loads.begin(), eb.loads.end(), [](double x) { return x == 0; }))
            bo.Fail(where + ".loads", "expected some expert with a positive load");
        }
      }
      if (bo.Has("zipf_s")) {
        double s = 0;
        bo.Number("zipf_s", &s);
        eb.zipf_s = s;
      }
      if (bo.Has("redundant_experts")) {
        int r = 0;
        bo.Int("redundant_experts", &r);
        eb.redundant_experts = r;
      }
      p.expert_balance = std::move(eb);
    }
    if (o.Has("layer_split")) {
      // Layers per pipeline stage (vLLM's VLLM_PP_LAYER_PARTITION); its
      // length and sum are checked against pp and the model at build.
      const json& ls = o.At("layer_split");
      const std::string where = p.path + ".layer_split";
      if (!ls.is_array() || ls.empty()) {
        o.Fail(where, "expected a non-empty array of layer counts, got " + Describe(ls));
      } else {
        for (size_t k = 0; k < ls.size() && o.ok(); ++k) {
          const NumericBound& b = BoundFor("fleet.pools[].layer_split[]");
          int64_t n = 0;
          if (!ReadInt(ls[k], b, &n)) {
            o.Fail(where + "[" + std::to_string(k) + "]", "expected " + DescribeBound(b) + ", got " + Describe(ls[k]));
            break;
          }
          p.layer_split.push_back(static_cast<int>(n));
        }
      }
    }
    if (o.Has("speculative")) {
      SpeculativeSpec sp;
      sp.path = p.path + ".speculative";
      Obj so(o.At("speculative"), sp.path, "fleet.pools[].speculative", err);
      if (const int m = so.Choice("method", {"draft_model", "eagle", "mtp"}, false); m >= 0)
        sp.method = m == 0 ? "draft_model" : m == 1 ? "eagle" : "mtp";
      so.String("draft_model", &sp.draft_model, sp.method == "draft_model");
      if (so.ok() && sp.method != "draft_model" && so.Has("draft_model"))
        so.Fail(sp.path + ".draft_model", "method " + sp.method + " proposes with a head on the target; no draft model");
      if (so.ok() && sp.method == "mtp" && so.Has("head_layers"))
        so.Fail(sp.path + ".head_layers", "method mtp proposes with the model's own multi-token-prediction layers "
                "(mtp_layers; num_nextn_predict_layers in config.json)");
      if (so.ok() && sp.method == "draft_model" && so.Has("head_layers"))
        so.Fail(sp.path + ".head_layers", "only for method eagle");
      so.Int("num_speculative_tokens", &sp.k, true);
      so.Number("head_layers", &sp.head_layers);
      if (!so.Has("acceptance")) {
        if (so.ok()) so.Fail(sp.path + ".acceptance", "required (a probability, or {\"mean\", \"concentration\"})");
      } else if (so.At("acceptance").is_object()) {
        Obj ao(so.At("acceptance"), sp.path + ".acceptance", "fleet.pools[].speculative.acceptance", err);
        ao.Number("mean", &sp.acceptance_mean, true);
        ao.Number("concentration", &sp.acceptance_concentration);
      } else {
        so.Number("acceptance", &sp.acceptance_mean);
      }
      p.speculative = std::move(sp);
    }
    o.String("engine", &p.engine);
    // A bundled engine profile's name, or a user's file (a path, relative
    // to the scenario).
    if (EngineIsFile(p.engine)) p.engine = ResolvePath(base_dir, p.engine);
    o.OptBool("async_scheduling", &p.async_scheduling);
    o.String("scheduler", &p.scheduler);
    if (o.Has("scheduler_options")) {
      // Types and ranges from kBounds; which scheduler takes which option
      // is checked when the run is built.
      Obj so(o.At("scheduler_options"), p.path + ".scheduler_options", "fleet.pools[].scheduler_options", err);
      for (const char* name : TableFor("fleet.pools[].scheduler_options").keys) {
        if (!so.Has(name)) continue;
        const NumericBound& b = BoundFor(so.TablePath(name));
        double x = 0;
        int64_t n = 0;
        if (b.integer ? !ReadInt(so.At(name), b, &n) : !ReadNumber(so.At(name), b, &x)) {
          so.Fail(so.Join(name), "expected " + DescribeBound(b) + ", got " + Describe(so.At(name)));
          break;
        }
        p.scheduler_options[name] = b.integer ? static_cast<double>(n) : x;
      }
    }
    const int pre = o.Choice("preemption", {"recompute", "swap"}, false);
    if (pre >= 0) p.preemption = pre == 0 ? "recompute" : "swap";
    o.Number("swap_space_gib", &p.swap_space_gib);
    o.OptInt("max_model_len", &p.max_model_len);
    if (const int over = o.Choice("over_max_model_len", {"reject", "truncate"}, false); over >= 0)
      p.over_max_model_len = over == 0 ? "reject" : "truncate";
    if (const int role = o.Choice("role", {"both", "prefill", "decode"}, false); role >= 0)
      p.role = static_cast<PoolSpec::Role>(role);
    o.OptBool("prefix_caching", &p.prefix_caching);
    o.OptInt("max_num_batched_tokens", &p.max_num_batched_tokens);
    o.OptInt("max_num_seqs", &p.max_num_seqs);
    o.Number("gpu_memory_utilization", &p.gpu_memory_utilization);
    o.Int("block_size", &p.block_size);
    static const char* const kKvCacheDtypes[] = {"auto", "fp8", "bf16", "fp16"};  // as Choice lists them
    if (const int kv = o.Choice("kv_cache_dtype", {"auto", "fp8", "bf16", "fp16"}, false); kv >= 0)
      p.kv_cache_dtype = kKvCacheDtypes[kv];
    o.String("pricing_class", &p.pricing_class);
    o.OptNumber("usd_per_gpu_hour", &p.usd_per_gpu_hour);
    o.Int("spares", &p.spares);
    o.String("zone", &p.zone);
    o.String("region", &p.region);
    if (!o.Has("zone") && !p.region.empty()) p.zone = p.region;
    o.Number("warm_start_s", &p.warm_start_s);
    o.Number("warm_cost_fraction", &p.warm_cost_fraction);
    if (o.Has("autoscaler")) ParseAutoscaler(o.At("autoscaler"), &p, err);
    if (o.Has("spot") && o.ok() && p.pricing_class != "spot")
      o.Fail(p.path + ".spot", "the pool's pricing_class is \"" + p.pricing_class + "\", not \"spot\"");
    if (o.Has("spot") && err->ok()) {
      Obj so(o.At("spot"), p.path + ".spot", "fleet.pools[].spot", err);
      so.OptNumber("reclaims_per_hour", &p.spot_reclaims_per_hour);
      so.OptNumber("notice_s", &p.spot_notice_s);
      if (const int fb = so.Choice("fallback", {"on_demand", "none"}, false); fb >= 0)
        p.spot_fallback_on_demand = fb == 0;
    }
    for (const PoolSpec& q : spec->pools)
      if (o.ok() && q.name == p.name) o.Fail(p.path + ".name", "duplicate pool name \"" + p.name + "\"");
    spec->pools.push_back(std::move(p));
  }
}

// The fleet's GPU capacity limits.
void ParseCapacity(Obj& fleet, ScenarioSpec* spec, Status* err) {
  fleet.Number("activator_timeout_s", &spec->activator_timeout_s);
  if (!fleet.Has("gpu_capacity")) return;
  const json& arr = fleet.At("gpu_capacity");
  if (!arr.is_array()) {
    fleet.Fail("fleet.gpu_capacity", "expected an array, got " + Describe(arr));
    return;
  }
  for (size_t i = 0; i < arr.size() && err->ok(); ++i) {
    GpuCapacitySpec c;
    c.path = "fleet.gpu_capacity[" + std::to_string(i) + "]";
    Obj o(arr[i], c.path, "fleet.gpu_capacity[]", err);
    o.String("gpu", &c.gpu, true);
    o.String("pricing_class", &c.pricing_class, true);
    o.Int("gpus", &c.gpus, true);
    spec->gpu_capacity.push_back(std::move(c));
  }
}

// A map of region (or other) names to numbers >= 0: {"us-east": 12.5}.
void ParseNameNumbers(Obj& parent, const char* key, const std::string& path,
                      std::map<std::string, double, std::less<>>* out) {
  if (!parent.Has(key)) return;
  const json& m = parent.At(key);
  if (!m.is_object()) {
    parent.Fail(path, "expected an object of names to numbers, got " + Describe(m));
    return;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      parent.Fail(path + "." + it.key(), "expected a number >= 0, got " + Describe(*it));
      return;
    }
    (*out)[it.key()] = it->get<double>();
  }
}

// Admission, degradation, regions and canary (sim/cluster/gateway.h);
// names are resolved when the run is built.
void ParseFrontDoor(Obj& fleet, ScenarioSpec* spec, Status* err) {
  if (fleet.Has("admission")) {
    Obj a(fleet.At("admission"), "fleet.admission", "fleet.admission", err);
    AdmissionSpec& ad = spec->admission;
    if (const int q = a.Choice("queue_order", {"fcfs", "strict", "weighted"}, false); q >= 0)
      ad.queue_order = q == 0 ? "fcfs" : q == 1 ? "strict" : "weighted";
    a.Int("max_queue_per_replica", &ad.max_queue_per_replica);
    a.Int("max_queue", &ad.max_queue);
    ForArray(a, "classes", "fleet.admission.classes", err, [&](const json& j, const std::string& path) {
      PriorityClassSpec c;
      c.path = path;
      Obj o(j, path, "fleet.admission.classes[]", err);
      o.String("name", &c.name, true);
      o.Int("priority", &c.priority, true);
      o.Number("weight", &c.weight);
      o.OptNumber("queue_timeout_s", &c.queue_timeout_s);
      ad.classes.push_back(std::move(c));
    });
    ForArray(a, "tenants", "fleet.admission.tenants", err, [&](const json& j, const std::string& path) {
      TenantSpec t;
      t.path = path;
      Obj o(j, path, "fleet.admission.tenants[]", err);
      o.String("name", &t.name, true);
      o.OptNumber("rate_per_s", &t.rate_per_s);
      o.OptNumber("burst", &t.burst);
      ad.tenants.push_back(std::move(t));
    });
  }
  ForArray(fleet, "degradation", "fleet.degradation", err, [&](const json& j, const std::string& path) {
    DegradationSpec d;
    d.path = path;
    Obj o(j, path, "fleet.degradation[]", err);
    o.String("policy", &d.policy, true);  // a registered degradation policy, resolved when the run is built
    o.String("class", &d.class_name);
    if (o.ok() && !o.Has("trigger")) o.Fail(path + ".trigger", "required");
    if (o.ok()) {
      Obj t(o.At("trigger"), path + ".trigger", "fleet.degradation[].trigger", err);
      t.Number("queue_per_replica", &d.queue_per_replica);
      t.Number("predicted_ttft_ms", &d.predicted_ttft_ms);
      std::optional<bool> saturated;
      t.OptBool("saturated", &saturated);
      d.saturated = saturated.value_or(false);
      if (t.ok() && d.queue_per_replica == 0 && d.predicted_ttft_ms == 0 && !d.saturated)
        t.Fail(path + ".trigger", "give queue_per_replica, predicted_ttft_ms or saturated");
    }
    o.Int("max_output_tokens", &d.max_output_tokens);
    o.String("pool", &d.pool);
    spec->degradation.push_back(std::move(d));
  });
  ForArray(fleet, "regions", "fleet.regions", err, [&](const json& j, const std::string& path) {
    Obj o(j, path, "fleet.regions[]", err);
    std::string name;
    o.String("name", &name, true);
    for (const std::string& r : spec->regions)
      if (r == name) o.Fail(path + ".name", "duplicate region " + Describe(json(name)));
    spec->regions.push_back(name);
  });
  ForArray(fleet, "clients", "fleet.clients", err, [&](const json& j, const std::string& path) {
    ClientLocationSpec c;
    c.path = path;
    Obj o(j, path, "fleet.clients[]", err);
    o.String("name", &c.name, true);
    ParseNameNumbers(o, "rtt_ms", path + ".rtt_ms", &c.rtt_ms);
    spec->clients.push_back(std::move(c));
  });
  if (fleet.Has("global_balancer")) {
    Obj g(fleet.At("global_balancer"), "fleet.global_balancer", "fleet.global_balancer", err);
    GlobalBalancerSpec& gb = spec->global_balancer;
    g.String("policy", &gb.policy);
    g.Number("latency_budget_ms", &gb.latency_budget_ms);
    g.Number("saturation_outstanding", &gb.saturation_outstanding);
    ParseNameNumbers(g, "weights", "fleet.global_balancer.weights", &gb.weights);
  }
  if (fleet.Has("canary")) {
    CanarySpec c;
    c.path = "fleet.canary";
    Obj o(fleet.At("canary"), "fleet.canary", "fleet.canary", err);
    o.String("pool", &c.pool, true);
    o.String("baseline", &c.baseline, true);
    o.Number("start_s", &c.start_s);
    ForArray(o, "steps", "fleet.canary.steps", err, [&](const json& j, const std::string& path) {
      CanarySpec::Step st;
      Obj so(j, path, "fleet.canary.steps[]", err);
      so.Number("share", &st.share, true);
      so.Number("duration_s", &st.duration_s, true);
      if (so.ok() && !c.steps.empty() && st.share < c.steps.back().share)
        so.Fail(path + ".share", "shares must not fall from one step to the next");
      c.steps.push_back(st);
    });
    if (o.ok() && c.steps.empty()) o.Fail("fleet.canary.steps", "required: at least one step");
    if (o.ok() && o.Has("rollback")) {
      Obj r(o.At("rollback"), "fleet.canary.rollback", "fleet.canary.rollback", err);
      r.Number("ttft_p99_margin", &c.ttft_p99_margin);
      r.Number("tpot_p99_margin", &c.tpot_p99_margin);
      r.Number("error_rate_margin", &c.error_rate_margin);
      r.Int("min_requests", &c.min_requests);
      r.Int("max_extensions", &c.max_extensions);
    }
    spec->canary = std::move(c);
  }
}

// The fleet's reliability settings and the scenario's "failures".
void ParseReliability(Obj& top, Obj& fleet, ScenarioSpec* spec, Status* err) {
  ReliabilitySpec& r = spec->reliability;
  fleet.Int("gpus_per_node", &spec->gpus_per_node);
  fleet.Int("nodes_per_rack", &spec->nodes_per_rack);
  if (const int pl = fleet.Choice("placement", {"topology_aware", "packed", "spread"}, false); pl >= 0)
    spec->placement = static_cast<ScenarioSpec::Placement>(pl);
  if (fleet.Has("disaggregation")) {
    Obj d(fleet.At("disaggregation"), "fleet.disaggregation", "fleet.disaggregation", err);
    if (const int pick = d.Choice("decode_pick", {"least_outstanding", "most_free_kv"}, false); pick >= 0)
      spec->disaggregation.most_free_kv = pick == 1;
    if (const int t = d.Choice("ttft", {"decode", "prefill"}, false); t >= 0)
      spec->disaggregation.ttft_from_prefill = t == 1;
  }
  if (fleet.Has("network")) {
    Obj n(fleet.At("network"), "fleet.network", "fleet.network", err);
    std::optional<bool> rails;
    n.OptBool("rail_optimized", &rails);
    if (rails) spec->network.rail_optimized = *rails;
    n.Number("latency_us", &spec->network.latency_us);
    n.Number("gbps_per_gpu", &spec->network.gbps_per_gpu);
  }
  if (const int rec = fleet.Choice("recovery", {"replace", "repair", "none"}, false); rec >= 0)
    r.recovery = static_cast<Recovery>(rec);
  fleet.OptInt("max_requests_per_replica", &r.max_requests_per_replica);
  fleet.Number("request_timeout_s", &r.request_timeout_s);
  if (fleet.Has("health_check")) {
    Obj o(fleet.At("health_check"), "fleet.health_check", "fleet.health_check", err);
    o.Number("interval_s", &r.health_check.interval_s);
    o.Number("timeout_s", &r.health_check.timeout_s);
    o.Int("unhealthy_threshold", &r.health_check.unhealthy_threshold);
  }
  if (fleet.Has("outlier_ejection")) {
    Obj o(fleet.At("outlier_ejection"), "fleet.outlier_ejection", "fleet.outlier_ejection", err);
    OutlierEjectionSpec oe;
    o.Int("consecutive_failures", &oe.consecutive_failures);
    o.Number("interval_s", &oe.interval_s);
    o.Number("base_ejection_s", &oe.base_ejection_s);
    o.Number("max_ejection_s", &oe.max_ejection_s);
    o.Number("max_ejection_percent", &oe.max_ejection_percent);
    r.outlier_ejection = oe;
  }
  if (fleet.Has("retries")) {
    Obj o(fleet.At("retries"), "fleet.retries", "fleet.retries", err);
    RetrySpec rs;
    o.Int("max_retries", &rs.max_retries);
    o.Number("base_backoff_ms", &rs.base_backoff_ms);
    o.Number("max_backoff_ms", &rs.max_backoff_ms);
    o.Number("budget_percent", &rs.budget_percent);
    o.Int("min_retry_concurrency", &rs.min_retry_concurrency);
    r.retries = rs;
  }
  if (fleet.Has("cold_start")) {
    Obj o(fleet.At("cold_start"), "fleet.cold_start", "fleet.cold_start", err);
    o.Number("provision_s", &r.cold_start.provision_s);
    o.Number("container_start_s", &r.cold_start.container_start_s);
    o.OptNumber("weight_load_gb_per_s", &r.cold_start.weight_load_gb_per_s);
    if (const int ws = o.Choice("weight_source", {"disk", "network", "peer"}, false); ws >= 0)
      r.cold_start.weight_source = static_cast<WeightSource>(ws);
    o.Number("warmup_s", &r.cold_start.warmup_s);
    if (o.Has("provision_s_by_class")) {
      Obj c(o.At("provision_s_by_class"), "fleet.cold_start.provision_s_by_class",
            "fleet.cold_start.provision_s_by_class", err);
      for (const char* cls : TableFor("fleet.cold_start.provision_s_by_class").keys) {
        if (!c.Has(cls)) continue;
        double x = 0;
        c.Number(cls, &x);
        if (c.ok()) r.cold_start.provision_s_by_class[cls] = x;
      }
    }
  }
  if (fleet.Has("rolling_restarts") && err->ok()) {
    const json& arr = fleet.At("rolling_restarts");
    if (!arr.is_array()) {
      fleet.Fail("fleet.rolling_restarts", "expected an array, got " + Describe(arr));
      return;
    }
    for (size_t i = 0; i < arr.size() && err->ok(); ++i) {
      RollingRestartSpec rr;
      rr.path = "fleet.rolling_restarts[" + std::to_string(i) + "]";
      Obj o(arr[i], rr.path, "fleet.rolling_restarts[]", err);
      o.String("pool", &rr.pool, true);
      o.Number("at_s", &rr.at_s, true);
      o.Int("batch", &rr.batch);
      o.Number("drain_timeout_s", &rr.drain_timeout_s);
      r.rolling_restarts.push_back(std::move(rr));
    }
  }
  if (top.Has("failures") && err->ok()) {
    const json& arr = top.At("failures");
    if (!arr.is_array()) {
      top.Fail("failures", "expected an array of failure models, got " + Describe(arr));
      return;
    }
    for (size_t i = 0; i < arr.size() && err->ok(); ++i) {
      FailureSpec f;
      f.path = "failures[" + std::to_string(i) + "]";
      Obj o(arr[i], f.path, "failures[]", err);
      o.String("model", &f.model, true);
      o.OptNumber("mtbf_hours", &f.mtbf_hours);
      o.OptNumber("mttr_s", &f.mttr_s);
      o.OptNumber("at_s", &f.at_s);
      o.OptInt("node", &f.node);
      o.OptInt("replica", &f.replica);
      o.OptInt("rack", &f.rack);
      o.String("zone", &f.zone);
      if (const int kind = o.Choice("kind", {"hang", "crash"}, false); kind >= 0) f.kind = kind == 0 ? "hang" : "crash";
      r.failures.push_back(std::move(f));
    }
  }
}

// Sets the value at `key` ("a.b[0].c") in `j`, creating object keys (the
// parser then checks them like any other) but not array elements.
Status ApplyOverride(const std::string& assignment, json* j) {
  const std::string where = "--set \"" + assignment + "\": ";
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::Invalid(where + "expected KEY=VALUE, e.g. fleet.pools[0].replicas=4");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json value;
  if (!ParseJson(text, &value).ok()) value = text;  // not JSON: a string, so gpu=H100-SXM needs no quotes
  json* node = j;
  std::string path;
  size_t i = 0;
  while (i < key.size()) {
    size_t end = key.find_first_of(".[", i);
    if (end == std::string::npos) end = key.size();
    const std::string name = key.substr(i, end - i);
    if (name.empty()) return Status::Invalid(where + "empty key in \"" + key + "\"");
    path += (path.empty() ? "" : ".") + name;
    if (!node->is_object()) return Status::Invalid(where + path + ": the parent is not an object");
    node = &(*node)[name];
    i = end;
    while (i < key.size() && key[i] == '[') {
      const size_t close = key.find(']', i);
      if (close == std::string::npos) return Status::Invalid(where + "unclosed [ in \"" + key + "\"");
      const std::string digits = key.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
        return Status::Invalid(where + path + ": expected an array index, got [" + digits + "]");
      const size_t index = std::stoul(digits);
      if (!node->is_array()) return Status::Invalid(where + path + ": is not an array");
      if (index >= node->size())
        return Status::Invalid(where + path + ": has " + std::to_string(node->size()) + " elements, no [" +
                               digits + "]");
      path += "[" + digits + "]";
      node = &(*node)[index];
      i = close + 1;
    }
    if (i < key.size()) {
      if (key[i] != '.') return Status::Invalid(where + "unexpected \"" + key.substr(i) + "\" in the key");
      ++i;
    }
  }
  *node = std::move(value);
  return Status::Ok();
}

}  // namespace

Status ParseScenario(std::string_view text, const std::string& file, const std::string& base_dir,
                     ScenarioSpec* out, const std::vector<std::string>& overrides) {
  json j;
  // Syntax errors, numbers too large for a double and nesting deeper than
  // kMaxJsonDepth: "s.json: invalid JSON at line 3, column 7: ...".
  FLEETSIM_RETURN_IF_ERROR(ParseJson(text, &j).WithPrefix(file + ": "));
  for (const std::string& o : overrides) FLEETSIM_RETURN_IF_ERROR(ApplyOverride(o, &j).WithPrefix(file + ": "));
  ScenarioSpec spec;
  spec.file = file;
  spec.sha256 = Sha256Hex(text);
  spec.overrides = overrides;
  Status err;
  Obj top(j, "", "", &err);
  top.String("name", &spec.name);
  top.String("description", &spec.description);
  top.Int("seed", &spec.seed);
  top.OptNumber("duration_s", &spec.duration_s);
  top.Number("warmup_s", &spec.warmup_s);
  top.String("model", &spec.model);
  if (ModelIsFile(spec.model)) spec.model = ModelPath(base_dir, spec.model);
  if (err.ok() && !top.Has("fleet")) top.Fail("fleet", "required");
  if (err.ok()) {
    Obj fleet(top.At("fleet"), "fleet", "fleet", &err);
    fleet.String("router", &spec.router);
    if (fleet.Has("router_options")) {
      // Free-form: each router's factory checks the names and ranges it knows.
      const json& ro = fleet.At("router_options");
      if (!ro.is_object()) {
        fleet.Fail("fleet.router_options", "expected an object, got " + Describe(ro));
      } else {
        for (auto it = ro.begin(); it != ro.end() && err.ok(); ++it) {
          if (it->is_boolean()) {
            spec.router_options[it.key()] = it->get<bool>() ? 1 : 0;
          } else if (it->is_number() && std::isfinite(it->get<double>())) {
            spec.router_options[it.key()] = it->get<double>();
          } else {
            fleet.Fail("fleet.router_options." + it.key(), "expected a number or a boolean, got " + Describe(*it));
          }
        }
      }
    }
    fleet.Number("metrics_scrape_ms", &spec.metrics_scrape_ms);
    ParsePools(fleet, base_dir, &spec, &err);
    if (err.ok()) ParseReliability(top, fleet, &spec, &err);
    if (err.ok()) ParseCapacity(fleet, &spec, &err);
    if (err.ok()) ParseFrontDoor(fleet, &spec, &err);
  }
  if (err.ok()) ParseTraffic(top, base_dir, &spec, &err);
  if (err.ok() && top.Has("slo")) {
    Obj slo(top.At("slo"), "slo", "slo", &err);
    slo.OptNumber("ttft_ms", &spec.ttft_slo_ms);
    slo.OptNumber("tpot_ms", &spec.tpot_slo_ms);
  }
  if (err.ok() && top.Has("perf")) {
    Obj perf(top.At("perf"), "perf", "perf", &err);
    RooflineOptions& r = spec.roofline;
    spec.gemm_efficiency_set = perf.Has("gemm_compute_efficiency") || perf.Has("gemm_memory_efficiency");
    spec.attention_efficiency_set = perf.Has("attention_compute_efficiency");
    for (const char* key : {"gemm_compute_efficiency", "gemm_memory_efficiency", "attention_compute_efficiency",
                            "attention_memory_efficiency", "elementwise_memory_efficiency", "launch_overhead_us",
                            "link_efficiency"})
      if (perf.Has(key)) spec.perf_keys.emplace_back(key);
    perf.Number("gemm_compute_efficiency", &r.gemm_compute_efficiency);
    perf.Number("gemm_memory_efficiency", &r.gemm_memory_efficiency);
    perf.Number("attention_compute_efficiency", &r.attention_compute_efficiency);
    perf.Number("attention_memory_efficiency", &r.attention_memory_efficiency);
    perf.Number("elementwise_memory_efficiency", &r.elementwise_memory_efficiency);
    perf.Number("launch_overhead_us", &r.launch_overhead_us);
    perf.Number("link_efficiency", &r.link_efficiency);
    perf.String("profile", &spec.perf_profile);
    if (!spec.perf_profile.empty()) spec.perf_profile = ResolvePath(base_dir, spec.perf_profile);
  }
  if (err.ok() && spec.duration_s && spec.warmup_s >= *spec.duration_s)
    err = Status::Invalid("warmup_s: must be less than duration_s");
  if (!err.ok()) return err.WithPrefix(file + ": ");
  *out = std::move(spec);
  return Status::Ok();
}

Status LoadScenarioFile(const std::string& path, ScenarioSpec* out, const std::vector<std::string>& overrides) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "scenario", &text));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseScenario(text, path, dir, out, overrides);
}

std::vector<NumericBound> ScenarioNumericBounds() { return {std::begin(kBounds), std::end(kBounds)}; }

std::vector<std::string> ScenarioKeyPaths() {
  std::vector<std::string> out;
  for (const KeyTable& t : kTables)
    for (const char* k : t.keys) out.push_back(std::string(t.path) + (*t.path ? "." : "") + k);
  return out;
}

}  // namespace fleetsim
