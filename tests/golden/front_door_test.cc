// The front door end to end (docs/routing.md): rate limits per tenant,
// priority classes and queue timeouts, graceful degradation, several models,
// regions with round trips and failover, canary rollouts. Each case is a
// small scenario run through ScenarioRun; the figures checked are worked out
// from the rule (a token bucket's count, a round trip's floor under TTFT) or
// compared between variants of one scenario.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/cluster/gateway.h"
#include "tests/golden/golden_util.h"

namespace fleetsim {
namespace {

using nlohmann::json;

// One pool of Llama-3.1-8B on H100 under a constant-rate generator.
json Base(double rate, int64_t requests, int prompt = 512, int output = 64) {
  return json::parse(R"({
    "name": "front-door",
    "seed": 5,
    "model": "Llama-3.1-8B",
    "fleet": {
      "router": "least_outstanding",
      "pools": [ { "name": "p", "gpu": "H100-SXM", "replicas": 1, "tp": 1 } ]
    },
    "traffic": {
      "generator": { "arrival": "constant", "rate_per_s": 1, "prompt_tokens": 1, "output_tokens": 1 },
      "max_requests": 1
    },
    "slo": { "ttft_ms": 2000, "tpot_ms": 100 }
  })")
      .patch(json::array({{{"op", "replace"}, {"path", "/traffic/generator/rate_per_s"}, {"value", rate}},
                          {{"op", "replace"}, {"path", "/traffic/max_requests"}, {"value", requests}},
                          {{"op", "replace"}, {"path", "/traffic/generator/prompt_tokens"}, {"value", prompt}},
                          {{"op", "replace"}, {"path", "/traffic/generator/output_tokens"}, {"value", output}}}));
}

Outcome RunJson(const json& j, const std::string& tag) {
  ScenarioSpec spec;
  Status s = ParseScenario(j.dump(), "front-door.json", FLEETSIM_SOURCE_DIR, &spec);
  EXPECT_TRUE(s.ok()) << s.message();
  Outcome o = RunSpec(spec, spec.seed, tag);
  ExpectConservation(o.summary);
  return o;
}

json SummaryOf(const Outcome& o) { return json::parse(o.summary_json); }

int64_t Reason(const json& sum, const std::string& reason) {
  const json& r = sum["requests"]["reasons"];
  return r.contains(reason) ? r[reason].get<int64_t>() : 0;
}

TEST(FrontDoor, TokenBucketAdmitsItsBurstThenItsRate) {
  // 20 req/s for 10 s from one tenant limited to 4 req/s with a burst of 8:
  // the bucket starts full, so 8 pass at once, then one every 250 ms.
  json j = Base(20, 200, 64, 8);
  j["fleet"]["admission"] = json::parse(R"({"tenants": [{"name": "acme", "rate_per_s": 4, "burst": 8}]})");
  j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "tenant": "acme"}])");
  const json sum = SummaryOf(RunJson(j, "bucket"));
  const int64_t limited = Reason(sum, "rate_limited");
  // Arrivals at k/20 s, k < 200: tokens at arrival k are 8 + 4 k/20 - admitted so far.
  int64_t admitted = 0;
  for (int k = 0; k < 200; ++k)
    if (8.0 + 4.0 * k / 20.0 - static_cast<double>(admitted) >= 1.0 - 1e-9) ++admitted;
  EXPECT_NEAR(200 - limited, admitted, 1);
  EXPECT_EQ(sum["tenants"]["acme"]["requests"]["arrived"], 200);
  EXPECT_EQ(sum["tenants"]["acme"]["requests"]["rejected"], limited);
}

TEST(FrontDoor, StrictPriorityKeepsTheImportantClassFastUnderOverload) {
  // Half of the traffic in each class, 1.4 times what one replica serves
  // (about 11.4 requests/s of these lengths).
  json j = Base(16, 800, 2048, 256);
  j["fleet"]["admission"] = json::parse(R"({"queue_order": "strict",
      "classes": [{"name": "interactive", "priority": 0}, {"name": "batch", "priority": 1}]})");
  j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "priority": 0}, {"weight": 1, "priority": 1}])");
  const json sum = SummaryOf(RunJson(j, "strict"));
  const json& hi = sum["classes"]["interactive"];
  const json& lo = sum["classes"]["batch"];
  EXPECT_EQ(hi["requests"]["arrived"].get<int64_t>() + lo["requests"]["arrived"].get<int64_t>(), 800);
  EXPECT_LT(hi["latency_ms"]["ttft"]["p99"].get<double>(), lo["latency_ms"]["ttft"]["p50"].get<double>());
}

