#include "sim/fit/engine_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include <Eigen/Dense>

namespace fleetsim {
namespace {

// Smallest finite-difference step per term, so a term at 0 still moves the
// figures: 50 us per step, 1 us per sequence, 0.05 us per prefill token,
// 50 us per tensor-parallel step, 100 us per request in the server, 0.05 us
// per prompt token.
constexpr double kMinStep[kNumFitTerms] = {50, 1, 0.05, 50, 100, 0.05};

// The field of fitted term i (kFitTerms names kEngineTerms).
double* Term(EngineSpec* e, int i) { return e->Term(kFitTerms[i]); }

struct Rig {
  const ScenarioSpec* base;
  const Catalog* catalog;
  const Policies* policies;
  uint64_t seed;
  // Per run: its scenario (the run's own, or the base), its pool's resolved
  // engine terms, and its requests.
  std::vector<const ScenarioSpec*> scenarios;
  std::vector<EngineSpec> engines;
  std::vector<std::shared_ptr<const std::vector<Request>>> requests;
  int evaluations = 0;
};

// Per request (by id, the order of the run's requests): simulated TTFT and
// end-to-end, ms; NaN for a request that did not complete.
struct PerRequest {
  std::vector<double> ttft_ms, e2e_ms;
};

Status Simulate(Rig& rig, const ReplayRun& run, size_t index, const double* terms, FitFigures* out,
                PerRequest* per_request) {
  ScenarioSpec spec = *rig.scenarios[index];
  spec.traffic = TrafficSpec();
  spec.traffic.kind = TrafficSpec::Kind::kList;
  spec.traffic.requests = rig.requests[index];
  if (run.concurrency) spec.traffic.closed_loop = ClosedLoopSpec{*run.concurrency, 0, false};
  spec.warmup_s = 0;
  spec.duration_s.reset();
  EngineSpec e = rig.engines[index];
  if (terms)
    for (int i = 0; i < kNumFitTerms; ++i) *Term(&e, i) = terms[i];
  if (!run.server) e.server_request_us = e.server_prompt_token_us = e.server_output_token_us = 0;
  spec.pools[0].engine_terms = e;
  std::unique_ptr<ScenarioRun> sim;
  FLEETSIM_RETURN_IF_ERROR(ScenarioRun::Build(spec, *rig.catalog, *rig.policies, &sim));
  RunOptions ro;
  ro.seed = rig.seed;
  per_request->ttft_ms.assign(run.requests.size(), NAN);
  per_request->e2e_ms.assign(run.requests.size(), NAN);
  ro.on_request = [per_request](const RequestRecord& rec) {
    if (rec.status != RequestStatus::kCompleted || rec.id >= per_request->ttft_ms.size()) return;
    per_request->ttft_ms[rec.id] = TimeToSeconds(rec.first_token - rec.arrival) * 1e3;
    per_request->e2e_ms[rec.id] = TimeToSeconds(rec.finish - rec.arrival) * 1e3;
  };
  RunReport report;
  FLEETSIM_RETURN_IF_ERROR(sim->Run(MetricsOptions(), ro, nullptr, &report).WithPrefix(run.name + ": replay: "));
  ++rig.evaluations;
  const Summary& s = report.summary;
  const std::optional<double> v[kNumFitMetrics] = {s.ttft.p50,  s.ttft.p90, s.tpot.p50, s.tpot.p90,
                                                   s.itl.p50,   s.itl.p90,  s.output_tokens_per_s,
                                                   s.ttft.mean, s.tpot.mean, s.itl.mean, s.e2e.p50, s.e2e.mean};
  for (int m = 0; m < kNumFitMetrics; ++m) out->values[m] = v[m];
  return Status::Ok();
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
    int timed[2] = {0, 0};
    for (int b = 0; b < 2; ++b)
      for (size_t i = 0; i < observed_blocks[b]->size() && i < run.requests.size(); ++i)
        timed[b] += (*observed_blocks[b])[i] > 0;
    int n = 0;
    for (int m = 0; m < kNumFitMetrics; ++m) n += run.observed.values[m].has_value();
    n += (timed[0] > 0) + (timed[1] > 0);
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

// Levenberg-Marquardt from `terms` (updated in place) on `subset`, in
// u = log(term + kMinStep): steps are relative, a term never goes negative
// and cannot be pinned at zero by one long step, and a step moves each u by
// at most 1 (a factor of e), since batching and queueing make the figures
// far from linear over larger moves.
Status Minimise(Rig& rig, const std::vector<ReplayRun>& runs, const std::vector<size_t>& subset, int max_iterations,
                double* terms, int* iterations, double* final_loss) {
  // Back from u; a term within rounding of 0 is 0.
  auto to_terms = [](const Eigen::VectorXd& u, double* t) {
    for (int i = 0; i < kNumFitTerms; ++i) {
      t[i] = std::clamp(std::exp(u(i)) - kMinStep[i], 0.0, 1e6);
      if (t[i] < 1e-9 * kMinStep[i]) t[i] = 0;
    }
  };
  Eigen::VectorXd u(kNumFitTerms);
  for (int i = 0; i < kNumFitTerms; ++i) u(i) = std::log(terms[i] + kMinStep[i]);
  Eigen::VectorXd r;
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, subset, terms, &r));
  double loss = r.squaredNorm();
  double lambda = 1e-2;
  constexpr double kDiff = 0.1;  // a 10% move of term + floor: batching makes smaller differences step-wise
  int it = 0;
  bool converged = false;
  for (; it < max_iterations && !converged; ++it) {
    Eigen::MatrixXd J(r.size(), kNumFitTerms);
    for (int i = 0; i < kNumFitTerms; ++i) {
      Eigen::VectorXd ui = u;
      ui(i) += kDiff;
      double t[kNumFitTerms];
      to_terms(ui, t);
      Eigen::VectorXd ri;
      FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, subset, t, &ri));
      J.col(i) = (ri - r) / kDiff;
    }
    const Eigen::MatrixXd JtJ = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int attempt = 0; attempt < 8 && !improved; ++attempt) {
      Eigen::MatrixXd A = JtJ;
      for (int i = 0; i < kNumFitTerms; ++i) A(i, i) += lambda * std::max(JtJ(i, i), 1e-12);
      Eigen::VectorXd step = A.ldlt().solve(-g);
      const double longest = step.cwiseAbs().maxCoeff();
      if (longest > 1) step /= longest;
      const Eigen::VectorXd un = u + step;
      double t[kNumFitTerms];
      to_terms(un, t);
      Eigen::VectorXd rt;
      FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, subset, t, &rt));
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
// its pool's engine terms resolved, its requests ready to replay.
Status Prepare(const ScenarioSpec& base, const Catalog& catalog, const Policies& policies,
               const std::vector<ReplayRun>& runs, uint64_t seed, Rig* rig) {
  if (runs.empty()) return Status::Invalid("fit: no observed runs");
  *rig = Rig{&base, &catalog, &policies, seed, {}, {}, {}, 0};
  for (const ReplayRun& run : runs) {
    const ScenarioSpec* spec = run.scenario ? run.scenario.get() : &base;
    if (spec->pools.size() != 1)
      return Status::Invalid(spec->file + ": fit replays one pool; the scenario has " +
                             std::to_string(spec->pools.size()));
    // Runs sharing a scenario share its resolution.
    const auto same = std::find(rig->scenarios.begin(), rig->scenarios.end(), spec);
    if (same != rig->scenarios.end()) {
      rig->engines.push_back(rig->engines[static_cast<size_t>(same - rig->scenarios.begin())]);
    } else {
      std::unique_ptr<ScenarioRun> check;
      // A run's own scenario is named after the run in its messages already.
      Status built = ScenarioRun::Build(*spec, catalog, policies, &check);
      if (!built.ok() && !run.scenario) built = built.WithPrefix(run.name + ": ");
      FLEETSIM_RETURN_IF_ERROR(built);
      rig->engines.push_back(check->pools()[0].engine);
    }
    rig->scenarios.push_back(spec);
    if (run.requests.empty()) return Status::Invalid(run.name + ": no requests to replay");
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
                               ": the replay gives no such figure (are its requests rejected for their "
                               "length, or all of one output token?)");
  return Status::Ok();
}

}  // namespace

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
                   const std::vector<ReplayRun>& runs, uint64_t seed, std::vector<RunErrors>* out) {
  Rig rig;
  FLEETSIM_RETURN_IF_ERROR(Prepare(base, catalog, policies, runs, seed, &rig));
  std::vector<size_t> all(runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<FitFigures> figures;
  for (size_t i : all) {
    FitFigures f;
    PerRequest per;
    FLEETSIM_RETURN_IF_ERROR(Simulate(rig, runs[i], i, nullptr, &f, &per));
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
  // run's profile.
  FitResult result;
  for (int i = 0; i < kNumFitTerms; ++i) result.initial_terms[i] = *Term(&rig.engines[0], i);
  std::vector<size_t> all(runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;

  Eigen::VectorXd r;
  std::vector<FitFigures> figures;
  // Before: each run with its own pool's terms as resolved.
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, nullptr, &r, &figures));
  FLEETSIM_RETURN_IF_ERROR(CheckFigures(runs, figures));
  Errors(rig, runs, all, figures, &result.before);
  // Which terms any run depends on, around the starting point.
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, result.initial_terms, &r));
  for (int i = 0; i < kNumFitTerms; ++i) {
    double t[kNumFitTerms];
    std::copy(result.initial_terms, result.initial_terms + kNumFitTerms, t);
    t[i] = 2 * t[i] + 10 * kMinStep[i];
    Eigen::VectorXd ri;
    FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, t, &ri));
    result.informed[i] = (ri - r).cwiseAbs().maxCoeff() > 1e-9;
  }

  // A term no run informs comes back from the log space within rounding;
  // it keeps its value exactly.
  auto keep_uninformed = [&](double* t) {
    for (int i = 0; i < kNumFitTerms; ++i)
      if (!result.informed[i]) t[i] = result.initial_terms[i];
  };
  // The objective is step-wise (batching) and its terms trade against each
  // other (a request's fixed server time against its per-prompt-token
  // times), so Levenberg-Marquardt can stop in a local minimum: it starts
  // from the profile's terms and from every term 2.5 and 0.4 times as large,
  // and keeps the best end. `starts` are tried in order; ties keep the first.
  auto best_of = [&](const std::vector<size_t>& subset, const std::vector<std::vector<double>>& starts, double* out_terms,
                     int* iterations) -> Status {
    double best_loss = std::numeric_limits<double>::infinity();
    for (const std::vector<double>& start : starts) {
      double t[kNumFitTerms];
      std::copy(start.begin(), start.end(), t);
      int its = 0;
      double loss = 0;
      FLEETSIM_RETURN_IF_ERROR(Minimise(rig, runs, subset, options.max_iterations, t, &its, &loss));
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
    starts[1][i] = 2.5 * result.initial_terms[i] + kMinStep[i];
    starts[2][i] = 0.4 * result.initial_terms[i];
  }
  FLEETSIM_RETURN_IF_ERROR(best_of(all, starts, result.terms, &result.iterations));
  FLEETSIM_RETURN_IF_ERROR(Residuals(rig, runs, all, result.terms, &r, &figures));
  Errors(rig, runs, all, figures, &result.after);

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
