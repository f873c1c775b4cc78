#include "sim/fit/engine_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>

#include <Eigen/Dense>

namespace fleetsim {
namespace {

// How a fitted term moves. A fraction (bounded) lives on a logistic map of
// [lo, hi]; any other term in u = log(term + floor), so that steps are
// relative, a term never goes negative and cannot be pinned at zero by one
// long step. The floor is also the smallest change the finite differences
// can see (50 us per step, 1 us per sequence, ...).
struct FitTermInfo {
  const char* name;
  double lo, hi;
  double floor;
  bool bounded;
};

// The engine's own terms (the first kFirstKernelFitTerm of kFitTerms) and
// their physical ranges: a step's CPU time under 100 ms, a request's
// parsing under a second, a launch under 200 us.
constexpr FitTermInfo kEngineFitTerms[kFirstKernelFitTerm] = {
    {"step_cpu_us", 0, 1e5, 50, false},
    {"seq_cpu_us", 0, 1000, 1, false},
    {"prefill_token_cpu_us", 0, 50, 0.05, false},
    {"tp_step_cpu_us", 0, 5e4, 50, false},
    {"server_request_us", 0, 1e6, 100, false},
    {"server_prompt_token_us", 0, 100, 0.05, false},
    {"eager_launch_us", 0, 200, 0.5, false},
    {"custom_all_reduce_latency_us", 0.1, 500, 0.5, false},
};
// The kernel terms' floors (log terms) or 0 (bounded fractions and
// exponents), kKernelTerms order.
constexpr double kKernelFloors[kNumKernelTerms] = {
    0, 0, 0, 0.5, 1e4,   // gemm: compute, memory, overlap, kernel_us, half outputs
    0, 1e5, 0,           // prefill attention: efficiency, half work, exponent
    0, 100, 0,           // decode attention: efficiency, half work, exponent
    0,                   // elementwise
    0.2,                 // launch gap
    0.5, 0,              // collective latency, bus efficiency
};

FitTermInfo Info(int i) {
  if (i < kFirstKernelFitTerm) return kEngineFitTerms[i];
  const KernelTermInfo& k = kKernelTerms[i - kFirstKernelFitTerm];
  const double floor = kKernelFloors[i - kFirstKernelFitTerm];
  return {k.name, k.lo, k.hi, floor, floor == 0};
}

// A bounded term this close to an end (of its range's width) is held off
// it, so the logistic map stays finite, and is reported at the bound.
constexpr double kBoundMargin = 1e-3;

double ToU(int i, double x) {
  const FitTermInfo f = Info(i);
  if (f.bounded) {
    const double w = f.hi - f.lo;
    const double p = std::clamp((x - f.lo) / w, kBoundMargin, 1 - kBoundMargin);
    return std::log(p / (1 - p));
  }
  return std::log(std::max(x, 0.0) + f.floor);
}

double FromU(int i, double u) {
  const FitTermInfo f = Info(i);
  if (f.bounded) {
    const double p = std::clamp(1 / (1 + std::exp(-u)), kBoundMargin, 1 - kBoundMargin);
    return f.lo + (f.hi - f.lo) * p;
  }
  double x = std::exp(u) - f.floor;
  if (x < 1e-2 * f.floor) x = 0;  // below what the fit can tell from 0
  return std::clamp(x, f.lo, f.hi);
}

// -1 / +1 when fitted term i ended at the low / high end of its range.
int AtBound(int i, double x) {
  const FitTermInfo f = Info(i);
  const double w = f.hi - f.lo;
  const double tol = f.bounded ? 2 * kBoundMargin * w : 0;
  if (x <= f.lo + tol && !(f.lo == 0 && !f.bounded)) return -1;  // 0 is an ordinary value of a cost
  if (x >= f.hi - tol) return 1;
  return 0;
}

// The faint pull towards the start (per term, in units of its scale) and
// the reference spread and per-figure scatter of the identifiability check.
constexpr double kPriorWeight = 0.01;
constexpr double kFigureScatter = 0.05;
constexpr double kDeterminedSpread = 0.3;

// The terms the scope lets the fit move.
bool InScope(int i, FitScope scope) {
  switch (scope) {
    case FitScope::kAll: return true;
    case FitScope::kCpuServer: return !IsGpuFitTerm(i);
    case FitScope::kGpu: return IsGpuFitTerm(i);
  }
  return true;
}

void SetTerm(EngineSpec* e, int i, double v) {
  if (i < kFirstKernelFitTerm) {
    *e->Term(kFitTerms[static_cast<size_t>(i)]) = v;
  } else {
    e->kernel[static_cast<size_t>(i - kFirstKernelFitTerm)] = v;
  }
}

struct Rig {
  const ScenarioSpec* base;
  const Catalog* catalog;
  const Policies* policies;
  uint64_t seed;
  // Per run: its scenario (the run's own, or the base), its pool's resolved
  // engine terms, the value each fitted term has for its pool, and its
  // requests.
  std::vector<const ScenarioSpec*> scenarios;
  std::vector<EngineSpec> engines;
  std::vector<std::array<double, kNumFitTerms>> start;
  std::vector<std::string> gpus;
  std::vector<std::shared_ptr<const std::vector<Request>>> requests;
  // The fitted terms applied to the runs (the others keep their own).
  bool fitted[kNumFitTerms] = {};
  int evaluations = 0;
};

// Per request (by id, the order of the run's requests): simulated TTFT and
// end-to-end, ms; NaN for a request that did not complete.
struct PerRequest {
  std::vector<double> ttft_ms, e2e_ms;
};

// A step run's figures: its batch's prefill step and median decode step,
// as the pool's performance model prices them.
void PriceSteps(const PerfModel& perf, const StepBatch& b, FitFigures* out) {
  BatchShape prefill;
  prefill.prefill_seqs = static_cast<int32_t>(b.batch);
  prefill.prefill_tokens = b.batch * b.prompt_tokens;
  prefill.prefill_attn_pairs = b.batch * (b.prompt_tokens * (b.prompt_tokens + 1) / 2);
  prefill.prefill_kv_tokens = b.batch * b.prompt_tokens;
  prefill.sampled_seqs = static_cast<int32_t>(b.batch);
  out->values[kPrefillStepMetric] = static_cast<double>(perf.IterationNs(prefill)) * 1e-6;
  std::vector<double> steps;
  for (int64_t i = 1; i <= b.decode_steps; ++i) {
    BatchShape d;
    d.decode_seqs = static_cast<int32_t>(b.batch);
    d.decode_tokens = b.batch;
    d.decode_kv_tokens = b.batch * (b.prompt_tokens + i);
    d.sampled_seqs = static_cast<int32_t>(b.batch);
    steps.push_back(static_cast<double>(perf.IterationNs(d)) * 1e-6);
  }
  // The median step (steps grow with the context, so it is the middle one).
  const size_t n = steps.size();
  out->values[kDecodeStepMetric] = n % 2 ? steps[n / 2] : 0.5 * (steps[n / 2 - 1] + steps[n / 2]);
}

Status Simulate(Rig& rig, const ReplayRun& run, size_t index, const double* terms, FitFigures* out,
                PerRequest* per_request) {
  ScenarioSpec spec = *rig.scenarios[index];
  EngineSpec e = rig.engines[index];
  if (terms)
    for (int i = 0; i < kNumFitTerms; ++i)
      if (rig.fitted[i]) SetTerm(&e, i, terms[i]);
  if (!run.server) e.server_request_us = e.server_prompt_token_us = e.server_output_token_us = 0;
  spec.pools[0].engine_terms = e;
  per_request->ttft_ms.assign(run.requests.size(), NAN);
  per_request->e2e_ms.assign(run.requests.size(), NAN);
  if (run.step) {
    // The scenario's own (placeholder) traffic: only the pool is used.
    std::unique_ptr<ScenarioRun> sim;
    FLEETSIM_RETURN_IF_ERROR(
        ScenarioRun::Build(spec, *rig.catalog, *rig.policies, &sim).WithPrefix(run.name + ": steps: "));
    ++rig.evaluations;
    *out = FitFigures();
    PriceSteps(sim->perf(0), *run.step, out);
    return Status::Ok();
  }
  spec.traffic = TrafficSpec();
  spec.traffic.kind = TrafficSpec::Kind::kList;
  spec.traffic.requests = rig.requests[index];
  if (run.concurrency) spec.traffic.closed_loop = ClosedLoopSpec{*run.concurrency, 0, false};
  spec.warmup_s = 0;
  spec.duration_s.reset();
  std::unique_ptr<ScenarioRun> sim;
  FLEETSIM_RETURN_IF_ERROR(ScenarioRun::Build(spec, *rig.catalog, *rig.policies, &sim));
  RunOptions ro;
  ro.seed = rig.seed;
  ro.on_request = [per_request](const RequestRecord& rec) {
    if (rec.status != RequestStatus::kCompleted || rec.id >= per_request->ttft_ms.size()) return;
    per_request->ttft_ms[rec.id] = TimeToSeconds(rec.first_token - rec.arrival) * 1e3;
    per_request->e2e_ms[rec.id] = TimeToSeconds(rec.finish - rec.arrival) * 1e3;
  };
  RunReport report;
  FLEETSIM_RETURN_IF_ERROR(sim->Run(MetricsOptions(), ro, nullptr, &report).WithPrefix(run.name + ": replay: "));
  ++rig.evaluations;
  const Summary& s = report.summary;
  const std::optional<double> v[kNumFitMetrics] = {s.ttft.p50,  s.ttft.p90,  s.tpot.p50, s.tpot.p90, s.itl.p50,
                                                   s.itl.p90,   s.output_tokens_per_s,   s.ttft.mean, s.tpot.mean,
                                                   s.itl.mean,  s.e2e.p50,   s.e2e.mean, std::nullopt, std::nullopt};
  for (int m = 0; m < kNumFitMetrics; ++m) out->values[m] = v[m];
  return Status::Ok();
}

// The observed figures of a run (a per-request block counts as one).
int FiguresOf(const ReplayRun& run, int timed[2]) {
  const std::vector<double>* observed_blocks[2] = {&run.ttft_ms, &run.e2e_ms};
  timed[0] = timed[1] = 0;
  for (int b = 0; b < 2; ++b)
    for (size_t i = 0; i < observed_blocks[b]->size() && i < run.requests.size(); ++i)
      timed[b] += (*observed_blocks[b])[i] > 0;
  int n = 0;
  for (int m = 0; m < kNumFitMetrics; ++m) n += run.observed.values[m].has_value();
  return n + (timed[0] > 0) + (timed[1] > 0);
}

// Residuals of `runs[subset]` at `terms`: sqrt(weight) x log(sim / obs),
// every observed figure in metric order; a figure the replay cannot give
// (no TPOT when every request has one token) counts as a miss by a factor
// of e, so the residual vector keeps its length.
Status Residuals(Rig& rig, const std::vector<ReplayRun>& runs, const std::vector<size_t>& subset,
                 const double* terms, Eigen::VectorXd* out, std::vector<FitFigures>* figures = nullptr) {
  std::vector<double> r;
  if (figures) figures->clear();
  for (size_t idx : subset) {
    const ReplayRun& run = runs[idx];
    FitFigures sim;
    PerRequest per;
    FLEETSIM_RETURN_IF_ERROR(Simulate(rig, run, idx, terms, &sim, &per));
    if (figures) figures->push_back(sim);
    // Per-request blocks: requests timed by the tool, in the run's order.
    const std::vector<double>* observed_blocks[2] = {&run.ttft_ms, &run.e2e_ms};
    const std::vector<double>* simulated_blocks[2] = {&per.ttft_ms, &per.e2e_ms};
    int timed[2];
    const int n = FiguresOf(run, timed);
    const double w = std::sqrt(1.0 / std::max(n, 1));
    for (int m = 0; m < kNumFitMetrics; ++m) {
      if (!run.observed.values[m]) continue;
      const double obs = *run.observed.values[m];
      const std::optional<double>& s = sim.values[m];
      r.push_back(w * (s && *s > 0 && obs > 0 ? std::log(*s / obs) : 1.0));
    }
    for (int b = 0; b < 2; ++b) {
      if (timed[b] == 0) continue;
      // Each block counts as one figure: its requests share the weight.
      const double wb = w / std::sqrt(static_cast<double>(timed[b]));
      for (size_t i = 0; i < observed_blocks[b]->size() && i < run.requests.size(); ++i) {
        const double obs = (*observed_blocks[b])[i];
        if (!(obs > 0)) continue;
        const double s = (*simulated_blocks[b])[i];
        r.push_back(wb * (s > 0 ? std::log(s / obs) : 1.0));
      }
    }
  }
  *out = Eigen::Map<const Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size()));
  return Status::Ok();
}

