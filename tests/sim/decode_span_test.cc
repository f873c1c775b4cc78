// Decode spans (replica.h) change how many events a replica runs, never what
// it reports: each test runs one random workload twice, with spans and with
// ReplicaOptions::decode_spans off (one event per iteration, the reference),
// and compares every record, the token-gap totals and histogram (a span's
// steps taken at once, as the collector does), and what a sampler reads
// from the replica every millisecond.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/executor.h"
#include "sim/cluster/replica.h"
#include "sim/engine/simulation.h"
#include "sim/metrics/histogram.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::LinearPerf;
using testing_rig::Schedulers;

// 1 ms per iteration whatever it holds: iteration boundaries fall on the
// same whole milliseconds as the arrivals and the samples, so every tie
// between them is exercised.
class RoundPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape&) const override { return kMillisecond; }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "test"}}; }
};

// Records what the collector would keep; wants no per-iteration reports,
// so that the replica may run spans. With `batched`, takes a span's steps
// as the collector does (LogHistogram::AddSteps), else one gap at a time.
struct SpanRecorder final : RunObserver {
  std::vector<std::string> finished;  // every field, in report order
  std::map<SimTime, int64_t> gaps;    // gap -> count, summed
  LogHistogram hist;
  bool batched = false;
  int64_t step_runs = 0;  // OnDecodeSteps calls
  void OnArrival(const Request&, int) override {}
  void OnFinished(const RequestRecord& r) override {
    finished.push_back(std::to_string(r.id) + " " + std::to_string(r.arrival) + " " +
                       std::to_string(r.first_scheduled) + " " + std::to_string(r.first_token) + " " +
                       std::to_string(r.finish) + " " + std::to_string(r.generated_tokens) + " " +
                       std::to_string(r.preemptions) + " " + std::to_string(r.cached_tokens) + " " +
                       std::string(RequestStatusName(r.status)) + " " + std::string(r.reason));
  }
  void OnTokenGaps(SimTime, SimTime gap, int64_t count) override {
    gaps[gap] += count;
    hist.Add(gap, count);
  }
  void OnDecodeSteps(const DecodeStepRun& run) override {
    ++step_runs;
    if (!batched) return RunObserver::OnDecodeSteps(run);
    hist.AddSteps([&run](int64_t i) { return run.End(i); }, run.first, run.count, run.seqs, run.ascending);
    for (int64_t i = run.first; i < run.count; ++i) gaps[run.End(i) - run.End(i - 1)] += run.seqs;
  }
  void OnIteration(int, SimTime, SimTime, const BatchShape&) override {}
  void OnSample(const ReplicaSample&) override {}
  bool WantsIterations() const override { return false; }
};

struct Shape {
  std::string scheduler = "vllm";
  SchedulerParams params;
  int64_t kv_blocks = 2000;
  PreemptionMode mode = PreemptionMode::kRecompute;
  int64_t host_blocks = 0;
  std::optional<bool> prefix_caching = false;
  bool round_perf = false;
  double mean_gap_ms = 40;  // between arrivals
  int requests = 150;
  SimTime server_request = 0;  // API server delay
  SimTime stop_at = kTimeNever;  // the run is cut here (requests left unfinished)
  // The spans' step times, shared (else the replica's own). Its perf model
  // must time as the run's does.
  DecodeStepTimes* step_times = nullptr;
  bool batched_gaps = true;  // the recorder takes a span's steps at once
};

struct Outcome {
  std::vector<std::string> finished;
  std::map<SimTime, int64_t> gaps;
  std::vector<std::string> hist;  // buckets, then count, mean, min, max
  int64_t step_runs = 0;
  std::vector<std::string> samples;
  uint64_t events = 0;
};