TEST(FrontDoor, QueueTimeoutRejectsOnlyItsClass) {
  json j = Base(16, 600, 2048, 256);
  j["fleet"]["admission"] = json::parse(R"({"classes": [{"name": "interactive", "priority": 0, "queue_timeout_s": 2},
                                                         {"name": "batch", "priority": 1}]})");
  j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "priority": 0}, {"weight": 1, "priority": 1}])");
  const json sum = SummaryOf(RunJson(j, "timeout"));
  const int64_t timeouts = Reason(sum, "queue_timeout");
  EXPECT_GT(timeouts, 0);
  EXPECT_EQ(sum["classes"]["interactive"]["requests"]["rejected"], timeouts);
  EXPECT_EQ(sum["classes"]["batch"]["requests"]["rejected"], 0);
}

TEST(FrontDoor, CapOutputDegradesTheLowestClassUnderOverloadOnly) {
  json j = Base(16, 600, 2048, 400);
  j["fleet"]["admission"] = json::parse(R"({"classes": [{"name": "gold", "priority": 0}, {"name": "free", "priority": 1}]})");
  j["fleet"]["degradation"] =
      json::parse(R"([{"policy": "cap_output", "max_output_tokens": 32, "trigger": {"queue_per_replica": 4}}])");
  j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "priority": 0}, {"weight": 1, "priority": 1}])");
  const json over = SummaryOf(RunJson(j, "cap_over"));
  EXPECT_GT(over["degraded"]["requests"].get<int64_t>(), 0);
  EXPECT_EQ(over["degraded"]["requests"], over["degraded"]["by_reason"]["output_capped"]);
  // Light load: the trigger never fires.
  j["traffic"]["generator"]["rate_per_s"] = 0.5;
  j["traffic"]["max_requests"] = 20;
  const json light = SummaryOf(RunJson(j, "cap_light"));
  EXPECT_EQ(light["degraded"]["requests"], 0);
}

TEST(FrontDoor, SaturationDetectorShedsTheSheddableClassOnlyWhenEveryReplicaIsSaturated) {
  // llm-d: a replica is saturated at 5 waiting or 80% KV; the sheddable
  // class is rejected while every replica is.
  json j = Base(16, 600, 2048, 256);
  j["fleet"]["admission"] = json::parse(R"({"classes": [{"name": "critical", "priority": 0}, {"name": "sheddable", "priority": 1}]})");
  j["fleet"]["degradation"] = json::parse(R"([{"policy": "shed", "trigger": {"saturated": true}}])");
  j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "priority": 0}, {"weight": 1, "priority": 1}])");
  const json over = SummaryOf(RunJson(j, "saturated_over"));
  const int64_t shed = Reason(over, "shed");
  EXPECT_GT(shed, 0);
  EXPECT_EQ(over["classes"]["sheddable"]["requests"]["rejected"], shed);
  EXPECT_EQ(over["classes"]["critical"]["requests"]["rejected"], 0);
  j["traffic"]["generator"]["rate_per_s"] = 0.5;
  j["traffic"]["max_requests"] = 20;
  EXPECT_EQ(Reason(SummaryOf(RunJson(j, "saturated_light")), "shed"), 0);
}

TEST(FrontDoor, FallbackModelServesTheOverflowOnItsOwnPool) {
  json j = Base(12, 400, 2048, 256);
  j["model"] = "Llama-3.1-70B";
  j["fleet"]["pools"] = json::parse(R"([
      {"name": "big", "gpu": "H100-SXM", "replicas": 1, "tp": 4},
      {"name": "small", "model": "Llama-3.1-8B", "gpu": "H100-SXM", "replicas": 1, "tp": 1}])");
  j["fleet"]["degradation"] =
      json::parse(R"([{"policy": "fallback_model", "pool": "small", "trigger": {"queue_per_replica": 8}}])");
  const json sum = SummaryOf(RunJson(j, "fallback"));
  const int64_t fell = sum["degraded"]["by_reason"]["fallback_model"].get<int64_t>();
  EXPECT_GT(fell, 0);
  EXPECT_EQ(sum["models"]["Llama-3.1-8B"]["requests"]["arrived"], fell);
  EXPECT_EQ(sum["models"]["Llama-3.1-70B"]["requests"]["arrived"].get<int64_t>() + fell, 400);
  EXPECT_GT(sum["pools"]["small"]["busy_gpu_hours"].get<double>(), 0);
}

// Two regions, a client near one of them.
json TwoRegions(double rate, int64_t requests) {
  json j = Base(rate, requests, 256, 16);
  j["fleet"]["pools"] = json::parse(R"([
      {"name": "eu", "gpu": "H100-SXM", "replicas": 1, "tp": 1, "region": "eu"},
      {"name": "us", "gpu": "H100-SXM", "replicas": 1, "tp": 1, "region": "us"}])");
  j["fleet"]["regions"] = json::parse(R"([{"name": "eu"}, {"name": "us"}])");
  j["fleet"]["clients"] = json::parse(R"([{"name": "paris", "rtt_ms": {"eu": 20, "us": 90}}])");
  return j;
}