// The terms the fit moves (informed and in scope), in order.
std::vector<int> Moving(const bool* informed) {
  std::vector<int> out;
  for (int i = 0; i < kNumFitTerms; ++i)
    if (informed[i]) out.push_back(i);
  return out;
}

// Levenberg-Marquardt from `terms` (updated in place) on `subset`, over the
// `moving` terms in their transformed scale u (Info); a step moves each u
// by at most 1 (a factor of e for a log term), since batching and queueing
// make the figures far from linear over larger moves. `u0`: the start the
// faint pull holds each term to.
Status Minimise(Rig& rig, const std::vector<ReplayRun>& runs, const std::vector<size_t>& subset,
                const std::vector<int>& moving, const double* u0, int max_iterations, double* terms,
                int* iterations, double* final_loss) {
  const int k = static_cast<int>(moving.size());
  auto to_terms = [&](const Eigen::VectorXd& u, double* t) {
    for (int j = 0; j < k; ++j) t[moving[j]] = FromU(moving[j], u(j));
  };
  // Data residuals and the pull, one vector.
  auto residuals = [&](const Eigen::VectorXd& u, Eigen::VectorXd* out) -> Status {
    double t[kNumFitTerms];
    std::copy(terms, terms + kNumFitTerms, t);
    to_terms(u, t);
    Eigen::VectorXd r;
    FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, subset, t, &r));
    out->resize(r.size() + k);
    out->head(r.size()) = r;
    for (int j = 0; j < k; ++j) (*out)(r.size() + j) = kPriorWeight * (u(j) - u0[moving[j]]);
    return Status::Ok();
  };
  Eigen::VectorXd u(k);
  for (int j = 0; j < k; ++j) u(j) = ToU(moving[j], terms[moving[j]]);
  Eigen::VectorXd r;
  FLEETSIM_RETURN_IF_ERROR(residuals(u, &r));
  double loss = r.squaredNorm();
  double lambda = 1e-2;
  constexpr double kDiff = 0.1;  // a 10% move of term + floor: batching makes smaller differences step-wise
  int it = 0;
  bool converged = k == 0;
  for (; it < max_iterations && !converged; ++it) {
    Eigen::MatrixXd J(r.size(), k);
    for (int j = 0; j < k; ++j) {
      Eigen::VectorXd uj = u;
      uj(j) += kDiff;
      Eigen::VectorXd rj;
      FLEETSIM_RETURN_IF_ERROR(residuals(uj, &rj));
      J.col(j) = (rj - r) / kDiff;
    }
    const Eigen::MatrixXd JtJ = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int attempt = 0; attempt < 8 && !improved; ++attempt) {
      Eigen::MatrixXd A = JtJ;
      for (int j = 0; j < k; ++j) A(j, j) += lambda * std::max(JtJ(j, j), 1e-12);
      Eigen::VectorXd step = A.ldlt().solve(-g);
      const double longest = step.cwiseAbs().maxCoeff();
      if (!std::isfinite(longest)) {
        lambda *= 4;
        continue;
      }
      if (longest > 1) step /= longest;
      const Eigen::VectorXd un = u + step;
      Eigen::VectorXd rt;
      FLEETSIM_RETURN_IF_ERROR(residuals(un, &rt));
      if (rt.squaredNorm() < loss) {
        improved = true;
        const double gain = loss - rt.squaredNorm();
        u = un;
        r = rt;
        loss = rt.squaredNorm();
        lambda = std::max(lambda / 3, 1e-6);
        converged = gain < 1e-6 * std::max(loss, 1e-12);
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  to_terms(u, terms);
  *iterations = it;
  *final_loss = loss;  // the objective at `terms`
  return Status::Ok();
}

void Errors(const Rig& rig, const std::vector<ReplayRun>& runs, const std::vector<size_t>& subset,
            const std::vector<FitFigures>& figures, std::vector<RunErrors>* out) {
  for (size_t k = 0; k < subset.size(); ++k) {
    const ReplayRun& run = runs[subset[k]];
    RunErrors e;
    e.run = run.name;
    e.engine = rig.engines[subset[k]].name;
    e.simulated = figures[k];
    for (int m = 0; m < kNumFitMetrics; ++m)
      if (run.observed.values[m] && figures[k].values[m] && *run.observed.values[m] > 0)
        e.error[m] = *figures[k].values[m] / *run.observed.values[m] - 1;
    out->push_back(std::move(e));
  }
}

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The rig for `runs`: each run's scenario (its own or the base) checked and
// its pool's engine terms and kernel figures resolved, its requests ready
// to replay.
Status Prepare(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
               const std::vector<ReplayRun>& runs, uint64_t seed, Rig* rig) {
  if (runs.empty()) return Status::Invalid("fit: no observed runs");
  *rig = Rig{&base, &catalog, &policies, seed, {}, {}, {}, {}, {}, {}, 0};
  for (const ReplayRun& run : runs) {
    const ScenarioSpec* spec = run.scenario ? run.scenario.get() : &base;
    if (spec->pools.size() != 1)
      return Status::Invalid(spec->file + ": fit replays one pool; the scenario has " +
                             std::to_string(spec->pools.size()));
    // Runs sharing a scenario share its resolution.
    const auto same = std::find(rig->scenarios.begin(), rig->scenarios.end(), spec);
    if (same != rig->scenarios.end()) {
      const size_t j = static_cast<size_t>(same - rig->scenarios.begin());
      rig->engines.push_back(rig->engines[j]);
      rig->start.push_back(rig->start[j]);
      rig->gpus.push_back(rig->gpus[j]);
    } else {
      std::unique_ptr<ScenarioRun> check;
      // A run's own scenario is named after the run in its messages already.
      Status built = ScenarioRun::Build(*spec, catalog, policies, &check);
      if (!built.ok() && !run.scenario) built = built.WithPrefix(run.name + ": ");
      FLEETSIM_RETURN_IF_ERROR(built);
      const PoolPlan& pool = check->pools()[0];
      EngineSpec e = pool.engine;
      // Where every fitted term stands for this pool: the engine's terms,
      // and the kernel figures its roofline runs with.
      const RooflineOptions o = PoolRooflineOptions(*spec, pool);
      std::array<double, kNumFitTerms> start{};
      for (int i = 0; i < kNumFitTerms; ++i)
        start[static_cast<size_t>(i)] = i < kFirstKernelFitTerm ? *e.Term(kFitTerms[static_cast<size_t>(i)])
                                                               : KernelTermValue(o, *pool.gpu, i - kFirstKernelFitTerm);
      rig->engines.push_back(std::move(e));
      rig->start.push_back(start);
      rig->gpus.push_back(pool.gpu->name);
    }
    rig->scenarios.push_back(spec);
    if (run.requests.empty() && !run.step) return Status::Invalid(run.name + ": no requests to replay");
    bool any = false;
    for (const auto& v : run.observed.values) any = any || v.has_value();
    if (!any) return Status::Invalid(run.name + ": no observed latency or throughput to fit");
    auto list = std::make_shared<std::vector<Request>>(run.requests);
    if (run.concurrency)
      for (Request& r : *list) r.arrival = 0;  // the clients' pace sets them
    rig->requests.push_back(std::move(list));
  }
  return Status::Ok();
}

// Every observed figure must have a simulated counterpart under the profile
// as resolved: a figure the replay cannot give (every request rejected for
// its length, no request of two tokens or more for TPOT) would only add a
// constant to the objective and drop out of the errors, leaving the fit to
// the other runs without a word.
Status CheckFigures(const std::vector<ReplayRun>& runs, const std::vector<FitFigures>& figures) {
  for (size_t k = 0; k < runs.size(); ++k)
    for (int m = 0; m < kNumFitMetrics; ++m)
      if (runs[k].observed.values[m] && !figures[k].values[m])
        return Status::Invalid((runs[k].origin.empty() ? runs[k].name : runs[k].origin) + ": observed." +
                               kFitMetrics[m] +
                               (runs[k].step ? ": a step run gives prefill_step_ms and decode_step_ms only"
                                             : ": the replay gives no such figure (are its requests rejected for "
                                               "their length, or all of one output token?)"));
  return Status::Ok();
}

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// What the runs determine (FitResult::determined, spread, at_bound) and the
// warnings about it, at the fitted terms of `r`.
Status Identify(Rig& rig, const std::vector<ReplayRun>& runs, const std::vector<size_t>& all, FitResult* r) {
  const std::vector<int> moving = Moving(r->informed);
  const int k = static_cast<int>(moving.size());
  Eigen::VectorXd base;
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, r->terms, &base));
  Eigen::MatrixXd J(base.size(), k);
  constexpr double kDiff = 0.1;
  for (int j = 0; j < k; ++j) {
    double t[kNumFitTerms];
    std::copy(r->terms, r->terms + kNumFitTerms, t);
    const int i = moving[j];
    // A difference towards the inside of the range: a term at its upper
    // end cannot move up.
    double u = ToU(i, t[i]);
    const double step = AtBound(i, t[i]) > 0 ? -kDiff : kDiff;
    t[i] = FromU(i, u + step);
    Eigen::VectorXd rj;
    FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, t, &rj));
    J.col(j) = (rj - base) / step;
  }
  // Posterior covariance in u under a unit reference spread per term and
  // a 5% scatter per figure (the residuals carry each run's weight).
  Eigen::MatrixXd info = J.transpose() * J / (kFigureScatter * kFigureScatter);
  info += Eigen::MatrixXd::Identity(k, k);
  const Eigen::MatrixXd cov = info.ldlt().solve(Eigen::MatrixXd::Identity(k, k));
  std::vector<std::string> undetermined, bounded;
  for (int j = 0; j < k; ++j) {
    const int i = moving[j];
    r->spread[i] = std::sqrt(std::max(cov(j, j), 0.0));
    r->determined[i] = r->spread[i] < kDeterminedSpread;
    // A term that started at an end and stayed there, undetermined, says
    // nothing about the model; one the runs pushed there does.
    r->at_bound[i] = AtBound(i, r->terms[i]);
    if (r->at_bound[i] != 0 && !r->determined[i] && AtBound(i, r->initial_terms[i]) == r->at_bound[i])
      r->at_bound[i] = 0;
    if (!r->determined[i]) undetermined.push_back(kFitTerms[static_cast<size_t>(i)]);
    if (r->at_bound[i] != 0) {
      const FitTermInfo f = Info(i);
      bounded.push_back(std::string(kFitTerms[static_cast<size_t>(i)]) + " at its " +
                        (r->at_bound[i] < 0 ? "lower" : "upper") + " bound " +
                        Num(r->at_bound[i] < 0 ? f.lo : f.hi));
    }
    // A term that moved far on runs that do not pin it down.
    const double a = r->initial_terms[i], b = r->terms[i];
    const double ratio = std::max(a, b) / std::max(std::min(a, b), 1e-12);
    if (!r->determined[i] && std::max(a, b) > Info(i).floor && ratio > 3)
      r->warnings.push_back(std::string(kFitTerms[static_cast<size_t>(i)]) + " moved from " + Num(a) + " to " +
                            Num(b) + " on runs that do not determine it: trust it no more than its start");
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!undetermined.empty())
    r->warnings.insert(r->warnings.begin(),
                       "not determined by these runs (their values stay near where the fit started; measure "
                       "other batch sizes, lengths or loads to pin them): " + join(undetermined));
  if (!bounded.empty())
    r->warnings.insert(r->warnings.begin(),
                       "at the end of their physical range (the runs would push them beyond it: another part "
                       "of the model, or the runs, are off): " + join(bounded));
  return Status::Ok();
}

}  // namespace