Outcome RunShape(const Shape& shape, bool spans) {
  Simulation sim(1);
  LinearPerf linear;
  RoundPerf round;
  SpanRecorder rec;
  SchedulerLimits limits;
  limits.max_model_len = 4096;
  limits.max_num_batched_tokens = 4096;
  ReplicaOptions o;
  o.max_model_len = 4096;
  o.kv_blocks = shape.kv_blocks;
  o.block_size = 16;
  o.preemption = shape.mode;
  o.host_kv_blocks = shape.host_blocks;
  o.prefix_caching = shape.prefix_caching;
  o.server_request = shape.server_request;
  o.busy_from = 50 * kMillisecond;
  o.decode_spans = spans;
  o.decode_step_times = spans ? shape.step_times : nullptr;
  rec.batched = spans && shape.batched_gaps;
  std::unique_ptr<BatchScheduler> sched;
  const auto* entry = Schedulers().Find(shape.scheduler);
  EXPECT_NE(entry, nullptr);
  EXPECT_TRUE(entry->factory(limits, shape.params, &sched).ok());
  const PerfModel& perf = shape.round_perf ? static_cast<const PerfModel&>(round) : linear;
  Replica replica(sim, o, std::move(sched), perf, rec);

  // Arrivals: bursts and lulls (exponential gaps), lengths from a few tokens
  // to a thousand, prompts sharing one of four prefixes.
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> gap(1.0 / shape.mean_gap_ms);
  std::uniform_int_distribution<int> prompt(1, 600), output(1, 900), family(0, 3);
  SimTime t = 0;
  for (int i = 0; i < shape.requests; ++i) {
    t += shape.round_perf ? static_cast<SimTime>(gap(rng)) * kMillisecond
                          : static_cast<SimTime>(gap(rng) * static_cast<double>(kMillisecond));
    Request r;
    r.id = static_cast<uint64_t>(i);
    r.arrival = t;
    r.prompt_tokens = prompt(rng);
    r.output_tokens = output(rng);
    const int f = family(rng);
    r.prefix_blocks = {static_cast<uint64_t>(f), static_cast<uint64_t>(f * 10 + 1), static_cast<uint64_t>(f * 10 + 2)};
    r.prefix_block_tokens = 32;
    sim.At(t, [&replica, r]() mutable { replica.Submit(std::move(r)); });
  }
  // A sampler every millisecond, as run.cc's reads the replica. (Not
  // iterations(): at an iteration's end, whether an event of that instant
  // saw it counted depended on event order on the per-iteration path.)
  Outcome out;
  std::function<void()> sample = [&] {
    const SimTime now = sim.now();
    out.samples.push_back(std::to_string(now) + " w" + std::to_string(replica.waiting()) + " r" +
                          std::to_string(replica.state().num_running()) + " kv" +
                          std::to_string(replica.state().kv().used_blocks()) + " busy" +
                          std::to_string(replica.TakeBusyTime(now)) + " o" + std::to_string(replica.outstanding()));
    if (sim.pending() > 0) sim.At(now + kMillisecond, sample);
  };
  sim.At(kMillisecond, sample);
  sim.Run(shape.stop_at);
  const SimTime end = std::min(shape.stop_at, sim.now());
  replica.ReportUnfinished(end, "run_ended");
  out.samples.push_back("end busy" + std::to_string(replica.busy_time()) + " it" +
                        std::to_string(replica.iterations()) + " pre" +
                        std::to_string(replica.state().preemptions()) + " hit" +
                        std::to_string(replica.state().prefix_hit_tokens()));
  EXPECT_TRUE(replica.state().CheckInvariants());
  out.finished = rec.finished;
  out.gaps = rec.gaps;
  rec.hist.ForEachBucket([&](int64_t lo, int64_t hi, int64_t n) {
    out.hist.push_back(std::to_string(lo) + "-" + std::to_string(hi) + ":" + std::to_string(n));
  });
  out.hist.push_back(std::to_string(rec.hist.count()) + " " + std::to_string(rec.hist.mean()) + " " +
                     std::to_string(rec.hist.min()) + " " + std::to_string(rec.hist.max()));
  out.step_runs = rec.step_runs;
  out.events = sim.events_processed();
  return out;
}

void ExpectSameRun(const Shape& shape) {
  const Outcome ref = RunShape(shape, false);
  const Outcome fast = RunShape(shape, true);
  ASSERT_EQ(ref.finished.size(), static_cast<size_t>(shape.requests));
  EXPECT_EQ(ref.finished, fast.finished);
  EXPECT_EQ(ref.gaps, fast.gaps);
  EXPECT_EQ(ref.hist, fast.hist);
  EXPECT_EQ(ref.step_runs, 0);
  ASSERT_EQ(ref.samples.size(), fast.samples.size());
  for (size_t i = 0; i < ref.samples.size(); ++i) ASSERT_EQ(ref.samples[i], fast.samples[i]) << "sample " << i;
  // The point of it: far fewer events (the samplers' are the same).
  EXPECT_LT(fast.events, ref.events);
}

class DecodeSpanTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeSpanTest, SameAsPerIterationAtLowLoad) {
  Shape s;
  s.scheduler = GetParam();
  s.mean_gap_ms = 400;  // mostly one or two decoders, long spans cut by arrivals
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameAsPerIterationUnderLoad) {
  Shape s;
  s.scheduler = GetParam();
  s.mean_gap_ms = 20;
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameWhenBoundariesTieWithArrivalsAndSamples) {
  Shape s;
  s.scheduler = GetParam();
  s.round_perf = true;
  s.mean_gap_ms = 150;
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameWhenKvRunsShortAndPreempts) {
  Shape s;
  s.scheduler = GetParam();
  s.kv_blocks = GetParam() == "orca" ? 600 : 120;  // Orca reserves max_model_len (256 blocks) per request
  s.mean_gap_ms = 60;
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameWithSwapPreemption) {
  if (GetParam() == "orca") GTEST_SKIP() << "Orca reserves whole requests and never runs short";
  Shape s;
  s.scheduler = GetParam();
  s.kv_blocks = 120;
  s.mode = PreemptionMode::kSwap;
  s.host_blocks = 200;
  s.mean_gap_ms = 60;
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameWithPrefixCachingEvictingUnderDecodes) {
  Shape s;
  s.scheduler = GetParam();
  s.prefix_caching = true;
  s.kv_blocks = GetParam() == "orca" ? 600 : 150;
  s.mean_gap_ms = 100;
  ExpectSameRun(s);
}

