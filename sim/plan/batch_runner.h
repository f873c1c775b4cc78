// BatchRunner: runs a batch of independent simulations and hands every
// caller the whole batch's results. The planner's search runs in rounds; a
// round's simulations are a batch. ThreadRunner spreads a batch over a
// thread pool; MpiRunner (sim/plan/mpi_runner.cc, built when MPI is found)
// spreads it over MPI ranks, each with its own pool, and all-gathers the
// results, so that every rank takes the same next round. A result depends
// only on its job, so a batch's results are the same for any split.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fleetsim {

// The figures of one simulation the planner keeps (PlanMetric order).
inline constexpr int kNumPlanMetrics = 22;
struct SimOutcome {
  std::array<double, kNumPlanMetrics> metrics;  // NaN: undefined in this run
  std::string error;                             // non-empty: the simulation failed (a bad trace row)
  SimOutcome() { metrics.fill(std::nan("")); }
};

class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  // Runs job(i) for every i < n, on some thread of some rank, and fills
  // (*out)[i] on every rank. `tick(done)` is called on the calling thread
  // about every 200 ms with the jobs finished here so far.
  virtual void Run(size_t n, const std::function<SimOutcome(size_t)>& job,
                   const std::function<void(size_t)>& tick, std::vector<SimOutcome>* out) = 0;
  // This process's share of a batch of n jobs (all of them unless MPI).
  virtual size_t LocalJobs(size_t n) const { return n; }
  // Whether `ok` holds on every rank (a collective: every rank must call it).
  virtual bool AllAgree(bool ok) { return ok; }
  virtual int rank() const { return 0; }
  virtual int ranks() const { return 1; }
};

// Runs jobs on `threads` threads (the caller's included when threads is 1).
std::unique_ptr<BatchRunner> MakeThreadRunner(int threads);

// Runs job(i) for the i in `indices` on `threads` threads into (*out)[i].
void RunOnThreads(int threads, const std::vector<size_t>& indices, const std::function<SimOutcome(size_t)>& job,
                  const std::function<void(size_t)>& tick, std::vector<SimOutcome>* out);

// MPI: whether this process was started by mpirun (so the planner should
// use MPI), and the runner; null, with *error set, when fleetsim was built
// without MPI or MPI cannot start.
bool LaunchedByMpi();
std::unique_ptr<BatchRunner> MakeMpiRunner(int threads, std::string* error);
// Ends MPI if MakeMpiRunner started it (after every rank is done).
void FinishMpi();

}  // namespace fleetsim