const char* FitTermUnit(int i) {
  if (i >= kFirstKernelFitTerm) return kKernelTerms[i - kFirstKernelFitTerm].unit;
  return "us";
}

bool IsGpuFitTerm(int i) { return i >= kFirstKernelFitTerm - 2; }

std::optional<double> MedianAbsError(const std::vector<RunErrors>& errors, int metric) {
  std::vector<double> v;
  for (const RunErrors& e : errors)
    if (e.error[metric]) v.push_back(std::fabs(*e.error[metric]));
  return Median(std::move(v));
}

std::optional<double> MedianError(const std::vector<RunErrors>& errors, int metric) {
  std::vector<double> v;
  for (const RunErrors& e : errors)
    if (e.error[metric]) v.push_back(*e.error[metric]);
  return Median(std::move(v));
}

std::optional<double> MedianAbsErrorAll(const std::vector<RunErrors>& errors) {
  std::vector<double> v;
  for (const RunErrors& e : errors)
    for (const auto& x : e.error)
      if (x) v.push_back(std::fabs(*x));
  return Median(std::move(v));
}

std::optional<double> MedianBiasAll(const std::vector<RunErrors>& errors) {
  const int throughput = FitMetricIndex("output_tokens_per_s");
  std::vector<double> v;
  for (const RunErrors& e : errors)
    for (int m = 0; m < kNumFitMetrics; ++m)
      if (e.error[m]) v.push_back(m == throughput ? 1.0 / (1.0 + *e.error[m]) - 1.0 : *e.error[m]);
  return Median(std::move(v));
}