TEST_P(DecodeSpanTest, SameWithApiServerDelayAndRunCutShort) {
  Shape s;
  s.scheduler = GetParam();
  s.mean_gap_ms = 300;
  s.server_request = 3 * kMillisecond + 7;
  s.stop_at = 20 * kSecond + 123;
  const Outcome ref = RunShape(s, false);
  const Outcome fast = RunShape(s, true);
  EXPECT_EQ(ref.finished, fast.finished);
  EXPECT_EQ(ref.gaps, fast.gaps);
  EXPECT_EQ(ref.hist, fast.hist);
  EXPECT_EQ(ref.samples, fast.samples);
}

TEST_P(DecodeSpanTest, SameWithStepTimesSharedAcrossRunsAndGapsOneAtATime) {
  // One table for two runs (as a pool's replicas share one), the second
  // finding it filled; the recorder takes the spans' gaps one at a time
  // (RunObserver's default), then batched.
  LinearPerf linear;
  DecodeStepTimes times(linear);
  for (bool batched : {false, true}) {
    Shape s;
    s.scheduler = GetParam();
    s.mean_gap_ms = batched ? 300 : 500;
    s.step_times = &times;
    s.batched_gaps = batched;
    ExpectSameRun(s);
    EXPECT_GT(RunShape(s, true).step_runs, 0);
  }
}

// Step times that fall and rise with the KV read (a drop every 7 tokens).
class WavyPerf final : public PerfModel {
 public:
  int64_t IterationNs(const BatchShape& s) const override {
    return kMillisecond + s.decode_seqs * 1000 + (s.decode_kv_tokens % 7) * 300 + s.decode_kv_tokens;
  }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return {{"all", "test"}}; }
};

int64_t DecodeNs(const PerfModel& perf, int64_t seqs, int64_t kv) {
  BatchShape shape;
  shape.decode_seqs = static_cast<int32_t>(seqs);
  shape.decode_tokens = seqs;
  shape.decode_kv_tokens = kv;
  shape.sampled_seqs = static_cast<int32_t>(seqs);
  return perf.IterationNs(shape);
}

// The table against the perf model it remembers: step times, a stretch's
// end, which steps end by a time, and whether their gaps may fall; for one
// to many sequences (past what it remembers).
TEST(DecodeStepTimes, MatchesThePerfModelStepByStep) {
  LinearPerf linear;
  WavyPerf wavy;
  for (const PerfModel* perf : {static_cast<const PerfModel*>(&linear), static_cast<const PerfModel*>(&wavy)}) {
    DecodeStepTimes times(*perf);
    for (int64_t seqs : {1, 2, 3, 8, 9, 40}) {
      for (int64_t kv : {seqs, seqs + 5, 1000 * seqs + 3}) {
        const int64_t steps = 50;
        const SimTime start = 12345;
        std::vector<SimTime> ends;
        SimTime t = start;
        bool falls = false;
        for (int64_t i = 0; i < steps; ++i) {
          const int64_t ns = DecodeNs(*perf, seqs, kv + i * seqs);
          EXPECT_EQ(times.StepNs(seqs, kv + i * seqs), ns);
          if (i > 0 && ns < ends[i - 1] - (i > 1 ? ends[i - 2] : start)) falls = true;
          t += ns;
          ends.push_back(t);
        }
        EXPECT_EQ(times.EndOf(seqs, kv, steps, start), ends.back());
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{17}, steps}) {
          const SimTime until = k == 0 ? start : ends[k - 1] + (k == steps ? 5 : 0);
          const DecodeStepTimes::Steps& run = times.EndedBy(seqs, kv, steps, start, until);
          ASSERT_EQ(run.count, k) << seqs << " " << kv;
          EXPECT_EQ(run.End(-1), start);
          for (int64_t i = 0; i < k; ++i) EXPECT_EQ(run.End(i), ends[i]);
          if (run.ascending) {
            EXPECT_FALSE(falls && k == steps);
          }
        }
        if (perf == &linear && times.Remembered(seqs, kv + (steps - 1) * seqs)) {
          EXPECT_TRUE(times.EndedBy(seqs, kv, steps, start, kTimeNever).ascending);
        }
        if (perf == &wavy) {
          EXPECT_FALSE(times.EndedBy(seqs, kv, steps, start, kTimeNever).ascending);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedulers, DecodeSpanTest,
                         ::testing::Values("vllm", "vllm_v0", "sarathi", "sglang", "orca"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fleetsim