TEST(FrontDoor, NearestRegionPaysItsRoundTripAndFailsOverOnAnOutage) {
  json j = TwoRegions(2, 120);
  const json calm = SummaryOf(RunJson(j, "regions"));
  EXPECT_EQ(calm["regions"]["eu"]["requests"]["arrived"], 120);
  EXPECT_EQ(calm["regions"]["us"]["requests"]["arrived"], 0);
  EXPECT_GE(calm["latency_ms"]["ttft"]["max"].get<double>(), 20.0);
  // The eu region's zone goes down at 20 s, crashed (noticed at once): the
  // balancer sends what follows to us, 90 ms away.
  j["failures"] = json::parse(R"([{"model": "drill", "zone": "eu", "at_s": 20, "kind": "crash"}])");
  j["fleet"]["recovery"] = "none";
  const json out = SummaryOf(RunJson(j, "regions_outage"));
  const int64_t us = out["regions"]["us"]["requests"]["arrived"].get<int64_t>();
  EXPECT_GE(us, 75);  // arrivals from 20 s on: 2 per second up to 60 s
  EXPECT_EQ(out["regions"]["eu"]["requests"]["arrived"].get<int64_t>() + us, 120);
  EXPECT_GE(out["regions"]["us"]["latency_ms"]["ttft"]["p50"].get<double>(), 90.0);
  // What eu let go of when it went down (retries, requests on their way)
  // fails over to us rather than being turned away.
  EXPECT_EQ(Reason(out, "no_ready_replica"), 0) << out["requests"].dump();
}

TEST(FrontDoor, CanaryOfTheSameVersionIsPromotedAndASlowerOneRolledBack) {
  auto canary = [](const char* gpu) {
    json j = Base(8, 4000, 512, 64);
    j["fleet"]["pools"] = json::parse(R"([
        {"name": "stable", "gpu": "H100-SXM", "replicas": 4, "tp": 1},
        {"name": "next", "gpu": "H100-SXM", "replicas": 4, "tp": 1}])");
    j["fleet"]["pools"][1]["gpu"] = gpu;
    // Canary replicas that start in seconds, not a cold start's minutes.
    j["fleet"]["cold_start"] =
        json::parse(R"({"provision_s": 0, "container_start_s": 5, "weight_load_gb_per_s": 100, "warmup_s": 0})");
    j["fleet"]["canary"] = json::parse(R"({"pool": "next", "baseline": "stable", "start_s": 0,
        "steps": [{"share": 0.25, "duration_s": 120}, {"share": 0.5, "duration_s": 120}],
        "rollback": {"ttft_p99_margin": 0.5, "tpot_p99_margin": 0.5, "min_requests": 20}})");
    return j;
  };
  const json same = SummaryOf(RunJson(canary("H100-SXM"), "canary_same"));
  EXPECT_EQ(same["canary"]["outcome"], "promoted") << same["canary"].dump();
  const json slow = SummaryOf(RunJson(canary("A100-40G"), "canary_slow"));
  EXPECT_EQ(slow["canary"]["outcome"], "rolled_back") << slow["canary"].dump();
  const json& last = slow["canary"]["steps"].back();
  EXPECT_EQ(last["decision"], "rollback");
  EXPECT_TRUE(last["reason"] == "ttft_p99" || last["reason"] == "tpot_p99") << last.dump();
}

// The rule itself, at its margins: a figure exactly at its margin passes.
TEST(CanaryRule, RollsBackExactlyWhenAMarginIsCrossed) {
  CanaryStepReport::Side base, c;
  base.ttft_p99_ms = 100;
  base.tpot_p99_ms = 10;
  base.error_rate = 0.25;
  c = base;
  c.ttft_p99_ms = 125;  // 100 x (1 + 0.25)
  c.tpot_p99_ms = 15;   // 10 x (1 + 0.5)
  c.error_rate = 0.5;   // 0.25 + 0.25
  EXPECT_EQ(CanaryWorse(c, base, 0.25, 0.5, 0.25), nullptr);
  c.ttft_p99_ms = 125.0001;
  EXPECT_STREQ(CanaryWorse(c, base, 0.25, 0.5, 0.25), "ttft_p99");
  c.ttft_p99_ms = 125;
  c.tpot_p99_ms = 15.0001;
  EXPECT_STREQ(CanaryWorse(c, base, 0.25, 0.5, 0.25), "tpot_p99");
  c.tpot_p99_ms = 15;
  c.error_rate = 0.5001;
  EXPECT_STREQ(CanaryWorse(c, base, 0.25, 0.5, 0.25), "error_rate");
}

}  // namespace
}  // namespace fleetsim