int FitMetricIndex(std::string_view name) {
  for (int m = 0; m < kNumFitMetrics; ++m)
    if (name == kFitMetrics[m]) return m;
  return -1;
}

Status PredictRuns(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                   const std::vector<ReplayRun>& runs, uint64_t seed, std::vector<RunErrors>* out,
                   const FitResult* fitted) {
  Rig rig;
  FLEETSIM_RETURN_IF_ERROR(Prepare(base, catalog, policies, runs, seed, &rig));
  if (fitted)
    for (int i = 0; i < kNumFitTerms; ++i) rig.fitted[i] = fitted->informed[i];
  std::vector<size_t> all(runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<FitFigures> figures;
  for (size_t i : all) {
    FitFigures f;
    PerRequest per;
    FLEETSIM_RETURN_IF_ERROR(Simulate(rig, runs[i], i, fitted ? fitted->terms : nullptr, &f, &per));
    figures.push_back(f);
  }
  FLEETSIM_RETURN_IF_ERROR(CheckFigures(runs, figures));
  out->clear();
  Errors(rig, runs, all, figures, out);
  return Status::Ok();
}

Status FitEngine(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
                 const std::vector<ReplayRun>& runs, const FitOptions& options, FitResult* out) {
  Rig rig;
  FLEETSIM_RETURN_IF_ERROR(Prepare(base, catalog, policies, runs, options.seed, &rig));
  // The fitted terms are one set for every run; they start from the first
  // run's profile and kernel figures.
  FitResult result;
  for (int i = 0; i < kNumFitTerms; ++i) result.initial_terms[i] = rig.start[0][static_cast<size_t>(i)];
  std::vector<size_t> all(runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;

  Eigen::VectorXd r;
  std::vector<FitFigures> figures;
  // Before: each run with its own pool's terms as resolved.
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, nullptr, &r, &figures));
  FLEETSIM_RETURN_IF_ERROR(CheckFigures(runs, figures));
  Errors(rig, runs, all, figures, &result.before);
  // A kernel's efficiency is one GPU's: the GPU side is fitted only when
  // every run is on the first run's GPU.
  bool one_gpu = true;
  for (const std::string& g : rig.gpus) one_gpu = one_gpu && g == rig.gpus[0];
  for (int i = 0; i < kNumFitTerms; ++i) rig.fitted[i] = InScope(i, options.scope) && (one_gpu || !IsGpuFitTerm(i));
  if (!one_gpu && options.scope != FitScope::kCpuServer)
    result.warnings.push_back("the runs are on more than one GPU (" + rig.gpus[0] + " and others): the GPU terms "
                              "are not fitted; fit each GPU's runs on their own to fit them");
  // Which terms any run depends on, around the starting point: a move of
  // half a unit of the term's scale, then of two (a cost that hides under
  // another, as launching under the GPU's time, shows only past a point),
  // up then down.
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, result.initial_terms, &r));
  // A term seen only past the small move has no slope where the fit
  // starts: a start of its own puts it where the runs see it.
  double revealed[kNumFitTerms];
  std::copy(result.initial_terms, result.initial_terms + kNumFitTerms, revealed);
  bool hidden = false;
  for (int i = 0; i < kNumFitTerms; ++i) {
    if (!rig.fitted[i]) continue;
    const double u = ToU(i, result.initial_terms[i]);
    for (double move : {0.5, 2.0, -0.5, -2.0}) {
      double t[kNumFitTerms];
      std::copy(result.initial_terms, result.initial_terms + kNumFitTerms, t);
      t[i] = FromU(i, u + move);
      if (t[i] == result.initial_terms[i]) continue;
      Eigen::VectorXd ri;
      FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, t, &ri));
      result.informed[i] = (ri - r).cwiseAbs().maxCoeff() > 1e-9;
      if (result.informed[i]) {
        if (std::fabs(move) > 1) {
          revealed[i] = t[i];
          hidden = true;
        }
        break;
      }
    }
  }
  const std::vector<int> moving = Moving(result.informed);
  double u0[kNumFitTerms];
  for (int i = 0; i < kNumFitTerms; ++i) u0[i] = ToU(i, result.initial_terms[i]);
  for (size_t k = 0; k < runs.size(); ++k) {
    int timed[2];
    result.figures += FiguresOf(runs[k], timed);
  }

  // A term no run informs comes back from its scale within rounding; it
  // keeps its value exactly.
  auto keep_uninformed = [&](double* t) {
    for (int i = 0; i < kNumFitTerms; ++i)
      if (!result.informed[i]) t[i] = result.initial_terms[i];
  };
  // The objective is step-wise (batching) and its terms trade against each
  // other (a request's fixed server time against its per-prompt-token
  // times), so Levenberg-Marquardt can stop in a local minimum: it starts
  // from the profile's terms and from every term moved up and down (a log
  // term 2.5 and 0.4 times as large, a fraction by a unit of its scale),
  // and keeps the best end. `starts` are tried in order; ties keep the
  // first.
  auto best_of = [&](const std::vector<size_t>& subset, const std::vector<std::vector<double>>& starts, double* out_terms,
                     int* iterations) -> Status {
    double best_loss = std::numeric_limits<double>::infinity();
    for (const std::vector<double>& start : starts) {
      double t[kNumFitTerms];
      std::copy(start.begin(), start.end(), t);
      int its = 0;
      double loss = 0;
      FLEETSIM_RETURN_IF_ERROR(Minimise(rig, runs, subset, moving, u0, options.max_iterations, t, &its, &loss));
      // The uninformed terms move no figure: the loss stands.
      keep_uninformed(t);
      if (loss < best_loss) {
        best_loss = loss;
        std::copy(t, t + kNumFitTerms, out_terms);
        *iterations = its;
      }
    }
    return Status::Ok();
  };
  std::vector<std::vector<double>> starts(3, std::vector<double>(result.initial_terms,
                                                                 result.initial_terms + kNumFitTerms));
  for (int i = 0; i < kNumFitTerms; ++i) {
    const FitTermInfo f = Info(i);
    if (f.bounded) {
      starts[1][i] = FromU(i, u0[i] + 1);
      starts[2][i] = FromU(i, u0[i] - 1);
    } else {
      starts[1][i] = std::min(2.5 * result.initial_terms[i] + f.floor, f.hi);
      starts[2][i] = std::max(0.4 * result.initial_terms[i], f.lo);
    }
  }
  if (hidden) starts.emplace_back(revealed, revealed + kNumFitTerms);
  FLEETSIM_RETURN_IF_ERROR(best_of(all, starts, result.terms, &result.iterations));
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, result.terms, &r, &figures));
  Errors(rig, runs, all, figures, &result.after);
  FLEETSIM_RETURN_IF_ERROR(Identify(rig, runs, all, &result));
  // Samples too small for what they are asked to fit.
  if (result.figures < static_cast<int>(moving.size()))
    result.warnings.insert(result.warnings.begin(),
                           "small sample: " + std::to_string(result.figures) + " observed figure" +
                               (result.figures == 1 ? "" : "s") + " for " + std::to_string(moving.size()) +
                               " terms the runs depend on: most combinations of them cannot be told apart");
  if (runs.size() < 3)
    result.warnings.insert(result.warnings.begin(),
                           "small sample: " + std::to_string(runs.size()) + " run" + (runs.size() == 1 ? "" : "s") +
                               " (three or more, of different loads or lengths, tell the terms apart)");
  for (const ReplayRun& run : runs)
    if (!run.step && run.requests.size() < 30)
      result.warnings.push_back("small sample: " + run.name + " has " + std::to_string(run.requests.size()) +
                                " request" + (run.requests.size() == 1 ? "" : "s") +
                                ": its percentiles rest on few requests");

  if (options.cross_validate && runs.size() >= 2) {
    for (size_t k = 0; k < runs.size(); ++k) {
      std::vector<size_t> others;
      for (size_t i : all)
        if (i != k) others.push_back(i);
      // From the same starts and from the fit on every run.
      std::vector<std::vector<double>> left_starts = starts;
      left_starts.emplace_back(result.terms, result.terms + kNumFitTerms);
      double t[kNumFitTerms];
      int its = 0;
      FLEETSIM_RETURN_IF_ERROR(best_of(others, left_starts, t, &its));
      FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, {k}, t, &r, &figures));
      Errors(rig, runs, {k}, figures, &result.left_out);
    }
  }
  result.evaluations = rig.evaluations;
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace fleetsim
